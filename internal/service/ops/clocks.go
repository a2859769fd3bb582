package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Test clocks (sandbox only), as Stripe's: a sandbox partner creates a
// clock and its whole sandbox runs on it (the clock is the partner's, not
// an object's: everything the partner does and everything done for it
// reads the clock; kernel.Clock.At). The clock stands still until the
// partner advances it; an advance runs what became due on the way, in time
// order, each at its own time:
//
//   - a card hold not cleared by its deadline (7 days) expires
//     (authorization.expired);
//   - an identification link not used by its expiry (7 days) expires
//     (user.kyc_updated, kyc_status expired);
//   - a webhook delivery whose attempt failed is retried on its schedule,
//     the retries of a long advance one after the other at their times (a
//     retry that fails again is scheduled by the clock and may run within
//     the same advance).
//
// Windows that are read from the stored times of the partner's money
// (monitoring's month to date, 24-48 h, dormancy, card spending limits)
// follow the clock because those times are the clock's, and so does a
// card's expiry month, which a payment is checked against at its time. What is not the
// partner's business stays on the wall clock: request signatures,
// idempotency keys, the audit log and staff sessions. So do company
// applications (v3): their settle period waits for the partner's calls to
// stop coming, a pause in real time, and their review is people's work in
// real time; a frozen clock would hold every automatic decision until the
// partner advanced it. A webhook's first
// attempt is sent at once, as without a clock; it is signed with the wall
// clock's time, which is what a receiver checks its tolerance against.
//
// The instance's own sweeps (the maintenance job) leave a partner on a
// clock to its advances. Deleting the clock puts the partner back on the
// wall clock: its pending retries go back to the job queue, each with what
// it had left to wait by the clock; objects keep the times they were given.
// A sandbox reset removes the clock too. Production has no clock:
// NewTestClocks refuses to build one outside a sandbox.

// A clock starts between ClockEarliest and ClockLatest: any time a test
// may want (a fixed date in a test keeps working year after year), and
// times PostgreSQL and every client library read alike.
var (
	ClockEarliest = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	ClockLatest   = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Test clock limits.
const (
	// MaxClockAdvance is the longest single advance: enough for a webhook
	// retry schedule, a 7-day hold, a KYC link and a month's windows many
	// times over, and bounded so that one call cannot spin a year of work
	// by accident.
	MaxClockAdvance = 400 * 24 * time.Hour
	// clockAdvanceStale is when an advance that never ended (its process
	// died) no longer blocks the next one.
	clockAdvanceStale = 10 * time.Minute
	// maxClockSteps bounds the distinct times one advance stops at.
	maxClockSteps = 10000
)

// TestClockStore keeps the clocks (postgres.TestClockStore).
type TestClockStore interface {
	kernel.ClockReader
	CreateClock(ctx context.Context, partnerID string, c emi.TestClock) error
	Clock(ctx context.Context, partnerID string, forUpdate bool) (emi.TestClock, error)
	BeginAdvance(ctx context.Context, partnerID string, to, now, staleBefore time.Time) (emi.TestClock, error)
	SetClockTime(ctx context.Context, partnerID string, t, now time.Time, done bool) error
	DeleteClock(ctx context.Context, partnerID string) error
}

// ClockHolds is the card holds' part of an advance (*cards.Authorizations).
type ClockHolds interface {
	NextHoldExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error)
	ExpirePartnerHolds(ctx context.Context, partnerID string) (int, error)
}

// ClockKYC is the identification links' part (*people.KYC).
type ClockKYC interface {
	NextExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error)
	ExpireSessions(ctx context.Context, partnerID string) (int, error)
}

// ClockWebhooks is the webhook retries' part (*partners.Webhooks).
type ClockWebhooks interface {
	NextRetry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error)
	RetryDue(ctx context.Context, partnerID string) (int, error)
	ResumeRetries(ctx context.Context, partnerID string, frozen time.Time) (int, error)
}

// clockWork is one kind of time-based work an advance runs.
type clockWork struct {
	name string // the key of TestClockAdvanced.Ran
	next func(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error)
	run  func(ctx context.Context, partnerID string) (int, error)
}

// TestClocks runs the sandbox partners' test clocks.
type TestClocks struct {
	tx       kernel.TxRunner
	store    TestClockStore
	work     []clockWork
	webhooks ClockWebhooks
	audit    *kernel.Auditor
	now      kernel.Clock
}

// TestClocksDeps is what NewTestClocks needs; Sandbox is the instance's
// mode.
type TestClocksDeps struct {
	Sandbox  bool
	Tx       kernel.TxRunner
	Store    TestClockStore
	Holds    ClockHolds
	KYC      ClockKYC
	Webhooks ClockWebhooks
	Audit    *kernel.Auditor
	Now      kernel.Clock
}

