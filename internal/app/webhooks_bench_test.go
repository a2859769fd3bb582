package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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

// hookReceiver records when each webhook-id first arrived.
type hookReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	arrived map[string]time.Time
	count   atomic.Int64
}

func newHookReceiver(tb testing.TB) *hookReceiver {
	h := &hookReceiver{arrived: map[string]time.Time{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		now := time.Now()
		h.mu.Lock()
		if _, dup := h.arrived[r.Header.Get("webhook-id")]; !dup {
			h.arrived[r.Header.Get("webhook-id")] = now
			h.count.Add(1)
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(h.Close)
	return h
}

// emit commits one card.status_changed event and returns its id and the
// time the commit returned.
func emit(tb testing.TB, env *apptest.Env, partnerID string) (string, time.Time) {
	var id string
	err := env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
		ev, err := env.App.Events.Emit(ctx, partnerID, emi.EventCardStatusChanged, "card", kernel.NewToken(), map[string]any{"status": "inactive"})
		id = ev.ID
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return id, time.Now()
}

func startPool(tb testing.TB, env *apptest.Env) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = env.App.RunWorkers(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
}

// twoWorkers: errors only (no per-job debug lines); the one partner may use
// both workers (its budget would be 1 of 2 by default), so the benchmark
// measures the delivery pipeline, not the per-partner budget.
func twoWorkers(c *config.Config) { c.Workers, c.WebhookPartnerConcurrency, c.LogLevel = 2, 2, 8 }

// BenchmarkWebhookDeliveryThroughput queues b.N events, then measures how
// fast one process with 2 workers delivers them to a loopback receiver.
func BenchmarkWebhookDeliveryThroughput(b *testing.B) {
	env := apptest.New(b, apptest.Options{Configure: twoWorkers})
	rc := newHookReceiver(b)
	p := env.NewPartner(b, emi.PartnerCreate{WebhookURL: rc.URL + "/hooks"})
	for i := 0; i < b.N; i++ {
		emit(b, env, p.ID)
	}
	b.ResetTimer()
	start := time.Now()
	startPool(b, env)
	// The wait is what the benchmark measures: a fixed 5 ms pause.
	testwait.Until(b, "every event delivered", func() bool { return rc.count.Load() >= int64(b.N) }, testwait.Every(5*time.Millisecond))
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkWebhookDeliveryDelay emits events at 200 per second (each in its
// own transaction) while 2 workers deliver, and reports the p50 and p99 time
// from commit to arrival at the receiver. Run with -benchtime=1x: each run
// emits 1,000 events over 5 s.
func BenchmarkWebhookDeliveryDelay(b *testing.B) {
	for n := 0; n < b.N; n++ {
		env := apptest.New(b, apptest.Options{Configure: twoWorkers})
		rc := newHookReceiver(b)
		p := env.NewPartner(b, emi.PartnerCreate{WebhookURL: rc.URL + "/hooks"})
		startPool(b, env)
		const events, rate = 1000, 200
		committed := make(map[string]time.Time, events)
		tick := time.NewTicker(time.Second / rate)
		for i := 0; i < events; i++ {
			<-tick.C
			id, at := emit(b, env, p.ID)
			committed[id] = at
		}
		tick.Stop()
		// Not a failure: the delays of what arrived are reported.
		testwait.Try(func() bool { return rc.count.Load() >= events }, testwait.Within(60*time.Second), testwait.Every(10*time.Millisecond))
		rc.mu.Lock()
		var delays []time.Duration
		for id, at := range committed {
			if got, ok := rc.arrived[id]; ok {
				delays = append(delays, got.Sub(at))
			}
		}
		rc.mu.Unlock()
		if len(delays) != events {
			b.Fatalf("%d of %d events delivered", len(delays), events)
		}
		slices.Sort(delays)
		b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds())/1000, "p99-ms")
	}
}
