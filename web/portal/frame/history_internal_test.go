package frame

import (
	"encoding/json"
	"testing"
)

// TestNameIDsIn: an audit entry's changes name the staff members and
// partners they mention; an id of something without a name (an account, a
// person) stays; a name with a quote in it keeps the changes valid JSON;
// changes without ids are left as they are.
func TestNameIDsIn(t *testing.T) {
	const (
		staff   = "01a21959-2692-74e1-b45a-c73149fb31d1"
		partner = "01a21959-2692-74e1-b45a-c73149fb31d2"
		account = "01a21959-2692-74e1-b45a-c73149fb31d3"
	)
	staffNames := map[string]string{staff: `Ana "the auditor" Ivanova`}
	partnerNames := PartnerNameMap{partner: "Demo Partner"}
	for in, want := range map[string]string{
		`{"mentions":["` + staff + `"],"note":1}`:                 `{"mentions":["Ana \"the auditor\" Ivanova"],"note":1}`,
		`{"from":"` + staff + `","partner":"` + partner + `"}`:    `{"from":"Ana \"the auditor\" Ivanova","partner":"Demo Partner"}`,
		`{"account":"` + account + `","reason":"customer asked"}`: `{"account":"` + account + `","reason":"customer asked"}`,
		`{"status":"blocked"}`:                                    `{"status":"blocked"}`,
		``:                                                        ``,
	} {
		got := nameIDsIn(in, staffNames, partnerNames)
		if got != want {
			t.Errorf("nameIDsIn(%s) = %s, want %s", in, got, want)
		}
		if got != "" && !json.Valid([]byte(got)) {
			t.Errorf("nameIDsIn(%s) = %s is not JSON", in, got)
		}
	}
}
