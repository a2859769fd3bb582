package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/people"
)

// Small but real files, so that content sniffing accepts them.
var (
	pdfBytes  = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0/Kids[]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
	pngBytes  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")
	jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9")
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

var emailN atomic.Int64

func uniqueEmail() string {
	return fmt.Sprintf("person-%d-%d@example.com", time.Now().UnixNano(), emailN.Add(1))
}

// post and friends send one signed request, advancing the clock first so
// that two identical requests of one test are not replays of each other.
func call(t *testing.T, env *apptest.Env, p *apptest.Partner, method, path, op string, body any) apptest.Response {
	t.Helper()
	env.Clock.Advance(time.Second)
	return p.Do(t, apptest.Request{Method: method, Path: path, Operation: op, JSON: body})
}

func validUser(p *apptest.Partner) map[string]any {
	return map[string]any{
		"email": uniqueEmail(), "first_name": "Mara", "last_name": "Velikova", "middle_name": "Ivanova",
		"birthday": "1990-04-12", "country": "BG", "nationality": "BG", "city": "Plovdiv",
		"mobile_phone": "+359888123456", "merchant": p.Merchant, "type": "default",
		"employment_status": "Student", "risk_score": "Low", "proof_of_identity_type": "Driving license – UK only",
		"country_issuing_id_card": "BG", "additional_nationality": []string{"GR", "DE"},
		"expected_monthly_frequency_incoming_transfer": "Between 3-5 times",
		"client_monthly_net_income":                    "Between 1001 and 5000 EUR", "specified_us_person": false,
		"occupation_position":           "Skilled agricultural, forestry and fishery worker",
		"expected_incoming_monthly_eur": "More than 15 000 EUR", "registration_ip": "203.0.113.9",
		"registration_lat": "42.1354", "registration_lng": "24.7453", "id_issue_date": "2020-01-31",
		"id_passport_validity": "2030-01-30", "purpose_of_wallet_usage": []string{"savings"},
	}
}

func createUser(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) string {
	t.Helper()
	r := call(t, env, p, http.MethodPost, "/v2/users", "user_create", body)
	apptest.Expect(t, "user_create", r, 0, http.StatusCreated)
	return r.Data["token"].(string)
}

func TestUserLifecycle(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	body := validUser(p)
	token := createUser(t, env, p, body)

	d := call(t, env, p, http.MethodGet, "/v2/users/"+token, "user_details", nil)
	apptest.Expect(t, "user_details", d, 0, http.StatusOK)
	for k, want := range body {
		if got := fmt.Sprint(d.Data[k]); got != fmt.Sprint(want) && !(k == "additional_nationality" || k == "purpose_of_wallet_usage") {
			t.Errorf("user_details %s = %v, want %v", k, got, want)
		}
	}
	if d.Data["status"] != "active" || d.Data["kyc_status"] != "none" || d.Data["token"] != token {
		t.Fatalf("user_details: %s", d)
	}
	if fmt.Sprint(d.Data["additional_nationality"]) != "[GR DE]" {
		t.Fatalf("additional_nationality: %v", d.Data["additional_nationality"])
	}

	t.Run("update changes only the fields sent", func(t *testing.T) {
		u := call(t, env, p, http.MethodPut, "/v2/users/"+token, "user_update", map[string]any{"city": "Sofia", "occupation_position": "Manager", "middle_name": ""})
		apptest.Expect(t, "user_update", u, 0, http.StatusOK)
		d := call(t, env, p, http.MethodGet, "/v2/users/"+token, "user_details", nil)
		if d.Data["city"] != "Sofia" || d.Data["occupation_position"] != "Manager" || d.Data["first_name"] != "Mara" ||
			d.Data["middle_name"] != "" || d.Data["email"] != body["email"] {
			t.Fatalf("after update: %s", d)
		}
	})
	t.Run("update refuses null for a field whose schema does not allow it", func(t *testing.T) {
		u := call(t, env, p, http.MethodPut, "/v2/users/"+token, "user_update", map[string]any{"city": "Ruse", "middle_name": nil})
		apptest.Expect(t, "user_update with null", u, -3, http.StatusBadRequest)
		apptest.ExpectField(t, "user_update with null", u, "middle_name")
	})
	t.Run("update refuses every create-only field by name and changes nothing", func(t *testing.T) {
		u := call(t, env, p, http.MethodPut, "/v2/users/"+token, "user_update", map[string]any{
			"email": "new@example.com", "type": "card-usage", "aml": kernel.NewToken(), "registration_ip": "1.2.3.4",
			"company": "X", "documents": []any{}, "city": "Varna", "country": "XX"})
		apptest.Expect(t, "user_update create-only", u, -3, http.StatusBadRequest)
		for _, f := range []string{"email", "type", "aml", "registration_ip", "company", "documents", "country"} {
			apptest.ExpectField(t, "user_update create-only", u, f)
		}
		d := call(t, env, p, http.MethodGet, "/v2/users/"+token, "user_details", nil)
		if d.Data["city"] != "Sofia" {
			t.Fatalf("a refused update changed the user: %s", d)
		}
	})
	t.Run("update validates the resulting user", func(t *testing.T) {
		u := call(t, env, p, http.MethodPut, "/v2/users/"+token, "user_update", map[string]any{"first_name": "", "birthday": "2990-01-01"})
		apptest.Expect(t, "user_update invalid", u, -3, http.StatusBadRequest)
		apptest.ExpectField(t, "user_update invalid", u, "first_name")
		apptest.ExpectField(t, "user_update invalid", u, "birthday")
	})
	t.Run("remove archives the user", func(t *testing.T) {
		apptest.Expect(t, "user_remove", call(t, env, p, http.MethodDelete, "/v2/users/"+token, "user_remove", nil), 0, http.StatusOK)
		for _, r := range []apptest.Response{
			call(t, env, p, http.MethodGet, "/v2/users/"+token, "user_details", nil),
			call(t, env, p, http.MethodPut, "/v2/users/"+token, "user_update", map[string]any{"city": "X"}),
			call(t, env, p, http.MethodDelete, "/v2/users/"+token, "user_remove", nil),
			call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": token}),
		} {
			apptest.Expect(t, "after remove", r, 11002, http.StatusNotFound)
			if r.Message != "service.users.not_found" {
				t.Fatalf("message %q", r.Message)
			}
		}
		var status string
		var removed *time.Time
		if err := env.App.DB.QueryRow(`SELECT status, removed_at FROM users WHERE token = $1`, token).Scan(&status, &removed); err != nil || status != "removed" || removed == nil {
			t.Fatalf("the record must be kept, marked removed: %v %q %v", err, status, removed)
		}
		// The e-mail stays taken: the archived record is still the person.
		dup := call(t, env, p, http.MethodPost, "/v2/users", "user_create", body)
		apptest.Expect(t, "recreate after remove", dup, -2, http.StatusConflict)
	})
	t.Run("audit rows name fields, never personal values", func(t *testing.T) {
		var changes string
		if err := env.App.DB.Get(&changes, `SELECT string_agg(changes::text, ' ') FROM audit_log WHERE resource_token = $1`, token); err != nil {
			t.Fatal(err)
		}
		for _, pii := range []string{"Velikova", "Plovdiv", "1990-04-12", "+359888123456"} {
			if strings.Contains(changes, pii) {
				t.Fatalf("audit log holds %q: %s", pii, changes)
			}
		}
		if !strings.Contains(changes, "first_name") || !strings.Contains(changes, "city") {
			t.Fatalf("audit log does not name the fields: %s", changes)
		}
	})
}

func TestUserValidation(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	long := strings.Repeat("x", 256)
	future := time.Now().AddDate(0, 0, 2).Format(time.DateOnly)
	doc := func(file, ft, dt string) []map[string]any {
		return []map[string]any{{"file": file, "file_type": ft, "document_type": dt}}
	}
	cases := []struct {
		name, field, path string
		v                 any
	}{
		{"birthday format", "birthday", "", "12/04/1990"},
		{"birthday that does not exist", "birthday", "", "1990-02-30"},
		{"birthday in the future", "birthday", "", future},
		{"id_issue_date in the future", "id_issue_date", "", future},
		{"id_passport_validity not a date", "id_passport_validity", "", "10 years"},
		{"middle_name over 255", "middle_name", "", long},
		{"other_occupation over 255", "other_occupation", "", long},
		{"other_source_of_funds over 255", "other_source_of_funds", "", long},
		{"other_purpose_of_wallet_usage over 255", "other_purpose_of_wallet_usage", "", long},
		{"other_employment_status over 255", "other_employment_status", "", long},
		{"free text over 1000", "address1", "", strings.Repeat("x", 1001)},
		{"country_issuing_id_card over 2", "country_issuing_id_card", "", "BGR"},
		{"country_issuing_id_card not a country", "country_issuing_id_card", "", "XX"},
		{"country not a country", "country", "", "ZZ"},
		{"country in lower case", "country", "", "bg"},
		{"nationality not a country", "nationality", "", "UK"},
		{"additional_nationality element", "additional_nationality", "additional_nationality[1]", []string{"DE", "XK1"}},
		{"merchant under 32", "merchant", "", "abc"},
		{"merchant of another partner", "merchant", "", other.Merchant},
		{"merchant unknown", "merchant", "", kernel.NewToken()},
		{"email syntax", "email", "", "not-an-email"},
		{"registration_ip", "registration_ip", "", "999.1.1.1"},
		{"registration_lat", "registration_lat", "", "91.5"},
		{"mobile_phone", "mobile_phone", "", "call me"},
		{"first_name with digits", "first_name", "", "R2D2"},
		{"proof_of_identity_type value", "proof_of_identity_type", "", "Selfie"},
		{"risk_score value", "risk_score", "", "Extreme"},
		{"employment_status value", "employment_status", "", "Astronaut"},
		{"type value", "type", "", "vip"},
		{"client_monthly_net_income band", "client_monthly_net_income", "", "About 3000 EUR"},
		{"expected_incoming_monthly_eur band", "expected_incoming_monthly_eur", "", "About 3000 EUR"},
		{"expected_outgoing_monthly_eur band", "expected_outgoing_monthly_eur", "", "more than 15 000 EUR"},
		{"expected_monthly_frequency_incoming_transfer", "expected_monthly_frequency_incoming_transfer", "", "Daily"},
		{"occupation_position value", "occupation_position", "", "Wizard"},
		{"specified_us_person type", "specified_us_person", "", "no"},
		{"unknown field", "favourite_colour", "", "blue"},
		{"document file_type", "documents", "documents[0].file_type", doc(b64(pdfBytes), "exe", "passport")},
		{"document document_type", "documents", "documents[0].document_type", doc(b64(pdfBytes), "pdf", "passport-front")},
		{"document not base64", "documents", "documents[0].file", doc("%%%not base64%%%", "pdf", "passport")},
		{"document content is not its file_type", "documents", "documents[0].file", doc(b64(pngBytes), "pdf", "passport")},
		{"document text disguised as a jpg", "documents", "documents[0].file", doc(b64([]byte("hello, I am text")), "jpg", "passport")},
		{"document empty", "documents", "documents[0].file", doc("", "pdf", "passport")},
		{"document over 10 MiB", "documents", "documents[0].file", doc(b64(append(append([]byte{}, pdfBytes...), make([]byte, 10<<20)...)), "pdf", "passport")},
	}
	for _, c := range cases {
		body := map[string]any{"email": uniqueEmail(), "first_name": "Ana", "last_name": "Petrova", "merchant": p.Merchant}
		body[c.field] = c.v
		r := call(t, env, p, http.MethodPost, "/v2/users", "user_create", body)
		apptest.Expect(t, c.name, r, -3, http.StatusBadRequest)
		path := c.path
		if path == "" {
			path = c.field
		}
		found := false
		for _, e := range r.Errors {
			found = found || e.Field == path
		}
		if !found {
			t.Errorf("%s: no error names %s: %s", c.name, path, r)
		}
	}
	t.Run("every problem is reported at once", func(t *testing.T) {
		r := call(t, env, p, http.MethodPost, "/v2/users", "user_create", map[string]any{
			"email": "bad", "first_name": "Ana", "merchant": "short", "risk_score": "Extreme",
			"documents": doc(b64(pngBytes), "pdf", "passport")})
		apptest.Expect(t, "many problems", r, -3, http.StatusBadRequest)
		for _, f := range []string{"email", "last_name", "merchant", "risk_score", "documents[0].file"} {
			apptest.ExpectField(t, "many problems", r, f)
		}
	})
	t.Run("required fields", func(t *testing.T) {
		r := call(t, env, p, http.MethodPost, "/v2/users", "user_create", map[string]any{})
		for _, f := range []string{"email", "first_name", "last_name"} {
			apptest.ExpectField(t, "empty body", r, f)
		}
	})
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM users`); err != nil || n != 0 {
		t.Fatalf("refused requests created %d users (%v)", n, err)
	}
}

func TestUserDocumentsAreSniffedAndSealed(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	body := validUser(p)
	body["documents"] = []map[string]any{
		{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "bankstmt"},
		{"file": b64(pngBytes), "file_type": "png", "document_type": "selfie"},
		{"file": b64(jpegBytes), "file_type": "jpeg", "document_type": "passport"},
		{"file": b64(jpegBytes), "file_type": "jpg", "document_type": "idcard-front"},
	}
	token := createUser(t, env, p, body)
	var docs []struct {
		Type string `db:"content_type"`
		Size int    `db:"size"`
		Enc  []byte `db:"content_enc"`
	}
	if err := env.App.DB.Select(&docs, `SELECT content_type, size, content_enc FROM documents WHERE owner_token = $1 ORDER BY created_at`, token); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 4 || docs[0].Type != "application/pdf" || docs[1].Type != "image/png" || docs[2].Type != "image/jpeg" {
		t.Fatalf("documents: %+v", docs)
	}
	for _, d := range docs {
		if bytes.Contains(d.Enc, []byte("%PDF")) || bytes.Contains(d.Enc, []byte("PNG")) || bytes.Contains(d.Enc, []byte("JFIF")) {
			t.Fatal("document content stored in clear")
		}
	}
	if d := call(t, env, p, http.MethodGet, "/v2/users/"+token, "user_details", nil); d.Data["documents"] != nil {
		t.Fatalf("user_details must not return documents: %s", d)
	}
}

func TestUserDuplicateEmail(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	body := validUser(p)
	createUser(t, env, p, body)
	body["email"] = strings.ToUpper(body["email"].(string))
	apptest.Expect(t, "same e-mail in upper case", call(t, env, p, http.MethodPost, "/v2/users", "user_create", body), -2, http.StatusConflict)
	body["merchant"] = other.Merchant
	createUser(t, env, other, body) // another master merchant: another population

	t.Run("20 concurrent creates give exactly one user", func(t *testing.T) {
		email := uniqueEmail()
		var wg sync.WaitGroup
		codes := make([]int, 20)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each request differs (first name), so none is a replay.
				b := map[string]any{"email": email, "first_name": "Ana" + strings.Repeat("a", i), "last_name": "Petrova"}
				r := p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/users", Operation: "user_create", JSON: b})
				codes[i] = r.Code
			}()
		}
		wg.Wait()
		created, dup := 0, 0
		for _, c := range codes {
			switch c {
			case 0:
				created++
			case -2:
				dup++
			}
		}
		var n int
		_ = env.App.DB.Get(&n, `SELECT count(*) FROM users WHERE lower(email) = lower($1)`, email)
		if created != 1 || dup != 19 || n != 1 {
			t.Fatalf("created %d, duplicates %d, rows %d (codes %v)", created, dup, n, codes)
		}
	})
}

func TestUserIsolation(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	owner := env.NewPartner(t, emi.PartnerCreate{Name: "Owner"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	user := createUser(t, env, owner, validUser(owner))
	for _, r := range []apptest.Response{
		call(t, env, other, http.MethodGet, "/v2/users/"+user, "user_details", nil),
		call(t, env, other, http.MethodPut, "/v2/users/"+user, "user_update", map[string]any{"city": "X"}),
		call(t, env, other, http.MethodDelete, "/v2/users/"+user, "user_remove", nil),
		call(t, env, other, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user}),
		call(t, env, other, http.MethodGet, "/v2/users/not-a-token", "user_details", nil),
	} {
		apptest.Expect(t, "foreign user", r, 11002, http.StatusNotFound)
	}
	d := call(t, env, owner, http.MethodGet, "/v2/users/"+user, "user_details", nil)
	if d.Data["city"] != "Plovdiv" {
		t.Fatalf("the other partner changed the user: %s", d)
	}
}

func amlBody() map[string]any {
	return map[string]any{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE", "birthday": "1987-03-02"}
}

func kimBody() map[string]any {
	return map[string]any{"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"}
}

// complianceCtx is a compliance officer's context, for the review
// service calls the back office makes.
func complianceCtx() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(), StaffRoles: []string{string(emi.RoleCompliance)}})
}

func TestAMLCheck(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})

	clear := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", amlBody())
	apptest.Expect(t, "clear", clear, 0, http.StatusCreated)
	if clear.Data["status"] != "clear" || len(clear.Data["matches"].([]any)) != 0 || clear.Data["list_version"] == "" {
		t.Fatalf("clear: %s", clear)
	}

	match := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", kimBody())
	apptest.Expect(t, "match", match, 18001, http.StatusConflict)
	if match.Message != "service.aml.match.found" || match.Data["status"] != "match" || match.Data["token"] == nil {
		t.Fatalf("match: %s", match)
	}
	hits := match.Data["matches"].([]any)
	first := hits[0].(map[string]any)
	if !strings.Contains(strings.ToUpper(strings.ReplaceAll(first["name"].(string), ",", "")), "KIM JONG UN") || first["score"].(float64) < 0.8 {
		t.Fatalf("best hit: %v", first)
	}
	var version string
	if err := env.App.DB.Get(&version, `SELECT list_version FROM aml_checks WHERE token = $1`, match.Data["token"]); err != nil || version != env.App.Screener.Current().Version() {
		t.Fatalf("stored list version %q (%v)", version, err)
	}

	t.Run("validation", func(t *testing.T) {
		for _, c := range []struct {
			field string
			v     any
		}{{"birthday", "1987-13-45"}, {"birthday", "2999-01-01"}, {"nationality", "Sweden"}, {"last_name", ""}, {"first_name", 7}, {"extra", "x"}} {
			b := amlBody()
			b[c.field] = c.v
			r := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", b)
			apptest.Expect(t, "aml_check "+c.field, r, 11001, http.StatusBadRequest)
			apptest.ExpectField(t, "aml_check "+c.field, r, c.field)
		}
	})

	t.Run("a false positive is remembered for the person and the entry", func(t *testing.T) {
		token := match.Data["token"].(string)
		c, err := env.App.AML.Get(complianceCtx(), token)
		if err != nil {
			t.Fatal(err)
		}
		// A false positive on a hit scoring 0.9 or more takes two people;
		// one officer's decision leaves the check open.
		officer, second := complianceCtx(), complianceCtx()
		twoPerson := 0
		for _, h := range c.Hits {
			if _, err := env.App.AML.Decide(officer, token, emi.HitDecision{N: h.N, Decision: emi.HitFalsePositive, Reason: "different person, checked passport"}); err != nil {
				t.Fatal(err)
			}
			if h.Score >= emi.TwoPersonHitScore {
				twoPerson++
			}
		}
		if twoPerson == 0 {
			t.Fatal("Kim Jong Un scored no hit of 0.9 or more")
		}
		c, _ = env.App.AML.Get(complianceCtx(), token)
		if c.Status != emi.AMLMatch || c.OpenHits() != twoPerson {
			t.Fatalf("one officer's false positives closed the check: %s, %d open", c.Status, c.OpenHits())
		}
		for _, h := range c.Hits {
			if h.Pending() {
				if _, err := env.App.AML.Decide(officer, token, emi.HitDecision{N: h.N, Decision: emi.HitFalsePositive, Reason: "confirming my own"}); !errors.Is(err, emi.ErrFourEyes) {
					t.Fatalf("the proposer confirmed their own false positive: %v", err)
				}
				if _, err := env.App.AML.Decide(second, token, emi.HitDecision{N: h.N, Decision: emi.HitFalsePositive, Reason: "agree"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		c, _ = env.App.AML.Get(complianceCtx(), token)
		if c.Status != emi.AMLCleared {
			t.Fatalf("status %s after every hit was a false positive", c.Status)
		}
		var evs int
		_ = env.App.DB.Get(&evs, `SELECT count(*) FROM events WHERE type = 'aml_check.reviewed' AND resource_token = $1`, token)
		if evs != 1 {
			t.Fatalf("aml_check.reviewed events: %d", evs)
		}
		again := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", kimBody())
		apptest.Expect(t, "same person again", again, 0, http.StatusCreated)
		if again.Data["status"] != "clear" {
			t.Fatalf("again: %s", again)
		}
		var suppressed int
		_ = env.App.DB.Get(&suppressed, `SELECT count(*) FROM aml_hits WHERE check_token = $1 AND suppressed`, again.Data["token"])
		if suppressed != len(c.Hits) {
			t.Fatalf("suppressed %d of %d hits", suppressed, len(c.Hits))
		}
		// Another partner's customer of the same name is not covered.
		o := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
		apptest.Expect(t, "other partner", call(t, env, o, http.MethodPost, "/v1/aml", "aml_check", kimBody()), 18001, http.StatusConflict)
	})

	t.Run("review rules", func(t *testing.T) {
		m := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", map[string]any{"first_name": "Alexander", "last_name": "Lukashenko"})
		apptest.Expect(t, "lukashenko", m, 18001, http.StatusConflict)
		token := m.Data["token"].(string)
		if _, err := env.App.AML.Decide(complianceCtx(), token, emi.HitDecision{N: 1, Decision: emi.HitTrueMatch}); !errorsIs(err, emi.ErrReviewValidation) {
			t.Fatalf("decision without reason: %v", err)
		}
		auditor := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(), StaffRoles: []string{"auditor"}})
		if _, err := env.App.AML.Decide(auditor, token, emi.HitDecision{N: 1, Decision: emi.HitTrueMatch, Reason: "is him"}); !errorsIs(err, emi.ErrForbidden) {
			t.Fatalf("auditor decided: %v", err)
		}
		c, err := env.App.AML.Decide(complianceCtx(), token, emi.HitDecision{N: 1, Decision: emi.HitTrueMatch, Reason: "photo and birthday agree"})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range c.Hits[1:] {
			c, err = env.App.AML.Decide(complianceCtx(), token, emi.HitDecision{N: h.N, Decision: emi.HitFalsePositive, Reason: "another entry"})
			if err != nil {
				t.Fatal(err)
			}
		}
		if c.Status != emi.AMLConfirmed {
			t.Fatalf("status %s after a true match", c.Status)
		}
		if _, err := env.App.AML.Decide(complianceCtx(), token, emi.HitDecision{N: 1, Decision: emi.HitFalsePositive, Reason: "changed my mind"}); !errorsIs(err, emi.ErrReviewClosed) {
			t.Fatalf("decision on a closed check: %v", err)
		}
		// A confirmed check cannot back a user.
		r := call(t, env, p, http.MethodPost, "/v2/users", "user_create", map[string]any{"email": uniqueEmail(), "first_name": "Alexander", "last_name": "Lukashenko", "aml": token})
		apptest.Expect(t, "user with a confirmed check", r, -3, http.StatusBadRequest)
		apptest.ExpectField(t, "user with a confirmed check", r, "aml")
	})
}

func errorsIs(err error, target *emi.Error) bool {
	e := emi.AsError(err)
	return e != nil && e.Is(target)
}

func TestAMLWithoutLists(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	r := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", amlBody())
	apptest.Expect(t, "no list loaded", r, 18000, http.StatusServiceUnavailable)
	if r.Message != "services.general.invalid_processor" {
		t.Fatalf("message %q", r.Message)
	}
	// A change of identity cannot be screened: refused, nothing changed (it
	// would leave the new identity unscreened); other fields still change.
	user := createUser(t, env, p, validUser(p))
	ren := call(t, env, p, http.MethodPut, "/v2/users/"+user, "user_update", map[string]any{"last_name": "Bout"})
	apptest.Expect(t, "rename without lists", ren, 18000, http.StatusServiceUnavailable)
	if d := call(t, env, p, http.MethodGet, "/v2/users/"+user, "user_details", nil); d.Data["last_name"] != "Velikova" {
		t.Fatalf("a refused rename changed the user: %s", d)
	}
	apptest.Expect(t, "change of city without lists",
		call(t, env, p, http.MethodPut, "/v2/users/"+user, "user_update", map[string]any{"city": "Varna"}), 0, http.StatusOK)
}

func TestUserWithAMLToken(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "O"})
	a := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", amlBody())
	apptest.Expect(t, "aml_check", a, 0, http.StatusCreated)
	aml := a.Data["token"].(string)
	person := func(extra map[string]any) map[string]any {
		b := map[string]any{"email": uniqueEmail(), "first_name": "Elin", "last_name": "Sandqvist", "birthday": "1987-03-02", "aml": aml}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	u := createUser(t, env, p, person(map[string]any{"first_name": "ELIN", "last_name": "Sandqvist"}))
	if d := call(t, env, p, http.MethodGet, "/v2/users/"+u, "user_details", nil); d.Data["aml"] != aml {
		t.Fatalf("user_details aml: %s", d)
	}
	noBirthday := person(nil)
	delete(noBirthday, "birthday")
	createUser(t, env, p, noBirthday) // no birthday on the user: names decide
	otherAML := call(t, env, other, http.MethodPost, "/v1/aml", "aml_check", amlBody()).Data["token"].(string)
	match := call(t, env, p, http.MethodPost, "/v1/aml", "aml_check", kimBody()).Data["token"].(string)
	for name, b := range map[string]map[string]any{
		"unknown token":        person(map[string]any{"aml": kernel.NewToken()}),
		"another partner's":    person(map[string]any{"aml": otherAML}),
		"another person":       person(map[string]any{"first_name": "Anna"}),
		"another birthday":     person(map[string]any{"birthday": "1987-03-03"}),
		"a check with a match": person(map[string]any{"aml": match, "first_name": "Kim", "last_name": "Jong Un", "birthday": "1984-01-08"}),
		"not a token":          person(map[string]any{"aml": "x"}),
	} {
		r := call(t, env, p, http.MethodPost, "/v2/users", "user_create", b)
		apptest.Expect(t, name, r, -3, http.StatusBadRequest)
		apptest.ExpectField(t, name, r, "aml")
	}
}

func TestKYCInit(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))

	r := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	apptest.Expect(t, "kyc_init", r, 0, http.StatusCreated)
	url := r.Data["url"].(string)
	if r.Data["status"] != "pending" || r.Data["user"] != user || !strings.HasPrefix(url, env.Server.URL+"/kyc/") || len(url) < len(env.Server.URL)+40 {
		t.Fatalf("kyc_init: %s", r)
	}
	again := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	apptest.Expect(t, "second kyc_init", again, 0, http.StatusOK)
	if again.Data["token"] != r.Data["token"] || again.Data["url"] != url {
		t.Fatalf("a pending session must be returned again: %s", again)
	}
	var secretSeen int
	_ = env.App.DB.Get(&secretSeen, `SELECT count(*) FROM kyc_sessions WHERE position(convert_to($1, 'UTF8') in secret_enc) > 0`, url[strings.LastIndex(url, "/")+1:])
	if secretSeen != 0 {
		t.Fatal("the URL secret is stored in clear")
	}
	if d := call(t, env, p, http.MethodGet, "/v2/users/"+user, "user_details", nil); d.Data["kyc_status"] != "pending" {
		t.Fatalf("kyc_status: %s", d)
	}
	nf := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": kernel.NewToken()})
	apptest.Expect(t, "unknown user", nf, 11002, http.StatusNotFound)
	if nf.Message != "service.users.not_found" {
		t.Fatalf("message %q", nf.Message)
	}

	t.Run("an expired session is replaced", func(t *testing.T) {
		env.Clock.Advance(people.KYCSessionTTL)
		n := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
		apptest.Expect(t, "after expiry", n, 0, http.StatusCreated)
		if n.Data["token"] == r.Data["token"] {
			t.Fatal("an expired session came back")
		}
		var st string
		_ = env.App.DB.Get(&st, `SELECT status FROM kyc_sessions WHERE token = $1`, r.Data["token"])
		if st != "expired" {
			t.Fatalf("old session %s", st)
		}
		r = n
	})
	t.Run("review, rejection lets a new session start, approval ends it", func(t *testing.T) {
		secret := r.Data["url"].(string)[len(env.Server.URL)+len("/kyc/"):]
		up := emi.KYCUpload{Kind: "passport", Consent: true, Front: jpegBytes, Selfie: pngBytes}
		if _, err := env.App.KYC.Submit(context.Background(), secret, up); err != nil {
			t.Fatal(err)
		}
		same := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
		apptest.Expect(t, "while submitted", same, 0, http.StatusOK)
		if same.Data["status"] != "submitted" || same.Data["token"] != r.Data["token"] {
			t.Fatalf("while submitted: %s", same)
		}
		if _, err := env.App.KYC.Decide(complianceCtx(), r.Data["token"].(string), emi.KYCDecision{Reason: "photo is blurred", InternalNote: "selfie does not match the document photo"}); err != nil {
			t.Fatal(err)
		}
		n := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
		apptest.Expect(t, "after rejection", n, 0, http.StatusCreated)
		secret = n.Data["url"].(string)[len(env.Server.URL)+len("/kyc/"):]
		up.Kind, up.Back = "idcard", jpegBytes
		if _, err := env.App.KYC.Submit(context.Background(), secret, up); err != nil {
			t.Fatal(err)
		}
		if _, err := env.App.KYC.Decide(complianceCtx(), n.Data["token"].(string), emi.KYCDecision{Approve: true, Reason: "documents and selfie agree"}); err != nil {
			t.Fatal(err)
		}
		if d := call(t, env, p, http.MethodGet, "/v2/users/"+user, "user_details", nil); d.Data["kyc_status"] != "approved" {
			t.Fatalf("kyc_status: %s", d)
		}
		done := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
		apptest.Expect(t, "after approval", done, 19001, http.StatusConflict)
		var kinds []string
		if err := env.App.DB.Select(&kinds, `SELECT convert_from(body, 'UTF8')::jsonb->'data'->>'kyc_status' FROM events
			WHERE type = 'user.kyc_updated' AND resource_token = $1 ORDER BY seq`, user); err != nil {
			t.Fatal(err)
		}
		if strings.Join(kinds, ",") != "pending,expired,pending,submitted,rejected,pending,submitted,approved" {
			t.Fatalf("user.kyc_updated events: %v", kinds)
		}
	})
}

func TestKYCUploadChecks(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	r := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	secret := r.Data["url"].(string)[len(env.Server.URL)+len("/kyc/"):]
	_, err := env.App.KYC.Submit(context.Background(), secret, emi.KYCUpload{Kind: "idcard", Front: []byte("plain text"), Selfie: pdfBytes})
	e := emi.AsError(err)
	if !e.Is(emi.ErrKYCUploadInvalid) {
		t.Fatalf("bad upload: %v", err)
	}
	fields := map[string]bool{}
	for _, f := range e.Fields {
		fields[f.Field] = true
	}
	for _, f := range []string{"consent", "front", "back", "selfie"} {
		if !fields[f] {
			t.Errorf("no error for %s: %v", f, e.Fields)
		}
	}
	if _, err := env.App.KYC.Submit(context.Background(), "no-such-secret-but-long-enough-xxxx", emi.KYCUpload{}); !errorsIs(err, emi.ErrKYCLinkInvalid) {
		t.Fatalf("unknown link: %v", err)
	}
	var st string
	_ = env.App.DB.Get(&st, `SELECT status FROM kyc_sessions WHERE token = $1`, r.Data["token"])
	if st != "pending" {
		t.Fatalf("a refused upload moved the session to %s", st)
	}
}

// TestKYCInternalNoteNeverLeaves: a KYC decision stores a partner-facing
// reason and an internal note; the partner reads the reason
// (user.kyc_updated, events_list) and never the note (no API answer, no
// event), while the service keeps both and the audit row has the note.
func TestKYCInternalNoteNeverLeaves(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	user := createUser(t, env, p, validUser(p))
	r := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	apptest.Expect(t, "kyc_init", r, 0, http.StatusCreated)
	session := r.Data["token"].(string)
	secret := r.Data["url"].(string)[len(env.Server.URL)+len("/kyc/"):]
	if _, err := env.App.KYC.Submit(context.Background(), secret, emi.KYCUpload{Kind: "passport", Consent: true, Front: jpegBytes, Selfie: pngBytes}); err != nil {
		t.Fatal(err)
	}
	const reason = "We could not verify the identity document"
	const note = "Document number is on the lost-and-stolen register; SAR filed, do not tell the customer"

	t.Run("a rejection needs an internal note, and a note has a bound", func(t *testing.T) {
		for _, d := range []emi.KYCDecision{{Reason: reason}, {Reason: reason, InternalNote: "  "},
			{Reason: reason, InternalNote: strings.Repeat("n", 4001)}, {Approve: true, Reason: reason, InternalNote: strings.Repeat("n", 4001)}} {
			_, err := env.App.KYC.Decide(complianceCtx(), session, d)
			if e := emi.AsError(err); !e.Is(emi.ErrReviewValidation) || len(e.Fields) != 1 || e.Fields[0].Field != "internal_note" {
				t.Fatalf("Decide(%v, note of %d): %v", d.Approve, len(d.InternalNote), err)
			}
		}
	})
	t.Run("the service stores both", func(t *testing.T) {
		s, err := env.App.KYC.Decide(complianceCtx(), session, emi.KYCDecision{Reason: " " + reason + " ", InternalNote: note})
		if err != nil {
			t.Fatal(err)
		}
		if s.Reason != reason || s.InternalNote != note || s.Status != emi.KYCRejected {
			t.Fatalf("decided session: %q / %q / %s", s.Reason, s.InternalNote, s.Status)
		}
		var stored, storedNote string
		if err := env.App.DB.QueryRow(`SELECT reason, internal_note FROM kyc_sessions WHERE token = $1`, session).Scan(&stored, &storedNote); err != nil {
			t.Fatal(err)
		}
		if stored != reason || storedNote != note {
			t.Fatalf("stored %q / %q", stored, storedNote)
		}
		var audited int
		_ = env.App.DB.Get(&audited, `SELECT count(*) FROM audit_log WHERE action = 'kyc.review' AND resource_token = $1
			AND changes->>'internal_note' = $2`, session, note)
		if audited != 1 {
			t.Fatalf("%d audit rows carry the internal note, want 1", audited)
		}
	})
	t.Run("the partner sees the reason and never the note", func(t *testing.T) {
		leaks := func(what string, raw []byte) {
			t.Helper()
			if strings.Contains(string(raw), "SAR") || strings.Contains(string(raw), "lost-and-stolen") {
				t.Fatalf("%s carries the internal note: %s", what, raw)
			}
		}
		d := call(t, env, p, http.MethodGet, "/v2/users/"+user, "user_details", nil)
		apptest.Expect(t, "user_details", d, 0, http.StatusOK)
		leaks("user_details", d.Raw)
		n := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
		apptest.Expect(t, "kyc_init after the rejection", n, 0, http.StatusCreated)
		leaks("kyc_init", n.Raw)
		var bodies [][]byte
		if err := env.App.DB.Select(&bodies, `SELECT body FROM events WHERE partner_id = $1 AND type = 'user.kyc_updated'`, p.ID); err != nil {
			t.Fatal(err)
		}
		sawReason := false
		for _, b := range bodies {
			leaks("a user.kyc_updated webhook body", b)
			var ev struct {
				Data map[string]any `json:"data"`
			}
			_ = json.Unmarshal(b, &ev)
			sawReason = sawReason || (ev.Data["kyc_status"] == "rejected" && ev.Data["reason"] == reason)
		}
		if !sawReason {
			t.Fatal("no user.kyc_updated carries the partner-facing reason")
		}
		env.Clock.Advance(time.Second)
		l := p.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/events/1/100", Operation: "events_list"})
		apptest.Expect(t, "events_list", l, 0, http.StatusOK)
		leaks("events_list", l.Raw)
		if !strings.Contains(string(l.Raw), reason) {
			t.Fatal("events_list does not carry the partner-facing reason")
		}
	})
}

// bombPNG is a PNG header declaring w × h pixels (valid signature, IHDR and
// CRC), followed by an empty IEND: a few dozen bytes that a decoder would
// turn into w × h × 4 bytes of pixels.
func bombPNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		c := append([]byte(typ), data...)
		b.Write(c)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(c))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk("IHDR", ihdr)
	chunk("IEND", nil)
	return b.Bytes()
}

// bombJPEG is a JPEG whose frame header (SOF0) declares w × h pixels.
func bombJPEG(w, h uint16) []byte {
	return []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
		0xff, 0xc0, 0x00, 0x11, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3,
		1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1, 0xff, 0xd9}
}

// TestUploadsOverThePixelBudgetAreRefused: the hosted KYC page (and the
// API's documents) accepted a 60,000 × 60,000 pixel image, a decompression
// bomb for whatever decodes it later. Now an image whose header declares
// more than 40 megapixels is refused from the header alone, before any
// decoding, with the field named, and nothing is stored; an image within
// the budget is accepted. On the old code both bombs were accepted and
// stored.
func TestUploadsOverThePixelBudgetAreRefused(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	docs := func() int {
		var n int
		_ = env.App.DB.Get(&n, `SELECT count(*) FROM documents`)
		return n
	}
	before := docs()
	for name, d := range map[string]map[string]any{
		"PNG 60000 × 60000":  {"file": b64(bombPNG(60000, 60000)), "file_type": "png", "document_type": "selfie"},
		"JPEG 60000 × 60000": {"file": b64(bombJPEG(60000, 60000)), "file_type": "jpg", "document_type": "passport"},
		"PNG 8000 × 5001":    {"file": b64(bombPNG(8000, 5001)), "file_type": "png", "document_type": "selfie"},
	} {
		body := validUser(p)
		body["documents"] = []map[string]any{d}
		r := call(t, env, p, http.MethodPost, "/v2/users", "user_create", body)
		apptest.Expect(t, name, r, -3, http.StatusBadRequest)
		apptest.ExpectField(t, name, r, "documents[0].file")
	}
	if docs() != before {
		t.Fatal("a refused image was stored")
	}
	body := validUser(p)
	body["documents"] = []map[string]any{{"file": b64(bombPNG(8000, 5000)), "file_type": "png", "document_type": "selfie"}}
	apptest.Expect(t, "40 megapixels exactly", call(t, env, p, http.MethodPost, "/v2/users", "user_create", body), 0, http.StatusCreated)

	// The hosted KYC page.
	user := createUser(t, env, p, validUser(p))
	k := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	secret := k.Data["url"].(string)[len(env.Server.URL)+len("/kyc/"):]
	before = docs()
	_, err := env.App.KYC.Submit(context.Background(), secret, emi.KYCUpload{Kind: "passport", Consent: true,
		Front: bombJPEG(60000, 60000), Selfie: bombPNG(60000, 60000)})
	e := emi.AsError(err)
	if e == nil || e.Code != emi.ErrKYCUploadInvalid.Code || len(e.Fields) != 2 {
		t.Fatalf("hosted KYC upload of two bombs: %v", err)
	}
	if docs() != before {
		t.Fatal("the hosted page stored a refused image")
	}
	if _, err := env.App.KYC.Submit(context.Background(), secret, emi.KYCUpload{Kind: "passport", Consent: true,
		Front: jpegBytes, Selfie: bombPNG(4000, 3000)}); err != nil {
		t.Fatalf("photos within the budget: %v", err)
	}
}
