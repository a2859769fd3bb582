package apptest

import (
	"testing"
	"time"
)

// WaitTimeout bounds a test's wait for something the application does on
// its own time (a job, a webhook delivery, a screening, a cache refresh).
// It is a deadline for a condition polled every PollInterval, never a time
// a test waits for: quiet, the conditions hold within a second; with the
// race detector on two cores shared with other work, many times that. So
// it only ends a wait for something that will not happen.
const WaitTimeout = 2 * time.Minute

// PollInterval is the pause between two checks of a condition.
const PollInterval = 20 * time.Millisecond

// Eventually polls ok every PollInterval until it holds, and fails the
// test with what when WaitTimeout passes first.
func Eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(WaitTimeout); !ok(); time.Sleep(PollInterval) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", WaitTimeout, what)
		}
	}
}

// WaitJobsIdle waits until no job is running and none is due (a job
// waiting for a later run_at, such as a retry's backoff or a settle
// period, is not due). A test whose workers run uses it where it would
// otherwise sleep "until the jobs have run": before it checks that
// something did not happen (no duplicate check, no second decision), it
// waits for the work that could have done it to end.
func (e *Env) WaitJobsIdle(t testing.TB) {
	t.Helper()
	var busy int
	Eventually(t, "the jobs to end", func() bool {
		if err := e.App.DB.Get(&busy, `SELECT count(*) FROM jobs
			WHERE state = 'running' OR (state = 'available' AND run_at <= now())`); err != nil {
			t.Fatal(err)
		}
		return busy == 0
	})
}
