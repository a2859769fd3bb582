package webhook

import (
	"math/rand/v2"
	"time"

	"emi/internal/emi"
)

// MaxAttempts is how many attempts one delivery gets: the first, made at
// once, and one after each delay of Schedule.
const MaxAttempts = 10

// Jitter is the relative spread of every scheduled delay: a delay d is drawn
// uniformly from [d×(1−Jitter), d×(1+Jitter)).
const Jitter = 0.2

// RetryWindow is the least time between the first and the last attempt of a
// delivery that keeps failing: contract §9 asks for retries over at least
// 3 days. DelayAfter guarantees it; Horizon exceeds it.
const RetryWindow = 72 * time.Hour

// MaxRetryAfter caps the delay a receiver can ask for with Retry-After.
const MaxRetryAfter = 24 * time.Hour

// schedule is the Standard Webhooks example schedule (an array, so that it
// is a value: no caller can change it for the others).
func schedule() [MaxAttempts - 1]time.Duration {
	return [MaxAttempts - 1]time.Duration{
		5 * time.Second,
		5 * time.Minute,
		30 * time.Minute,
		2 * time.Hour,
		5 * time.Hour,
		10 * time.Hour,
		14 * time.Hour,
		20 * time.Hour,
		24 * time.Hour,
	}
}

// Schedule returns the delays before attempts 2 to MaxAttempts, before
// jitter: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h, the
// example schedule of the Standard Webhooks specification. Attempt 1 is made
// at once. The slice is a fresh copy.
func Schedule() []time.Duration {
	s := schedule()
	return s[:]
}

// Horizon returns the time from the first to the last attempt when every
// attempt fails, without jitter and without the attempts' own duration:
// 75 h 35 min 5 s.
func Horizon() time.Duration {
	var total time.Duration
	for _, d := range schedule() {
		total += d
	}
	return total
}

// NextDelay returns how long to wait before the next attempt once
// failedAttempts attempts have failed: the Schedule delay for that attempt,
// spread by ±Jitter with rnd, which returns a number in [0, 1) (nil means
// math/rand/v2's Float64; tests pass a fixed one). failedAttempts below 1
// gives 0 (the first attempt is immediate). giveUp is true, with a delay of
// 0, once MaxAttempts attempts have failed.
func NextDelay(failedAttempts int, rnd func() float64) (delay time.Duration, giveUp bool) {
	if failedAttempts < 1 {
		return 0, false
	}
	if failedAttempts >= MaxAttempts {
		return 0, true
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	// The clamp keeps a random source that strays outside [0, 1) (or
	// returns NaN) within the jitter bounds.
	r := rnd()
	if !(r >= 0) {
		r = 0
	}
	r = min(r, 1)
	d := schedule()[failedAttempts-1]
	return time.Duration(float64(d) * (1 - Jitter + 2*Jitter*r)), false
}

// Delay returns how long to wait after res, the result of attempt number
// failedAttempts, which failed: NextDelay, or res.RetryAfter (capped at
// MaxRetryAfter) when the receiver asked for a longer wait. giveUp is true
// once MaxAttempts attempts have failed, whatever Retry-After says, and at
// once for 410 Gone, which asks never to be called again.
func Delay(res emi.WebhookResult, failedAttempts int, rnd func() float64) (delay time.Duration, giveUp bool) {
	if res.Gone() {
		return 0, true
	}
	delay, giveUp = NextDelay(failedAttempts, rnd)
	if giveUp {
		return 0, true
	}
	return max(delay, min(res.RetryAfter, MaxRetryAfter)), false
}

// DelayAfter is Delay for a worker that knows elapsed, the time since the
// first attempt started: it also lengthens the last delay so that the last
// attempt starts at least RetryWindow after the first. Jitter alone could
// otherwise bring it forward to 0.8 × Horizon, about 60 h. giveUp is as for
// Delay.
func DelayAfter(res emi.WebhookResult, failedAttempts int, elapsed time.Duration, rnd func() float64) (delay time.Duration, giveUp bool) {
	delay, giveUp = Delay(res, failedAttempts, rnd)
	if !giveUp && failedAttempts == MaxAttempts-1 {
		delay = max(delay, RetryWindow-elapsed)
	}
	return delay, giveUp
}
