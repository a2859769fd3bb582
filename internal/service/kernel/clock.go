package kernel

import (
	"context"
	"time"
)

// Test clocks (sandbox only). A sandbox partner may run on a test clock: a
// time that stands still until the partner advances it (ops.TestClocks).
// Every request of that partner, and every piece of work done for it (a
// webhook delivery, a hold's expiry, a KYC link's expiry), carries the
// clock's time in its context, and the services read the time with
// Clock.At, so every rule that reads the time (a 7-day hold, a 7-day KYC
// link, a webhook retry schedule, a monitoring window) reads the partner's
// time. What is not the partner's business stays on the wall clock: request
// signatures and their replay guard, idempotency keys, sessions and the
// audit log (the institution's record of when something really happened).
// A production instance has no test clock: nothing puts one in a context.

type frozenKey struct{}

// WithFrozenTime returns ctx carrying the time of the test clock the work
// of ctx runs on.
func WithFrozenTime(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, frozenKey{}, t.UTC().Truncate(time.Microsecond))
}

// FrozenTime returns the test clock's time ctx carries, if any.
func FrozenTime(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(frozenKey{}).(time.Time)
	return t, ok
}

// At returns the time for the work of ctx: the test clock's time when ctx
// carries one (WithFrozenTime), else c's.
func (c Clock) At(ctx context.Context) time.Time {
	if t, ok := FrozenTime(ctx); ok {
		return t
	}
	return c()
}

// ClockReader tells which test clock, if any, a partner runs on
// (postgres.TestClockStore); nil outside a sandbox.
type ClockReader interface {
	// PartnerClock returns the time of partnerID's test clock, and false
	// when it has none.
	PartnerClock(ctx context.Context, partnerID string) (time.Time, bool, error)
}

// OnPartnerClock returns ctx carrying partnerID's test clock time when it
// has one (and r is not nil); ctx unchanged otherwise.
func OnPartnerClock(ctx context.Context, r ClockReader, partnerID string) (context.Context, error) {
	if r == nil || partnerID == "" {
		return ctx, nil
	}
	t, ok, err := r.PartnerClock(ctx, partnerID)
	if err != nil || !ok {
		return ctx, err
	}
	return WithFrozenTime(ctx, t), nil
}
