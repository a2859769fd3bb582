package browser_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/staff"
)

// newStaffMember creates a staff user with the sandbox password and an
// enrolled TOTP secret, so signIn works for them as for sandbox users.
func newStaffMember(t *testing.T, env *apptest.Env, email, name string, role emi.Role) {
	t.Helper()
	created, err := env.App.Staff.Create(systemCtx(), emi.StaffCreate{Email: email, Name: name, Roles: []emi.Role{role},
		Password: staff.SandboxStaffPassword})
	if err != nil {
		t.Fatal(err)
	}
	u := created.User
	en, err := env.App.Staff.BeginEnrollment(systemCtx(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCodeCustom(en.Secret, env.Clock.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Staff.ConfirmEnrollment(systemCtx(), u.ID, code); err != nil {
		t.Fatal(err)
	}
}

// openAccountVia opens an account through account_create and returns its
// data.
func openAccountVia(t *testing.T, env *apptest.Env, p *apptest.Partner, body map[string]any) map[string]any {
	t.Helper()
	r := partnerCall(t, env, p, "/v2/accounts", "account_create", body)
	if r.Status != http.StatusCreated {
		t.Fatalf("account_create: %s", r)
	}
	return r.Data
}

// accountHolder creates Mara Velikova with an EUR account and a virtual
// account of it; it returns the EUR account and the virtual one.
func accountHolder(t *testing.T, env *apptest.Env, p *apptest.Partner) (eur, virtual map[string]any) {
	t.Helper()
	r := partnerCall(t, env, p, "/v2/users", "user_create", map[string]any{"first_name": "Mara", "last_name": "Velikova",
		"email": "mara.velikova@accounts.test"})
	if r.Status != http.StatusCreated {
		t.Fatalf("user_create: %s", r)
	}
	user := r.Data["token"].(string)
	eur = openAccountVia(t, env, p, map[string]any{"program": "account_eur", "user": user, "alias": "salary"})
	openAccountVia(t, env, p, map[string]any{"program": "account_gbp", "user": user})
	virtual = openAccountVia(t, env, p, map[string]any{"program": "account_eur", "user": user, "main": eur["token"]})
	return eur, virtual
}

func firstIBAN(acc map[string]any) string {
	return acc["balances"].([]any)[0].(map[string]any)["iban"].(string)
}

func dbAccountStatus(t *testing.T, env *apptest.Env, token string) string {
	t.Helper()
	var st string
	if err := env.App.DB.Get(&st, `SELECT status FROM accounts WHERE token = $1`, token); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAccountSearchAndBlockInTheBrowser: customer service finds an account
// by its IBAN, opens it, copies the IBAN and blocks the account with a
// reason; the status and the history show the block.
func TestAccountSearchAndBlockInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Accounts Partner"})
	eur, _ := accountHolder(t, env, p)
	tok, iban := eur["token"].(string), firstIBAN(eur)

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	if nav := b.navLinks(); !slices.Contains(nav, "Accounts") || !slices.Contains(nav, "Programs") {
		t.Fatalf("customer service navigation %q", nav)
	}
	b.clickNav(`nav[aria-label="Main"] a[href="/backoffice/accounts"]`)
	if n := b.count(`[data-testid="account-row"]`); n != 3 {
		t.Fatalf("%d accounts listed before the search, want 3", n)
	}
	b.typeInto(`[data-testid="accounts-search"] input[name="q"]`, iban[:4]+" "+iban[4:8]+" "+iban[8:])
	b.clickNav(`[data-testid="accounts-search"] button[type="submit"]`)
	rows := b.texts(`[data-testid="account-row"]`)
	if len(rows) != 1 || !strings.Contains(rows[0], "Mara Velikova") || !strings.Contains(rows[0], iban) || !strings.Contains(rows[0], "active") {
		t.Fatalf("search rows %q", rows)
	}
	screenshot(b, "accounts-search")
	b.clickNav(`[data-testid="account-row"] a[href="/backoffice/accounts/` + tok + `"]`)
	if got := b.text(`[data-testid="account-status"]`); got != "active" {
		t.Fatalf("status %q", got)
	}
	if got := b.text(`[data-testid="ident-IBAN"]`); got != iban {
		t.Fatalf("IBAN %q", got)
	}

	// The copy buttons are shown by the script and copy the value.
	if n := eval[int](b, `document.querySelectorAll("button[data-copy-text]:not([hidden])").length`); n < 2 {
		t.Fatalf("%d visible copy buttons", n)
	}
	b.do("click copy", chromedp.Click(chromedp.CSS(`button[data-copy-text="`+iban+`"]`)))
	b.do("wait for the copy", pollTrue(`["Copied", "Copy failed"].includes(document.querySelector('button[data-copy-text="`+iban+`"]').textContent)`))

	// Blocking needs a reason, behind a second click.
	if n := eval[bool](b, `document.querySelector('[data-testid="block-form"] button').checkVisibility()`); n {
		t.Fatal("the block button is visible before the details are opened")
	}
	b.do("open the block form", chromedp.Click(chromedp.CSS(`[data-testid="block-details"] > summary`)))
	b.waitVisible(`[data-testid="block-form"] textarea[name="reason"]`)
	b.do("write the reason", sendKeys(`[data-testid="block-form"] textarea[name="reason"]`, "Card reported stolen by the customer"))
	screenshot(b, "account-block-form")
	b.clickNav(`[data-testid="block"]`)
	if f := flashText(b); !strings.Contains(f, "Account blocked") {
		t.Fatalf("flash %q", f)
	}
	if got := b.text(`[data-testid="account-status"]`); got != "blocked" {
		t.Fatalf("status after the block %q", got)
	}
	hist := b.texts(`[data-testid="history-row"]`)
	if len(hist) != 2 || !strings.Contains(hist[0], "activeblocked") || !strings.Contains(hist[0], "Card reported stolen by the customer") ||
		!strings.Contains(hist[0], "Sandbox Customer Service (you)") {
		t.Fatalf("history %q", hist)
	}
	if n := b.count(`[data-testid="unblock-form"]`); n != 1 {
		t.Fatal("no unblock form on the blocked account")
	}
	if st := dbAccountStatus(t, env, tok); st != emi.AccountBlocked {
		t.Fatalf("database status %s", st)
	}
	screenshot(b, "account-blocked")
	noCSPViolations(t, b)
}

// TestAccountFourEyesTerminationInTheBrowser: one customer-service agent
// asks for a termination with a reason and cannot approve it; a second
// agent sees who asked and why, and approves: the account and its virtual
// account end terminated.
func TestAccountFourEyesTerminationInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Accounts Partner"})
	eur, virtual := accountHolder(t, env, p)
	tok, vtok := eur["token"].(string), virtual["token"].(string)
	newStaffMember(t, env, "second.agent@accounts.test", "Second Agent", emi.RoleCustomerService)

	b := newTab(t, env)
	b.signIn(env, apptest.CSEmail)
	b.open("/backoffice/accounts/" + tok)
	b.do("open the termination form", chromedp.Click(chromedp.CSS(`[data-testid="request-termination-details"] > summary`)))
	b.waitVisible(`[data-testid="request-termination-form"] textarea[name="reason"]`)
	b.do("write the reason", sendKeys(`[data-testid="request-termination-form"] textarea[name="reason"]`, "Customer closes the relationship"))
	b.clickNav(`[data-testid="request-termination"]`)
	if f := flashText(b); !strings.Contains(f, "Termination requested") {
		t.Fatalf("flash %q", f)
	}
	if got := b.text(`[data-testid="awaiting-second"]`); !strings.Contains(got, "Awaiting a second staff member") {
		t.Fatalf("banner %q", got)
	}
	if got := b.text(`[data-testid="termination-requester"]`); got != "Sandbox Customer Service (you)" {
		t.Fatalf("requester %q", got)
	}
	if n := b.count(`[data-testid="approve-termination"]`); n != 0 {
		t.Fatal("the requester is offered the approval")
	}
	screenshot(b, "account-termination-requested")

	c := newTab(t, env)
	c.signIn(env, "second.agent@accounts.test")
	c.open("/backoffice/accounts/" + tok)
	if got := c.text(`[data-testid="termination-reason"]`); got != "Customer closes the relationship" {
		t.Fatalf("reason %q", got)
	}
	if got := c.text(`[data-testid="termination-requester"]`); got != "Sandbox Customer Service" {
		t.Fatalf("requester %q: the second agent sees who asked, by name", got)
	}
	c.do("open the approval", chromedp.Click(chromedp.CSS(`[data-testid="approve-termination-details"] > summary`)))
	c.waitVisible(`[data-testid="approve-termination"]`)
	screenshot(c, "account-termination-approval")
	c.clickNav(`[data-testid="approve-termination"]`)
	if f := flashText(c); !strings.Contains(f, "Account terminated") {
		t.Fatalf("flash %q", f)
	}
	if got := c.text(`[data-testid="account-status"]`); got != "terminated" {
		t.Fatalf("status %q", got)
	}
	if rows := c.texts(`[data-testid="virtual-accounts"] [data-testid="account-row"]`); len(rows) != 1 || !strings.Contains(rows[0], "terminated") {
		t.Fatalf("virtual accounts %q", rows)
	}
	if n := c.count(`[data-testid="pending-termination"]`); n != 0 {
		t.Fatal("the termination is still pending")
	}
	for _, a := range []string{tok, vtok} {
		if st := dbAccountStatus(t, env, a); st != emi.AccountTerminated {
			t.Fatalf("account %s is %s", a, st)
		}
	}
	screenshot(c, "account-terminated")
	c.open("/backoffice/programs")
	if n := c.count(`section[data-testid^="program-"]`); n != 5 {
		t.Fatalf("%d programs", n)
	}
	screenshot(c, "programs")
	noCSPViolations(t, b, c)
}
