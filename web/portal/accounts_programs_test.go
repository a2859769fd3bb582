package portal_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

var (
	programInputTagRe = regexp.MustCompile(`<input\s[^>]*>`)
	programAttrRe     = regexp.MustCompile(`([a-z][a-z-]*)(?:="([^"]*)")?`)
)

// programFormHTML returns the HTML of the form with data-testid testid.
func programFormHTML(t *testing.T, p apptest.Page, testid string) string {
	t.Helper()
	i := strings.Index(p.Body, `data-testid="`+testid+`"`)
	if i < 0 {
		t.Fatalf("no form %s in the page", testid)
	}
	start := strings.LastIndex(p.Body[:i], "<form")
	end := strings.Index(p.Body[i:], "</form>")
	if start < 0 || end < 0 {
		t.Fatalf("form %s is not a form", testid)
	}
	return p.Body[start : i+end]
}

// programFormValues returns what a browser submits for a form: every text,
// number and hidden input, and the checked boxes and radios.
func programFormValues(form string) url.Values {
	out := url.Values{}
	for _, tag := range programInputTagRe.FindAllString(form, -1) {
		attrs := map[string]string{}
		for _, m := range programAttrRe.FindAllStringSubmatch(tag[len("<input"):], -1) {
			attrs[m[1]] = html.UnescapeString(m[2])
			if m[2] == "" && !strings.Contains(m[0], "=") {
				attrs[m[1]] = "on"
			}
		}
		name := attrs["name"]
		if name == "" {
			continue
		}
		switch attrs["type"] {
		case "checkbox", "radio":
			if _, checked := attrs["checked"]; checked {
				out.Add(name, attrs["value"])
			}
		default:
			out.Add(name, attrs["value"])
		}
	}
	return out
}

// programsAdmin is an app with the sandbox staff, signed in as the
// administrator.
func programsAdmin(t *testing.T) (*apptest.Env, *apptest.Browser) {
	t.Helper()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	return env, admin
}

func programName(t *testing.T, env *apptest.Env, code string) string {
	t.Helper()
	var name string
	if err := env.App.DB.Get(&name, `SELECT name FROM programs WHERE code = $1`, code); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestAdminEditsAProgram: the administrator's edit form, sent as a browser
// sends it, saves the name and a default group, with one audit row; the
// screen shows the new settings.
func TestAdminEditsAProgram(t *testing.T) {
	t.Parallel()
	env, admin := programsAdmin(t)
	pg := admin.Get(t, "/backoffice/programs")
	contains(t, "programs as admin", pg, `data-testid="new-program-form"`, `data-testid="edit-program-account_eur"`,
		`action="/backoffice/programs/account_eur"`, `name="version"`)
	form := programFormValues(programFormHTML(t, pg, "edit-program-form-account_eur"))
	if form.Get("name") != "EUR account" || form.Get("defaults.limits") != "limits_std" || form.Get("groups.limits") != "limits_high, limits_std" ||
		form.Get("partner_scope") != "all" || strings.Join(form["currencies"], ",") != "EUR" || form.Get("cards_allowed") != "true" ||
		form.Get("version") == "" {
		t.Fatalf("the edit form is not filled from the program: %v", form)
	}
	form.Set("name", "EUR account (premium)")
	form.Set("defaults.limits", "limits_high")
	done := follow(t, admin, admin.Post(t, "/backoffice/programs/account_eur", form))
	contains(t, "after the save", done, "Program “EUR account (premium)” saved", "EUR account (premium)")
	if !regexp.MustCompile(`limits_high\s*<span class="badge ok">default</span>`).MatchString(done.Body) {
		t.Error("limits_high is not shown as the default")
	}
	if got := programName(t, env, "account_eur"); got != "EUR account (premium)" {
		t.Fatalf("stored name %q", got)
	}
	var changes []byte
	if err := env.App.DB.Get(&changes, `SELECT changes FROM audit_log WHERE action = 'program.update' AND resource_token = 'account_eur'`); err != nil {
		t.Fatal(err)
	}
	var ch map[string]map[string]any
	if err := json.Unmarshal(changes, &ch); err != nil {
		t.Fatal(err)
	}
	if len(ch) != 2 || ch["name"]["to"] != "EUR account (premium)" || ch["defaults.limits"]["from"] != "limits_std" {
		t.Fatalf("audit changes %s", changes)
	}

	t.Run("the old form is stale and shows the saved settings", func(t *testing.T) {
		old := programFormValues(programFormHTML(t, pg, "edit-program-form-account_eur"))
		old.Set("name", "Overwritten")
		p := admin.Post(t, "/backoffice/programs/account_eur", old)
		if p.Status != http.StatusConflict {
			t.Fatalf("HTTP %d, want 409", p.Status)
		}
		p.Status = http.StatusOK
		contains(t, "stale save", p, "Someone saved this program after you opened it", `open data-testid="edit-program-account_eur"`)
		if f := programFormValues(programFormHTML(t, p, "edit-program-form-account_eur")); f.Get("name") != "EUR account (premium)" || f.Get("version") == old.Get("version") {
			t.Fatalf("the form after a stale save: %v", f)
		}
		if got := programName(t, env, "account_eur"); got != "EUR account (premium)" {
			t.Fatalf("the stale save changed the name to %q", got)
		}
	})
}

// TestProgramFormShowsFieldErrors: a refused save comes back with the
// form open, what was typed, and each message beside its input.
func TestProgramFormShowsFieldErrors(t *testing.T) {
	t.Parallel()
	env, admin := programsAdmin(t)
	pg := admin.Get(t, "/backoffice/programs")
	form := programFormValues(programFormHTML(t, pg, "edit-program-form-account_gbp"))
	form.Set("bin_prefix", "12a45")
	form.Set("defaults.limits", "limits_vip")
	form.Set("name", "GBP account (renamed)")
	p := admin.Post(t, "/backoffice/programs/account_gbp", form)
	if p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("HTTP %d, want 422", p.Status)
	}
	p.Status = http.StatusOK
	contains(t, "refused save", p, "The program was not saved: please correct the marked fields.",
		`open data-testid="edit-program-account_gbp"`,
		`<span class="field-error" id="bin_prefix-error">must be 6 to 8 digits</span>`,
		`<span class="field-error" id="defaults.limits-error">must be one of the limits codes (limits_high, limits_std)</span>`)
	sent := programFormValues(programFormHTML(t, p, "edit-program-form-account_gbp"))
	if sent.Get("bin_prefix") != "12a45" || sent.Get("defaults.limits") != "limits_vip" || sent.Get("name") != "GBP account (renamed)" {
		t.Fatalf("the typed values are lost: %v", sent)
	}
	if got := programName(t, env, "account_gbp"); got != "GBP account" {
		t.Fatalf("the refused save changed the name to %q", got)
	}
	if f := programFormValues(programFormHTML(t, p, "edit-program-form-account_eur")); f.Get("bin_prefix") != "53999401" {
		t.Fatalf("another program's form shows the refused input: %v", f)
	}
}

