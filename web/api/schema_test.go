package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRequestSchemas: every documented request body is read from
// openapi.yaml, and what the decoder applies of it is what the document
// says of "" and of JSON numbers, where "" is refused and where it is
// documented as meaningful.
func TestRequestSchemas(t *testing.T) {
	m, err := requestSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) < 35 {
		t.Fatalf("only %d request bodies read from openapi.yaml", len(m))
	}
	for _, c := range []struct {
		op, body string
		want     []string // "field: message start"; none: accepted
	}{
		{"aml_check", `{"first_name":"A","nationality":""}`, []string{"nationality: must not be empty (pattern"}},
		{"aml_check", `{"nationality":"BG","birthday":""}`, []string{"birthday: must not be empty"}},
		{"sandbox_card_authorize", `{"amount":12345,"merchant_country":""}`, []string{"amount: must be a string", "merchant_country: must not be empty"}},
		{"sandbox_incoming_credit", `{"amount":12345}`, []string{"amount: must be a string"}},
		{"card_convert", `{"delivery_details":{"method":""}}`, []string{"delivery_details.method: must not be empty (one of: "}},
		{"user_update", `{"nationality":"","birthday":"","middle_name":"","occupation_position":""}`, nil},
		{"card_groups", `{"usage":"","mcc":""}`, nil},
		{"application_create", `{"payout_details":[{"amount":100.5,"sort_code":""}]}`, nil},
		{"user_create", `{"additional_nationality":["BG",""]}`, []string{"additional_nationality[1]: must not be empty"}},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.body), &v); err != nil {
			t.Fatal(err)
		}
		n := m[c.op]
		if n == nil {
			t.Errorf("%s: no request schema", c.op)
			continue
		}
		got := n.Problems(v)
		if len(got) != len(c.want) {
			t.Errorf("%s %s: %+v, want %v", c.op, c.body, got, c.want)
			continue
		}
		for i, f := range got {
			if !strings.HasPrefix(f.Field+": "+f.Message, c.want[i]) {
				t.Errorf("%s %s: %s: %s, want %s", c.op, c.body, f.Field, f.Message, c.want[i])
			}
		}
	}
}
