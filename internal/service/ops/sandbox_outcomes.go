package ops

import (
	"context"
	"errors"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/internal/service/people"
)

// The sandbox outcomes: a partner testing its handling of user.kyc_updated,
// aml_check.reviewed and the application decisions needs the human
// decisions a sandbox has nobody to make. These methods make them through
// the very service methods the back office calls (KYC.Decide, AML.Decide,
// Review.Claim and Review.Decide), as staff principals the sandbox plays,
// so the states, events, audit rows and rules (four eyes included) are
// those of a real decision. The API offers them only in EMI_MODE=sandbox.

// SandboxOutcomes makes the sandbox's human decisions. It exists only in a
// sandbox: NewSandboxOutcomes refuses to build it otherwise, so a
// production instance has no object through which the fixed sandbox
// reviewers (who satisfy every two-person rule between them) could
// decide anything, whatever routes are mounted. The API's sandboxOnly
// guard answers 404 before that; this is the second wall.
type SandboxOutcomes struct {
	kyc    *people.KYC
	aml    *people.AML
	review *onboarding.Review
	tx     kernel.TxRunner
	reset  SandboxResetter
	audit  *kernel.Auditor
	now    kernel.Clock
}

// SandboxResetter moves a partner's sandbox objects to a new archive
// partner, in the transaction of ctx (postgres.SandboxResetStore).
type SandboxResetter interface {
	Reset(ctx context.Context, partnerID string, at time.Time) (archive string, moved map[string]int64, err error)
}

// SandboxOutcomesDeps is what NewSandboxOutcomes needs; Sandbox is the
// instance's mode (config.ModeSandbox).
type SandboxOutcomesDeps struct {
	Sandbox bool
	KYC     *people.KYC
	AML     *people.AML
	Review  *onboarding.Review
	Tx      kernel.TxRunner
	Reset   SandboxResetter
	Audit   *kernel.Auditor
	Now     kernel.Clock
}

// ErrNotSandbox is NewSandboxOutcomes' refusal outside a sandbox.
var ErrNotSandbox = errors.New("sandbox outcomes exist only in EMI_MODE=sandbox")

// NewSandboxOutcomes returns the sandbox decisions, or ErrNotSandbox
// when d.Sandbox is false.
func NewSandboxOutcomes(d SandboxOutcomesDeps) (*SandboxOutcomes, error) {
	if !d.Sandbox {
		return nil, ErrNotSandbox
	}
	kernel.MustHave("SandboxOutcomes", d)
	return &SandboxOutcomes{kyc: d.KYC, aml: d.AML, review: d.Review, tx: d.Tx, reset: d.Reset, audit: d.Audit, now: d.Now}, nil
}

// KYCDecide decides the calling partner's user's open identification
// session (sandbox_kyc_decide; see KYC.SandboxDecide).
func (s *SandboxOutcomes) KYCDecide(ctx context.Context, userToken string, in emi.SandboxKYCDecision) (emi.KYCSession, error) {
	return s.kyc.SandboxDecide(ctx, userToken, in)
}

// AMLReview decides the open hits of the calling partner's AML check
// (sandbox_aml_review; see AML.SandboxReview).
func (s *SandboxOutcomes) AMLReview(ctx context.Context, token string, in emi.SandboxAMLReview) (emi.AMLCheck, error) {
	return s.aml.SandboxReview(ctx, token, in)
}

// ApplicationDecide decides the calling partner's application in review
// (sandbox_application_decide; see Review.SandboxDecide).
func (s *SandboxOutcomes) ApplicationDecide(ctx context.Context, token string, in emi.SandboxApplicationDecision) (emi.Application, error) {
	return s.review.SandboxDecide(ctx, token, in)
}

// Reset clears the calling partner's sandbox (sandbox_reset): every object
// it created (users, companies and applications, accounts, cards,
// transfers, AML checks and the false positives remembered for its
// people, KYC sessions, documents, events, idempotency keys, monitoring
// records) moves to a new archive partner that has no key, so the
// partner's next run starts from an empty sandbox: e-mails and
// idempotency keys are free again and lists are empty. Its API keys,
// webhook endpoints, master merchant and the replay guard stay; pending
// deliveries of the moved events are canceled.
//
// Nothing is deleted: the ledger and the audit log are append-only, and
// the archive keeps every moved object for the back office (a partner
// named "<name> (sandbox reset <time>)"). The reset waits for the
// partner's writes in flight and holds off new ones until it commits. It
// is audited as sandbox.reset with what moved.
func (s *SandboxOutcomes) Reset(ctx context.Context) (emi.SandboxReset, error) {
	p, err := kernel.SandboxPartner(ctx, emi.ErrRouteNotFound)
	if err != nil {
		return emi.SandboxReset{}, err
	}
	at := s.now().UTC()
	var out emi.SandboxReset
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		archive, moved, err := s.reset.Reset(ctx, p.PartnerID, at)
		if err != nil {
			return err
		}
		out = emi.SandboxReset{ResetAt: at, Moved: moved}
		changes := map[string]any{"archive_partner": archive}
		for k, v := range moved {
			changes[k] = v
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "sandbox.reset", ResourceType: "partner", ResourceToken: p.PartnerID,
			PartnerID: p.PartnerID, Changes: changes})
	})
	return out, err
}