// NewTestClocks returns the test clocks, or ErrNotSandbox outside a
// sandbox.
func NewTestClocks(d TestClocksDeps) (*TestClocks, error) {
	if !d.Sandbox {
		return nil, ErrNotSandbox
	}
	kernel.MustHave("TestClocks", d)
	return &TestClocks{tx: d.Tx, store: d.Store, webhooks: d.Webhooks, audit: d.Audit, now: d.Now, work: []clockWork{
		{name: "hold_expired", next: d.Holds.NextHoldExpiry, run: d.Holds.ExpirePartnerHolds},
		{name: "kyc_session_expired", next: d.KYC.NextExpiry, run: d.KYC.ExpireSessions},
		{name: "webhook_attempt", next: d.Webhooks.NextRetry, run: d.Webhooks.RetryDue},
	}}, nil
}

// Reader is what the API and the workers ask for a partner's clock.
func (c *TestClocks) Reader() kernel.ClockReader { return c.store }

// Create starts the calling partner's clock at in.FrozenTime (the wall
// clock's time when nil), between ClockEarliest and ClockLatest. A
// partner has one clock at most (16003). Audited as sandbox.test_clock.created.
func (c *TestClocks) Create(ctx context.Context, in emi.TestClockCreate) (emi.TestClock, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrRouteNotFound)
	if err != nil {
		return emi.TestClock{}, err
	}
	now := c.now().UTC()
	at := now
	var bad kernel.Problems
	if in.FrozenTime != nil {
		at = in.FrozenTime.UTC().Truncate(time.Microsecond)
		if at.Before(ClockEarliest) || !at.Before(ClockLatest) {
			bad.Add("frozen_time", "must be in the years 2000 to 2099")
		}
	}
	name := strings.TrimSpace(in.Name)
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > 100 {
		bad.Add("name", "must be at most 100 characters")
	}
	bad.CheckPrintable("name", name)
	if len(bad) > 0 {
		return emi.TestClock{}, emi.ErrTestClockValidation.WithFields(bad...)
	}
	clock := emi.TestClock{Token: kernel.NewToken(), Name: name, FrozenTime: at, Status: emi.TestClockReady, CreatedAt: now}
	err = c.tx.InTx(ctx, func(ctx context.Context) error {
		if err := c.store.CreateClock(ctx, p.PartnerID, clock); err != nil {
			return err
		}
		return c.audit.Record(ctx, emi.AuditEntry{Action: "sandbox.test_clock.created", ResourceType: "test_clock", ResourceToken: clock.Token,
			Changes: map[string]any{"frozen_time": at}})
	})
	if errors.Is(err, emi.ErrTestClockExists) {
		return emi.TestClock{}, emi.ErrTestClockExists.WithDetail("this partner runs on a test clock already: advance it, or delete it first")
	}
	return clock, err
}

// Get returns the calling partner's clock (16002 when it has none).
func (c *TestClocks) Get(ctx context.Context) (emi.TestClock, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrRouteNotFound)
	if err != nil {
		return emi.TestClock{}, err
	}
	return c.store.Clock(ctx, p.PartnerID, false)
}

