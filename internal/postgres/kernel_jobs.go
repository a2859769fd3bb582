package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Jobs is the background job queue (table jobs). Every method runs on the
// ambient transaction of its context, or on the pool when there is none, so
// Enqueue inside a service's transaction commits or rolls back with it.
//
// Leases are measured by the database clock (now()), so workers in several
// processes agree on when a lease runs out whatever their own clocks say.
type Jobs struct {
	db *DB
}

// NewJobs returns the job queue stored in db.
func NewJobs(db *DB) *Jobs { return &Jobs{db: db} }

var (
	_ kernel.JobStore = (*Jobs)(nil)
	_ kernel.Enqueuer = (*Jobs)(nil)
)

// pruneBatch bounds the rows one DELETE of Prune removes, so pruning a large
// backlog never holds many row locks or one long transaction.
const pruneBatch = 5000

// jobColumns is what every query that returns jobs selects.
const jobColumns = `id, kind, payload, state, attempt, max_attempts, run_at, locked_until,
	locked_by, last_error, unique_key, concurrency_key, created_at, updated_at, finished_at`

type jobRow struct {
	ID          int64          `db:"id"`
	Kind        string         `db:"kind"`
	Payload     []byte         `db:"payload"`
	State       string         `db:"state"`
	Attempt     int            `db:"attempt"`
	MaxAttempts int            `db:"max_attempts"`
	RunAt       time.Time      `db:"run_at"`
	LockedUntil sql.NullTime   `db:"locked_until"`
	LockedBy    string         `db:"locked_by"`
	LastError   string         `db:"last_error"`
	UniqueKey   sql.NullString `db:"unique_key"`
	Concurrency sql.NullString `db:"concurrency_key"`
	CreatedAt   time.Time      `db:"created_at"`
	UpdatedAt   time.Time      `db:"updated_at"`
	FinishedAt  sql.NullTime   `db:"finished_at"`
}

func (r jobRow) job() emi.Job {
	return emi.Job{
		ID:             r.ID,
		Kind:           r.Kind,
		Payload:        json.RawMessage(r.Payload),
		State:          emi.JobState(r.State),
		Attempt:        r.Attempt,
		MaxAttempts:    r.MaxAttempts,
		RunAt:          r.RunAt,
		LockedUntil:    r.LockedUntil.Time,
		LockedBy:       r.LockedBy,
		LastError:      r.LastError,
		UniqueKey:      r.UniqueKey.String,
		ConcurrencyKey: r.Concurrency.String,
		CreatedAt:      r.CreatedAt,
		UpdatedAt:      r.UpdatedAt,
		FinishedAt:     r.FinishedAt.Time,
	}
}

