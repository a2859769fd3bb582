package browser_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// photo is a real picture (a gradient with a frame), so that the service's
// content sniffing and the browser both take it for what it is.
func photo(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		for y := 0; y < h; y++ {
			c := color.RGBA{uint8(255 * x / w), uint8(255 * y / h), 160, 255}
			if x < 4 || y < 4 || x >= w-4 || y >= h-4 {
				c = color.RGBA{20, 40, 90, 255}
			}
			img.Set(x, y, c)
		}
	}
	return img
}

// photoFiles writes a PNG and a JPEG into a temporary directory and returns
// their paths.
func photoFiles(t *testing.T) (pngPath, jpegPath string) {
	t.Helper()
	dir := t.TempDir()
	var p, j bytes.Buffer
	if err := png.Encode(&p, photo(320, 200)); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&j, photo(240, 320), nil); err != nil {
		t.Fatal(err)
	}
	pngPath, jpegPath = filepath.Join(dir, "document.png"), filepath.Join(dir, "selfie.jpg")
	if err := os.WriteFile(pngPath, p.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpegPath, j.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return pngPath, jpegPath
}

// partnerCall sends one signed request a second after the previous one (an
// identical request in the same second would be a replay).
func partnerCall(t *testing.T, env *apptest.Env, p *apptest.Partner, path, op string, body any) apptest.Response {
	t.Helper()
	env.Clock.Advance(time.Second)
	return p.Do(t, apptest.Request{Method: http.MethodPost, Path: path, Operation: op, JSON: body})
}

