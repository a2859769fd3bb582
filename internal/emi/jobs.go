package emi

import (
	"encoding/json"
	"errors"
	"time"
)

// JobState is where a background job is in its life. A job starts
// available, is running while a worker holds its lease, and ends succeeded or
// dead. A failed attempt that may be retried makes it available again.
type JobState string

// Job states, as stored in jobs.state.
const (
	JobAvailable JobState = "available" // waiting for its run_at
	JobRunning   JobState = "running"   // held by a worker until locked_until
	JobSucceeded JobState = "succeeded" // done; pruned after the retention period
	JobDead      JobState = "dead"      // gave up: out of attempts or a permanent error
)

// JobStates lists every job state, in life-cycle order.
func JobStates() []JobState {
	return []JobState{JobAvailable, JobRunning, JobSucceeded, JobDead}
}

// DefaultJobMaxAttempts is the number of attempts a job gets when its spec
// does not say: with the worker's default backoff this spreads retries over
// about three days at most (see worker.Backoff).
const DefaultJobMaxAttempts = 25

// JobSpec describes a job to enqueue.
type JobSpec struct {
	// Kind names the handler that runs the job, e.g. "webhook.deliver".
	Kind string
	// Payload is marshalled to JSON and handed to the handler as is; nil is
	// stored as {}.
	Payload any
	// RunAt is the earliest time the job may run; zero means now (by the
	// database clock).
	RunAt time.Time
	// MaxAttempts bounds the attempts; 0 means DefaultJobMaxAttempts.
	MaxAttempts int
	// UniqueKey, when set, makes the enqueue a no-op while another job with
	// the same key is still available or running, e.g.
	// "application.checks:<token>" so a burst of changes queues one run.
	UniqueKey string
	// ConcurrencyKey, when set, puts the job in a group of which a worker
	// pool runs only a few at once (worker.Config.KeyConcurrency); the
	// others wait in the queue for a place, without using an attempt.
	// Webhook deliveries use the partner's ("partner:<id>").
	ConcurrencyKey string
}

// Job is a background job as a worker sees it.
type Job struct {
	ID      int64
	Kind    string
	Payload json.RawMessage
	State   JobState
	// Attempt counts the claims so far: 1 during the first run. A worker
	// passes it back with its result, so a result from an attempt whose
	// lease was lost is refused.
	Attempt     int
	MaxAttempts int
	RunAt       time.Time
	LockedUntil time.Time // zero unless running
	LockedBy    string    // the worker that claimed it last
	LastError   string    // the error of the last failed attempt
	UniqueKey   string
	// ConcurrencyKey is the spec's ("" for none).
	ConcurrencyKey string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	FinishedAt     time.Time // zero until succeeded or dead
}

// ErrJobLeaseLost is returned when a worker reports on an attempt that no
// longer holds its job: the lease expired and the job was handed back to the
// queue (or to another worker), which now owns the outcome. It is internal
// to the job queue and never reaches a client, so it is not in the catalogue.
var ErrJobLeaseLost = errors.New("job lease lost: the attempt no longer holds the job")
