package api_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/web/api"
)

// recordTB records a Fatalf instead of stopping the test, to check that a
// checker really fails.
type recordTB struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}

func TestOpenAPIValidationCatchesDrift(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	req := p.HTTPRequest(t, partnerDetails())
	good := `{"code":0,"data":{"partner":"` + p.ID + `","name":"n","merchant":"` + p.Merchant +
		`","processing":"automatic","api_key_id":"` + p.KeyID + `"}}`
	cases := []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"the real shape passes", 200, good, true},
		{"an error envelope passes", 401, `{"code":10001,"message":"services.auth.invalid"}`, true},
		{"an undocumented field fails", 200, strings.Replace(good, `"name":"n"`, `"name":"n","pan":"4111111111111111"`, 1), false},
		{"a missing field fails", 200, strings.Replace(good, `"name":"n",`, ``, 1), false},
		{"a wrong enum value fails", 200, strings.Replace(good, `automatic`, `manual`, 1), false},
		{"an error with code 0 fails", 400, `{"code":0,"message":"x"}`, false},
		{"an error without message fails", 404, `{"code":10004}`, false},
		{"an undocumented status fails", 418, `{"code":1,"message":"teapot"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
				Body: io.NopCloser(strings.NewReader(c.body)), Request: req}
			rec := &recordTB{TB: t}
			env.CheckOpenAPI(rec, req, res, []byte(c.body))
			if rec.failed == c.ok {
				t.Fatalf("CheckOpenAPI failed=%v, want %v (%s)", rec.failed, !c.ok, rec.msg)
			}
		})
	}
}

func TestErrorCatalogueIsConsistentAndDocumented(t *testing.T) {
	t.Parallel()
	doc := string(api.OpenAPI)
	seen := map[string]bool{}
	keysByCode := map[int]map[string]bool{}
	for _, e := range emi.Catalogue() {
		id := strconv.Itoa(e.Code) + " " + e.Key
		if seen[id] {
			t.Errorf("catalogue lists %s twice", id)
		}
		seen[id] = true
		if keysByCode[e.Code] == nil {
			keysByCode[e.Code] = map[string]bool{}
		}
		keysByCode[e.Code][e.Key] = true
		if e.Code == 0 || e.Key == "" || !strings.Contains(e.Key, ".") {
			t.Errorf("%s: a catalogue error needs a non-zero code and a dotted key", id)
		}
		if !strings.Contains(doc, e.Key) {
			t.Errorf("openapi.yaml does not document %s", id)
		}
	}
	for code, keys := range keysByCode {
		// Only the seed's 11002 names several things (application, member, user).
		if len(keys) > 1 && code != 11002 {
			t.Errorf("code %d has several keys %v", code, keys)
		}
	}
}
