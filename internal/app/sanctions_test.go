package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// listServer serves the shared lists as the publishers would, with sdn.csv
// replaced by sdn when it is not nil.
func listServer(t *testing.T, sdn *[]byte) *httptest.Server {
	t.Helper()
	dir := apptest.SanctionsDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Base(r.URL.Path)
		if name == "sdn.csv" && *sdn != nil {
			_, _ = w.Write(*sdn)
			return
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A list update that adds an entry re-screens every user in the background;
// a user who matches the new entry gets a check in the review queue, once,
// and the update is logged. A failed update changes nothing and is logged.
func TestListUpdateRescreensUsers(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(filepath.Join(apptest.SanctionsDir(), "sdn.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var sdn []byte
	srv := listServer(t, &sdn)
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.SanctionsURLs = [5]string{srv.URL + "/sdn.csv", srv.URL + "/alt.csv", srv.URL + "/un_consolidated.xml"} // no EU or UK copy here
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = env.App.RunWorkers(ctx) }()

	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	mk := func(first, last, bday string) string {
		env.Clock.Advance(time.Second)
		r := p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/users", Operation: "user_create",
			JSON: map[string]any{"email": first + "@example.com", "first_name": first, "last_name": last, "birthday": bday}})
		apptest.Expect(t, "user_create", r, 0, http.StatusCreated)
		return r.Data["token"].(string)
	}
	target := mk("Zoltan", "Fekete-Brannigan", "1970-05-05")
	mk("Elin", "Sandqvist", "1987-03-02")
	before := env.App.Screener.Current().Version()

	// A broken download: nothing is swapped, the failure is logged.
	sdn = []byte("not,a,list\r\n")
	if err := env.App.UpdateSanctions(ctx); err == nil {
		t.Fatal("an update with a broken sdn.csv succeeded")
	}
	if env.App.Screener.Current().Version() != before {
		t.Fatal("a failed update swapped the index")
	}

	row := []byte(`99999,"FEKETE-BRANNIGAN, Zoltan","individual","SDGT","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","DOB 05 May 1970; nationality Hungary."` + "\r\n")
	body := bytes.TrimSuffix(orig, []byte{0x1a})
	sdn = append(append(append([]byte{}, body...), row...), 0x1a)
	if err := env.App.UpdateSanctions(ctx); err != nil {
		t.Fatalf("update: %v", err)
	}
	if env.App.Screener.Current().Version() == before {
		t.Fatal("the index was not swapped")
	}
	var checks []emi.AMLCheck
	testwait.Try(func() bool {
		if err := env.App.DB.Select(&checks, `SELECT token, user_token, status, source FROM aml_checks WHERE source = 'rescreen'`); err != nil {
			t.Fatal(err)
		}
		return len(checks) > 0
	})
	if len(checks) != 1 || checks[0].UserToken != target || checks[0].Status != emi.AMLMatch {
		t.Fatalf("re-screening checks: %+v", checks)
	}
	var updates []emi.SanctionsUpdate
	if err := env.App.DB.Select(&updates, `SELECT at, instance, ok, error, version, changed FROM sanctions_updates ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(updates) != 2 || updates[0].OK || updates[0].Error == "" || !updates[1].OK || updates[1].Changed != 1 {
		t.Fatalf("update log: %+v", updates)
	}

	// The same lists again: no change, no new check.
	if err := env.App.UpdateSanctions(ctx); err != nil {
		t.Fatal(err)
	}
	env.WaitJobsIdle(t) // the re-screening it could have queued has run
	var n int
	_ = env.App.DB.Get(&n, `SELECT count(*) FROM aml_checks WHERE source = 'rescreen'`)
	if n != 1 {
		t.Fatalf("%d re-screening checks after an update without changes", n)
	}
}
