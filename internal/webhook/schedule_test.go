package webhook

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"emi/internal/emi"
)

func fixed(r float64) func() float64 { return func() float64 { return r } }

func TestSchedule(t *testing.T) {
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

	t.Run("the schedule is the Standard Webhooks example", func(t *testing.T) {
		got := Schedule()
		if len(got) != len(want) || len(got) != MaxAttempts-1 {
			t.Fatalf("Schedule has %d delays, want %d (MaxAttempts-1 = %d)", len(got), len(want), MaxAttempts-1)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("delay %d = %v, want %v", i+1, got[i], want[i])
			}
		}
	})

	t.Run("the schedule cannot be changed through the returned slice", func(t *testing.T) {
		Schedule()[0] = time.Hour
		if Schedule()[0] != 5*time.Second {
			t.Fatal("Schedule returned shared storage")
		}
	})

	t.Run("the delays grow", func(t *testing.T) {
		s := Schedule()
		for i := 1; i < len(s); i++ {
			if s[i] <= s[i-1] {
				t.Errorf("delay %d (%v) is not longer than delay %d (%v)", i+1, s[i], i, s[i-1])
			}
		}
	})

	t.Run("the horizon is 75.5 hours, at least 72", func(t *testing.T) {
		h := Horizon()
		if h != 75*time.Hour+35*time.Minute+5*time.Second {
			t.Errorf("Horizon = %v, want 75h35m5s", h)
		}
		if h < 72*time.Hour || h < RetryWindow {
			t.Errorf("Horizon = %v, want at least 72h", h)
		}
	})
}

func TestNextDelay(t *testing.T) {
	t.Run("the first attempt is immediate", func(t *testing.T) {
		for _, n := range []int{0, -1} {
			if d, giveUp := NextDelay(n, fixed(0.9)); d != 0 || giveUp {
				t.Errorf("NextDelay(%d) = %v, %v; want 0, false", n, d, giveUp)
			}
		}
	})

	t.Run("each delay is the scheduled one spread by 20 percent", func(t *testing.T) {
		for i, d := range Schedule() {
			failed := i + 1
			for _, tc := range []struct {
				r    float64
				want time.Duration
			}{
				{0, d * 8 / 10},
				{0.5, d},
				{0.75, d * 11 / 10},
			} {
				got, giveUp := NextDelay(failed, fixed(tc.r))
				if giveUp || absDuration(got-tc.want) > time.Microsecond {
					t.Errorf("NextDelay(%d, %v) = %v, %v; want %v", failed, tc.r, got, giveUp, tc.want)
				}
			}
		}
	})

	t.Run("random delays stay within the jitter bounds", func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(1, 2)).Float64
		for range 1000 {
			for i, d := range Schedule() {
				got, giveUp := NextDelay(i+1, rnd)
				lo, hi := time.Duration(float64(d)*(1-Jitter)), time.Duration(float64(d)*(1+Jitter))
				if giveUp || got < lo || got >= hi {
					t.Fatalf("NextDelay(%d) = %v, want in [%v, %v)", i+1, got, lo, hi)
				}
			}
		}
	})

	t.Run("a random source out of range is clamped", func(t *testing.T) {
		for _, r := range []float64{-3, 7, math.NaN(), math.Inf(1)} {
			got, _ := NextDelay(1, fixed(r))
			if got < 4*time.Second || got > 6*time.Second {
				t.Errorf("NextDelay(1, %v) = %v, want within 4s..6s", r, got)
			}
		}
	})

	t.Run("a nil random source still gives a delay within bounds", func(t *testing.T) {
		got, giveUp := NextDelay(2, nil)
		if giveUp || got < 4*time.Minute || got >= 6*time.Minute {
			t.Fatalf("NextDelay(2, nil) = %v, %v", got, giveUp)
		}
	})

	t.Run("the delivery is given up after the last attempt", func(t *testing.T) {
		if _, giveUp := NextDelay(MaxAttempts-1, fixed(0.5)); giveUp {
			t.Fatal("gave up before the last attempt")
		}
		for _, n := range []int{MaxAttempts, MaxAttempts + 1} {
			if d, giveUp := NextDelay(n, fixed(0.5)); !giveUp || d != 0 {
				t.Errorf("NextDelay(%d) = %v, %v; want 0, true", n, d, giveUp)
			}
		}
	})
}

