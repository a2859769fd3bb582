package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/testwait"
	"emi/internal/worker"
)

// fastConfig polls often and retries at once, so tests never wait long.
func fastConfig(id string) worker.Config {
	return worker.Config{
		ID:              id,
		Concurrency:     4,
		PollInterval:    10 * time.Millisecond,
		Lease:           5 * time.Second,
		ShutdownTimeout: 5 * time.Second,
		BackoffBase:     time.Millisecond,
		BackoffMax:      5 * time.Millisecond,
		Retention:       -1,
		Rand:            fixed(0.5),
	}
}

// testLogger shows the pools' logs with go test -v.
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// start runs the pool until the returned stop is called (or the test ends)
// and returns Run's error from stop.
func start(t *testing.T, p *worker.Pool) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

type jobRecord struct {
	State     string  `db:"state"`
	Attempt   int     `db:"attempt"`
	LastError string  `db:"last_error"`
	RunAtIn   float64 `db:"run_at_in"`
}

func readJob(t *testing.T, db *postgres.DB, id int64) jobRecord {
	t.Helper()
	var r jobRecord
	if err := db.GetContext(context.Background(), &r, `
		SELECT state, attempt, last_error, extract(epoch FROM run_at - now())::float8 AS run_at_in
		FROM jobs WHERE id = $1`, id); err != nil {
		t.Fatalf("read job %d: %v", id, err)
	}
	return r
}

func enqueue(t *testing.T, jobs *postgres.Jobs, spec emi.JobSpec) int64 {
	t.Helper()
	id, _, err := jobs.Enqueue(context.Background(), spec)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return id
}

func stateIs(t *testing.T, db *postgres.DB, id int64, state string) func() bool {
	return func() bool { return readJob(t, db, id).State == state }
}

