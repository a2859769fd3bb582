package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/testwait"
)

// jobRecord is a job row as the tests inspect it, read straight from the
// table.
type jobRecord struct {
	State       string     `db:"state"`
	Attempt     int        `db:"attempt"`
	MaxAttempts int        `db:"max_attempts"`
	LastError   string     `db:"last_error"`
	LockedBy    string     `db:"locked_by"`
	LockedUntil *time.Time `db:"locked_until"`
	FinishedAt  *time.Time `db:"finished_at"`
	// RunAtIn and LockedIn are run_at and locked_until minus the database's
	// now(), in seconds, so tests need not trust the test machine's clock.
	RunAtIn  float64  `db:"run_at_in"`
	LockedIn *float64 `db:"locked_in"`
}

func readJob(t *testing.T, db *postgres.DB, id int64) jobRecord {
	t.Helper()
	var r jobRecord
	err := db.GetContext(context.Background(), &r, `
		SELECT state, attempt, max_attempts, last_error, locked_by, locked_until, finished_at,
		       extract(epoch FROM run_at - now())::float8 AS run_at_in,
		       extract(epoch FROM locked_until - now())::float8 AS locked_in
		FROM jobs WHERE id = $1`, id)
	if err != nil {
		t.Fatalf("read job %d: %v", id, err)
	}
	return r
}

func enqueue(t *testing.T, jobs *postgres.Jobs, spec emi.JobSpec) int64 {
	t.Helper()
	id, created, err := jobs.Enqueue(context.Background(), spec)
	if err != nil || !created {
		t.Fatalf("enqueue %+v: id %d created %v err %v", spec, id, created, err)
	}
	return id
}

func claimOne(t *testing.T, jobs *postgres.Jobs, worker, kind string, lease time.Duration) emi.Job {
	t.Helper()
	got, err := jobs.Claim(context.Background(), worker, []string{kind}, lease, 1, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim %s as %s: %d jobs, err %v; want 1 job", kind, worker, len(got), err)
	}
	return got[0]
}

func TestJobsEnqueueJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	errRollback := errors.New("roll back")

	cases := []struct {
		name     string
		rollback bool
		want     int
	}{
		{"enqueue in a transaction that rolls back leaves no job", true, 0},
		{"enqueue in a transaction that commits leaves one job", false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			kind := "test." + randSuffix(t)
			err := db.InTx(ctx, func(ctx context.Context) error {
				if _, _, err := jobs.Enqueue(ctx, emi.JobSpec{Kind: kind}); err != nil {
					return err
				}
				// Until the commit, no worker on another connection sees it.
				if got, err := jobs.Claim(postgres.WithoutTx(ctx), "outsider", []string{kind}, time.Minute, 10, 0); err != nil || len(got) != 0 {
					t.Errorf("claim from outside the open transaction: %d jobs, err %v; want none", len(got), err)
				}
				if tc.rollback {
					return errRollback
				}
				return nil
			})
			if tc.rollback != errors.Is(err, errRollback) || (!tc.rollback && err != nil) {
				t.Fatalf("InTx: %v", err)
			}
			got, err := jobs.Claim(ctx, "w", []string{kind}, time.Minute, 10, 0)
			if err != nil || len(got) != tc.want {
				t.Fatalf("after the transaction: claimed %d jobs, err %v; want %d", len(got), err, tc.want)
			}
		})
	}
}

