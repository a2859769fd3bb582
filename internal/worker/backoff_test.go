package worker_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"emi/internal/worker"
)

func fixed(v float64) func() float64 { return func() float64 { return v } }

func TestBackoff(t *testing.T) {
	t.Parallel()
	const base, limit = 5 * time.Second, 6 * time.Hour

	cases := []struct {
		name    string
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{"no jitter draw gives no delay", 1, 0, 0},
		{"the first retry waits up to the base", 1, 0.5, 2500 * time.Millisecond},
		{"the ceiling doubles with each attempt", 4, 0.5, 20 * time.Second},
		{"attempt 13 is the last one below the cap", 13, 0.5, 10240 * time.Second},
		{"attempt 14 reaches the cap", 14, 0.5, 3 * time.Hour},
		{"a huge attempt number stays at the cap", 1 << 40, 0.5, 3 * time.Hour},
		{"attempts below one count as one", -3, 0.5, 2500 * time.Millisecond},
		{"the top of the jitter stays below the ceiling", 2, 1, 10*time.Second - 1},
		{"a random source above one is clamped", 2, 7, 10*time.Second - 1},
		{"a random source below zero is clamped", 2, -1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := worker.Backoff(tc.attempt, base, limit, fixed(tc.rnd)); got != tc.want {
				t.Fatalf("Backoff(%d) with rnd %v = %v, want %v", tc.attempt, tc.rnd, got, tc.want)
			}
		})
	}

	t.Run("grows with the attempt number until the cap", func(t *testing.T) {
		prev := time.Duration(0)
		for a := 1; a <= 30; a++ {
			d := worker.Backoff(a, base, limit, fixed(0.5))
			switch {
			case a <= 14 && d <= prev:
				t.Fatalf("attempt %d: %v, not above attempt %d's %v", a, d, a-1, prev)
			case a > 14 && d != prev:
				t.Fatalf("attempt %d: %v, want the capped %v", a, d, prev)
			}
			prev = d
		}
	})

	t.Run("random draws stay within zero and the ceiling", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for a := 1; a <= 30; a++ {
			ceiling := min(limit, base<<min(a-1, 40))
			var lo, hi time.Duration = ceiling, 0
			for range 2000 {
				d := worker.Backoff(a, base, limit, rng.Float64)
				if d < 0 || d >= ceiling {
					t.Fatalf("attempt %d: %v outside [0, %v)", a, d, ceiling)
				}
				lo, hi = min(lo, d), max(hi, d)
			}
			// Full jitter uses the whole range, not just its top half.
			if lo > ceiling/10 || hi < ceiling*9/10 {
				t.Errorf("attempt %d: 2000 draws spanned [%v, %v] of [0, %v)", a, lo, hi, ceiling)
			}
		}
	})

	t.Run("no base means no delay", func(t *testing.T) {
		if d := worker.Backoff(3, 0, limit, fixed(0.5)); d != 0 {
			t.Fatalf("got %v", d)
		}
	})
}

func TestHorizonOfTheDefaultScheduleIsOverThreeDays(t *testing.T) {
	t.Parallel()
	got := worker.Horizon(25, worker.DefaultBackoffBase, worker.DefaultBackoffMax)
	// 5 s × (2^13 − 1) for attempts 1–13, then 11 capped retries of 6 h.
	want := 278555 * time.Second
	if got != want {
		t.Fatalf("Horizon(25, 5s, 6h) = %v, want %v", got, want)
	}
	if got <= 3*24*time.Hour {
		t.Fatalf("horizon %v is not over three days", got)
	}
	if h := worker.Horizon(1, worker.DefaultBackoffBase, worker.DefaultBackoffMax); h != 0 {
		t.Fatalf("a single attempt has no retries, horizon %v", h)
	}
}
