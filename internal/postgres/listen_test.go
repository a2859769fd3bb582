package postgres_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/testwait"
)

func TestEnqueueWakesListenersOnlyWhenItsTransactionCommits(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	jobs := postgres.NewJobs(db)
	var wakes atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		postgres.ListenJobs(ctx, url, func() { wakes.Add(1) }, &atomic.Bool{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() { cancel(); <-done }()
	testwait.Until(t, "a wake after the listener connected", func() bool { return wakes.Load() >= 1 })
	base := wakes.Load()

	boom := errors.New("roll back")
	_ = db.InTx(context.Background(), func(ctx context.Context) error {
		if _, _, err := jobs.Enqueue(ctx, emi.JobSpec{Kind: "test.kind"}); err != nil {
			t.Fatal(err)
		}
		return boom
	})
	if _, _, err := jobs.Enqueue(context.Background(), emi.JobSpec{Kind: "test.later", RunAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if got := wakes.Load(); got != base {
		t.Fatalf("%d wakes for a rolled-back job and a job due later, want 0", got-base)
	}

	err = db.InTx(context.Background(), func(ctx context.Context) error {
		_, _, err := jobs.Enqueue(ctx, emi.JobSpec{Kind: "test.kind"})
		if err == nil {
			time.Sleep(200 * time.Millisecond)
			if wakes.Load() != base {
				t.Error("woken before the commit")
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "a wake after the commit", func() bool { return wakes.Load() >= base+1 })
}
