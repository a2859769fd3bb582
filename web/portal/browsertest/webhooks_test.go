package browser_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// TestReplayFromTheDeliveryLog: an admin opens a partner's delivery log in
// the browser, presses Replay on a delivered test event, and the receiver
// gets the event again; the log then shows the attempt marked replay and the
// audit log has the staff user's replay.
func TestReplayFromTheDeliveryLog(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)

	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Hooked", WebhookURL: rc.URL + "/hooks"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = env.App.Pool().Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var ep string
	if err := env.App.DB.Get(&ep, `SELECT id FROM webhook_endpoints WHERE partner_id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	if _, err := env.App.Webhooks.SendTest(sys, p.ID, ep); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		testwait.Until(t, what, ok)
	}
	wait("the first delivery", func() bool { return hits.Load() == 1 })

	b := newTab(t, env)
	b.signIn(env, apptest.AdminEmail)
	wait("the attempt in the log", func() bool {
		b.open("/backoffice/partners/" + p.ID + "/events")
		return b.count(`[data-testid="replay"]`) == 1 && strings.Contains(b.html(), ">succeeded<")
	})
	b.clickNav(`[data-testid="replay"]`)
	if !strings.Contains(b.text("#flashes"), "new delivery attempt") {
		t.Fatalf("no confirmation after replay: %q", b.text("#flashes"))
	}
	wait("the replayed delivery", func() bool { return hits.Load() == 2 })
	wait("the replay attempt in the log", func() bool {
		b.open("/backoffice/partners/" + p.ID + "/events")
		return strings.Contains(b.html(), ">replay<")
	})
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action LIKE '%replay%' AND actor_type = 'staff'`); err != nil || n != 1 {
		t.Fatalf("replay audit rows: %d (%v), want 1", n, err)
	}
}