func TestJobsEnqueueStoresTheSpec(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()

	type payload struct {
		Token string `json:"token"`
		N     int    `json:"n"`
	}
	cases := []struct {
		name        string
		spec        emi.JobSpec
		wantPayload string
		wantMax     int
		wantDue     bool
	}{
		{"a payload is stored as JSON and max attempts defaults to 25",
			emi.JobSpec{Payload: payload{Token: "abc", N: 3}}, `{"n": 3, "token": "abc"}`, emi.DefaultJobMaxAttempts, true},
		{"a nil payload is stored as an empty object",
			emi.JobSpec{MaxAttempts: 3}, `{}`, 3, true},
		{"raw JSON is stored as it is",
			emi.JobSpec{Payload: json.RawMessage(`[1,2]`)}, `[1, 2]`, emi.DefaultJobMaxAttempts, true},
		{"a job to run later is not due now",
			emi.JobSpec{RunAt: time.Now().Add(time.Hour)}, `{}`, emi.DefaultJobMaxAttempts, false},
		{"a job with a past run time is due",
			emi.JobSpec{RunAt: time.Now().Add(-time.Hour)}, `{}`, emi.DefaultJobMaxAttempts, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Kind = "test." + randSuffix(t)
			id := enqueue(t, jobs, tc.spec)
			var stored string
			if err := db.GetContext(ctx, &stored, `SELECT payload::text FROM jobs WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
			if stored != tc.wantPayload {
				t.Errorf("payload %s, want %s", stored, tc.wantPayload)
			}
			r := readJob(t, db, id)
			if r.State != "available" || r.Attempt != 0 || r.MaxAttempts != tc.wantMax {
				t.Errorf("stored %+v, want available, attempt 0, max %d", r, tc.wantMax)
			}
			got, err := jobs.Claim(ctx, "w", []string{tc.spec.Kind}, time.Minute, 1, 0)
			if err != nil || (len(got) == 1) != tc.wantDue {
				t.Fatalf("claim: %d jobs, err %v; want due %v", len(got), err, tc.wantDue)
			}
			if tc.wantDue && string(got[0].Payload) != tc.wantPayload {
				t.Errorf("claimed payload %s, want %s", got[0].Payload, tc.wantPayload)
			}
		})
	}
}

func TestJobsEnqueueRefusesABadSpec(t *testing.T) {
	t.Parallel()
	jobs := postgres.NewJobs(pgtest.DB(t))
	cases := []struct {
		name string
		spec emi.JobSpec
	}{
		{"a job without a kind is refused", emi.JobSpec{}},
		{"negative max attempts are refused", emi.JobSpec{Kind: "k", MaxAttempts: -1}},
		{"a payload that does not marshal is refused", emi.JobSpec{Kind: "k", Payload: make(chan int)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := jobs.Enqueue(context.Background(), tc.spec)
			if !errors.Is(err, emi.ErrInternal) {
				t.Fatalf("Enqueue: %v, want an internal error", err)
			}
		})
	}
}

func TestJobsUniqueKeyDedupesPendingJobs(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()
	const kind = "application.checks"
	spec := emi.JobSpec{Kind: kind, UniqueKey: "application.checks:app-1"}

	first := enqueue(t, jobs, spec)
	again := func(step string, wantCreated bool, wantID int64) int64 {
		t.Helper()
		id, created, err := jobs.Enqueue(ctx, spec)
		if err != nil || created != wantCreated || (wantID != 0 && id != wantID) {
			t.Fatalf("%s: id %d created %v err %v; want created %v, id %d", step, id, created, err, wantCreated, wantID)
		}
		return id
	}
	again("while the first job waits", false, first)
	job := claimOne(t, jobs, "w", kind, time.Minute)
	again("while the first job runs", false, first)
	if err := jobs.Complete(ctx, job.ID, job.Attempt); err != nil {
		t.Fatal(err)
	}
	second := again("after the first job succeeded", true, 0)
	if second == first {
		t.Fatal("a new job reused the finished job's id")
	}
	job = claimOne(t, jobs, "w", kind, time.Minute)
	if err := jobs.Discard(ctx, job.ID, job.Attempt, "gave up"); err != nil {
		t.Fatal(err)
	}
	again("after the second job died", true, 0)

	// Jobs without a key are never deduplicated.
	enqueue(t, jobs, emi.JobSpec{Kind: kind})
	enqueue(t, jobs, emi.JobSpec{Kind: kind})

	// Racing enqueues of one key, each in its own transaction, leave one job.
	raceSpec := emi.JobSpec{Kind: kind, UniqueKey: "application.checks:app-2"}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		ids     = map[int64]bool{}
	)
	for range 20 {
		wg.Go(func() {
			err := db.InTx(ctx, func(ctx context.Context) error {
				id, c, err := jobs.Enqueue(ctx, raceSpec)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				ids[id] = true
				if c {
					created++
				}
				return nil
			})
			if err != nil {
				t.Errorf("racing enqueue: %v", err)
			}
		})
	}
	wg.Wait()
	if created != 1 || len(ids) != 1 {
		t.Fatalf("20 racing enqueues of one key: %d created, ids %v; want 1 job", created, ids)
	}
}

func TestJobsClaim(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()
	now := time.Now()

	t.Run("claims only due jobs of the asked kinds, oldest first, under a lease", func(t *testing.T) {
		a, b := "a."+randSuffix(t), "b."+randSuffix(t)
		newer := enqueue(t, jobs, emi.JobSpec{Kind: a, RunAt: now.Add(-time.Minute)})
		older := enqueue(t, jobs, emi.JobSpec{Kind: a, RunAt: now.Add(-time.Hour)})
		enqueue(t, jobs, emi.JobSpec{Kind: a, RunAt: now.Add(time.Hour)})
		enqueue(t, jobs, emi.JobSpec{Kind: b})

		got, err := jobs.Claim(ctx, "worker-1", []string{a}, time.Minute, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("claimed %d jobs, want the 2 due jobs of kind a", len(got))
		}
		ids := map[int64]bool{got[0].ID: true, got[1].ID: true}
		if !ids[newer] || !ids[older] {
			t.Fatalf("claimed %v, want %d and %d", ids, older, newer)
		}
		for _, j := range got {
			if j.State != emi.JobRunning || j.Attempt != 1 || j.LockedBy != "worker-1" || j.Kind != a {
				t.Errorf("claimed job %+v, want running attempt 1 of %s locked by worker-1", j, a)
			}
			r := readJob(t, db, j.ID)
			if r.LockedIn == nil || *r.LockedIn < 50 || *r.LockedIn > 61 {
				t.Errorf("lease ends in %v s, want about 60", r.LockedIn)
			}
		}

		c := "c." + randSuffix(t)
		first := enqueue(t, jobs, emi.JobSpec{Kind: c, RunAt: now.Add(-time.Minute)})
		enqueue(t, jobs, emi.JobSpec{Kind: c, RunAt: now.Add(-time.Second)})
		if j := claimOne(t, jobs, "w", c, time.Minute); j.ID != first {
			t.Errorf("claimed job %d first, want the one due earliest (%d)", j.ID, first)
		}
	})

	t.Run("claims no more than the limit", func(t *testing.T) {
		kind := "limit." + randSuffix(t)
		for range 5 {
			enqueue(t, jobs, emi.JobSpec{Kind: kind})
		}
		for _, want := range []int{2, 2, 1, 0} {
			got, err := jobs.Claim(ctx, "w", []string{kind}, time.Minute, 2, 0)
			if err != nil || len(got) != want {
				t.Fatalf("claimed %d, err %v; want %d", len(got), err, want)
			}
		}
	})

	t.Run("claims nothing without kinds or a positive limit", func(t *testing.T) {
		kind := "none." + randSuffix(t)
		enqueue(t, jobs, emi.JobSpec{Kind: kind})
		for _, tc := range []struct {
			kinds []string
			limit int
		}{{nil, 10}, {[]string{kind}, 0}} {
			if got, err := jobs.Claim(ctx, "w", tc.kinds, time.Minute, tc.limit, 0); err != nil || len(got) != 0 {
				t.Fatalf("Claim(%v, %d): %d jobs, err %v; want none", tc.kinds, tc.limit, len(got), err)
			}
		}
	})

	t.Run("concurrent claimers never get the same job", func(t *testing.T) {
		kind := "race." + randSuffix(t)
		const total = 200
		for range total {
			enqueue(t, jobs, emi.JobSpec{Kind: kind})
		}
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			got = map[int64]int{}
		)
		for w := range 8 {
			wg.Go(func() {
				for {
					claimed, err := jobs.Claim(ctx, "w"+string(rune('a'+w)), []string{kind}, time.Minute, 7, 0)
					if err != nil {
						t.Error(err)
						return
					}
					if len(claimed) == 0 {
						return
					}
					mu.Lock()
					for _, j := range claimed {
						got[j.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(got) != total {
			t.Fatalf("claimed %d distinct jobs, want %d", len(got), total)
		}
		for id, n := range got {
			if n != 1 {
				t.Errorf("job %d claimed %d times", id, n)
			}
		}
	})
}

// waitClaim claims a job of kind as worker until one comes back or within
// passes: a test that expects no job waits the whole of within.
func waitClaim(t *testing.T, jobs *postgres.Jobs, worker, kind string, within time.Duration) (emi.Job, bool) {
	t.Helper()
	var job emi.Job
	ok := testwait.Try(func() bool {
		got, err := jobs.Claim(context.Background(), worker, []string{kind}, time.Minute, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 {
			job = got[0]
		}
		return len(got) == 1
	}, testwait.Within(within))
	return job, ok
}

func TestJobsJobOfADeadWorkerIsClaimedAgainAfterItsLease(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()
	kind := "lease." + randSuffix(t)
	id := enqueue(t, jobs, emi.JobSpec{Kind: kind})

	// worker-1 claims with a short lease and dies: it never reports back.
	stale := claimOne(t, jobs, "worker-1", kind, 300*time.Millisecond)
	if got, err := jobs.Claim(ctx, "worker-2", []string{kind}, time.Minute, 1, 0); err != nil || len(got) != 0 {
		t.Fatalf("claim during the lease: %d jobs, err %v; want none", len(got), err)
	}
	fresh, ok := waitClaim(t, jobs, "worker-2", kind, testwait.Timeout)
	if !ok {
		t.Fatal("the job was not claimed again after its lease ran out")
	}
	if fresh.ID != id || fresh.Attempt != stale.Attempt+1 || fresh.LockedBy != "worker-2" {
		t.Fatalf("reclaimed %+v, want job %d attempt %d locked by worker-2", fresh, id, stale.Attempt+1)
	}
	if !strings.Contains(fresh.LastError, "lease expired") || !strings.Contains(fresh.LastError, "worker-1") {
		t.Errorf("last error %q, want it to say worker-1's lease expired", fresh.LastError)
	}

	// The stale worker wakes up: everything it reports is refused.
	stales := map[string]error{
		"complete": jobs.Complete(ctx, id, stale.Attempt),
		"extend":   jobs.Extend(ctx, id, stale.Attempt, time.Minute),
		"discard":  jobs.Discard(ctx, id, stale.Attempt, "late"),
	}
	_, stales["fail"] = jobs.Fail(ctx, id, stale.Attempt, "late", 0)
	for op, err := range stales {
		if !errors.Is(err, emi.ErrJobLeaseLost) {
			t.Errorf("stale %s: %v, want ErrJobLeaseLost", op, err)
		}
	}
	if r := readJob(t, db, id); r.State != "running" || r.Attempt != fresh.Attempt || r.LockedBy != "worker-2" {
		t.Fatalf("after the stale reports: %+v, want still running attempt %d of worker-2", r, fresh.Attempt)
	}
	if err := jobs.Complete(ctx, id, fresh.Attempt); err != nil {
		t.Fatalf("complete by the current attempt: %v", err)
	}
	if r := readJob(t, db, id); r.State != "succeeded" || r.FinishedAt == nil || r.LockedUntil != nil {
		t.Fatalf("after complete: %+v, want succeeded, finished, unlocked", r)
	}
}

func TestJobsJobWhoseLastAttemptLostItsLeaseIsDead(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	kind := "lastlease." + randSuffix(t)
	id := enqueue(t, jobs, emi.JobSpec{Kind: kind, MaxAttempts: 1})
	claimOne(t, jobs, "worker-1", kind, 200*time.Millisecond)
	if j, ok := waitClaim(t, jobs, "worker-2", kind, 1500*time.Millisecond); ok {
		t.Fatalf("claimed %+v, want no attempt beyond the last", j)
	}
	r := readJob(t, db, id)
	if r.State != "dead" || r.Attempt != 1 || !strings.Contains(r.LastError, "lease expired") || r.FinishedAt == nil {
		t.Fatalf("job %+v, want dead after attempt 1 with a lease-expired error", r)
	}
}

func TestJobsOutcomes(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()

	cases := []struct {
		name        string
		maxAttempts int
		report      func(j emi.Job) error
		wantState   string
		wantError   string
		// wantRunIn bounds run_at - now() in seconds, for available jobs.
		wantRunIn [2]float64
		// wantClaimNow: the job can be claimed again at once.
		wantClaimNow bool
	}{
		{
			name: "a failure before the last attempt makes the job available after the delay", maxAttempts: 3,
			report: func(j emi.Job) error {
				_, err := jobs.Fail(ctx, j.ID, j.Attempt, "endpoint said 503", time.Hour)
				return err
			},
			wantState: "available", wantError: "endpoint said 503", wantRunIn: [2]float64{3590, 3601},
		},
		{
			name: "a failure without a delay can be claimed again at once", maxAttempts: 3,
			report: func(j emi.Job) error {
				_, err := jobs.Fail(ctx, j.ID, j.Attempt, "flaky", 0)
				return err
			},
			wantState: "available", wantError: "flaky", wantRunIn: [2]float64{-5, 0.01}, wantClaimNow: true,
		},
		{
			name: "a failure on the last attempt makes the job dead with its error", maxAttempts: 1,
			report: func(j emi.Job) error {
				state, err := jobs.Fail(ctx, j.ID, j.Attempt, "still down", time.Hour)
				if err == nil && state != emi.JobDead {
					t.Errorf("Fail returned state %s, want dead", state)
				}
				return err
			},
			wantState: "dead", wantError: "still down",
		},
		{
			name: "discard makes the job dead whatever attempts it has left", maxAttempts: 25,
			report:    func(j emi.Job) error { return jobs.Discard(ctx, j.ID, j.Attempt, "bad payload") },
			wantState: "dead", wantError: "bad payload",
		},
		{
			name: "complete makes the job succeeded", maxAttempts: 25,
			report:    func(j emi.Job) error { return jobs.Complete(ctx, j.ID, j.Attempt) },
			wantState: "succeeded",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind := "outcome." + randSuffix(t)
			id := enqueue(t, jobs, emi.JobSpec{Kind: kind, MaxAttempts: tc.maxAttempts})
			j := claimOne(t, jobs, "w", kind, time.Minute)
			if err := tc.report(j); err != nil {
				t.Fatal(err)
			}
			r := readJob(t, db, id)
			if r.State != tc.wantState || r.LastError != tc.wantError || r.LockedUntil != nil {
				t.Fatalf("job %+v, want state %s, error %q, unlocked", r, tc.wantState, tc.wantError)
			}
			if finished := tc.wantState != "available"; finished != (r.FinishedAt != nil) {
				t.Errorf("finished_at %v for a %s job", r.FinishedAt, r.State)
			}
			if tc.wantState == "available" && (r.RunAtIn < tc.wantRunIn[0] || r.RunAtIn > tc.wantRunIn[1]) {
				t.Errorf("runs again in %.1f s, want within %v", r.RunAtIn, tc.wantRunIn)
			}
			got, err := jobs.Claim(ctx, "w", []string{kind}, time.Minute, 1, 0)
			if err != nil || (len(got) == 1) != tc.wantClaimNow {
				t.Fatalf("claim after the outcome: %d jobs, err %v; want claimable %v", len(got), err, tc.wantClaimNow)
			}
			if tc.wantClaimNow && got[0].Attempt != j.Attempt+1 {
				t.Errorf("retry is attempt %d, want %d", got[0].Attempt, j.Attempt+1)
			}
		})
	}
}

func TestJobsExtendRenewsTheLease(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	kind := "extend." + randSuffix(t)
	id := enqueue(t, jobs, emi.JobSpec{Kind: kind})
	j := claimOne(t, jobs, "w", kind, time.Second)
	if err := jobs.Extend(context.Background(), id, j.Attempt, time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := readJob(t, db, id); r.LockedIn == nil || *r.LockedIn < 3590 || *r.LockedIn > 3601 {
		t.Fatalf("lease ends in %v s, want about 3600", r.LockedIn)
	}
	if err := jobs.Extend(context.Background(), id, j.Attempt, 0); !errors.Is(err, emi.ErrInternal) {
		t.Fatalf("Extend by 0: %v, want an internal error", err)
	}
}

func TestJobsCountByState(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()

	counts, err := jobs.CountByState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"available": 0, "running": 0, "succeeded": 0, "dead": 0}
	if !equalCounts(counts, want) {
		t.Fatalf("empty queue: %v, want %v", counts, want)
	}

	const kind = "count"
	for range 6 {
		enqueue(t, jobs, emi.JobSpec{Kind: kind})
	}
	claimed, err := jobs.Claim(ctx, "w", []string{kind}, time.Minute, 4, 0)
	if err != nil || len(claimed) != 4 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	if err := jobs.Complete(ctx, claimed[0].ID, claimed[0].Attempt); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Discard(ctx, claimed[1].ID, claimed[1].Attempt, "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Fail(ctx, claimed[2].ID, claimed[2].Attempt, "later", time.Hour); err != nil {
		t.Fatal(err)
	}
	counts, err = jobs.CountByState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]int64{"available": 3, "running": 1, "succeeded": 1, "dead": 1}
	if !equalCounts(counts, want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestJobsPruneDeletesOnlyOldSucceededJobs(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()
	const kind = "prune"

	finish := func(how string, age time.Duration) int64 {
		t.Helper()
		id := enqueue(t, jobs, emi.JobSpec{Kind: kind})
		j := claimOne(t, jobs, "w", kind, time.Minute)
		var err error
		if how == "succeeded" {
			err = jobs.Complete(ctx, j.ID, j.Attempt)
		} else {
			err = jobs.Discard(ctx, j.ID, j.Attempt, "no")
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `UPDATE jobs SET finished_at = now() - $2::float8 * interval '1 second' WHERE id = $1`,
			id, age.Seconds()); err != nil {
			t.Fatal(err)
		}
		return id
	}
	old := finish("succeeded", 48*time.Hour)
	recent := finish("succeeded", time.Minute)
	oldDead := finish("dead", 48*time.Hour)
	pending := enqueue(t, jobs, emi.JobSpec{Kind: kind, RunAt: time.Now().Add(-72 * time.Hour)})

	n, err := jobs.Prune(ctx, time.Now().Add(-24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("Prune: deleted %d, err %v; want 1", n, err)
	}
	var left []int64
	if err := db.SelectContext(ctx, &left, `SELECT id FROM jobs ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	want := []int64{recent, oldDead, pending}
	if len(left) != len(want) || left[0] != want[0] || left[1] != want[1] || left[2] != want[2] {
		t.Fatalf("jobs left %v, want %v (job %d pruned)", left, want, old)
	}
}

// TestJobsClaimKeepsEachKeyToItsBudget: jobs sharing a concurrency key (a
// partner's webhook deliveries) are claimed at most perKey at once per
// worker; the jobs passed over stay available exactly as they were (attempt
// 0, run_at unchanged), the other keys' and unkeyed jobs behind them are
// claimed in the same call, another worker has a budget of its own, and a
// finished job frees a place.
func TestJobsClaimKeepsEachKeyToItsBudget(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	jobs := postgres.NewJobs(db)
	ctx := context.Background()
	kind := "keyed." + randSuffix(t)
	now := time.Now()
	var hot []int64
	for i := range 6 {
		// The hot key's jobs are the oldest: without the budget every
		// claim would take them first.
		hot = append(hot, enqueue(t, jobs, emi.JobSpec{Kind: kind, RunAt: now.Add(-time.Hour + time.Duration(i)*time.Second), ConcurrencyKey: "partner:hot"}))
	}
	cold := enqueue(t, jobs, emi.JobSpec{Kind: kind, RunAt: now.Add(-time.Minute), ConcurrencyKey: "partner:cold"})
	plain := enqueue(t, jobs, emi.JobSpec{Kind: kind, RunAt: now.Add(-time.Second)})

	got, err := jobs.Claim(ctx, "w1", []string{kind}, time.Minute, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(js []emi.Job) []int64 {
		out := make([]int64, len(js))
		for i, j := range js {
			out[i] = j.ID
		}
		return out
	}
	// The batch of the 4 oldest holds 4 hot jobs, of which 2 fit.
	if g := ids(got); len(g) != 2 || g[0] != hot[0] || g[1] != hot[1] || got[0].ConcurrencyKey != "partner:hot" {
		t.Fatalf("first claim %v, want the two oldest hot jobs %v", g, hot[:2])
	}
	for _, id := range hot[2:] {
		if r := readJob(t, db, id); r.State != "available" || r.Attempt != 0 || r.LockedBy != "" || r.RunAtIn > -3000 {
			t.Fatalf("a hot job passed over: %+v; want it untouched", r)
		}
	}
	got, err = jobs.Claim(ctx, "w1", []string{kind}, time.Minute, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if g := ids(got); len(g) != 2 || g[0] != cold || g[1] != plain {
		t.Fatalf("second claim %v, want the cold and the unkeyed job %d, %d behind the hot backlog", g, cold, plain)
	}
	if got, err := jobs.Claim(ctx, "w1", []string{kind}, time.Minute, 4, 2); err != nil || len(got) != 0 {
		t.Fatalf("third claim: %v %v; want none while the hot key's budget is used", ids(got), err)
	}
	if got, err := jobs.Claim(ctx, "w2", []string{kind}, time.Minute, 1, 2); err != nil || len(got) != 1 || got[0].ID != hot[2] {
		t.Fatalf("another worker's claim: %v %v; want the next hot job", ids(got), err)
	}
	if err := jobs.Complete(ctx, hot[0], 1); err != nil {
		t.Fatal(err)
	}
	if got, err := jobs.Claim(ctx, "w1", []string{kind}, time.Minute, 4, 2); err != nil || len(got) != 1 || got[0].ID != hot[3] {
		t.Fatalf("claim after a hot job finished: %v %v; want one more hot job", ids(got), err)
	}
	if got, err := jobs.Claim(ctx, "w3", []string{kind}, time.Minute, 10, 0); err != nil || len(got) != 2 {
		t.Fatalf("a claim without a budget: %v %v; want the 2 hot jobs left", ids(got), err)
	}
}
