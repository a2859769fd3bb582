package emi

import "time"

// Schemes of incoming payments.
const (
	SchemeSEPA           = "sepa"            // SEPA credit transfer to an IBAN, in EUR
	SchemeFasterPayments = "faster_payments" // UK Faster Payment, in GBP, to an account number and sort code (or a GB IBAN)
	SchemeCard           = "card"            // a top-up from an external card to an account or balance
)

// IncomingSchemes lists the schemes of incoming payments.
var IncomingSchemes = []string{SchemeSEPA, SchemeFasterPayments, SchemeCard}

// IncomingPayer is who sent an incoming payment: a name and, by scheme,
// their IBAN (SEPA, or a GB IBAN for Faster Payments), their UK account
// number and sort code (Faster Payments), or the last four digits of the
// card a top-up came from. A full card number is never taken.
type IncomingPayer struct {
	Name          string `json:"name" validate:"max=140"`
	IBAN          string `json:"iban" validate:"max=42"`
	AccountNumber string `json:"account_number" validate:"max=10"`
	SortCode      string `json:"sort_code" validate:"max=8"`
	CardLast4     string `json:"card_last4" validate:"max=4"`
}

// IncomingCredit is money arriving from outside emi (simulated in the
// sandbox by sandbox_incoming_credit and the back office): a scheme, the
// payer, the amount, a reference, and the identifier it was sent to.
type IncomingCredit struct {
	Scheme      string        `json:"scheme" validate:"required"`
	Amount      Amount        `json:"amount"`
	Currency    string        `json:"currency" validate:"required,len=3"`
	Payer       IncomingPayer `json:"payer"`
	Reference   string        `json:"reference" validate:"max=140"`
	Destination TransferParty `json:"destination"`
}

// Outcomes of an incoming credit.
const (
	IncomingCredited = "credited" // on the customer's balance
	IncomingSuspense = "suspense" // parked in suspense, waiting for staff
)

// IncomingResult is where an incoming credit went: a completed incoming
// transfer, or a suspense item.
type IncomingResult struct {
	Status       string
	Transfer     *Transfer
	SuspenseItem string
}

// Why an incoming credit went to suspense.
const (
	SuspenseUnknownIdentifier = "unknown_identifier" // no balance in emi has the identifier
	SuspenseAccountTerminated = "account_terminated" // the account (or its main account) is terminated
	SuspenseAccountBlocked    = "account_blocked"    // the account (or its main account) is blocked
	SuspenseCurrencyNotHeld   = "currency_not_held"  // the identifier names a balance in another currency
)

// Statuses of a suspense item.
const (
	SuspenseOpen     = "open"
	SuspenseAssigned = "assigned"
	SuspenseReturned = "returned"
)

// SuspenseItem is money received that could not be credited: it sits on
// the suspense ledger account until staff assign it to a balance or return
// it to the sender, once.
type SuspenseItem struct {
	Token    string       `db:"token"`
	Scheme   string       `db:"scheme"`
	Amount   int64        `db:"amount"`
	Currency string       `db:"currency"`
	Payer    Counterparty `db:"-"`
	// Identifier is what the payment was sent to, as people read it
	// ("IBAN BG..", "sort code 04-00-69 account 12345678", "account <token>").
	Identifier  string        `db:"identifier"`
	Destination TransferParty `db:"-"`
	Reason      string        `db:"reason"`
	Reference   string        `db:"reference"`
	// Account is the account the identifier matched, when it matched one
	// that could not take the money (blocked, terminated, other currency).
	Account   string    `db:"account"`
	PartnerID string    `db:"partner_id"`
	Txn       int64     `db:"txn"`
	Status    string    `db:"status"`
	CreatedAt time.Time `db:"created_at"`
	// Resolution (assigned or returned).
	ResolvedBy       string     `db:"resolved_by"`
	ResolvedByName   string     `db:"resolved_by_name"`
	ResolvedAt       *time.Time `db:"resolved_at"`
	ResolutionReason string     `db:"resolution_reason"`
	ResolutionTxn    int64      `db:"resolution_txn"`
	Transfer         string     `db:"transfer"`
	AssignedAccount  string     `db:"assigned_account"`
	// AssignRequestedBy is who requested the assignment of an assigned item
	// (ResolvedBy approved it).
	AssignRequestedBy     string `db:"assign_requested_by"`
	AssignRequestedByName string `db:"assign_requested_by_name"`
	// Pending is the assignment waiting for a second person, on an open
	// item (filled by the service's listing).
	Pending *SuspenseAssignment `db:"-"`
}

