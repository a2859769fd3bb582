package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// An overload is answered 503 / 10503 with Retry-After and changes nothing:
// with one request allowed in flight and a short queue wait, a transfer
// held by a lock on its balance keeps the place, a second request waits its
// turn, then is refused before it reads anything; sent again with the same
// Idempotency-Key once the first is done, it is carried out once.
func TestOverloadIsRefusedWith503AndRetryAfter(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.MaxInFlight = 1
		c.QueueWait = 100 * time.Millisecond
	}})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "overload"})
	accs := fundedAccounts(t, env, p, 2, 10_000)
	transfer := func(key string) apptest.Response {
		return p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/transfers", Operation: "transfer_create",
			Header: map[string]string{"Idempotency-Key": key},
			JSON: map[string]any{"source": map[string]any{"account": accs[0].acc}, "destination": map[string]any{"balance": accs[1].bal},
				"amount": "1.00", "currency": "EUR", "reference": key}})
	}

	// Hold the source balance so the first transfer waits inside the API.
	ctx := context.Background()
	tx, err := env.App.DB.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM balances WHERE token = $1 FOR UPDATE`, accs[0].bal); err != nil {
		t.Fatal(err)
	}
	var first apptest.Response
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); first = transfer("overload-1") }()
	// The first request holds the only place once it waits on the lock.
	testwait.Until(t, "the first transfer to wait on the balance lock", func() bool {
		var n int
		_ = env.App.DB.Get(&n, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database()`)
		return n > 0
	})

	second := transfer("overload-2")
	if second.Status != http.StatusServiceUnavailable || second.Code != 10503 || second.Header.Get("Retry-After") != "1" {
		t.Fatalf("second request while the place is taken: %s (Retry-After %q), want 503 / 10503 with Retry-After 1",
			second, second.Header.Get("Retry-After"))
	}
	read := p.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/accounts/" + accs[1].acc, Operation: "account_details"})
	if read.Status != http.StatusServiceUnavailable || read.Code != 10503 {
		t.Fatalf("a read while the place is taken: %s, want 503 / 10503", read)
	}

	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if first.Status != http.StatusCreated {
		t.Fatalf("the transfer that held the place: %s", first)
	}
	if again := transfer("overload-2"); again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the refused transfer sent again with its key: %s, want carried out now", again)
	}
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM transfers WHERE partner_id = $1`, p.ID); err != nil || n != 2 {
		t.Fatalf("%d transfers (%v), want 2: the refused attempt changed nothing", n, err)
	}
}