// TestAdminCreatesAProgramAndCurrenciesLock: a new program from the form;
// once an account uses a program its currencies are shown locked and a
// forged change of them is refused beside the field.
func TestAdminCreatesAProgramAndCurrenciesLock(t *testing.T) {
	t.Parallel()
	env, admin := programsAdmin(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Programs Partner"})
	pg := admin.Get(t, "/backoffice/programs")
	form := programFormValues(programFormHTML(t, pg, "new-program-form"))
	form.Set("code", "travel_gbp")
	form.Set("name", "Travel GBP")
	form["currencies"] = []string{"GBP"}
	form.Set("partner_scope", "listed")
	form["allowed_partners"] = []string{p.ID}
	form.Set("groups.usage", "usage_travel, usage_std")
	form.Set("defaults.usage", "usage_travel")
	done := follow(t, admin, admin.Post(t, "/backoffice/programs", form))
	contains(t, "after the creation", done, "Program “Travel GBP” (travel_gbp) created", `data-testid="program-travel_gbp"`, "Programs Partner")
	var scheme string
	if err := env.App.DB.Get(&scheme, `SELECT schemes[1] FROM programs WHERE code = 'travel_gbp'`); err != nil || scheme != emi.SchemeUK {
		t.Fatalf("scheme %q %v", scheme, err)
	}

	user := createPerson(t, env, p, map[string]any{"first_name": "Lena", "last_name": "Travel"})
	openAccount(t, env, p, map[string]any{"program": "travel_gbp", "user": user})
	pg = admin.Get(t, "/backoffice/programs")
	edit := programFormHTML(t, pg, "edit-program-form-travel_gbp")
	if !strings.Contains(edit, `data-testid="currencies-locked"`) || strings.Contains(edit, `type="checkbox" name="currencies"`) {
		t.Fatalf("the currencies of a program in use are not locked: %s", edit)
	}
	if strings.Contains(programFormHTML(t, pg, "edit-program-form-account_bgn"), `data-testid="currencies-locked"`) {
		t.Fatal("the currencies of an unused program are locked")
	}
	forged := programFormValues(edit)
	forged["currencies"] = []string{"GBP", "EUR"}
	r := admin.Post(t, "/backoffice/programs/travel_gbp", forged)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="currencies-error">cannot change: accounts use this program`) {
		t.Fatalf("HTTP %d, want 422 with the currencies locked (%.400s)", r.Status, r.Body)
	}
}

// TestProgramFormsAreForAdministrators: the roles that see programs but
// may not change them get no form.
func TestProgramFormsAreForAdministrators(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	for _, email := range []string{apptest.CSEmail, apptest.AuditorEmail} {
		b := env.NewBrowser()
		b.SignIn(t, email)
		pg := b.Get(t, "/backoffice/programs")
		contains(t, email, pg, "This screen is read-only.", `data-testid="program-account_eur"`)
		lacks(t, email, pg, "new-program", "edit-program", `name="version"`)
	}
}
