package portal_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/people"
	"emi/web/portal/frame"
)

// testImage is a small real picture, so that content sniffing and browsers
// accept it.
func testImage() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 24, 16))
	for x := 0; x < 24; x++ {
		for y := 0; y < 16; y++ {
			img.Set(x, y, color.RGBA{uint8(10 * x), uint8(15 * y), 180, 255})
		}
	}
	return img
}

func pngFile(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, testImage()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegFile(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, testImage(), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Two people of the brief: one on the sanctions lists, one clear.
var (
	kimQuery  = map[string]any{"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"}
	elinQuery = map[string]any{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE", "birthday": "1987-03-02"}
)

var emailSeq atomic.Int64

func uniqueEmail(name string) string {
	return fmt.Sprintf("%s-%d-%d@example.com", name, time.Now().UnixNano(), emailSeq.Add(1))
}

// api sends one signed partner request, a second after the previous one,
// so identical requests are never refused as replays.
func api(t *testing.T, env *apptest.Env, p *apptest.Partner, method, path, op string, body any) apptest.Response {
	t.Helper()
	env.Clock.Advance(time.Second)
	return p.Do(t, apptest.Request{Method: method, Path: path, Operation: op, JSON: body})
}

// createPerson creates a user through user_create and returns its token.
func createPerson(t *testing.T, env *apptest.Env, p *apptest.Partner, fields map[string]any) string {
	t.Helper()
	body := map[string]any{"email": uniqueEmail("person")}
	for k, v := range fields {
		body[k] = v
	}
	r := api(t, env, p, http.MethodPost, "/v2/users", "user_create", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("user_create: %s", r)
	}
	return r.Data["token"].(string)
}

// screen runs aml_check and returns the check's token and status.
func screen(t *testing.T, env *apptest.Env, p *apptest.Partner, q map[string]any) (string, string) {
	t.Helper()
	r := api(t, env, p, http.MethodPost, "/v1/aml", "aml_check", q)
	if r.Code != 0 && r.Code != emi.ErrAMLMatchFound.Code {
		t.Fatalf("aml_check: %s", r)
	}
	return r.Data["token"].(string), r.Data["status"].(string)
}

// startKYC runs kyc_init and returns the session token and the URL secret.
func startKYC(t *testing.T, env *apptest.Env, p *apptest.Partner, user string) (string, string) {
	t.Helper()
	r := api(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("kyc_init: %s", r)
	}
	u, err := url.Parse(r.Data["url"].(string))
	if err != nil || !strings.HasPrefix(u.Path, "/kyc/") {
		t.Fatalf("kyc_init url %v: %v", r.Data["url"], err)
	}
	return r.Data["token"].(string), strings.TrimPrefix(u.Path, "/kyc/")
}

// submitKYC sends a passport photo and a selfie as the person would.
func submitKYC(t *testing.T, env *apptest.Env, secret string) {
	t.Helper()
	if _, err := env.App.KYC.Submit(sysCtx(), secret, emi.KYCUpload{Kind: "passport", Consent: true, Front: pngFile(t), Selfie: jpegFile(t)}); err != nil {
		t.Fatalf("submit KYC: %v", err)
	}
}

// peopleFixture is a person with a document (the profile's), a clear AML
// check behind the person, a matching AML check (Kim) and a submitted KYC
// session.
type peopleFixture struct {
	user, doc, clearCheck, check, session, secret string
}

func newPeopleFixture(t *testing.T, env *apptest.Env, p *apptest.Partner) peopleFixture {
	t.Helper()
	var f peopleFixture
	f.clearCheck, _ = screen(t, env, p, elinQuery)
	fields := map[string]any{"aml": f.clearCheck, "mobile_phone": "+46701234567", "id_passport_number": "SE1234567",
		"documents": []map[string]string{{"file": base64.StdEncoding.EncodeToString(pngFile(t)), "file_type": "png", "document_type": "idcard-front"}}}
	for k, v := range elinQuery {
		fields[k] = v
	}
	f.user = createPerson(t, env, p, fields)
	if err := env.App.DB.Get(&f.doc, `SELECT token FROM documents WHERE owner_token = $1`, f.user); err != nil {
		t.Fatal(err)
	}
	var status string
	f.check, status = screen(t, env, p, kimQuery)
	if status != string(emi.AMLMatch) {
		t.Fatalf("Kim Jong Un screened %s, want match", status)
	}
	f.session, f.secret = startKYC(t, env, p, f.user)
	submitKYC(t, env, f.secret)
	return f
}

var fieldErrorRE = regexp.MustCompile(`class="field-error" id="([a-z_]+)-error"`)

// fieldErrorsIn lists the fields a page marks as wrong.
func fieldErrorsIn(body string) []string {
	var out []string
	for _, m := range fieldErrorRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestPeopleScreens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pf := f.people
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	cs := f.env.NewBrowser()
	cs.SignIn(t, apptest.CSEmail)

	t.Run("the list finds people by name, e-mail, phone and token", func(t *testing.T) {
		var email string
		if err := f.env.App.DB.Get(&email, `SELECT email FROM users WHERE token = $1`, pf.user); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"sandq", "Elin Sandqvist", email, "46 70 123 45 67", pf.user} {
			p := admin.Get(t, "/backoffice/users?q="+url.QueryEscape(q))
			if p.Status != http.StatusOK || !strings.Contains(p.Body, `href="/backoffice/users/`+pf.user+`"`) {
				t.Errorf("search %q: HTTP %d, the person is not listed", q, p.Status)
			}
		}
		if p := admin.Get(t, "/backoffice/users?q=nobody-by-this-name"); strings.Contains(p.Body, pf.user) || !strings.Contains(p.Body, "No people match") {
			t.Error("a search without match lists people")
		}
	})
	t.Run("the KYC filter keeps only people with that status", func(t *testing.T) {
		if p := admin.Get(t, "/backoffice/users?kyc_status=submitted"); !strings.Contains(p.Body, pf.user) {
			t.Error("the submitted person is not under kyc_status=submitted")
		}
		if p := admin.Get(t, "/backoffice/users?kyc_status=approved"); strings.Contains(p.Body, pf.user) {
			t.Error("the submitted person is listed under kyc_status=approved")
		}
	})
	t.Run("a too long query is a field error, not a 500", func(t *testing.T) {
		p := admin.Get(t, "/backoffice/users?q="+strings.Repeat("x", 201))
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="q-error"`) {
			t.Fatalf("HTTP %d, errors %v", p.Status, fieldErrorsIn(p.Body))
		}
	})
	t.Run("removed people stay listed with a removed badge", func(t *testing.T) {
		gone := createPerson(t, f.env, f.partner, map[string]any{"first_name": "Ulla", "last_name": "Gone"})
		if r := api(t, f.env, f.partner, http.MethodDelete, "/v2/users/"+gone, "user_remove", nil); r.Status != http.StatusOK {
			t.Fatalf("user_remove: %s", r)
		}
		p := admin.Get(t, "/backoffice/users?q=ulla")
		row := regexp.MustCompile(`(?s)<tr data-testid="user-row">.*?</tr>`).FindString(p.Body)
		if !strings.Contains(row, gone) || !strings.Contains(row, ">removed<") {
			t.Fatalf("the removed person's row has no removed badge: %s", row)
		}
		if d := admin.Get(t, "/backoffice/users/"+gone); d.Status != http.StatusOK || !strings.Contains(d.Body, ">removed<") {
			t.Fatalf("removed person's page: HTTP %d", d.Status)
		}
	})
	t.Run("keyset paging walks back through every person once", func(t *testing.T) {
		for i := 0; i < 52; i++ {
			createPerson(t, f.env, f.partner, map[string]any{"first_name": "Page", "last_name": "Person" + string(rune('a'+i/26)) + string(rune('a'+i%26))})
		}
		seen := map[string]bool{}
		next := "/backoffice/users?q=page+person"
		pages := 0
		link := regexp.MustCompile(`href="(/backoffice/users\?[^"]*before_token=[^"]*)"[^>]*>Older`)
		rowRE := regexp.MustCompile(`href="/backoffice/users/([0-9a-f-]{36})"`)
		for next != "" {
			pages++
			p := admin.Get(t, strings.ReplaceAll(next, "&amp;", "&"))
			if p.Status != http.StatusOK {
				t.Fatalf("page %d: HTTP %d", pages, p.Status)
			}
			for _, m := range rowRE.FindAllStringSubmatch(p.Body, -1) {
				if seen[m[1]] {
					t.Fatalf("person %s listed twice", m[1])
				}
				seen[m[1]] = true
			}
			next = ""
			if m := link.FindStringSubmatch(p.Body); m != nil {
				next = m[1]
			}
		}
		if len(seen) != 52 || pages != 2 {
			t.Fatalf("%d people on %d pages, want 52 on 2", len(seen), pages)
		}
	})
	t.Run("htmx gets the list without the frame", func(t *testing.T) {
		p := admin.Get(t, "/backoffice/users?q=sandq", "HX-Request", "true")
		if strings.Contains(p.Body, "<html") || !strings.Contains(p.Body, `id="users-list"`) || !strings.Contains(p.Body, pf.user) {
			t.Fatal("the htmx answer is not the bare list")
		}
	})
	t.Run("the person's page shows profile, documents, checks, sessions and history", func(t *testing.T) {
		p := admin.Get(t, "/backoffice/users/"+pf.user)
		if p.Status != http.StatusOK {
			t.Fatalf("HTTP %d", p.Status)
		}
		var sum []byte
		if err := f.env.App.DB.Get(&sum, `SELECT sha256 FROM documents WHERE token = $1`, pf.doc); err != nil {
			t.Fatal(err)
		}
		for what, want := range map[string]string{
			"a profile group":           `data-testid="group-Identity document"`,
			"the passport number":       "SE1234567",
			"the document link":         `href="/backoffice/documents/` + pf.doc + `"`,
			"the image inline":          `<img src="/backoffice/documents/` + pf.doc + `"`,
			"the document's sha prefix": fmt.Sprintf("%x", sum)[:12],
			"the clear AML check":       `href="/backoffice/aml/` + pf.clearCheck + `"`,
			"the KYC session":           `href="/backoffice/kyc/` + pf.session + `"`,
			"the history":               `data-testid="user-audit"`,
			"the creation in history":   ">user.create<",
		} {
			if !strings.Contains(p.Body, want) {
				t.Errorf("the page lacks %s (%s)", what, want)
			}
		}
		if strings.Contains(p.Body, "Accounts and cards") {
			t.Error("the page has an accounts and cards section")
		}
		if p.Header.Get("Cache-Control") != "no-store" || !strings.Contains(p.Body, `hx-history="false"`) {
			t.Error("the person's page may be kept in a cache or htmx history")
		}
	})
	t.Run("customer service sees the person but not the audit history", func(t *testing.T) {
		p := cs.Get(t, "/backoffice/users/"+pf.user)
		if p.Status != http.StatusOK || strings.Contains(p.Body, `data-testid="user-audit"`) {
			t.Fatalf("HTTP %d, audit shown: %v", p.Status, strings.Contains(p.Body, `data-testid="user-audit"`))
		}
	})
	t.Run("an unknown person is the 404 page", func(t *testing.T) {
		for _, tok := range []string{"00000000-0000-4000-8000-000000000000", "not-a-token"} {
			if p := admin.Get(t, "/backoffice/users/"+tok); p.Status != http.StatusNotFound || !strings.Contains(p.Body, "no such person") {
				t.Errorf("%s: HTTP %d", tok, p.Status)
			}
		}
	})
	t.Run("the global search links people to their page", func(t *testing.T) {
		p := admin.Get(t, "/backoffice/search?q=sandqvist")
		if !strings.Contains(p.Body, `href="/backoffice/users/`+pf.user+`"`) {
			t.Fatal("the search result does not link to the person")
		}
	})
}

// checkDocumentHeaders checks the answer of /documents/{doc}.
func checkDocumentHeaders(t *testing.T, p apptest.Page) {
	t.Helper()
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
		"Content-Type":            "image/png",
		"Content-Disposition":     `inline; filename="idcard-front.png"`,
		"X-Frame-Options":         "DENY",
	} {
		if got := p.Header.Get(h); got != want {
			t.Errorf("document %s = %q, want %q", h, got, want)
		}
	}
}

func TestDocumentIsServedSandboxedAndEveryViewIsAudited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.env.NewBrowser()
	b.SignIn(t, apptest.AuditorEmail)
	countViews := func() int {
		var n int
		if err := f.env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action = 'document.view' AND resource_token = $1 AND actor_type = 'staff'`, f.people.doc); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := countViews()
	p := b.Get(t, "/backoffice/documents/"+f.people.doc)
	if p.Status != http.StatusOK {
		t.Fatalf("HTTP %d", p.Status)
	}
	checkDocumentHeaders(t, p)
	if !bytes.Equal([]byte(p.Body), pngFile(t)) {
		t.Fatal("the content is not the uploaded file")
	}
	if after := countViews(); after != before+1 {
		t.Fatalf("document.view rows %d -> %d, want one more", before, after)
	}
	if p := b.Get(t, "/backoffice/documents/00000000-0000-4000-8000-000000000000"); p.Status != http.StatusNotFound {
		t.Fatalf("unknown document: HTTP %d", p.Status)
	}
	if p := f.env.NewBrowser().Get(t, "/backoffice/documents/"+f.people.doc); p.Status != http.StatusSeeOther {
		t.Fatalf("anonymous: HTTP %d, want the redirect to sign-in", p.Status)
	}
}

// openHits returns the numbers of a check's hits that wait for a decision.
func openHits(t *testing.T, env *apptest.Env, check string) []int {
	t.Helper()
	var ns []int
	if err := env.App.DB.Select(&ns, `SELECT n FROM aml_hits WHERE check_token = $1 AND NOT suppressed AND decision IS NULL ORDER BY n`, check); err != nil {
		t.Fatal(err)
	}
	return ns
}

func checkStatus(t *testing.T, env *apptest.Env, check string) string {
	t.Helper()
	var st string
	if err := env.App.DB.Get(&st, `SELECT status FROM aml_checks WHERE token = $1`, check); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestAMLReview(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	check := f.people.check
	officer := f.env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)
	page := "/backoffice/aml/" + check
	hits := openHits(t, f.env, check)
	if len(hits) == 0 {
		t.Fatal("the Kim Jong Un check has no open hit")
	}

	t.Run("the queue lists the check, and the dashboard and navigation count it", func(t *testing.T) {
		p := officer.Get(t, "/backoffice/aml")
		if !strings.Contains(p.Body, `href="/backoffice/aml/`+check+`"`) || !strings.Contains(p.Body, "Fixture Partner") {
			t.Fatal("the queue does not list the check with its partner")
		}
		if strings.Contains(p.Body, f.people.clearCheck) {
			t.Fatal("the queue lists a clear check")
		}
		if p := officer.Get(t, "/backoffice/aml?status=clear"); !strings.Contains(p.Body, f.people.clearCheck) {
			t.Fatal("the clear tab does not list the clear check")
		}
		d := officer.Get(t, "/backoffice/")
		if !regexp.MustCompile(`data-testid="tile-AML checks to review"><div class="n">1<`).MatchString(d.Body) {
			t.Error("the dashboard does not count the waiting check")
		}
		if !regexp.MustCompile(`href="/backoffice/aml"[^>]*>\s*AML reviews\s*<span class="nav-count"[^>]*>1<`).MatchString(d.Body) {
			t.Error("the navigation has no queue count")
		}
	})
	t.Run("the check shows the query beside each hit with its breakdown", func(t *testing.T) {
		p := officer.Get(t, page)
		if p.Status != http.StatusOK {
			t.Fatalf("HTTP %d", p.Status)
		}
		for _, want := range []string{"Kim", "Jong Un", "1984-01-08", "KP", "Token alignment", "name score", "(match)", "Programmes", "DPRK"} {
			if !strings.Contains(p.Body, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		if n := strings.Count(p.Body, `data-testid="decide-`); n != len(hits) {
			t.Errorf("%d decision forms for %d open hits", n, len(hits))
		}
		auditor := f.env.NewBrowser()
		auditor.SignIn(t, apptest.AuditorEmail)
		if p := auditor.Get(t, page); p.Status != http.StatusOK || strings.Contains(p.Body, `data-testid="decide-`) {
			t.Error("the auditor is offered decision forms")
		}
	})
	t.Run("a decision without a reason is refused and changes nothing", func(t *testing.T) {
		before := rowCounts(t, f.env)
		p := officer.Post(t, page+"/decide", url.Values{"n": {fmt.Sprint(hits[0])}, "decision": {emi.HitFalsePositive}, "reason": {"  "}})
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="reason-error"`) {
			t.Fatalf("HTTP %d, errors %v", p.Status, fieldErrorsIn(p.Body))
		}
		if !strings.Contains(p.Body, "every decision needs a reason") {
			t.Error("no banner from the messages")
		}
		if after := rowCounts(t, f.env); !sameCounts(before, after) {
			t.Fatalf("row counts changed: %v -> %v", before, after)
		}
		if len(openHits(t, f.env, check)) != len(hits) || checkStatus(t, f.env, check) != "match" {
			t.Fatal("the refused decision changed the check")
		}
	})
	t.Run("each hit decided a false positive clears the check", func(t *testing.T) {
		for _, n := range hits {
			p := officer.Post(t, page+"/decide", url.Values{"n": {fmt.Sprint(n)}, "decision": {emi.HitFalsePositive}, "reason": {"Born 1984 in Pyongyang, our customer is a namesake in Oslo"}})
			if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, page) {
				t.Fatalf("hit %d: HTTP %d to %q", n, p.Status, p.Location)
			}
		}
		// Hits scoring 0.9 or more wait for a second person.
		var pending []int
		if err := f.env.App.DB.Select(&pending, `SELECT n FROM aml_hits WHERE check_token = $1 AND score >= $2 ORDER BY n`, check, emi.TwoPersonHitScore); err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			t.Fatal("no hit of 0.9 or more: the two-person rule is not exercised")
		}
		if checkStatus(t, f.env, check) != "match" {
			t.Fatalf("one officer's false positives closed the check: %s", checkStatus(t, f.env, check))
		}
		if p := officer.Get(t, page); strings.Count(p.Body, "false positive proposed: needs a second person") < len(pending) ||
			strings.Contains(p.Body, `data-testid="decide-`) || strings.Count(html.UnescapeString(p.Body), people.WhyNotHitMine) < len(pending) {
			t.Fatal("the proposer's page does not show the hits waiting for a second person, or offers to confirm them, or does not say why")
		}
		newStaff(t, f.env, "second.compliance@aml.test", "Second Compliance Officer", emi.RoleCompliance)
		second := f.env.NewBrowser()
		second.SignIn(t, "second.compliance@aml.test")
		for i, n := range pending {
			p := second.Post(t, page+"/decide", url.Values{"n": {fmt.Sprint(n)}, "decision": {emi.HitFalsePositive}, "reason": {"agree: namesake"}})
			if p.Status != http.StatusSeeOther {
				t.Fatalf("confirmation of hit %d: HTTP %d", n, p.Status)
			}
			if want := map[bool]string{true: "cleared", false: "match"}[i == len(pending)-1]; checkStatus(t, f.env, check) != want {
				t.Fatalf("after confirming hit %d the check is %s, want %s", n, checkStatus(t, f.env, check), want)
			}
		}
		p := officer.Get(t, page)
		if !regexp.MustCompile(`data-testid="check-status">\s*<span class="badge ok">cleared<`).MatchString(p.Body) {
			t.Fatal("the page does not show the check cleared")
		}
		if strings.Count(p.Body, `data-testid="hit-decision"`) != len(hits) || !strings.Contains(p.Body, "namesake in Oslo") {
			t.Fatal("the decisions are not shown with their reason")
		}
		if strings.Contains(p.Body, `data-testid="decide-`) {
			t.Fatal("decision forms remain on a cleared check")
		}
		var name string
		if err := f.env.App.DB.Get(&name, `SELECT name FROM staff_users WHERE email = $1`, apptest.ComplianceEmail); err != nil {
			t.Fatal(err)
		}
		auditor := f.env.NewBrowser()
		auditor.SignIn(t, apptest.AuditorEmail)
		// Each hit names its reviewer (and second person); the check names
		// whoever closed it: the second officer.
		if a := auditor.Get(t, page); strings.Count(a.Body, "by <span class=\"mono\">"+name) != len(hits) ||
			strings.Count(a.Body, "confirmed by Second Compliance Officer") != len(pending) ||
			!strings.Contains(a.Body, "by <span class=\"mono\">Second Compliance Officer</span>") {
			t.Fatalf("another reader does not see the reviewer's name %q on the check and each hit", name)
		}
	})
	t.Run("a second decision on a decided hit is refused as closed", func(t *testing.T) {
		p := officer.Post(t, page+"/decide", url.Values{"n": {fmt.Sprint(hits[0])}, "decision": {emi.HitTrueMatch}, "reason": {"changed my mind"}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("HTTP %d", p.Status)
		}
		after := officer.Get(t, p.Location)
		if !strings.Contains(after.Body, portalMessage(emi.ErrReviewClosed)) {
			t.Fatal("no 'already decided' message")
		}
		if checkStatus(t, f.env, check) != "cleared" {
			t.Fatal("the closed check changed")
		}
	})
	t.Run("a remembered false positive is shown suppressed on the next check", func(t *testing.T) {
		again, status := screen(t, f.env, f.partner, kimQuery)
		if status != "clear" {
			t.Fatalf("the second screening of the same person is %s, want clear", status)
		}
		p := officer.Get(t, "/backoffice/aml/"+again)
		if !strings.Contains(p.Body, "suppressed: remembered false positive") || !strings.Contains(p.Body, `class="panel hit suppressed"`) {
			t.Fatal("the suppressed hits are not shown as such")
		}
	})
	t.Run("a true match confirms the check", func(t *testing.T) {
		other := f.env.NewPartner(t, emi.PartnerCreate{Name: "Other Partner"})
		c, _ := screen(t, f.env, other, kimQuery)
		ns := openHits(t, f.env, c)
		for i, n := range ns {
			d := emi.HitFalsePositive
			if i == 0 {
				d = emi.HitTrueMatch
			}
			if p := officer.Post(t, "/backoffice/aml/"+c+"/decide", url.Values{"n": {fmt.Sprint(n)}, "decision": {d}, "reason": {"date and place of birth agree"}}); p.Status != http.StatusSeeOther {
				t.Fatalf("hit %d: HTTP %d", n, p.Status)
			}
		}
		if st := checkStatus(t, f.env, c); st != "confirmed" {
			t.Fatalf("status %s, want confirmed", st)
		}
		if p := officer.Get(t, "/backoffice/aml/"+c); !strings.Contains(p.Body, ">true match<") {
			t.Fatal("the true match is not shown")
		}
	})
}

func TestKYCReview(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	officer := f.env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)
	page := "/backoffice/kyc/" + f.people.session
	kycOf := func(session string) (string, string) {
		var s, u string
		if err := f.env.App.DB.QueryRow(`SELECT k.status, u.kyc_status FROM kyc_sessions k JOIN users u ON u.token = k.user_token WHERE k.token = $1`, session).Scan(&s, &u); err != nil {
			t.Fatal(err)
		}
		return s, u
	}

	t.Run("the queue lists the submitted session", func(t *testing.T) {
		p := officer.Get(t, "/backoffice/kyc")
		if !strings.Contains(p.Body, `href="/backoffice/kyc/`+f.people.session+`"`) || !strings.Contains(p.Body, "Elin Sandqvist") || !strings.Contains(p.Body, ">passport<") {
			t.Fatal("the queue does not list the session with the person and document kind")
		}
	})
	t.Run("the session shows the documents inline beside the person's data", func(t *testing.T) {
		p := officer.Get(t, page)
		if p.Status != http.StatusOK {
			t.Fatalf("HTTP %d", p.Status)
		}
		if n := strings.Count(p.Body, `data-testid="document-image"`); n != 2 {
			t.Errorf("%d inline images, want 2 (passport and selfie)", n)
		}
		for _, want := range []string{"1987-03-02", "SE1234567", ">SE<", `data-testid="kyc-decide"`} {
			if !strings.Contains(p.Body, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
	})
	t.Run("a decision without a reason is refused", func(t *testing.T) {
		p := officer.Post(t, page+"/decide", url.Values{"decision": {"approve"}, "reason": {""}})
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="reason-error"`) {
			t.Fatalf("HTTP %d, errors %v", p.Status, fieldErrorsIn(p.Body))
		}
		if s, _ := kycOf(f.people.session); s != "submitted" {
			t.Fatalf("session %s after a refused decision", s)
		}
	})
	t.Run("approval with a reason approves the session and the person", func(t *testing.T) {
		p := officer.Post(t, page+"/decide", url.Values{"decision": {"approve"}, "reason": {"Passport photo matches the selfie"}})
		if p.Status != http.StatusSeeOther || p.Location != page {
			t.Fatalf("HTTP %d to %q", p.Status, p.Location)
		}
		if s, u := kycOf(f.people.session); s != "approved" || u != "approved" {
			t.Fatalf("session %s, person %s", s, u)
		}
		after := officer.Get(t, page)
		if !strings.Contains(after.Body, "Passport photo matches the selfie") || strings.Contains(after.Body, `data-testid="kyc-decide"`) {
			t.Fatal("the page does not show the decision, or still offers one")
		}
		if p := officer.Post(t, page+"/decide", url.Values{"decision": {"reject"}, "reason": {"second thoughts"}, "internal_note": {"second thoughts"}}); !strings.Contains(officer.Get(t, p.Location).Body, portalMessage(emi.ErrReviewClosed)) {
			t.Fatal("a second decision is not refused as closed")
		}
	})
	t.Run("rejection with a reason and an internal note rejects; only the reason leaves emi", func(t *testing.T) {
		user := createPerson(t, f.env, f.partner, map[string]any{"first_name": "Rolf", "last_name": "Berg"})
		session, secret := startKYC(t, f.env, f.partner, user)
		submitKYC(t, f.env, secret)
		const reason = "We could not verify the identity document"
		const note = "Selfie matches an OFAC SDN photo; reported to the MLRO, do not tell the customer"
		page := "/backoffice/kyc/" + session
		if p := officer.Get(t, page); !strings.Contains(p.Body, `name="internal_note"`) {
			t.Fatal("the decision form has no internal note beside the reason")
		}
		// A rejection with only the text that goes to the partner, and no
		// internal note: refused, nothing decided.
		p := officer.Post(t, page+"/decide", url.Values{"decision": {"reject"}, "reason": {reason}})
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="internal_note-error"`) {
			t.Fatalf("rejection without internal note: HTTP %d, errors %v", p.Status, fieldErrorsIn(p.Body))
		}
		if s, _ := kycOf(session); s != "submitted" {
			t.Fatalf("session %s after a refused rejection", s)
		}
		p = officer.Post(t, page+"/decide", url.Values{"decision": {"reject"}, "reason": {reason}, "internal_note": {note}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("HTTP %d", p.Status)
		}
		if s, u := kycOf(session); s != "rejected" || u != "rejected" {
			t.Fatalf("session %s, person %s", s, u)
		}
		shown := officer.Get(t, page)
		if !strings.Contains(shown.Body, `data-testid="session-reason">`+html.EscapeString(reason)) ||
			!strings.Contains(shown.Body, `data-testid="session-internal-note">`+html.EscapeString(note)) {
			t.Fatal("the review page does not show both the partner's reason and the internal note")
		}
		var audited int
		if err := f.env.App.DB.Get(&audited, `SELECT count(*) FROM audit_log WHERE action = 'kyc.review' AND resource_token = $1
			AND changes->>'internal_note' = $2 AND changes->>'reason' = $3`, session, note, reason); err != nil || audited != 1 {
			t.Fatalf("audit rows with the note and the reason: %d %v", audited, err)
		}
		// The partner's view: the webhook payload and every event body.
		var bodies []string
		if err := f.env.App.DB.Select(&bodies, `SELECT convert_from(body, 'UTF8') FROM events WHERE partner_id = $1`, f.partner.ID); err != nil {
			t.Fatal(err)
		}
		sawReason := false
		for _, b := range bodies {
			if strings.Contains(b, "OFAC") || strings.Contains(b, "MLRO") {
				t.Fatalf("an event sent to the partner carries the internal note: %s", b)
			}
			sawReason = sawReason || (strings.Contains(b, `"rejected"`) && strings.Contains(b, reason))
		}
		if !sawReason {
			t.Fatal("user.kyc_updated does not carry the partner-facing reason")
		}
		if h := f.env.NewBrowser().Get(t, "/kyc/"+secret); !strings.Contains(h.Body, `data-testid="kyc-rejected"`) || strings.Contains(h.Body, "OFAC") {
			t.Fatal("the hosted page does not tell the person, or tells them the internal note")
		}
	})
}

// upload is a hosted-page form.
type upload struct {
	kind, consent         string
	front, back, selfie   []byte
	frontName, selfieName string
}

func (u upload) request(t *testing.T, target string, headers ...string) *http.Request {
	t.Helper()
	var body bytes.Buffer
	w := newMultipart(&body)
	if u.kind != "" {
		w.field("kind", u.kind)
	}
	if u.consent != "" {
		w.field("consent", u.consent)
	}
	w.file("front", orName(u.frontName, "front.png"), u.front)
	w.file("back", "back.png", u.back)
	w.file("selfie", orName(u.selfieName, "selfie.jpg"), u.selfie)
	w.close()
	req, err := http.NewRequest(http.MethodPost, target, &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.contentType())
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

func orName(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestHostedKYCPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	user := createPerson(t, f.env, f.partner, map[string]any{"first_name": "Maja", "last_name": "Lind"})
	session, secret := startKYC(t, f.env, f.partner, user)
	link := f.env.Server.URL + "/kyc/" + secret
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(rq *http.Request) apptest.Page {
		t.Helper()
		res, err := client.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return apptest.Page{Status: res.StatusCode, Header: res.Header, Body: b.String(), Location: res.Header.Get("Location")}
	}
	get := func(u string) apptest.Page {
		t.Helper()
		rq, _ := http.NewRequest(http.MethodGet, u, nil)
		return send(rq)
	}
	state := func() (string, string, int) {
		var s, u string
		var docs int
		if err := f.env.App.DB.QueryRow(`SELECT k.status, u.kyc_status, (SELECT count(*) FROM documents WHERE owner_token = k.token)
			FROM kyc_sessions k JOIN users u ON u.token = k.user_token WHERE k.token = $1`, session).Scan(&s, &u, &docs); err != nil {
			t.Fatal(err)
		}
		return s, u, docs
	}

	t.Run("the page is a public HTML form that keeps the link private", func(t *testing.T) {
		p := get(link)
		if p.Status != http.StatusOK || p.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("HTTP %d %s", p.Status, p.Header.Get("Content-Type"))
		}
		for h, want := range map[string]string{"Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
			if got := p.Header.Get(h); got != want {
				t.Errorf("%s = %q, want %q", h, got, want)
			}
		}
		if csp := p.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("CSP %q", csp)
		}
		if inlineScript.MatchString(p.Body) {
			t.Errorf("inline script or style: %q", inlineScript.FindString(p.Body))
		}
		if len(p.Header.Values("Set-Cookie")) != 0 {
			t.Error("the public page sets a cookie")
		}
		for _, want := range []string{"Hello Maja Lind", "Fixture Partner", `enctype="multipart/form-data"`,
			`name="front" accept="image/*,application/pdf" capture="environment"`, `name="selfie" accept="image/*" capture="user"`,
			`name="consent"`, "How long:", "Who sees it:", `name="kind" value="idcard"`} {
			if !strings.Contains(p.Body, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		if strings.Contains(p.Body, "/backoffice/") {
			t.Error("the public page links into the back office")
		}
	})
	t.Run("an unknown link is a 404 page", func(t *testing.T) {
		for _, s := range []string{strings.Repeat("x", 32), "short", secret + "x"} {
			p := get(f.env.Server.URL + "/kyc/" + s)
			if p.Status != http.StatusNotFound || !strings.Contains(p.Body, "not valid or has expired") || p.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("%s: HTTP %d", s, p.Status)
			}
		}
	})
	t.Run("a file that is not a photo is refused next to its field and the form is kept", func(t *testing.T) {
		p := send(upload{kind: "idcard", consent: "yes", front: []byte("this is only text, not a photo"), back: pngFile(t),
			selfie: []byte("plain text again")}.request(t, link))
		if p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("HTTP %d", p.Status)
		}
		for _, field := range []string{"front", "selfie"} {
			if !strings.Contains(p.Body, `data-testid="`+field+`-error"`) {
				t.Errorf("no message next to %s", field)
			}
		}
		if strings.Contains(p.Body, `data-testid="back-error"`) {
			t.Error("the good back photo is marked wrong")
		}
		if !regexp.MustCompile(`value="idcard" checked`).MatchString(p.Body) || !regexp.MustCompile(`name="consent" value="yes" checked`).MatchString(p.Body) {
			t.Error("the choices made are not kept")
		}
		if s, u, docs := state(); s != "pending" || u != "pending" || docs != 0 {
			t.Fatalf("after a refused upload: session %s, person %s, %d documents", s, u, docs)
		}
	})
	t.Run("without consent nothing is stored", func(t *testing.T) {
		p := send(upload{kind: "passport", front: pngFile(t), selfie: jpegFile(t)}.request(t, link))
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `data-testid="consent-error"`) {
			t.Fatalf("HTTP %d", p.Status)
		}
		if s, _, docs := state(); s != "pending" || docs != 0 {
			t.Fatalf("session %s, %d documents", s, docs)
		}
	})
	t.Run("a file over 10 MiB is refused", func(t *testing.T) {
		big := append(pngFile(t), make([]byte, 10<<20)...)
		p := send(upload{kind: "passport", consent: "yes", front: big, selfie: jpegFile(t)}.request(t, link))
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "over 10 MiB") {
			t.Fatalf("HTTP %d", p.Status)
		}
	})
	t.Run("a cross-site post is refused", func(t *testing.T) {
		p := send(upload{kind: "passport", consent: "yes", front: pngFile(t), selfie: jpegFile(t)}.request(t, link, "Sec-Fetch-Site", "cross-site"))
		if p.Status != http.StatusForbidden {
			t.Fatalf("HTTP %d", p.Status)
		}
		if s, _, _ := state(); s != "pending" {
			t.Fatalf("session %s", s)
		}
	})
	t.Run("real photos submit the session and the page thanks the person", func(t *testing.T) {
		p := send(upload{kind: "passport", consent: "yes", front: jpegFile(t), selfie: pngFile(t)}.request(t, link,
			"Sec-Fetch-Site", "same-origin", "Origin", f.env.Server.URL))
		if p.Status != http.StatusSeeOther || p.Location != "/kyc/"+secret {
			t.Fatalf("HTTP %d to %q: %s", p.Status, p.Location, fieldErrorsIn(p.Body))
		}
		if s, u, docs := state(); s != "submitted" || u != "submitted" || docs != 2 {
			t.Fatalf("session %s, person %s, %d documents", s, u, docs)
		}
		after := get(link)
		if after.Status != http.StatusOK || !strings.Contains(after.Body, `data-testid="kyc-thanks"`) || strings.Contains(after.Body, `data-testid="kyc-form"`) {
			t.Fatal("the page does not thank the person")
		}
		again := send(upload{kind: "passport", consent: "yes", front: jpegFile(t), selfie: pngFile(t)}.request(t, link))
		if again.Status != http.StatusConflict || !strings.Contains(again.Body, `data-testid="kyc-thanks"`) {
			t.Fatalf("a second upload: HTTP %d", again.Status)
		}
		if _, _, docs := state(); docs != 2 {
			t.Fatalf("%d documents after a second upload", docs)
		}
	})
	t.Run("the back office is not reachable through the public page", func(t *testing.T) {
		if p := get(f.env.Server.URL + "/kyc/"); p.Status != http.StatusNotFound {
			t.Fatalf("/kyc/: HTTP %d", p.Status)
		}
	})
}

func TestSanctionsScreen(t *testing.T) {
	t.Parallel()
	down := httptestServer(t, http.StatusServiceUnavailable)
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.SanctionsURLs = [5]string{down + "/sdn.csv", down + "/alt.csv", down + "/un.xml", down + "/eu.xml", down + "/uk.csv"}
	}})
	env.SeedStaff(t)
	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	officer := env.NewBrowser()
	officer.SignIn(t, apptest.ComplianceEmail)

	p := admin.Get(t, "/backoffice/sanctions")
	if p.Status != http.StatusOK || !strings.Contains(p.Body, `data-testid="sanctions-lists"`) || !strings.Contains(p.Body, `data-testid="sanctions-update"`) {
		t.Fatalf("admin: HTTP %d, lists or update button missing", p.Status)
	}
	st := env.App.Screener.Current()
	if !strings.Contains(p.Body, st.Version()) {
		t.Error("the version is not shown")
	}
	if o := officer.Get(t, "/backoffice/sanctions"); o.Status != http.StatusOK || strings.Contains(o.Body, `data-testid="sanctions-update"`) {
		t.Fatal("compliance is offered the update button")
	}

	res := admin.Post(t, "/backoffice/sanctions/update", url.Values{})
	if res.Status != http.StatusSeeOther || res.Location != "/backoffice/sanctions" {
		t.Fatalf("update: HTTP %d to %q", res.Status, res.Location)
	}
	after := admin.Get(t, "/backoffice/sanctions")
	if !strings.Contains(after.Body, portalMessage(emi.ErrScreeningUpdate)) {
		t.Fatal("no failure message")
	}
	if !regexp.MustCompile(`(?s)data-testid="sanctions-updates".*badge bad">failed<`).MatchString(after.Body) {
		t.Fatal("the failed attempt is not listed")
	}
	if env.App.Screener.Current() != st {
		t.Fatal("a failed update replaced the lists")
	}
	var outcome string
	if err := env.App.DB.Get(&outcome, `SELECT outcome FROM audit_log WHERE action = 'sanctions.update' AND actor_type = 'staff'`); err != nil || outcome != string(emi.OutcomeFailure) {
		t.Fatalf("audit of the update: %q %v", outcome, err)
	}
}

// multipartBody writes a form as a browser does: an empty file input is a
// part with an empty file name.
type multipartBody struct {
	w *multipart.Writer
}

func newMultipart(b *bytes.Buffer) *multipartBody { return &multipartBody{w: multipart.NewWriter(b)} }

func (m *multipartBody) field(name, value string) { _ = m.w.WriteField(name, value) }

func (m *multipartBody) file(name, filename string, content []byte) {
	if content == nil {
		filename = ""
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, name, filename))
	h.Set("Content-Type", "application/octet-stream")
	part, _ := m.w.CreatePart(h)
	_, _ = part.Write(content)
}

func (m *multipartBody) close()              { _ = m.w.Close() }
func (m *multipartBody) contentType() string { return m.w.FormDataContentType() }

// portalMessage is the text the back office shows for e, as HTML.
func portalMessage(e *emi.Error) string { return html.EscapeString(frame.Message(e)) }

// httptestServer answers every request with status; it returns its URL.
func httptestServer(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(srv.Close)
	return srv.URL
}
