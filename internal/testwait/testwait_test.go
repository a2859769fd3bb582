package testwait_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/testwait"
)

// recorder is a testing.TB whose Fatalf records the message instead of
// ending the test (the helpers call it last).
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	r := &recorder{TB: t}
	testwait.Until(r, "the third call", func() bool { return calls.Add(1) >= 3 })
	if r.fatal != "" || calls.Load() != 3 {
		t.Fatalf("failed %q after %d calls, want no failure after 3", r.fatal, calls.Load())
	}
}

func TestUntilChecksAtOnce(t *testing.T) {
	t.Parallel()
	start := time.Now()
	testwait.Until(t, "a condition that holds", func() bool { return true })
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a condition that held at once took %v", d)
	}
}

func TestUntilFailsNamingWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	var calls int
	start := time.Now()
	testwait.Until(r, "the job to end", func() bool { calls++; return false }, testwait.Within(100*time.Millisecond))
	if r.fatal != "waited 100ms for the job to end" {
		t.Fatalf("failure %q", r.fatal)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("gave up after %v, before its bound", d)
	}
	// The backoff starts short: within 100 ms there are several checks,
	// the last one at or after the deadline.
	if calls < 4 {
		t.Fatalf("%d checks in 100 ms", calls)
	}
}

func TestForReturnsTheValueAndReportsTheLastOneSeen(t *testing.T) {
	t.Parallel()
	n := 0
	got := testwait.For(t, "n to reach 5", func() (int, bool) { n++; return n, n == 5 })
	if got != 5 {
		t.Fatalf("For returned %d, want 5", got)
	}

	r := &recorder{TB: t}
	state := "running"
	testwait.For(r, "the job to succeed", func() (string, bool) { return state, state == "succeeded" },
		testwait.Within(30*time.Millisecond))
	if !strings.HasPrefix(r.fatal, "waited 30ms for the job to succeed; last got: running") {
		t.Fatalf("failure %q", r.fatal)
	}
}

func TestTryNeverFails(t *testing.T) {
	t.Parallel()
	if testwait.Try(func() bool { return false }, testwait.Within(20*time.Millisecond)) {
		t.Fatal("Try reported a condition that never held")
	}
	n := 0
	if !testwait.Try(func() bool { n++; return n == 2 }, testwait.Within(time.Second)) {
		t.Fatal("Try missed a condition that held on the second check")
	}
}

func TestEveryKeepsItsPause(t *testing.T) {
	t.Parallel()
	var at []time.Time
	testwait.Try(func() bool { at = append(at, time.Now()); return len(at) == 4 }, testwait.Every(30*time.Millisecond))
	if len(at) != 4 {
		t.Fatalf("%d checks, want 4", len(at))
	}
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < 30*time.Millisecond {
			t.Errorf("pause %d was %v, want at least 30ms", i, d)
		}
	}
}
