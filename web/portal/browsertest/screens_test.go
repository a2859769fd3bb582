package browser_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestScreenshotsOfEveryPage opens every back-office screen at 1280 px and
// at 768 px and saves a PNG of each into test-artifacts/screens/, so a
// person can look at what the back office shows. It fails when a page does
// not answer 200 or shows no heading.
func TestScreenshotsOfEveryPage(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Screenshot Partner"})
	root, err := artifactDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(root), "screens")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	anon := newTab(t, env)
	shoot := func(b *tab, name string, width int64) {
		t.Helper()
		b.do("viewport", chromedp.EmulateViewport(width, 900))
		png := run(b, "screenshot "+name, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	anon.open("/backoffice/signin")
	shoot(anon, "signin", 1280)

	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)
	var staffID string
	if err := env.App.DB.Get(&staffID, `SELECT id FROM staff_users WHERE email = $1`, apptest.CSEmail); err != nil {
		t.Fatal(err)
	}
	pages := []struct{ name, path string }{
		{"dashboard", "/backoffice/"},
		{"partners", "/backoffice/partners"},
		{"partner-new", "/backoffice/partners/new"},
		{"partner-detail", "/backoffice/partners/" + p.ID},
		{"staff", "/backoffice/staff"},
		{"staff-new", "/backoffice/staff/new"},
		{"staff-detail", "/backoffice/staff/" + staffID},
		{"audit", "/backoffice/audit"},
		{"account", "/backoffice/account"},
		{"search", "/backoffice/search?q=screenshot"},
		{"404", "/backoffice/no-such-page"},
	}
	for _, pg := range pages {
		status := b.open(pg.path)
		if want := int64(200); pg.name == "404" {
			want = 404
			if status != want {
				t.Errorf("%s: HTTP %d, want %d", pg.path, status, want)
			}
		} else if status != want {
			t.Errorf("%s: HTTP %d, want %d", pg.path, status, want)
		}
		if strings.TrimSpace(b.text("h1")) == "" {
			t.Errorf("%s: no heading", pg.path)
		}
		shoot(b, pg.name, 1280)
	}
	b.open("/backoffice/partners/" + p.ID)
	shoot(b, "partner-detail-768", 768)

	cs := newTab(t, env)
	cs.signIn(env, apptest.CSEmail)
	if status := cs.open("/backoffice/staff"); status != 403 {
		t.Errorf("customer service on /backoffice/staff: HTTP %d, want 403", status)
	}
	shoot(cs, "403", 1280)
	t.Logf("screenshots in %s", dir)
}
