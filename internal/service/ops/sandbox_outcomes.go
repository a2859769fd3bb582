package ops

import (
	"context"
	"errors"

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
}

// SandboxOutcomesDeps is what NewSandboxOutcomes needs; Sandbox is the
// instance's mode (config.ModeSandbox).
type SandboxOutcomesDeps struct {
	Sandbox bool
	KYC     *people.KYC
	AML     *people.AML
	Review  *onboarding.Review
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
	return &SandboxOutcomes{kyc: d.KYC, aml: d.AML, review: d.Review}, nil
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
