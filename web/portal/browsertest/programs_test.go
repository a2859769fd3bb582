package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
)

// TestAdminEditsAProgramInTheBrowser: the administrator opens the programs
// screen, unfolds a program's edit form, renames the program and makes
// another limits group the default; the screen shows both saved, and a
// mistake comes back beside its field.
func TestAdminEditsAProgramInTheBrowser(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)
	b.clickNav(`nav[aria-label="Main"] a[href="/backoffice/programs"]`)

	form := `[data-testid="edit-program-form-account_gbp"]`
	if eval[bool](b, `document.querySelector('`+form+` input[name="name"]').checkVisibility()`) {
		t.Fatal("the edit form is open before Edit is clicked")
	}
	b.do("open the edit form", chromedp.Click(chromedp.CSS(`[data-testid="edit-program-account_gbp"] > summary`)))
	b.waitVisible(form + ` input[name="name"]`)

	// A BIN prefix of five digits is refused beside its field, and what
	// was typed stays.
	b.typeInto(form+` input[name="name"]`, "GBP account (UK residents)")
	b.typeInto(form+` input[name="bin_prefix"]`, "53999")
	b.clickNav(form + ` button[type="submit"]`)
	if f := flashText(b); !strings.Contains(f, "The program was not saved") {
		t.Fatalf("flash %q", f)
	}
	b.waitVisible(form + ` #bin_prefix-error`)
	if got := b.text(form + ` #bin_prefix-error`); got != "must be 6 to 8 digits" {
		t.Fatalf("BIN prefix error %q", got)
	}
	if got := eval[string](b, `document.querySelector('`+form+` input[name="name"]').value`); got != "GBP account (UK residents)" {
		t.Fatalf("the typed name is lost: %q", got)
	}
	screenshot(b, "program-edit-refused")

	b.typeInto(form+` input[name="bin_prefix"]`, "53999403")
	b.typeInto(form+` input[name="defaults.limits"]`, "limits_high")
	b.clickNav(form + ` button[type="submit"]`)
	if f := flashText(b); !strings.Contains(f, "Program “GBP account (UK residents)” saved") {
		t.Fatalf("flash %q", f)
	}
	section := `[data-testid="program-account_gbp"]`
	if got := b.text(section + ` h2`); !strings.HasPrefix(got, "GBP account (UK residents)") {
		t.Fatalf("heading %q", got)
	}
	var defaults []string
	for _, c := range b.texts(section + ` span.group-code`) {
		if strings.HasSuffix(c, "default") {
			defaults = append(defaults, c)
		}
	}
	if !strings.Contains(strings.Join(defaults, "|"), "limits_high default") || strings.Contains(strings.Join(defaults, "|"), "limits_std default") {
		t.Fatalf("defaults shown %q", defaults)
	}
	var name, def string
	if err := env.App.DB.Get(&name, `SELECT name FROM programs WHERE code = 'account_gbp'`); err != nil {
		t.Fatal(err)
	}
	if err := env.App.DB.Get(&def, `SELECT code FROM program_groups WHERE program = 'account_gbp' AND kind = 'limits' AND is_default`); err != nil {
		t.Fatal(err)
	}
	if name != "GBP account (UK residents)" || def != "limits_high" {
		t.Fatalf("stored name %q, default limits %q", name, def)
	}
	screenshot(b, "program-edited")
	noCSPViolations(t, b)
}