// Statuses of a suspense assignment request.
const (
	AssignmentPending   = "pending"
	AssignmentApproved  = "approved"
	AssignmentRejected  = "rejected"  // by someone other than the requester
	AssignmentWithdrawn = "withdrawn" // by the requester
)

// SuspenseAssignment is a request to assign a suspense item to a balance:
// one staff member asks, with a reason; a second, distinct person approves
// it (the money moves then) or rejects it; the requester may withdraw it.
// It cannot be edited.
type SuspenseAssignment struct {
	Token string `db:"token"`
	Item  string `db:"item"`
	// Target is what the requester typed (a normalised IBAN or a token);
	// Account and Balance are what it named when requested.
	Target          string     `db:"target"`
	Account         string     `db:"target_account"`
	Balance         string     `db:"target_balance"`
	PartnerID       string     `db:"partner_id"`
	Reason          string     `db:"reason"`
	Status          string     `db:"status"`
	RequestedBy     string     `db:"requested_by"`
	RequestedByName string     `db:"requested_by_name"`
	RequestedAt     time.Time  `db:"requested_at"`
	DecidedBy       string     `db:"decided_by"`
	DecidedByName   string     `db:"decided_by_name"`
	DecidedAt       *time.Time `db:"decided_at"`
	DecisionNote    string     `db:"decision_note"`
	Transfer        string     `db:"transfer"`
}

// SuspenseResolution is how a suspense item was resolved.
type SuspenseResolution struct {
	Status          string
	By              string
	Reason          string
	Txn             int64
	Transfer        string
	AssignedAccount string
	At              time.Time
}

// Directions and statuses of a manual adjustment.
const (
	AdjustmentCredit = "credit"
	AdjustmentDebit  = "debit"

	AdjustmentPending  = "pending"
	AdjustmentApproved = "approved"
	AdjustmentRejected = "rejected"
	// AdjustmentWithdrawn: ended by its requester.
	AdjustmentWithdrawn = "withdrawn"
)

// AdjustmentRequest is what a staff member asks for: a credit or debit of
// an account's balance in currency, with a reason.
type AdjustmentRequest struct {
	Account   string
	Currency  string
	Direction string
	Amount    int64
	Reason    string
}

// Adjustment is a manual correction of a balance: requested by one staff
// member, approved (and posted against the adjustments ledger account) or
// rejected by another.
type Adjustment struct {
	Token           string     `db:"token"`
	Account         string     `db:"account"`
	Balance         string     `db:"balance"`
	PartnerID       string     `db:"partner_id"`
	Direction       string     `db:"direction"`
	Amount          int64      `db:"amount"`
	Currency        string     `db:"currency"`
	Reason          string     `db:"reason"`
	Status          string     `db:"status"`
	RequestedBy     string     `db:"requested_by"`
	RequestedByName string     `db:"requested_by_name"`
	RequestedAt     time.Time  `db:"requested_at"`
	DecidedBy       string     `db:"decided_by"`
	DecidedByName   string     `db:"decided_by_name"`
	DecidedAt       *time.Time `db:"decided_at"`
	DecisionNote    string     `db:"decision_note"`
	Txn             int64      `db:"txn"`
}
