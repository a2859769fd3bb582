package people

import "emi/internal/emi"

// The operations on people: users, their AML checks, KYC sessions,
// documents, the watchlist and the sanctions lists (emi.Op). The service
// checks them and the back office guards its screens with the same values.
var (
	View      = emi.NewOp("people.view", emi.PermViewPeople)
	ReviewAML = emi.NewOp("aml.review", emi.PermReviewAML)
	ReviewKYC = emi.NewOp("kyc.review", emi.PermReviewKYC)
	// UpdateSanctions: download the sanctions lists now.
	UpdateSanctions = emi.NewOp("sanctions.manage", emi.PermManageSanctions)
)
