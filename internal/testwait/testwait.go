// Package testwait is the tests' one way to wait for something the code
// under test does on its own time: a job, a webhook delivery, a screening,
// a listener, a process starting or stopping. Only tests import it (an
// architecture rule in internal/archtest says so); it uses only the
// standard library, so the tests of any package, down to internal/worker
// and internal/postgres, can import it without a cycle.
//
// A wait polls a condition with a short backoff until it holds. Its
// deadline only ends a wait for something that will not happen: quiet, the
// conditions hold within a second; with the race detector on two cores
// shared with other work (CI runs beside a CPU hog), many times that. So
// the default, Timeout, is generous, and a failure names what the test
// waited for and, with For, the last value it saw.
//
// A test whose bound is itself the assertion ("refused within 1 s") says
// so with Within; a test that measures how long something took, or acts
// at a moment (a kill while deliveries are in flight), keeps its own
// pause with Every.
package testwait

import (
	"testing"
	"time"
)

// Timeout bounds a wait unless Within says otherwise.
const Timeout = 2 * time.Minute

// The backoff: the first check is at once, then the pause doubles from
// firstPause up to maxPause.
const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

// Option changes a wait's bound or pause.
type Option func(*wait)

type wait struct {
	within time.Duration
	every  time.Duration // 0: the backoff
}

// Within bounds the wait by d instead of Timeout. Use it when the bound
// is part of what the test asserts, or when a longer one is needed; a
// shorter one than Timeout only to guard a hang makes a loaded machine
// fail the test.
func Within(d time.Duration) Option { return func(w *wait) { w.within = d } }

// Every pauses d between two checks instead of backing off, for a test
// that measures how long the wait took or acts the moment it ends.
func Every(d time.Duration) Option { return func(w *wait) { w.every = d } }

// poll checks ok until it holds or the bound passes, and reports whether
// it held and how long the bound was.
func poll(ok func() bool, opts []Option) (bool, time.Duration) {
	w := wait{within: Timeout}
	for _, o := range opts {
		o(&w)
	}
	deadline := time.Now().Add(w.within)
	pause := firstPause
	if w.every > 0 {
		pause = w.every
	}
	for {
		if ok() {
			return true, w.within
		}
		if !time.Now().Before(deadline) {
			return false, w.within
		}
		time.Sleep(min(pause, time.Until(deadline)+time.Millisecond))
		if w.every == 0 {
			pause = min(2*pause, maxPause)
		}
	}
}

// Until polls ok until it returns true. If the bound passes first it
// fails the test: "waited 2m0s for <what>". ok runs on the test's
// goroutine and may fail the test itself (t.Fatal on an error).
func Until(t testing.TB, what string, ok func() bool, opts ...Option) {
	t.Helper()
	if held, within := poll(ok, opts); !held {
		t.Fatalf("waited %v for %s", within, what)
	}
}

// For polls get until it reports done and returns the value it got then.
// If the bound passes first it fails the test with what and the last
// value got: "waited 2m0s for <what>; last got: <value>".
func For[T any](t testing.TB, what string, get func() (T, bool), opts ...Option) T {
	t.Helper()
	var last T
	held, within := poll(func() bool {
		var done bool
		last, done = get()
		return done
	}, opts)
	if !held {
		t.Fatalf("waited %v for %s; last got: %+v", within, what, last)
	}
	return last
}

// Try polls ok like Until but never fails the test: it reports whether ok
// held before the bound passed. It is for a goroutine other than the
// test's (which must not call t.Fatal), for a wait whose failure the test
// words itself with what it then reads, and for a check that something
// does not happen within a while.
func Try(ok func() bool, opts ...Option) bool {
	held, _ := poll(ok, opts)
	return held
}
