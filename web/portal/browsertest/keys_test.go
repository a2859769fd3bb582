package browser_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// keyNav presses key and waits for the page it loads.
func (b *tab) keyNav(key string) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.KeyEvent(key))
	if err != nil || resp == nil {
		b.t.Fatalf("key %q: no page loaded (%v)", key, err)
	}
}

// TestKeyboardOnlyReviewInTheBrowser: a compliance officer works the KYC
// queue without a mouse: j / k move between rows, ? opens the shortcut
// help, n opens the next case, typing j and n into the reason does nothing
// but type, and a decision made with "and take the next case" (space on the
// checkbox, Enter on the button) lands on the next case. The old pages had
// no shortcuts: this test failed there.
func TestKeyboardOnlyReviewInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Keyboard Partner"})
	docPath, selfiePath := photoFiles(t)
	front, selfie := readFile(t, docPath), readFile(t, selfiePath)
	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	var sessions []string
	for _, name := range []string{"Ada", "Bo"} {
		_, session, secret := newPersonWithKYC(t, env, p, name, "Keys")
		if _, err := env.App.KYC.Submit(sys, secret, emi.KYCUpload{Kind: "passport", Consent: true, Front: front, Selfie: selfie}); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, session)
	}

	b := newTab(t, env)
	b.signIn(env, apptest.ComplianceEmail)
	b.open("/backoffice/kyc")
	b.do("j, j, k", chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("k"))
	if got := eval[int](b, `Array.from(document.querySelectorAll('table[data-queue] tbody tr')).findIndex(r => r.classList.contains('kb-current'))`); got != 0 {
		t.Fatalf("after j, j, k the current row is %d, want 0", got)
	}
	if !eval[bool](b, `document.activeElement.closest('tr.kb-current') !== null`) {
		t.Fatal("the current row's link does not have the focus (Enter would not open it)")
	}
	b.do("?", chromedp.KeyEvent("?"))
	if !eval[bool](b, `document.getElementById('kb-help').open`) {
		t.Fatal("? does not open the shortcut help")
	}
	screenshot(b, "keyboard-help")
	b.do("Escape", chromedp.KeyEvent("\x1b"))
	b.do("help closed", pollTrue(`!document.getElementById('kb-help').open`))

	b.keyNav("n")
	first := b.path()
	if !strings.HasPrefix(first, "/backoffice/kyc/") {
		t.Fatalf("n from the queue went to %s", first)
	}
	b.do("type a reason with j and n in it", sendKeys(`[data-testid="kyc-decide"] textarea[name=reason]`, "jn: photo matches"))
	if got := eval[string](b, `document.querySelector('[data-testid="kyc-decide"] textarea[name=reason]').value`); got != "jn: photo matches" || b.path() != first {
		t.Fatalf("typing in the reason: value %q, page %s", got, b.path())
	}
	b.do("tick and take the next case", chromedp.Focus(chromedp.CSS(`[data-testid="kyc-decide"] [data-testid="then-next"]`)), chromedp.KeyEvent(" "))
	b.do("focus approve", chromedp.Focus(chromedp.CSS(`[data-testid="kyc-approve"]`)))
	b.keyNav("\r")
	want := "/backoffice/kyc/" + sessions[0]
	if first == want {
		want = "/backoffice/kyc/" + sessions[1]
	}
	if b.path() != want {
		t.Fatalf("approve and take the next case landed on %s, want %s", b.path(), want)
	}
	if !strings.Contains(flashText(b), "This is the next case.") {
		t.Errorf("flash %q", flashText(b))
	}
	noCSPViolations(t, b)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path) // #nosec G304 -- the test's own temporary file
	if err != nil {
		t.Fatal(err)
	}
	return b
}