// Enqueue adds a job and returns its id. It runs in the transaction of ctx,
// so the job exists iff that transaction commits. When spec has a UniqueKey
// and a job with that key is still available or running, no job is added:
// Enqueue returns that job's id and created false.
// Returns an internal error when spec has no kind, a negative MaxAttempts or
// a payload that does not marshal to JSON, or when the database fails.
func (s *Jobs) Enqueue(ctx context.Context, spec emi.JobSpec) (id int64, created bool, err error) {
	if spec.Kind == "" {
		return 0, false, emi.Internal(errors.New("enqueue job: empty kind"))
	}
	if spec.MaxAttempts < 0 {
		return 0, false, emi.Internal(fmt.Errorf("enqueue job %s: negative max attempts %d", spec.Kind, spec.MaxAttempts))
	}
	maxAttempts := spec.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = emi.DefaultJobMaxAttempts
	}
	payload := []byte(`{}`)
	if spec.Payload != nil {
		if payload, err = json.Marshal(spec.Payload); err != nil {
			return 0, false, emi.Internal(fmt.Errorf("enqueue job %s: marshal payload: %w", spec.Kind, err))
		}
	}
	var runAt any // NULL means now() by the database clock
	if !spec.RunAt.IsZero() {
		runAt = spec.RunAt
	}
	ext := s.db.Ext(ctx)
	// One statement inserts the job or, when it collides with a pending
	// one, returns that job's id: the collision is the common case of a
	// job queued on every booking (monitoring's evaluation), which a
	// look-up of its own cost a round trip each time. The look-up sees
	// the statement's snapshot: a colliding job committed after it began,
	// or one that finished meanwhile, is not in it, and the statement is
	// simply tried again.
	for range 3 {
		var created bool
		err = ext.QueryRowxContext(ctx, `
			WITH added AS (
				INSERT INTO jobs (kind, payload, max_attempts, run_at, unique_key, concurrency_key)
				VALUES ($1, $2::jsonb, $3, COALESCE($4::timestamptz, now()), NULLIF($5, ''), NULLIF($6, ''))
				ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('available', 'running')
				DO NOTHING
				RETURNING id)
			SELECT id, true FROM added
			UNION ALL
			SELECT id, false FROM jobs
			WHERE unique_key = NULLIF($5, '') AND state IN ('available', 'running') AND NOT EXISTS (SELECT FROM added)
			LIMIT 1`,
			spec.Kind, string(payload), maxAttempts, runAt, spec.UniqueKey, spec.ConcurrencyKey).Scan(&id, &created)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, false, Translate(fmt.Errorf("enqueue job %s: %w", spec.Kind, err))
		}
		if !created {
			return id, false, nil
		}
		// Wake the workers of every process. PostgreSQL delivers a NOTIFY
		// only when the transaction commits, so nobody is woken for a job
		// that was rolled back. A job that runs later is found by the poll.
		if spec.RunAt.IsZero() || !spec.RunAt.After(time.Now()) {
			if _, err := ext.ExecContext(ctx, `SELECT pg_notify($1, $2)`, JobsChannel, spec.Kind); err != nil {
				return 0, false, Translate(fmt.Errorf("enqueue job %s: notify: %w", spec.Kind, err))
			}
		}
		return id, true, nil
	}
	return 0, false, emi.Internal(fmt.Errorf("enqueue job %s: unique key %q kept colliding with jobs that finished", spec.Kind, spec.UniqueKey))
}

