package onboarding

import "emi/internal/emi"

// The operations on applications, their review queue and the partners'
// validator configurations (emi.Op): the service checks them and the back
// office guards its screens with the same values.
var (
	View   = emi.NewOp("applications.view", emi.PermViewApps)
	Decide = emi.NewOp("applications.decide", emi.PermDecideApps)
	// Oversee: release or reassign a claimed application (the underwriter
	// who holds it, or whoever manages staff).
	Oversee = emi.NewOp("applications.oversee", emi.PermDecideApps, emi.PermManageStaff)
	// Reassign: move many applications at once between underwriters.
	Reassign = emi.NewOp("applications.reassign", emi.PermManageStaff)
	// Annotate: write a note on an application under review.
	Annotate = emi.NewOp("applications.note", emi.PermDecideApps, emi.PermReviewAML)
	// Correct: correct a company's or a member's data during the review.
	Correct = emi.NewOp("applications.correct", emi.PermReviewAML)
	// ViewValidator and ConfigureValidator: a partner's validator
	// configuration (what its applications must carry).
	ViewValidator      = emi.NewOp("validator.view", emi.PermViewPartners)
	ConfigureValidator = emi.NewOp("validator.manage", emi.PermManagePartners)
)
