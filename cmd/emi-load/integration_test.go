package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestMixedScenarioAgainstARealServer runs every flow of the harness, in a
// short mixed run, against a real HTTP server on a test database (with the
// job workers, so applications get their automatic checks), then each
// remaining scenario briefly; every flow must complete with no error and
// the server must log no error.
func TestMixedScenarioAgainstARealServer(t *testing.T) {
	env := apptest.New(t, apptest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = env.App.RunWorkers(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	creds, err := env.App.Partners.Create(sys, emi.PartnerCreate{Name: "Bench Partner", Processing: emi.ProcessingSemiAutomatic})
	if err != nil {
		t.Fatal(err)
	}
	// As `emi generate cards --count 2200 --free 2000` does: card_create
	// uses each free account once, and without -race two clients issued
	// more than 200 cards in its 500 ms (the rest answered 12004).
	if err := env.App.AccountStore.GenerateAccounts(sys, creds.Partner.ID, creds.Merchant, 2200); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Cards.Generate(sys, env.App.CardStore, creds.Partner.ID, 200, nil); err != nil {
		t.Fatal(err)
	}
	h, c, err := prepareWith(context.Background(), env.App, env.Server.URL, prepareOpts{keys: 1, partner: creds.Partner.ID, pairs: 20, cold: 40, fund: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.fx.cards) != 200 || len(h.fx.free) != 2000 || len(h.fx.balances) != 41 {
		t.Fatalf("fixtures: %d cards, %d free accounts, %d balances", len(h.fx.cards), len(h.fx.free), len(h.fx.balances))
	}

	check := func(res Result, flows []string) {
		t.Helper()
		var out bytes.Buffer
		writeText(&out, res)
		t.Log(out.String())
		got := map[string]Stats{}
		for _, s := range res.Flows {
			got[s.Name] = s
		}
		for _, f := range flows {
			if got[f].Count == 0 {
				t.Errorf("%s: flow %s never completed", res.Scenario, f)
			}
		}
		if tot := res.Total(); tot.Errors != 0 {
			t.Errorf("%s: %d errors: %v", res.Scenario, tot.Errors, tot.Codes)
		}
		for _, r := range res.Requests {
			if r.Errors != 0 {
				t.Errorf("%s: request %s: %d errors: %v", res.Scenario, r.Name, r.Errors, r.Codes)
			}
		}
	}
	// Closed loop: the first nine starts take each flow of the mix once.
	res, err := h.scenario(context.Background(), c, "mixed", shape{clients: 4, d: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mixedRatio {
		names = append(names, m.Flow)
	}
	check(res, append(names, "total"))
	var approved int
	if err := env.App.DB.Get(&approved, `SELECT count(*) FROM applications WHERE partner_id = $1 AND status = 'approved'`, creds.Partner.ID); err != nil || approved == 0 {
		t.Fatalf("%d applications approved (%v)", approved, err)
	}

	// The scenarios the mix leaves out, and the open loop.
	for _, s := range []struct {
		op string
		sh shape
	}{
		{"account_create", shape{clients: 2, d: 500 * time.Millisecond}},
		{"card_create", shape{clients: 2, d: 500 * time.Millisecond}},
		{"transfer_hot_out", shape{clients: 2, d: 500 * time.Millisecond}},
		{"transfer_hot_in", shape{clients: 2, d: 500 * time.Millisecond}},
		{"mixed", shape{rate: 20, inflight: 8, d: time.Second}},
	} {
		res, err := h.scenario(context.Background(), c, s.op, s.sh)
		if err != nil {
			t.Fatal(err)
		}
		if s.op == "mixed" {
			check(res, []string{"total"})
			continue
		}
		check(res, []string{s.op})
	}
	if logs := env.Logs.String(); strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("the server logged errors:\n%s", strings.Join(serverErrors([]byte(logs)), "\n"))
	}
}