// Advance moves the calling partner's clock to in.FrozenTime, later than
// its time and at most MaxClockAdvance ahead, and runs on the way what
// became due, in time order: the clock stops at each due time, runs every
// kind of work due then, and goes on; work that a step schedules before
// in.FrozenTime (a retry that failed again) runs in the same advance. The
// answer comes when everything due has run. One advance at a time (16004);
// a failure stops the clock at the last time whose work ran, and the error
// is answered. Audited as sandbox.test_clock.advanced with what ran.
func (c *TestClocks) Advance(ctx context.Context, in emi.TestClockAdvance) (emi.TestClockAdvanced, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrRouteNotFound)
	if err != nil {
		return emi.TestClockAdvanced{}, err
	}
	if in.FrozenTime.IsZero() {
		return emi.TestClockAdvanced{}, emi.ErrTestClockValidation.Field("frozen_time", "is required")
	}
	cur, err := c.store.Clock(ctx, p.PartnerID, false)
	if err != nil {
		return emi.TestClockAdvanced{}, err
	}
	to := in.FrozenTime.UTC().Truncate(time.Microsecond)
	var bad kernel.Problems
	switch {
	case !to.After(cur.FrozenTime):
		bad.Add("frozen_time", "must be later than the clock's time, "+cur.FrozenTime.Format(time.RFC3339Nano))
	case to.Sub(cur.FrozenTime) > MaxClockAdvance:
		bad.Add("frozen_time", fmt.Sprintf("must be at most %d days after the clock's time, %s", int(MaxClockAdvance/(24*time.Hour)),
			cur.FrozenTime.Format(time.RFC3339Nano)))
	}
	if len(bad) > 0 {
		return emi.TestClockAdvanced{}, emi.ErrTestClockValidation.WithFields(bad...)
	}
	now := c.now().UTC()
	cur, err = c.store.BeginAdvance(ctx, p.PartnerID, to, now, now.Add(-clockAdvanceStale))
	if err != nil {
		return emi.TestClockAdvanced{}, err
	}
	from := cur.FrozenTime
	ran := map[string]int{}
	// The work runs as the clock, not as the partner's key: it is what
	// the instance's sweeps do for a partner without a clock.
	work := emi.WithPrincipal(ctx, emi.SystemPrincipal("sandbox-test-clock"))
	at := from
	stuck := 0
	runErr := func() error {
		for step := 0; ; step++ {
			next, kinds, err := c.nextDue(work, p.PartnerID, to)
			if err != nil {
				return err
			}
			if len(kinds) == 0 {
				return nil
			}
			if step >= maxClockSteps {
				return emi.ErrTestClockValidation.Field("frozen_time", fmt.Sprintf(
					"more than %d distinct times became due in one advance: the clock stopped at %s, advance it again",
					maxClockSteps, at.Format(time.RFC3339Nano)))
			}
			if next.After(at) {
				at = next
				if err := c.store.SetClockTime(ctx, p.PartnerID, at, c.now().UTC(), false); err != nil {
					return err
				}
			}
			stepCtx := kernel.WithFrozenTime(work, at)
			done := 0
			for _, k := range kinds {
				n, err := k.run(stepCtx, p.PartnerID)
				ran[k.name] += n
				done += n
				if err != nil {
					return err
				}
			}
			// Work can leave the due list without running (a hold
			// cleared meanwhile); work that stays due and does not run
			// twice in a row stops the advance rather than spin.
			if done == 0 {
				if stuck++; stuck > 1 {
					return emi.Internal(fmt.Errorf("test clock of partner %s: work due at %s did not run", p.PartnerID, at))
				}
			} else {
				stuck = 0
			}
		}
	}()
	end := to
	if runErr != nil {
		end = at
	}
	if err := c.store.SetClockTime(context.WithoutCancel(ctx), p.PartnerID, end, c.now().UTC(), true); err != nil {
		return emi.TestClockAdvanced{}, errors.Join(runErr, err)
	}
	changes := map[string]any{"from": from, "to": end}
	for k, n := range ran {
		changes[k] = n
	}
	outcome := emi.OutcomeSuccess
	if runErr != nil {
		outcome, changes["error"] = emi.OutcomeFailure, runErr.Error()
	}
	if err := c.audit.Record(context.WithoutCancel(ctx), emi.AuditEntry{Action: "sandbox.test_clock.advanced", ResourceType: "test_clock",
		ResourceToken: cur.Token, Outcome: outcome, Changes: changes}); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return emi.TestClockAdvanced{}, runErr
	}
	after, err := c.store.Clock(ctx, p.PartnerID, false)
	if err != nil {
		return emi.TestClockAdvanced{}, err
	}
	return emi.TestClockAdvanced{Clock: after, Ran: ran}, nil
}

// nextDue returns the earliest time, at or before until, at which work of
// the partner is due, and the kinds due then.
func (c *TestClocks) nextDue(ctx context.Context, partnerID string, until time.Time) (time.Time, []clockWork, error) {
	var at time.Time
	var kinds []clockWork
	for _, k := range c.work {
		t, ok, err := k.next(ctx, partnerID, until)
		if err != nil {
			return time.Time{}, nil, err
		}
		switch {
		case !ok:
		case len(kinds) == 0 || t.Before(at):
			at, kinds = t, []clockWork{k}
		case t.Equal(at):
			kinds = append(kinds, k)
		}
	}
	return at, kinds, nil
}

// Delete removes the calling partner's clock: the partner is back on the
// wall clock, and its pending webhook retries go back to the job queue
// with what they had left to wait. Not while an advance runs (16004); an
// advance that started more than clockAdvanceStale ago is taken as crashed.
// Audited as sandbox.test_clock.deleted.
func (c *TestClocks) Delete(ctx context.Context) (emi.TestClock, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrRouteNotFound)
	if err != nil {
		return emi.TestClock{}, err
	}
	var out emi.TestClock
	err = c.tx.InTx(ctx, func(ctx context.Context) error {
		cl, err := c.store.Clock(ctx, p.PartnerID, true)
		if err != nil {
			return err
		}
		if cl.Status == emi.TestClockAdvancing && cl.AdvancingSince.After(c.now().UTC().Add(-clockAdvanceStale)) {
			return emi.ErrTestClockAdvancing.WithDetail("the clock is advancing to %s", cl.AdvancingTo.Format(time.RFC3339Nano))
		}
		resumed, err := c.webhooks.ResumeRetries(ctx, p.PartnerID, cl.FrozenTime)
		if err != nil {
			return err
		}
		if err := c.store.DeleteClock(ctx, p.PartnerID); err != nil {
			return err
		}
		out = cl
		return c.audit.Record(ctx, emi.AuditEntry{Action: "sandbox.test_clock.deleted", ResourceType: "test_clock", ResourceToken: cl.Token,
			Changes: map[string]any{"frozen_time": cl.FrozenTime, "webhook_retries_resumed": resumed}})
	})
	return out, err
}
