package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/testwait"
)

// budgetReceiver holds partner P's deliveries (paths /p/…) until partner
// Q's delivery (/q/…) has arrived, and counts how many of P's are in
// flight at once. Without a budget P's backlog takes every worker, each
// waiting for Q's delivery that no worker is free to make: they time out
// and are retried, which the test sees. No step of it depends on time.
type budgetReceiver struct {
	inFlight, peak atomic.Int32
	qArrived       chan struct{}
	qOnce          sync.Once
	mu             sync.Mutex
	got            map[string]bool // webhook-id + path
}

func (rc *budgetReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if strings.HasPrefix(r.URL.Path, "/p/") {
		n := rc.inFlight.Add(1)
		defer rc.inFlight.Add(-1)
		for old := rc.peak.Load(); n > old && !rc.peak.CompareAndSwap(old, n); old = rc.peak.Load() {
		}
		select {
		case <-rc.qArrived:
			// Long enough for the deliveries the pool would run
			// beside this one, were there no budget, to overlap it.
			time.Sleep(20 * time.Millisecond)
		case <-r.Context().Done():
			return
		}
	} else {
		defer rc.qOnce.Do(func() { close(rc.qArrived) })
	}
	rc.mu.Lock()
	rc.got[r.Header.Get("webhook-id")+" "+r.URL.Path] = true
	rc.mu.Unlock()
}

func (rc *budgetReceiver) arrived(event, path string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got[event+" "+path]
}

// TestOnePartnersFanOutWaitsItsTurn: partner P's deliveries take at most
// EMI_WEBHOOK_PARTNER_CONCURRENCY (2 here) of a process's EMI_WORKERS (4)
// at once, however many endpoints and events it has; partner Q's delivery,
// queued behind P's whole backlog, is made while P's first deliveries still
// hang (the receiver holds them until Q's arrives); and nothing is lost or
// charged: every one of P's deliveries succeeds on its first attempt, its
// job on its first run. Without the budget P's 30 deliveries take all 4
// workers, Q's waits behind them, and P's time out and are retried.
func TestOnePartnersFanOutWaitsItsTurn(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) {
		// Explicit, though these are the defaults (4 workers, half of
		// them for one partner); the limit per host is raised so that
		// one receiver serves P's ten endpoints.
		c.Workers, c.WebhookPartnerConcurrency, c.WebhookEndpointsPerHost = 4, 2, 10
	}})
	rc := &budgetReceiver{got: map[string]bool{}, qArrived: make(chan struct{})}
	srv := newLoopbackServer(t, rc)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Fan Out"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Bystander"})
	const endpoints, events = 10, 3
	for i := range endpoints {
		apptest.Expect(t, "P's endpoint", createEndpoint(t, env, p, fmt.Sprintf("%s/p/%d", srv, i)), 0, http.StatusCreated)
	}
	apptest.Expect(t, "Q's endpoint", createEndpoint(t, env, q, srv+"/q/0"), 0, http.StatusCreated)
	emit := func(partnerID string) string {
		t.Helper()
		var ev emi.Event
		err := env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
			var err error
			ev, err = env.App.Events.Emit(ctx, partnerID, emi.EventCardActivated, "card", kernel.NewToken(), nil)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	var pEvents []string
	for range events {
		pEvents = append(pEvents, emit(p.ID))
	}
	startWorkers(t, env)
	testwait.Until(t, "P's first deliveries to be in flight", func() bool { return rc.inFlight.Load() > 0 })
	qEvent := emit(q.ID)
	testwait.Until(t, "Q's delivery", func() bool { return rc.arrived(qEvent, "/q/0") })
	testwait.Until(t, "every one of P's deliveries to succeed", func() bool {
		var pending int
		if err := env.App.DB.Get(&pending, `SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
			WHERE e.partner_id = $1 AND d.state <> 'succeeded'`, p.ID); err != nil {
			t.Fatal(err)
		}
		return pending == 0
	})
	for _, ev := range pEvents {
		for i := range endpoints {
			if !rc.arrived(ev, fmt.Sprintf("/p/%d", i)) {
				t.Fatalf("P's delivery of %s to endpoint %d was never received", ev, i)
			}
		}
	}
	if got := rc.peak.Load(); got > 2 {
		t.Fatalf("%d of P's deliveries were in flight at once, want at most 2 (the budget)", got)
	}
	var charged int
	if err := env.App.DB.Get(&charged, `SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
		JOIN jobs j ON j.unique_key = 'webhook.deliver:' || d.id::text
		WHERE e.partner_id = $1 AND (d.attempts <> 1 OR j.attempt <> 1 OR j.concurrency_key <> 'partner:' || e.partner_id::text)`, p.ID); err != nil {
		t.Fatal(err)
	}
	if charged != 0 {
		t.Fatalf("%d of P's deliveries took more than one attempt or run (waiting for a place must cost none)", charged)
	}
}
