package apptest

import (
	"testing"

	"emi/internal/testwait"
)

// WaitJobsIdle waits until no job is running and none is due (a job
// waiting for a later run_at, such as a retry's backoff or a settle
// period, is not due). A test whose workers run uses it where it would
// otherwise sleep "until the jobs have run": before it checks that
// something did not happen (no duplicate check, no second decision), it
// waits for the work that could have done it to end. Other waits use
// internal/testwait, the tests' one wait helper.
func (e *Env) WaitJobsIdle(t testing.TB) {
	t.Helper()
	testwait.For(t, "the jobs to end (jobs running or due)", func() (int, bool) {
		var busy int
		if err := e.App.DB.Get(&busy, `SELECT count(*) FROM jobs
			WHERE state = 'running' OR (state = 'available' AND run_at <= now())`); err != nil {
			t.Fatal(err)
		}
		return busy, busy == 0
	})
}
