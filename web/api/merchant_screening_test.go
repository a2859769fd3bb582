package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/people"
	"emi/internal/testwait"
)

// sanctionsServer serves the shared lists as the publishers would, with
// sdn.csv replaced by *sdn when it is not nil.
func sanctionsServer(t *testing.T, sdn *[]byte) *httptest.Server {
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

// merchantChecks returns the AML checks naming a merchant, oldest first.
func merchantChecks(t *testing.T, env *apptest.Env, merchant string) []emi.AMLCheck {
	t.Helper()
	var out []emi.AMLCheck
	if err := env.App.DB.Select(&out, `SELECT token, partner_id, source, status, merchant_token,
		coalesce(member_token::text, '') AS member_token FROM aml_checks WHERE merchant_token = $1 ORDER BY created_at, token`, merchant); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitMerchantChecks waits until the merchant has n checks.
func waitMerchantChecks(t *testing.T, env *apptest.Env, merchant string, n int) []emi.AMLCheck {
	t.Helper()
	var cs []emi.AMLCheck
	if testwait.Try(func() bool { cs = merchantChecks(t, env, merchant); return len(cs) >= n }) {
		return cs
	}
	t.Fatalf("merchant %s: %d checks, want %d", merchant, len(merchantChecks(t, env, merchant)), n)
	return nil
}

// approvedMerchant creates an application with the clean UBO (Elin
// Sandqvist), waits for its automatic approval and returns the
// application, its onboarded merchant and the UBO's member token.
func approvedMerchant(t *testing.T, env *apptest.Env, p *apptest.Partner) (app, merchant, member string) {
	t.Helper()
	app = createApplication(t, env, p, sandboxApplication(p))
	ev := waitEvent(t, env, emi.EventApplicationApproved, app)
	merchant, _ = ev["merchant"].(string)
	if err := env.App.DB.Get(&member, `SELECT token::text FROM company_members WHERE application = $1`, app); err != nil || merchant == "" {
		t.Fatalf("approved application %s: merchant %q, member %v", app, merchant, err)
	}
	return app, merchant, member
}

// Ongoing screening of onboarded merchants' people (AMLD art. 13(1)(d)).
// A list update adding the UBO of an approved merchant raises one check
// naming the merchant and the member; it holds the merchant's outgoing
// transfers (14030, as for users) and card issue (12009); an unchanged
// list, or a second run of the job, raises nothing more; a pending
// application holding the same person is left to the application path. A
// partner cannot read another partner's merchant check through the API.
// One officer cannot release a hold that takes two; two can, and the
// false positive they remember is not raised again for a later merchant
// of the same person. A watch-list entry naming the member raises a check
// too. On the code before, nobody screened an onboarded merchant after its
// approval: no check was ever raised, so this test failed at its first
// wait (it needs the new job and check fields to build at all).
func TestMerchantPeopleAreRescreened(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(filepath.Join(apptest.SanctionsDir(), "sdn.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var sdn []byte
	srv := sanctionsServer(t, &sdn)
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.SanctionsURLs = [5]string{srv.URL + "/sdn.csv", srv.URL + "/alt.csv", srv.URL + "/un_consolidated.xml"}
	}})
	startWorkers(t, env)
	ctx := context.Background()

	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	app, merchant, member := approvedMerchant(t, env, p)
	// Another partner with an application of the same person still in review.
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Q", Processing: emi.ProcessingSemiAutomatic})
	pending := createApplication(t, env, q, sandboxApplication(q))
	waitEvent(t, env, emi.EventApplicationInReview, pending)
	var pendingMember string
	_ = env.App.DB.Get(&pendingMember, `SELECT token::text FROM company_members WHERE application = $1`, pending)

	// The merchant's account, with money, and a transfer that goes through.
	acc := createAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": merchant})
	apptest.Expect(t, "merchant account", acc, 0, http.StatusCreated)
	accTok, bal := acc.Data["token"].(string), balancesOf(acc)[0]["token"].(string)
	env.Fund(t, accTok, bal, "EUR", 50000)
	other, _, _ := openFunded(t, env, p, "account_eur", 0)
	transfer := func() apptest.Response {
		return call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
			transferBody(map[string]any{"account": accTok}, map[string]any{"account": other}, "1.00", "EUR"))
	}
	card := func(account string) apptest.Response {
		return call(t, env, p, http.MethodPost, "/v2/cards", "card_create", map[string]any{"account": account, "type": "virtual", "pin": "4821"})
	}
	apptest.Expect(t, "a transfer before the list update", transfer(), 0, http.StatusCreated)
	// A card on another account of the merchant: the program needs no AML
	// check, so a 12009 below is the merchant's hold.
	acc2 := createAccount(t, env, p, map[string]any{"program": "account_eur", "merchant": merchant})
	apptest.Expect(t, "a card before the list update", card(acc2.Data["token"].(string)), 0, http.StatusCreated)

	// The list update adds the UBO.
	row := []byte(`99998,"SANDQVIST, Elin","individual","SDGT","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","DOB 02 Mar 1987; nationality Sweden."` + "\r\n")
	sdn = append(append(append([]byte{}, bytes.TrimSuffix(orig, []byte{0x1a})...), row...), 0x1a)
	if err := env.App.UpdateSanctions(ctx); err != nil {
		t.Fatalf("update: %v", err)
	}
	waitMerchantChecks(t, env, merchant, 1)
	env.WaitJobsIdle(t) // a duplicate would be there now
	checks := merchantChecks(t, env, merchant)
	if len(checks) != 1 || checks[0].MemberToken != member || checks[0].Source != emi.AMLSourceRescreen ||
		checks[0].Status != emi.AMLMatch || checks[0].PartnerID != p.ID {
		t.Fatalf("checks of the merchant after the update: %+v", checks)
	}
	check := checks[0].Token
	officer := complianceCtx()
	got, err := env.App.AML.Get(officer, check)
	if err != nil {
		t.Fatal(err)
	}
	if got.MerchantToken != merchant || got.MemberToken != member || got.MerchantApplication != app || got.MerchantName == "" ||
		got.FirstName != "Elin" || len(got.Hits) != 1 || got.Hits[0].EntryID != "99998" {
		t.Fatalf("the check does not name the merchant, member and entry: %+v", got)
	}
	hit := got.Hits[0]
	if !hit.NeedsSecondPerson() {
		t.Fatalf("the exact name, birthday and nationality score %.3f: this test needs a hit that takes two people", hit.Score)
	}

	// The pending application is left to its own re-check.
	var n int
	_ = env.App.DB.Get(&n, `SELECT count(*) FROM aml_checks WHERE member_token = $1 OR merchant_token IS NOT NULL AND merchant_token <> $2`,
		pendingMember, merchant)
	if n != 0 {
		t.Fatalf("%d merchant checks for a pending application's member", n)
	}
	sanctions := ""
	testwait.Try(func() bool {
		_ = env.App.DB.Get(&sanctions, `SELECT status FROM application_checks WHERE application = $1 AND name = 'sanctions'`, pending)
		return sanctions == "review"
	})
	if sanctions != "review" {
		t.Fatalf("the pending application's sanctions check is %q after the update, want review", sanctions)
	}

	// The hold: no money leaves, no card is issued.
	apptest.Expect(t, "a transfer while the hit is undecided", transfer(), 14030, http.StatusConflict)
	apptest.Expect(t, "a payment out while the hit is undecided", payOut(t, env, p, sepa(accTok, "1.00")), 14030, http.StatusConflict)
	apptest.Expect(t, "a card while the merchant's hit is undecided", card(accTok), 12009, http.StatusConflict)

	// The same lists again, and the job run again: nothing new.
	if err := env.App.UpdateSanctions(ctx); err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(people.RescreenPayload{Version: got.ListVersion, Entries: []string{hit.List + "|" + hit.EntryID}})
	if err := env.App.MerchantScreening.Rescreen(ctx, emi.Job{ID: 1, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	env.WaitJobsIdle(t)
	if cs := merchantChecks(t, env, merchant); len(cs) != 1 {
		t.Fatalf("%d checks after an unchanged list and a second run", len(cs))
	}

	// Tenant isolation: the other partner cannot use or read the check; its
	// owner is told its status.
	r := call(t, env, q, http.MethodPost, "/v2/users", "user_create", func() map[string]any {
		b := validUser(q)
		b["first_name"], b["last_name"], b["middle_name"], b["birthday"], b["aml"] = "Elin", "Sandqvist", "", "1987-03-02", check
		return b
	}())
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), "is not an AML check of yours") || strings.Contains(string(r.Raw), "match") {
		t.Fatalf("another partner naming the merchant's check: %s", r)
	}
	if alerts, err := env.App.Alerts.Queue(officer); err != nil {
		t.Fatal(err)
	} else if !hasMerchantAlert(alerts, check, got.MerchantName, "/backoffice/companies/"+app) {
		t.Fatalf("the alert queue does not name the merchant: %+v", alerts)
	}

	// Attack: one officer proposes the false positive and confirms it
	// alone. Refused; the hold stays.
	if _, err := env.App.AML.Decide(officer, check, emi.HitDecision{N: hit.N, Decision: emi.HitFalsePositive, Reason: "another person: different place of birth"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.AML.Decide(officer, check, emi.HitDecision{N: hit.N, Decision: emi.HitFalsePositive, Reason: "confirming my own proposal"}); err == nil {
		t.Fatal("one officer released a hold that takes two people")
	}
	apptest.Expect(t, "a transfer after one person's false positive", transfer(), 14030, http.StatusConflict)
	// A second officer confirms: the hold ends.
	if c, err := env.App.AML.Decide(complianceCtx(), check, emi.HitDecision{N: hit.N, Decision: emi.HitFalsePositive, Reason: "agreed: another person"}); err != nil || c.Status != emi.AMLCleared {
		t.Fatalf("the second officer's confirmation: %v, %+v", err, c)
	}
	apptest.Expect(t, "a transfer once compliance decided", transfer(), 0, http.StatusCreated)
	apptest.Expect(t, "a card once compliance decided", card(accTok), 0, http.StatusCreated)
	var evOther, evOwner int
	_ = env.App.DB.Get(&evOther, `SELECT count(*) FROM events WHERE resource_token = $1 AND partner_id = $2`, check, q.ID)
	_ = env.App.DB.Get(&evOwner, `SELECT count(*) FROM events WHERE resource_token = $1 AND partner_id = $2 AND type = $3`, check, p.ID, emi.EventAMLCheckReviewed)
	if evOther != 0 || evOwner != 1 {
		t.Fatalf("aml_check.reviewed: %d to the owner, %d to another partner", evOwner, evOther)
	}
	var evMerchant string
	_ = env.App.DB.Get(&evMerchant, `SELECT data->>'merchant' FROM events WHERE resource_token = $1 AND type = $2`, check, emi.EventAMLCheckReviewed)
	if evMerchant != merchant {
		t.Fatalf("aml_check.reviewed names merchant %q, want %s", evMerchant, merchant)
	}

	// The remembered false positive (two people) answers the same person in
	// a later merchant of the partner: its application is approved, and the
	// re-screening raises nothing for it.
	_, second, _ := approvedMerchant(t, env, p)
	if err := env.App.MerchantScreening.Rescreen(ctx, emi.Job{ID: 2, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	if cs := merchantChecks(t, env, second); len(cs) != 0 {
		t.Fatalf("a remembered false positive raised again: %+v", cs)
	}

	// A watch-list entry naming the member raises a check for both merchants.
	if _, err := env.App.Watchlist.Add(officer, emi.WatchlistEntry{Name: "Elin Sandqvist", Category: "fraud",
		Note: "Named in an invoice-fraud case", Source: "https://news.example/case"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{merchant, second} {
		cs := waitMerchantChecks(t, env, m, map[string]int{merchant: 2, second: 1}[m])
		last := cs[len(cs)-1]
		if last.Source != emi.AMLSourceWatchlist || last.Status != emi.AMLMatch || last.MemberToken == "" {
			t.Fatalf("merchant %s after the watch-list addition: %+v", m, cs)
		}
	}
	apptest.Expect(t, "a transfer while the watch-list hit is undecided", transfer(), 14030, http.StatusConflict)
}

func hasMerchantAlert(alerts []emi.Alert, check, name, href string) bool {
	for _, a := range alerts {
		if a.Subject == check && a.Merchant == name && a.MerchantHref == href && a.Subjects == "Elin Sandqvist" {
			return true
		}
	}
	return false
}

// The company's own name is screened against entity entries, and a person
// only against individual entries: a list update adding the company as an
// entity (and an entity that bears the UBO's name) raises one check for
// the company, without member, and none for the UBO. The jobs refuse a bad
// payload for good and wait for a list version this instance has not
// loaded; a watch-list entry removed before its job ran screens nobody.
func TestMerchantCompanyRescreenedAgainstEntities(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(filepath.Join(apptest.SanctionsDir(), "sdn.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var sdn []byte
	srv := sanctionsServer(t, &sdn)
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.SanctionsURLs = [5]string{srv.URL + "/sdn.csv", srv.URL + "/alt.csv", srv.URL + "/un_consolidated.xml"}
	}})
	startWorkers(t, env)
	ctx := context.Background()
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	_, merchant, _ := approvedMerchant(t, env, p)

	// The jobs' error paths.
	for _, job := range []struct {
		run  func(context.Context, emi.Job) error
		body string
		want string
	}{
		{env.App.MerchantScreening.Rescreen, `not json`, "bad payload"},
		{env.App.MerchantScreening.Rescreen, `{"version":"not-loaded","entries":["x|1"]}`, `this instance has`},
		{env.App.MerchantScreening.ScreenWatchlistEntry, `{}`, "bad payload"},
	} {
		if err := job.run(ctx, emi.Job{ID: 7, Payload: []byte(job.body)}); err == nil || !strings.Contains(err.Error(), job.want) {
			t.Fatalf("job with %s: %v, want %q", job.body, err, job.want)
		}
	}
	officer := complianceCtx()
	// A watch-list entry removed before its job ran screens nobody; a live
	// one of the same name raises the company's check. (Stored directly,
	// without the jobs an addition enqueues, so that only these runs count.)
	hitsOn := func(entry string) int {
		var n int
		_ = env.App.DB.Get(&n, `SELECT count(*) FROM aml_hits h JOIN aml_checks c ON c.token = h.check_token
			WHERE c.merchant_token = $1 AND h.entry_id = $2`, merchant, entry)
		return n
	}
	for _, removed := range []bool{true, false} {
		e := emi.WatchlistEntry{ID: kernel.NewToken(), Name: "Sandbox Trading", Category: "fraud", Note: "report", CreatedAt: time.Now().UTC()}
		if err := env.App.People.InsertWatchlistEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		if removed {
			if err := env.App.People.RemoveWatchlistEntry(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.App.MerchantScreening.ScreenWatchlistEntry(ctx, emi.Job{ID: 8, Payload: []byte(`{"entry":"` + e.ID + `"}`)}); err != nil {
			t.Fatal(err)
		}
		if n := hitsOn(e.ID); n != map[bool]int{true: 0, false: 1}[removed] {
			t.Fatalf("watch-list entry (removed %v): %d hits raised for the merchant", removed, n)
		}
	}
	before := len(merchantChecks(t, env, merchant))

	entity := func(id, name string) []byte {
		return []byte(id + `,"` + name + `","-0- ","SDGT","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- "` + "\r\n")
	}
	body := append([]byte{}, bytes.TrimSuffix(orig, []byte{0x1a})...)
	body = append(body, entity("99997", "SANDBOX TRADING LTD")...)
	body = append(body, entity("99996", "ELIN SANDQVIST")...)
	sdn = append(body, 0x1a)
	if err := env.App.UpdateSanctions(ctx); err != nil {
		t.Fatalf("update: %v", err)
	}
	waitMerchantChecks(t, env, merchant, before+1)
	env.WaitJobsIdle(t) // a second check would be there now
	checks := merchantChecks(t, env, merchant)[before:]
	if len(checks) != 1 || checks[0].MemberToken != "" || checks[0].Source != emi.AMLSourceRescreen {
		t.Fatalf("checks after the entities were added: %+v", checks)
	}
	got, err := env.App.AML.Get(officer, checks[0].Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastName != "Sandbox Trading Ltd" && got.LastName != "Sandbox Trading" || len(got.Hits) != 1 || got.Hits[0].EntryID != "99997" {
		t.Fatalf("the company's check: %+v", got)
	}
}