// newPersonWithKYC creates a person through the API and starts KYC; it
// returns the person's token, the session token and the URL secret.
func newPersonWithKYC(t *testing.T, env *apptest.Env, p *apptest.Partner, first, last string) (user, session, secret string) {
	t.Helper()
	r := partnerCall(t, env, p, "/v2/users", "user_create", map[string]any{"first_name": first, "last_name": last,
		"email":    fmt.Sprintf("%s.%s.%d@example.com", strings.ToLower(first), strings.ToLower(last), time.Now().UnixNano()),
		"birthday": "1991-06-14", "nationality": "SE", "country": "SE", "id_passport_number": "P9988776"})
	if r.Status != http.StatusCreated {
		t.Fatalf("user_create: %s", r)
	}
	user = r.Data["token"].(string)
	r = partnerCall(t, env, p, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	if r.Status != http.StatusCreated {
		t.Fatalf("kyc_init: %s", r)
	}
	u, err := url.Parse(r.Data["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return user, r.Data["token"].(string), strings.TrimPrefix(u.Path, "/kyc/")
}

// screenshot saves the page as test-artifacts/screens/<name>.png, beside
// the back office's screenshots.
func screenshot(b *tab, name string) {
	b.t.Helper()
	root, err := artifactDir()
	if err != nil {
		b.t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(root), "screens")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	img := run(b, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), img, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func kycStatus(t *testing.T, env *apptest.Env, session string) (string, string) {
	t.Helper()
	var s, u string
	if err := env.App.DB.QueryRow(`SELECT k.status, u.kyc_status FROM kyc_sessions k JOIN users u ON u.token = k.user_token WHERE k.token = $1`, session).Scan(&s, &u); err != nil {
		t.Fatal(err)
	}
	return s, u
}

// TestHostedKYCOnAPhone: a person opens the KYC link on a phone-sized
// screen, chooses an ID card, adds the photos, agrees and sends; the page
// fits the screen and then thanks them.
func TestHostedKYCOnAPhone(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Pocket Bank"})
	_, session, secret := newPersonWithKYC(t, env, p, "Saga", "Holm")
	docPath, selfiePath := photoFiles(t)

	b := newTab(t, env)
	b.do("phone screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait, chromedp.EmulateScale(3)))
	resp := b.openResponse("/kyc/" + secret)
	if resp.Status != http.StatusOK || header(resp, "Referrer-Policy") != "no-referrer" {
		t.Fatalf("HTTP %d, Referrer-Policy %q", resp.Status, header(resp, "Referrer-Policy"))
	}
	if h := b.text("h1"); h != "Hello Saga Holm" {
		t.Fatalf("heading %q", h)
	}
	fits := `document.documentElement.scrollWidth <= window.innerWidth`
	if !eval[bool](b, fits) {
		t.Fatalf("the page scrolls sideways: scrollWidth %v > innerWidth %v",
			eval[float64](b, `document.documentElement.scrollWidth`), eval[float64](b, `window.innerWidth`))
	}
	if w := eval[float64](b, `window.innerWidth`); w != 390 {
		t.Fatalf("viewport %v px wide, want 390", w)
	}
	// Passport is preselected: the back of an ID card is not asked for.
	if eval[bool](b, `document.querySelector('input[name=back]').offsetParent !== null`) {
		t.Fatal("the back photo is asked for a passport")
	}
	screenshot(b, "kyc-hosted-phone")

	b.do("choose the ID card", chromedp.Click(chromedp.CSS(`input[name=kind][value=idcard]`)))
	if !eval[bool](b, `document.querySelector('input[name=back]').offsetParent !== null`) {
		t.Fatal("the back photo is not asked for an ID card")
	}
	b.do("add the photos",
		chromedp.SetUploadFiles(chromedp.CSS(`input[name=front]`), []string{docPath}),
		chromedp.SetUploadFiles(chromedp.CSS(`input[name=back]`), []string{docPath}),
		chromedp.SetUploadFiles(chromedp.CSS(`input[name=selfie]`), []string{selfiePath}),
		chromedp.Click(chromedp.CSS(`input[name=consent]`)))
	if !eval[bool](b, fits) {
		t.Fatal("the filled form scrolls sideways")
	}
	if status := b.clickNav(`[data-testid="kyc-submit"]`); status != http.StatusOK {
		t.Fatalf("after sending: HTTP %d", status)
	}
	if p := b.path(); p != "/kyc/"+secret {
		t.Fatalf("after sending the browser is at %s", p)
	}
	if !strings.Contains(b.text(`[data-testid="kyc-thanks"]`), "Thank you") {
		t.Fatal("no thank-you after sending")
	}
	if !eval[bool](b, fits) {
		t.Fatal("the thank-you page scrolls sideways")
	}
	screenshot(b, "kyc-hosted-phone-thanks")
	if s, u := kycStatus(t, env, session); s != "submitted" || u != "submitted" {
		t.Fatalf("session %s, person %s", s, u)
	}
	var docs int
	if err := env.App.DB.Get(&docs, `SELECT count(*) FROM documents WHERE owner_token = $1`, session); err != nil || docs != 3 {
		t.Fatalf("%d documents stored (%v), want 3", docs, err)
	}
	for _, c := range b.consoleLines() {
		if isCSPMessage(c) || c.Kind == "exception" {
			t.Errorf("console: %s", c)
		}
	}
}

// TestAMLReviewInTheBrowser: a compliance officer opens the queue, opens
// the Kim Jong Un check, writes a reason and marks every hit a false
// positive; the check ends cleared.
func TestAMLReviewInTheBrowser(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Screening Partner"})
	r := partnerCall(t, env, p, "/v1/aml", "aml_check", map[string]any{"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"})
	if r.Code != emi.ErrAMLMatchFound.Code {
		t.Fatalf("aml_check: %s", r)
	}
	check := r.Data["token"].(string)

	b := newTab(t, env)
	b.signIn(env, apptest.ComplianceEmail)
	if b.count(`nav[aria-label="Main"] .nav-count`) == 0 {
		t.Error("the navigation shows no queue count")
	}
	b.open("/backoffice/aml")
	screenshot(b, "aml-queue")
	b.clickNav(`a[href="/backoffice/aml/` + check + `"]`)
	screenshot(b, "aml-check")
	forms := b.count(`form[data-testid^="decide-"]`)
	if forms == 0 {
		t.Fatal("no decision form on the check")
	}
	decideAll := func(b *tab, reason string) int {
		n := 0
		for b.count(`form[data-testid^="decide-"]`) > 0 {
			// Each decision reloads the page; the first open form is the next hit.
			form := `form[data-testid^="decide-"]`
			b.do("write the reason", sendKeys(form+` textarea[name=reason]`, reason))
			b.clickNav(form + ` [data-testid="false-positive"]`)
			n++
		}
		return n
	}
	if n := decideAll(b, "Namesake: our customer was born in Sweden in 1991"); n != forms {
		t.Fatalf("decided %d hits of %d", n, forms)
	}
	// Hits scoring 0.9 or more take a second person; the first officer's
	// page says so and offers them nothing more.
	if st := b.text(`[data-testid="check-status"]`); st != "match" {
		t.Fatalf("one officer's false positives left the check %q, want match", st)
	}
	screenshot(b, "aml-check-awaiting-second")
	newStaffMember(t, env, "second.compliance@aml.test", "Second Compliance Officer", emi.RoleCompliance)
	second := newTab(t, env)
	second.signIn(env, "second.compliance@aml.test")
	second.open("/backoffice/aml/" + check)
	if n := decideAll(second, "Agree: the passport shows 1991, Sweden"); n == 0 {
		t.Fatal("the second officer was offered no hit to confirm")
	}
	b = second
	if st := b.text(`[data-testid="check-status"]`); st != "cleared" {
		t.Fatalf("check status %q, want cleared", st)
	}
	if !strings.Contains(b.text("#flashes"), "cleared") {
		t.Errorf("flash %q does not say cleared", b.text("#flashes"))
	}
	if got := len(b.texts(`[data-testid="hit-decision"]`)); got != forms {
		t.Fatalf("%d decisions shown, want %d", got, forms)
	}
	screenshot(b, "aml-check-cleared")
}

// TestKYCReviewInTheBrowser: a compliance officer opens a submitted
// session, sees the photos, zooms one, approves with a reason and sees the
// session approved. The document itself opens in the browser despite its
// sandboxing CSP.
func TestKYCReviewInTheBrowser(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Review Partner"})
	user, session, secret := newPersonWithKYC(t, env, p, "Nils", "Ek")
	docPath, selfiePath := photoFiles(t)
	front, _ := os.ReadFile(docPath)
	selfie, _ := os.ReadFile(selfiePath)
	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	if _, err := env.App.KYC.Submit(sys, secret, emi.KYCUpload{Kind: "passport", Consent: true, Front: front, Selfie: selfie}); err != nil {
		t.Fatal(err)
	}

	b := newTab(t, env)
	b.signIn(env, apptest.ComplianceEmail)
	for _, pg := range []struct{ name, path string }{
		{"people", "/backoffice/users"},
		{"person", "/backoffice/users/" + user},
		{"sanctions", "/backoffice/sanctions"},
		{"kyc-queue", "/backoffice/kyc"},
	} {
		if status := b.open(pg.path); status != http.StatusOK {
			t.Fatalf("%s: HTTP %d", pg.path, status)
		}
		screenshot(b, pg.name)
	}
	b.clickNav(`a[href="/backoffice/kyc/` + session + `"]`)
	b.do("photos load", pollTrue(`Array.from(document.querySelectorAll('img.doc')).length === 2 &&
		Array.from(document.querySelectorAll('img.doc')).every(i => i.complete && i.naturalWidth > 0)`))
	b.do("zoom", chromedp.Click(chromedp.CSS(`img.doc`)))
	if !eval[bool](b, `document.querySelector('img.doc').classList.contains('zoomed')`) {
		t.Fatal("a click does not zoom the photo")
	}
	screenshot(b, "kyc-session")
	b.do("write the reason", sendKeys(`[data-testid="kyc-decide"] textarea[name=reason]`, "Photo page and selfie show the same person"))
	b.clickNav(`[data-testid="kyc-approve"]`)
	if st := b.text(`[data-testid="session-status"]`); st != "approved" {
		t.Fatalf("session status %q, want approved", st)
	}
	if !strings.Contains(b.text(`[data-testid="session-reason"]`), "same person") {
		t.Fatal("the reason is not shown")
	}
	if s, u := kycStatus(t, env, session); s != "approved" || u != "approved" {
		t.Fatalf("session %s, person %s", s, u)
	}

	// The document itself, opened as a page: the sandbox CSP still lets
	// Chrome show the image.
	var doc string
	if err := env.App.DB.Get(&doc, `SELECT token FROM documents WHERE owner_token = $1 AND document_type = 'passport'`, session); err != nil {
		t.Fatal(err)
	}
	resp := b.openResponse("/backoffice/documents/" + doc)
	if resp.Status != http.StatusOK || !strings.Contains(header(resp, "Content-Security-Policy"), "sandbox") {
		t.Fatalf("document: HTTP %d, CSP %q", resp.Status, header(resp, "Content-Security-Policy"))
	}
	b.do("the image renders", pollTrue(`document.images.length === 1 && document.images[0].complete && document.images[0].naturalWidth === 320`))
}