// Claim hands up to limit due jobs of the given kinds to workerID, oldest
// run_at first, each under a lease of the given length, and returns them
// running with their attempt counter raised. Concurrent callers (in any
// process) never get the same job: the rows are locked with FOR UPDATE SKIP
// LOCKED.
//
// perKey > 0 is the budget of jobs that share a concurrency key: workerID
// then runs at most perKey of one key at once. Jobs of a key that has its
// perKey running under workerID are passed over, and a claim takes at most
// what is left of each key's budget; the jobs passed over stay available
// exactly as they were (same run_at, attempt not raised), so a key with a
// backlog waits its turn without delaying the jobs of others and without
// using up attempts. The budget is per worker (per process): it keeps one
// key from taking every slot of a pool, which is what protects the other
// keys' jobs; with several processes a key runs at most perKey in each.
// A claim can therefore return fewer than limit jobs while more are due
// (another key's, behind the ones passed over in this batch): the caller
// claims again until it gets none or its slots are full.
//
// Before claiming, Claim rescues the jobs of those kinds whose lease ran out
// (their worker died or lost the database): each goes back to available, to
// be claimed again at once with a higher attempt, or to dead when it has used
// its last attempt. last_error records the lost lease.
// Returns no jobs when kinds is empty or limit is not positive, and an
// internal error when lease is not positive or the database fails.
func (s *Jobs) Claim(ctx context.Context, workerID string, kinds []string, lease time.Duration, limit, perKey int) ([]emi.Job, error) {
	if len(kinds) == 0 || limit <= 0 {
		return nil, nil
	}
	if lease <= 0 {
		return nil, emi.Internal(fmt.Errorf("claim jobs: lease %v is not positive", lease))
	}
	ext := s.db.Ext(ctx)
	if _, err := ext.ExecContext(ctx, `
		UPDATE jobs
		SET state = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'available' END,
		    finished_at = CASE WHEN attempt >= max_attempts THEN now() END,
		    run_at = now(),
		    last_error = 'lease expired: worker ' || locked_by || ' did not finish attempt ' || attempt,
		    locked_until = NULL,
		    updated_at = now()
		WHERE id IN (
			SELECT id FROM jobs
			WHERE state = 'running' AND locked_until < now() AND kind = ANY($1)
			FOR UPDATE SKIP LOCKED
		)`, pq.Array(kinds)); err != nil {
		return nil, Translate(fmt.Errorf("rescue jobs with expired leases: %w", err))
	}
	// busy: this worker's running jobs per key. candidates: the oldest due
	// jobs but those of keys with a full budget, locked. chosen: of those,
	// per key, only what the budget has left (the row_number within the
	// key plus what already runs). The candidates not chosen are unlocked
	// when the statement ends, untouched.
	var rows []jobRow
	err := sqlx.SelectContext(ctx, ext, &rows, `
		WITH busy AS (
			SELECT concurrency_key, count(*) AS n FROM jobs
			WHERE state = 'running' AND locked_by = $1 AND concurrency_key IS NOT NULL
			GROUP BY concurrency_key
		), candidates AS (
			SELECT id, run_at, concurrency_key FROM jobs
			WHERE state = 'available' AND run_at <= now() AND kind = ANY($3)
			  AND ($5 <= 0 OR concurrency_key IS NULL
			       OR concurrency_key NOT IN (SELECT concurrency_key FROM busy WHERE n >= $5))
			ORDER BY run_at, id
			LIMIT $4
			FOR UPDATE SKIP LOCKED
		), chosen AS (
			SELECT c.id FROM (
				SELECT id, concurrency_key,
				       row_number() OVER (PARTITION BY concurrency_key ORDER BY run_at, id) AS rn
				FROM candidates
			) c LEFT JOIN busy b ON b.concurrency_key = c.concurrency_key
			WHERE $5 <= 0 OR c.concurrency_key IS NULL OR c.rn + coalesce(b.n, 0) <= $5
		)
		UPDATE jobs
		SET state = 'running',
		    attempt = attempt + 1,
		    locked_by = $1,
		    locked_until = now() + $2::float8 * interval '1 second',
		    updated_at = now()
		WHERE id IN (SELECT id FROM chosen)
		RETURNING `+jobColumns,
		workerID, lease.Seconds(), pq.Array(kinds), limit, perKey)
	if err != nil {
		return nil, Translate(fmt.Errorf("claim jobs: %w", err))
	}
	// RETURNING follows no order: the oldest first, as claimed.
	slices.SortFunc(rows, func(a, b jobRow) int {
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	jobs := make([]emi.Job, len(rows))
	for i, r := range rows {
		jobs[i] = r.job()
	}
	return jobs, nil
}

// Complete marks the job succeeded.
// Returns an error wrapping emi.ErrJobLeaseLost when the attempt no longer
// holds the job, and an internal error when the database fails.
func (s *Jobs) Complete(ctx context.Context, id int64, attempt int) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE jobs
		SET state = 'succeeded', finished_at = now(), locked_until = NULL, updated_at = now()
		WHERE id = $1 AND attempt = $2 AND state = 'running'`,
		id, attempt)
	return held(res, err, "complete", id, attempt)
}

// Fail records a failed attempt with its error. The job is dead when the
// attempt was its last; otherwise it becomes available again retryIn from now
// (by the database clock). Fail returns the state the job is left in.
// Returns an error wrapping emi.ErrJobLeaseLost when the attempt no longer
// holds the job, and an internal error when the database fails.
func (s *Jobs) Fail(ctx context.Context, id int64, attempt int, errText string, retryIn time.Duration) (emi.JobState, error) {
	var state emi.JobState
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &state, `
		UPDATE jobs
		SET state = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'available' END,
		    finished_at = CASE WHEN attempt >= max_attempts THEN now() END,
		    run_at = CASE WHEN attempt >= max_attempts THEN run_at
		                  ELSE now() + $4::float8 * interval '1 second' END,
		    last_error = $3,
		    locked_until = NULL,
		    updated_at = now()
		WHERE id = $1 AND attempt = $2 AND state = 'running'
		RETURNING state`,
		id, attempt, errText, max(retryIn, 0).Seconds())
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("fail job %d attempt %d: %w", id, attempt, emi.ErrJobLeaseLost)
	}
	if err != nil {
		return "", Translate(fmt.Errorf("fail job %d attempt %d: %w", id, attempt, err))
	}
	return state, nil
}

// Discard marks the job dead at once with its error, whatever attempts it
// has left: for failures that retrying cannot fix.
// Returns an error wrapping emi.ErrJobLeaseLost when the attempt no longer
// holds the job, and an internal error when the database fails.
func (s *Jobs) Discard(ctx context.Context, id int64, attempt int, errText string) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE jobs
		SET state = 'dead', finished_at = now(), last_error = $3, locked_until = NULL, updated_at = now()
		WHERE id = $1 AND attempt = $2 AND state = 'running'`,
		id, attempt, errText)
	return held(res, err, "discard", id, attempt)
}