func TestPoolsDrainTheQueueRunningEachJobExactlyOnce(t *testing.T) {
	t.Parallel()
	// Two connection pools to one database stand for two processes.
	url := pgtest.URL(t)
	var dbs []*postgres.DB
	for range 2 {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	const total = 300
	jobs := postgres.NewJobs(dbs[0])
	for i := range total {
		enqueue(t, jobs, emi.JobSpec{Kind: "drain", Payload: map[string]int{"n": i}})
	}

	type run struct {
		pool       string
		start, end time.Time
	}
	var (
		mu   sync.Mutex
		runs = map[int64][]run{}
	)
	for i := range 3 {
		id := fmt.Sprintf("pool-%d", i)
		p := worker.New(postgres.NewJobs(dbs[i%2]), fastConfig(id), testLogger(t))
		p.Handle("drain", func(ctx context.Context, job emi.Job) error {
			r := run{pool: id, start: time.Now()}
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			r.end = time.Now()
			mu.Lock()
			runs[job.ID] = append(runs[job.ID], r)
			mu.Unlock()
			return nil
		})
		start(t, p)
	}

	testwait.Until(t, "every job to succeed", func() bool {
		counts, err := jobs.CountByState(context.Background())
		return err == nil && counts["succeeded"] == total
	})
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != total {
		t.Fatalf("%d distinct jobs ran, want %d", len(runs), total)
	}
	perPool := map[string]int{}
	for id, rs := range runs {
		for i, a := range rs {
			perPool[a.pool]++
			for _, b := range rs[i+1:] {
				if a.start.Before(b.end) && b.start.Before(a.end) {
					t.Errorf("job %d ran twice at once: %+v and %+v", id, a, b)
				}
			}
		}
		if len(rs) != 1 {
			t.Errorf("job %d ran %d times, want once", id, len(rs))
		}
	}
	var once int
	if err := dbs[1].GetContext(context.Background(), &once,
		`SELECT count(*) FROM jobs WHERE state = 'succeeded' AND attempt = 1`); err != nil || once != total {
		t.Fatalf("%d jobs succeeded on their first attempt (err %v), want %d", once, err, total)
	}
	t.Logf("jobs per pool: %v", perPool)
}

func TestPoolRunsAgainTheJobOfAWorkerThatDied(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	id := enqueue(t, jobs, emi.JobSpec{Kind: "orphan"})
	// A worker claims the job with a short lease and dies without a word.
	dead, err := jobs.Claim(context.Background(), "dead-worker", []string{"orphan"}, 200*time.Millisecond, 1, 0)
	if err != nil || len(dead) != 1 {
		t.Fatalf("claim: %d jobs, err %v", len(dead), err)
	}
	attempts := make(chan int, 2)
	p := worker.New(jobs, fastConfig("w-heir"), testLogger(t))
	p.Handle("orphan", func(ctx context.Context, job emi.Job) error {
		attempts <- job.Attempt
		return nil
	})
	start(t, p)
	testwait.Until(t, "the orphaned job to succeed", stateIs(t, db, id, "succeeded"))
	if got := <-attempts; got != 2 {
		t.Fatalf("the pool ran attempt %d, want 2", got)
	}
	if err := jobs.Complete(context.Background(), id, dead[0].Attempt); !errors.Is(err, emi.ErrJobLeaseLost) {
		t.Fatalf("the dead worker's late Complete: %v, want ErrJobLeaseLost", err)
	}
}

func TestPoolRetriesAFailingJobUntilItIsDead(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	id := enqueue(t, jobs, emi.JobSpec{Kind: "flaky", MaxAttempts: 3})
	var calls atomic.Int32
	p := worker.New(jobs, fastConfig("w"), testLogger(t))
	p.Handle("flaky", func(ctx context.Context, job emi.Job) error {
		calls.Add(1)
		return fmt.Errorf("endpoint down on attempt %d", job.Attempt)
	})
	start(t, p)
	testwait.Until(t, "the job to die", stateIs(t, db, id, "dead"))
	r := readJob(t, db, id)
	if r.Attempt != 3 || r.LastError != "endpoint down on attempt 3" || calls.Load() != 3 {
		t.Fatalf("dead job %+v after %d calls, want 3 attempts ending with the third's error", r, calls.Load())
	}
}

func TestPoolHandlerOutcomes(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)

	cases := []struct {
		name        string
		handler     worker.Handler
		wantState   string
		wantAttempt int
		wantError   string // a substring of last_error
		check       func(t *testing.T, r jobRecord)
	}{
		{
			name: "a Permanent error makes the job dead at once",
			handler: func(ctx context.Context, job emi.Job) error {
				return worker.Permanent(errors.New("payload names no application"))
			},
			wantState: "dead", wantAttempt: 1, wantError: "payload names no application",
		},
		{
			name: "a wrapped Permanent error makes the job dead at once too",
			handler: func(ctx context.Context, job emi.Job) error {
				return fmt.Errorf("deliver: %w", worker.Permanent(errors.New("endpoint gone (410)")))
			},
			wantState: "dead", wantAttempt: 1, wantError: "deliver: endpoint gone (410)",
		},
		{
			name: "RetryAfter sets the delay before the next attempt",
			handler: func(ctx context.Context, job emi.Job) error {
				return worker.RetryAfter(time.Hour, errors.New("429 Too Many Requests"))
			},
			wantState: "available", wantAttempt: 1, wantError: "429 Too Many Requests",
			check: func(t *testing.T, r jobRecord) {
				if r.RunAtIn < 3590 || r.RunAtIn > 3601 {
					t.Errorf("next attempt in %.0f s, want about 3600", r.RunAtIn)
				}
			},
		},
		{
			name: "a panicking handler counts as a failed attempt and the job is retried",
			handler: func(ctx context.Context, job emi.Job) error {
				if job.Attempt == 1 {
					panic("boom: handler bug")
				}
				return nil
			},
			wantState: "succeeded", wantAttempt: 2, wantError: "panic: boom: handler bug",
			check: func(t *testing.T, r jobRecord) {
				if !strings.Contains(r.LastError, "worker_test.go") {
					t.Errorf("last error %q does not carry the panic's stack", r.LastError)
				}
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kind := fmt.Sprintf("outcome-%d", i)
			id := enqueue(t, jobs, emi.JobSpec{Kind: kind, MaxAttempts: 5})
			// A second kind in the same pool shows the pool goes on working.
			other := enqueue(t, jobs, emi.JobSpec{Kind: kind + "-other"})
			p := worker.New(jobs, fastConfig(kind), testLogger(t))
			p.Handle(kind, tc.handler)
			p.Handle(kind+"-other", func(ctx context.Context, job emi.Job) error { return nil })
			stop := start(t, p)
			testwait.Until(t, "the outcome", func() bool {
				r := readJob(t, db, id)
				return r.State == tc.wantState && r.Attempt == tc.wantAttempt
			})
			testwait.Until(t, "the other job", stateIs(t, db, other, "succeeded"))
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			r := readJob(t, db, id)
			if r.State != tc.wantState || r.Attempt != tc.wantAttempt || !strings.Contains(r.LastError, tc.wantError) {
				t.Fatalf("job %+v, want %s after attempt %d with an error containing %q", r, tc.wantState, tc.wantAttempt, tc.wantError)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestPoolGracefulShutdown(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)

	t.Run("shutdown waits for the running job to finish", func(t *testing.T) {
		id := enqueue(t, jobs, emi.JobSpec{Kind: "slow"})
		started, release := make(chan struct{}), make(chan struct{})
		p := worker.New(jobs, fastConfig("w-slow"), testLogger(t))
		p.Handle("slow", func(ctx context.Context, job emi.Job) error {
			close(started)
			<-release // ignores ctx on purpose: it is not cancelled before the deadline
			return nil
		})
		stop := start(t, p)
		<-started
		stopped := make(chan error, 1)
		go func() { stopped <- stop() }()
		select {
		case err := <-stopped:
			t.Fatalf("Run returned (%v) while its job was running", err)
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if r := readJob(t, db, id); r.State != "succeeded" {
			t.Fatalf("job %+v, want succeeded before Run returned", r)
		}
	})

	t.Run("at the deadline the job is cancelled and queued again at once", func(t *testing.T) {
		id := enqueue(t, jobs, emi.JobSpec{Kind: "stuck"})
		cfg := fastConfig("w-stuck")
		cfg.ShutdownTimeout = 100 * time.Millisecond
		cfg.BackoffBase, cfg.BackoffMax = time.Hour, time.Hour
		started := make(chan struct{})
		p := worker.New(jobs, cfg, testLogger(t))
		p.Handle("stuck", func(ctx context.Context, job emi.Job) error {
			close(started)
			<-ctx.Done()
			return context.Cause(ctx)
		})
		stop := start(t, p)
		<-started
		t0 := time.Now()
		if err := stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(t0); took > 3*time.Second {
			t.Errorf("shutdown took %v with a 100 ms timeout", took)
		}
		r := readJob(t, db, id)
		if r.State != "available" || r.Attempt != 1 || !strings.Contains(r.LastError, "shutting down") || r.RunAtIn > 1 {
			t.Fatalf("job %+v, want available again now after attempt 1 with the shutdown as its error", r)
		}
	})
}

func TestPoolKeepsTheLeaseOfALongJob(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	id := enqueue(t, jobs, emi.JobSpec{Kind: "long"})
	cfg := fastConfig("w-long")
	cfg.Lease = 300 * time.Millisecond
	running := make(chan struct{})
	p := worker.New(jobs, cfg, testLogger(t))
	p.Handle("long", func(ctx context.Context, job emi.Job) error {
		close(running)
		select {
		case <-time.After(1500 * time.Millisecond): // five leases
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	start(t, p)
	<-running
	// Another worker keeps trying to take the job; the heartbeat keeps it.
	for range 12 {
		got, err := jobs.Claim(context.Background(), "thief", []string{"long"}, time.Minute, 1, 0)
		if err != nil || len(got) != 0 {
			t.Fatalf("another worker claimed %d jobs (err %v) while the handler ran", len(got), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	testwait.Until(t, "the long job to succeed", stateIs(t, db, id, "succeeded"))
	if r := readJob(t, db, id); r.Attempt != 1 {
		t.Fatalf("job %+v, want it done in its first attempt", r)
	}
}

// lostLease is a store whose heartbeats are always refused, as when another
// worker took the job over.
type lostLease struct{ *postgres.Jobs }

func (lostLease) Extend(ctx context.Context, id int64, attempt int, lease time.Duration) error {
	return fmt.Errorf("extend job %d: %w", id, emi.ErrJobLeaseLost)
}

func TestPoolCancelsAHandlerWhoseLeaseWasLost(t *testing.T) {
	t.Parallel()
	jobs := postgres.NewJobs(pgtest.DB(t))
	enqueue(t, jobs, emi.JobSpec{Kind: "lost"})
	cfg := fastConfig("w-lost")
	cfg.Lease = 150 * time.Millisecond
	cause := make(chan error, 1)
	p := worker.New(lostLease{jobs}, cfg, testLogger(t))
	p.Handle("lost", func(ctx context.Context, job emi.Job) error {
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
		case <-time.After(5 * time.Second):
			cause <- nil
		}
		return context.Cause(ctx)
	})
	start(t, p)
	select {
	case err := <-cause:
		if err == nil || !strings.Contains(err.Error(), "lease lost") {
			t.Fatalf("handler context ended with %v, want a lost lease", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never ran")
	}
}

// countingStore counts claims and records prunes.
type countingStore struct {
	worker.Store
	claims atomic.Int32
	mu     sync.Mutex
	prunes []time.Time
}

func (s *countingStore) Claim(ctx context.Context, workerID string, kinds []string, lease time.Duration, limit, perKey int) ([]emi.Job, error) {
	s.claims.Add(1)
	return s.Store.Claim(ctx, workerID, kinds, lease, limit, perKey)
}

func (s *countingStore) Prune(ctx context.Context, olderThan time.Time) (int64, error) {
	s.mu.Lock()
	s.prunes = append(s.prunes, olderThan)
	s.mu.Unlock()
	return 0, nil
}

func TestPoolNotifyWakesItBeforeTheNextPoll(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	store := &countingStore{Store: jobs}
	cfg := fastConfig("w-notify")
	cfg.PollInterval = time.Hour
	p := worker.New(store, cfg, testLogger(t))
	p.Handle("notified", func(ctx context.Context, job emi.Job) error { return nil })
	start(t, p)
	testwait.Until(t, "the first poll", func() bool { return store.claims.Load() >= 1 })

	id := enqueue(t, jobs, emi.JobSpec{Kind: "notified"})
	p.Notify()
	testwait.Until(t, "the notified job to run", stateIs(t, db, id, "succeeded"))
}

func TestPoolPrunesWithItsClock(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := &countingStore{Store: postgres.NewJobs(pgtest.DB(t))}
	cfg := fastConfig("w-prune")
	cfg.Retention = 48 * time.Hour
	cfg.Now = func() time.Time { return now }
	p := worker.New(store, cfg, testLogger(t))
	p.Handle("any", func(ctx context.Context, job emi.Job) error { return nil })
	start(t, p)
	testwait.Until(t, "a prune", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.prunes) > 0
	})
	store.mu.Lock()
	defer store.mu.Unlock()
	if want := now.Add(-48 * time.Hour); !store.prunes[0].Equal(want) {
		t.Fatalf("pruned before %v, want %v", store.prunes[0], want)
	}
}

func TestPoolWiringMistakes(t *testing.T) {
	t.Parallel()
	jobs := postgres.NewJobs(pgtest.DB(t))
	noop := func(ctx context.Context, job emi.Job) error { return nil }

	t.Run("Run without handlers is refused", func(t *testing.T) {
		if err := worker.New(jobs, fastConfig("w"), nil).Run(context.Background()); err == nil {
			t.Fatal("Run with no handler: want an error")
		}
	})
	t.Run("Run twice is refused", func(t *testing.T) {
		store := &countingStore{Store: jobs}
		p := worker.New(store, fastConfig("w"), nil)
		p.Handle("k", noop)
		stop := start(t, p)
		testwait.Until(t, "the first poll", func() bool { return store.claims.Load() >= 1 })
		if err := p.Run(context.Background()); err == nil {
			t.Fatal("second Run: want an error")
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
	panics := []struct {
		name string
		do   func(p *worker.Pool)
	}{
		{"a kind registered twice panics", func(p *worker.Pool) { p.Handle("k", noop); p.Handle("k", noop) }},
		{"an empty kind panics", func(p *worker.Pool) { p.Handle("", noop) }},
		{"a nil handler panics", func(p *worker.Pool) { p.Handle("k", nil) }},
	}
	for _, tc := range panics {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.do(worker.New(jobs, fastConfig("w"), nil))
		})
	}
}

func TestPermanentAndRetryAfterKeepTheirCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	for name, err := range map[string]error{
		"Permanent":  worker.Permanent(cause),
		"RetryAfter": worker.RetryAfter(time.Minute, cause),
	} {
		if !errors.Is(err, cause) || err.Error() != "cause" {
			t.Errorf("%s: %v does not wrap its cause", name, err)
		}
	}
	if worker.Permanent(nil) == nil || worker.RetryAfter(time.Second, nil) == nil {
		t.Error("Permanent(nil) and RetryAfter(d, nil) must still be errors")
	}
}

// TestKeyConcurrencyKeepsOneKeyFromTakingEverySlot: a pool of 4 with
// KeyConcurrency 2 runs at most 2 jobs of the hot key at once, however many
// of them are due and however old; a job of another key queued after the
// whole hot backlog starts at once rather than behind it, and every hot job
// still runs, each on its first attempt (waiting for a place uses no
// attempt), without waiting for a poll.
func TestKeyConcurrencyKeepsOneKeyFromTakingEverySlot(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	kind := "keyed." + fmt.Sprint(rand.Uint64())
	var running, peak atomic.Int32
	var coldStarted atomic.Int64
	hotDone := atomic.Int32{}
	cfg := fastConfig("keyed")
	cfg.KeyConcurrency = 2
	// No polling: the hot jobs must follow each other through the pool's
	// own signals (a finished job of a full key makes it claim again), so
	// a lost signal stalls the test instead of costing one poll.
	cfg.PollInterval = time.Hour
	p := worker.New(jobs, cfg, testLogger(t))
	p.Handle(kind, func(ctx context.Context, job emi.Job) error {
		if job.ConcurrencyKey == "partner:cold" {
			coldStarted.Store(time.Now().UnixNano())
			return nil
		}
		n := running.Add(1)
		defer running.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		hotDone.Add(1)
		return nil
	})
	const hot = 40
	var ids []int64
	for range hot {
		ids = append(ids, enqueue(t, jobs, emi.JobSpec{Kind: kind, RunAt: time.Now().Add(-time.Minute), ConcurrencyKey: "partner:hot"}))
	}
	start(t, p)
	testwait.Until(t, "the hot jobs to start", func() bool { return running.Load() > 0 })
	queued := time.Now()
	cold := enqueue(t, jobs, emi.JobSpec{Kind: kind, ConcurrencyKey: "partner:cold"})
	p.Notify()
	testwait.Until(t, "the cold job", func() bool { return coldStarted.Load() != 0 })
	if wait := time.Duration(coldStarted.Load() - queued.UnixNano()); wait > 400*time.Millisecond || hotDone.Load() >= hot-2 {
		t.Fatalf("the cold job started %v after it was queued, with %d of %d hot jobs done; want at once, before the backlog drained", wait, hotDone.Load(), hot)
	}
	testwait.Until(t, "every hot job", func() bool { return hotDone.Load() == hot })
	if got := peak.Load(); got != 2 {
		t.Fatalf("at most %d hot jobs ran at once, want 2 (the budget, with 4 slots)", got)
	}
	for _, id := range append(ids, cold) {
		testwait.Until(t, "the job to be recorded", stateIs(t, db, id, "succeeded"))
		if r := readJob(t, db, id); r.Attempt != 1 {
			t.Fatalf("job %d took %d attempts, want 1", id, r.Attempt)
		}
	}
}
