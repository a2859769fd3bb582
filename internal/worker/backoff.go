package worker

import "time"

// Default retry schedule: see Backoff.
const (
	DefaultBackoffBase = 5 * time.Second
	DefaultBackoffMax  = 6 * time.Hour
)

// Backoff returns how long to wait before retrying a job whose attempt-th
// attempt (1 for the first run) failed: exponential backoff with full jitter,
// a uniformly random delay in [0, ceiling) where
//
//	ceiling = min(maxDelay, base × 2^(attempt-1)).
//
// rnd returns a number in [0, 1) (math/rand/v2's Float64 will do); tests pass
// a fixed one. Attempts below 1 count as 1; a base that is not positive gives
// no delay. The jitter spreads the retries of jobs that failed together (an
// endpoint that was down) instead of sending them back at the same moment.
//
// With the defaults (base 5 s, cap 6 h) the ceilings are:
//
//	attempt  1   2    3    4    5       6       7       8        9
//	ceiling  5s  10s  20s  40s  1m20s   2m40s   5m20s   10m40s   21m20s
//	attempt  10      11        12        13        14 and later
//	ceiling  42m40s  1h25m20s  2h50m40s  5h41m20s  6h
//
// A job with the default 25 attempts is retried 24 times, so its last attempt
// starts at most Horizon(25, 5s, 6h) = 3 days 5 h 22 min 35 s (278,555 s)
// after the first one failed, and on average half that (about 1 day 14 h
// 41 min), plus the time the attempts themselves took.
func Backoff(attempt int, base, maxDelay time.Duration, rnd func() float64) time.Duration {
	c := ceiling(attempt, base, maxDelay)
	if c <= 0 {
		return 0
	}
	// The clamp keeps a random source that strays outside [0, 1) in bounds.
	return min(max(time.Duration(rnd()*float64(c)), 0), c-1)
}

// Horizon returns the longest time a job with maxAttempts attempts can spend
// waiting between its attempts under Backoff: the sum of the ceilings of its
// maxAttempts-1 retries.
func Horizon(maxAttempts int, base, maxDelay time.Duration) time.Duration {
	var total time.Duration
	for a := 1; a < maxAttempts; a++ {
		total += ceiling(a, base, maxDelay)
	}
	return total
}

// ceiling returns min(maxDelay, base × 2^(attempt-1)) without overflowing.
func ceiling(attempt int, base, maxDelay time.Duration) time.Duration {
	if base <= 0 || maxDelay <= 0 {
		return 0
	}
	n := uint(max(attempt, 1) - 1) // #nosec G115 -- max(...) - 1 >= 0
	if base >= maxDelay || n >= 62 || base > maxDelay>>n {
		return maxDelay
	}
	return base << n
}
