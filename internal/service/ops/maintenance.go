package ops

import (
	"context"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	staffsvc "emi/internal/service/staff"
)

// SignaturePruner deletes expired replay-guard rows.
type SignaturePruner interface {
	PruneSignatures(ctx context.Context, now time.Time) (int64, error)
}

// JobMaintenance is the kind of the periodic clean-up job.
const JobMaintenance = "maintenance.prune"

// HoldExpirer releases card holds whose authorization was not cleared in
// time (Authorizations.ExpireHolds).
type HoldExpirer interface {
	ExpireHolds(ctx context.Context) (int, error)
}

// KYCExpirer marks expired the identification sessions whose link lapsed
// (people.KYC.ExpireSessions; "" partnerID: every partner not on a test
// clock).
type KYCExpirer interface {
	ExpireSessions(ctx context.Context, partnerID string) (int, error)
}

// Maintenance keeps the foundation tables bounded: expired replay-guard rows,
// Idempotency-Key responses older than 24 h, expired back-office sessions
// and old sign-in attempts, and it closes the two-person requests past
// their lapse time (Staff.Prune). It also releases expired card holds and
// expires the identification sessions whose link lapsed.
type Maintenance struct {
	jobs       kernel.Enqueuer
	sigs       SignaturePruner
	idem       *kernel.Idempotency
	staff      *staffsvc.Staff
	holds      HoldExpirer
	kyc        KYCExpirer
	monitoring MovementEvaluator
	now        kernel.Clock
}

// MaintenanceDeps is what the clean-up job needs.
type MaintenanceDeps struct {
	Jobs  kernel.Enqueuer
	Sigs  SignaturePruner
	Idem  *kernel.Idempotency
	Staff *staffsvc.Staff
	// Holds releases expired card holds (*Authorizations, built first).
	Holds HoldExpirer
	// KYC expires lapsed identification links (*people.KYC).
	KYC KYCExpirer
	// Monitoring evaluates money movements left unevaluated (a sweep
	// behind the evaluation job each movement queues).
	Monitoring MovementEvaluator
	Now        kernel.Clock
}

// MovementEvaluator evaluates the recorded money movements not yet
// evaluated (monitoring.Monitor).
type MovementEvaluator interface {
	Evaluate(ctx context.Context) (int, error)
}

// NewMaintenance returns the maintenance service.
func NewMaintenance(d MaintenanceDeps) *Maintenance {
	kernel.MustHave("Maintenance", d)
	return &Maintenance{jobs: d.Jobs, sigs: d.Sigs, idem: d.Idem, staff: d.Staff, holds: d.Holds, kyc: d.KYC, monitoring: d.Monitoring, now: d.Now}
}

// Schedule enqueues the clean-up job unless one is already pending (the
// unique key makes several emi processes share one).
func (m *Maintenance) Schedule(ctx context.Context) error {
	_, _, err := m.jobs.Enqueue(ctx, emi.JobSpec{Kind: JobMaintenance, UniqueKey: JobMaintenance, MaxAttempts: 3})
	return err
}

// Run deletes what has expired, releases expired card holds, expires lapsed
// identification links and evaluates
// any money movement left unevaluated. It is the
// handler of JobMaintenance (scheduled every minute by emi serve).
func (m *Maintenance) Run(ctx context.Context, _ emi.Job) error {
	if _, err := m.sigs.PruneSignatures(ctx, m.now()); err != nil {
		return err
	}
	if _, err := m.idem.Prune(ctx); err != nil {
		return err
	}
	if err := m.staff.Prune(ctx); err != nil {
		return err
	}
	if _, err := m.holds.ExpireHolds(ctx); err != nil {
		return err
	}
	if _, err := m.kyc.ExpireSessions(ctx, ""); err != nil {
		return err
	}
	_, err := m.monitoring.Evaluate(ctx)
	return err
}