// Extend renews the lease of a running attempt to lease from now: the
// heartbeat of a long job.
// Returns an error wrapping emi.ErrJobLeaseLost when the attempt no longer
// holds the job (the worker should then abandon it), and an internal error
// when lease is not positive or the database fails.
func (s *Jobs) Extend(ctx context.Context, id int64, attempt int, lease time.Duration) error {
	if lease <= 0 {
		return emi.Internal(fmt.Errorf("extend lease of job %d: lease %v is not positive", id, lease))
	}
	res, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE jobs
		SET locked_until = now() + $3::float8 * interval '1 second', updated_at = now()
		WHERE id = $1 AND attempt = $2 AND state = 'running'`,
		id, attempt, lease.Seconds())
	return held(res, err, "extend lease of", id, attempt)
}

// held turns the result of an update guarded by "this attempt still holds
// the job" into nil, ErrJobLeaseLost or a translated database error.
func held(res sql.Result, err error, op string, id int64, attempt int) error {
	if err != nil {
		return Translate(fmt.Errorf("%s job %d attempt %d: %w", op, id, attempt, err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Translate(fmt.Errorf("%s job %d attempt %d: %w", op, id, attempt, err))
	}
	if n == 0 {
		return fmt.Errorf("%s job %d attempt %d: %w", op, id, attempt, emi.ErrJobLeaseLost)
	}
	return nil
}

// CountByState returns how many jobs are in each state, with every state
// present (zero when there are none).
// Returns an internal error when the database fails.
func (s *Jobs) CountByState(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		State string `db:"state"`
		N     int64  `db:"n"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `
		SELECT state, count(*) AS n FROM jobs GROUP BY state`); err != nil {
		return nil, Translate(fmt.Errorf("count jobs by state: %w", err))
	}
	counts := make(map[string]int64, len(emi.JobStates()))
	for _, st := range emi.JobStates() {
		counts[string(st)] = 0
	}
	for _, r := range rows {
		counts[r.State] = r.N
	}
	return counts, nil
}

// Prune deletes the succeeded jobs that finished before olderThan and returns
// how many it deleted. Dead jobs are kept for inspection. Outside a
// transaction it deletes in batches that each commit on their own.
// Returns an internal error when the database fails; the batches deleted
// before the failure stay deleted.
func (s *Jobs) Prune(ctx context.Context, olderThan time.Time) (int64, error) {
	var total int64
	for {
		res, err := s.db.Ext(ctx).ExecContext(ctx, `
			DELETE FROM jobs
			WHERE id IN (
				SELECT id FROM jobs
				WHERE state = 'succeeded' AND finished_at < $1
				LIMIT $2
				FOR UPDATE SKIP LOCKED
			)`, olderThan, pruneBatch)
		if err != nil {
			return total, Translate(fmt.Errorf("prune jobs: %w", err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, Translate(fmt.Errorf("prune jobs: %w", err))
		}
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}

// Recent lists jobs in the given state (every state when "") that are dead,
// running past their lease, or simply the newest, for the back office:
// dead and stuck jobs first, then by most recent update. At most limit rows.
func (s *Jobs) Recent(ctx context.Context, state string, limit int) ([]emi.Job, error) {
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	var rows []jobRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+jobColumns+` FROM jobs
		 WHERE ($1 = '' OR state = $1)
		 ORDER BY (state = 'dead') DESC, (state = 'running' AND locked_until < now()) DESC, updated_at DESC, id DESC
		 LIMIT $2`, state, limit)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Job, len(rows))
	for i, r := range rows {
		out[i] = r.job()
	}
	return out, nil
}