func TestDelay(t *testing.T) {
	tests := []struct {
		name       string
		res        emi.WebhookResult
		failed     int
		wantDelay  time.Duration
		wantGiveUp bool
	}{
		{"a 500 waits the scheduled delay", emi.WebhookResult{Status: 500}, 1, 5 * time.Second, false},
		{"Retry-After 120 s overrides a 5 s delay", emi.WebhookResult{Status: 429, RetryAfter: 120 * time.Second}, 1, 120 * time.Second, false},
		{"a shorter Retry-After does not shorten the schedule", emi.WebhookResult{Status: 503, RetryAfter: time.Second}, 2, 5 * time.Minute, false},
		{"Retry-After is capped at 24 hours", emi.WebhookResult{Status: 429, RetryAfter: 100 * time.Hour}, 1, 24 * time.Hour, false},
		{"Retry-After does not extend the schedule past the last attempt", emi.WebhookResult{Status: 429, RetryAfter: time.Hour}, MaxAttempts, 0, true},
		{"410 Gone gives up at once", emi.WebhookResult{Status: 410}, 1, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, giveUp := Delay(tc.res, tc.failed, fixed(0.5))
			if d != tc.wantDelay || giveUp != tc.wantGiveUp {
				t.Fatalf("Delay = %v, %v; want %v, %v", d, giveUp, tc.wantDelay, tc.wantGiveUp)
			}
		})
	}
}

func TestDelayAfter(t *testing.T) {
	// lastStart replays a delivery that always fails, on a virtual clock, and
	// returns when its last attempt starts.
	lastStart := func(rnd func() float64, next func(failed int, elapsed time.Duration) (time.Duration, bool)) (time.Duration, int) {
		var at time.Duration
		for failed := 1; ; failed++ {
			d, giveUp := next(failed, at)
			if giveUp {
				return at, failed
			}
			at += d
		}
	}
	res := emi.WebhookResult{Status: 500}

	t.Run("with all delays drawn short the schedule alone stops before 72 hours", func(t *testing.T) {
		at, attempts := lastStart(fixed(0), func(failed int, _ time.Duration) (time.Duration, bool) { return Delay(res, failed, fixed(0)) })
		if attempts != MaxAttempts || at >= RetryWindow {
			t.Fatalf("last attempt %d at %v: this test documents why DelayAfter exists", attempts, at)
		}
	})

	for _, tc := range []struct {
		name string
		rnd  func() float64
	}{
		{"with all delays drawn short the last attempt is still at 72 hours or later", fixed(0)},
		{"with all delays drawn long the last attempt is at the jittered time", fixed(0.999)},
		{"with random delays the last attempt is at 72 hours or later", rand.New(rand.NewPCG(3, 4)).Float64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 100 {
				at, attempts := lastStart(tc.rnd, func(failed int, elapsed time.Duration) (time.Duration, bool) {
					return DelayAfter(res, failed, elapsed, tc.rnd)
				})
				if attempts != MaxAttempts || at < RetryWindow || at > time.Duration(float64(Horizon())*(1+Jitter)) {
					t.Fatalf("last attempt %d at %v, want attempt %d within [%v, %v]", attempts, at, MaxAttempts, RetryWindow, time.Duration(float64(Horizon())*(1+Jitter)))
				}
			}
		})
	}

	t.Run("only the last delay is stretched", func(t *testing.T) {
		d, _ := DelayAfter(res, 1, 0, fixed(0.5))
		if d != 5*time.Second {
			t.Fatalf("DelayAfter(1) = %v, want 5s", d)
		}
	})

	t.Run("410 Gone still gives up at once", func(t *testing.T) {
		if _, giveUp := DelayAfter(emi.WebhookResult{Status: 410}, MaxAttempts-1, 0, fixed(0.5)); !giveUp {
			t.Fatal("410 on the penultimate attempt did not give up")
		}
	})
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
