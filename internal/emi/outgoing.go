package emi

import "time"

// Payment schemes of an outgoing payment (Counterparty.Scheme).
const (
	PaymentSchemeSEPA           = "sepa"            // SEPA credit transfer: EUR to an IBAN
	PaymentSchemeFasterPayments = "faster_payments" // UK Faster Payments: GBP to sort code and account number
)

// ExternalParty is the destination of an outgoing payment to another bank:
// the payee's name with an IBAN (and optional BIC) for SEPA, or with a UK
// account number and sort code for Faster Payments.
type ExternalParty struct {
	Name          string `json:"name" validate:"required,max=140"`
	IBAN          string `json:"iban" validate:"max=42"`
	BIC           string `json:"bic" validate:"max=11"`
	AccountNumber string `json:"account_number" validate:"max=10"`
	SortCode      string `json:"sort_code" validate:"max=8"`
}

// TransferExternalCreate is the request of transfer_external_create: money
// from a balance of the partner to an account at another bank.
type TransferExternalCreate struct {
	Source      TransferParty `json:"source"`
	Destination ExternalParty `json:"destination"`
	Amount      Amount        `json:"amount"`
	Currency    string        `json:"currency" validate:"required,len=3"`
	Reference   string        `json:"reference" validate:"max=140"`
}

// TransferReturn is the request of sandbox_transfer_return: why the
// receiving bank sent the payment back.
type TransferReturn struct {
	Reason string `json:"reason" validate:"max=140"`
}

// StatementFilter selects a page of an account's statement. From and To
// are days (UTC), both inclusive; a zero value leaves that end open.
type StatementFilter struct {
	From, To    time.Time
	Page, Limit int
	// StartingAfter is a ledger transaction's token (a line's
	// transaction) on the statement: the page counts from the line after
	// it, newest first (a cursor).
	StartingAfter string
}

// StatementLine is one ledger entry shown on an account's statement.
type StatementLine struct {
	EntryID int64
	// Transaction is the ledger transaction's token, Kind its kind
	// (TxnTransfer, TxnOutgoing, ...).
	Transaction string
	Kind        string
	// Transfer is the token of the transfer the entry belongs to (as its
	// transaction or its return), "" when none (funding, adjustments).
	Transfer string
	// Account is the account the entry shows on: the statement's account,
	// or, on a main account's statement, one of its virtual accounts.
	Account  string
	Balance  string
	Currency string
	// Amount is signed: positive credits the balance.
	Amount int64
	// BalanceAfter is the balance's posted figure right after the entry.
	BalanceAfter int64
	Reference    string
	Counterparty Counterparty
	// CounterpartyPartner is the partner of the other side of an internal
	// transfer ("" for an external side or none).
	CounterpartyPartner string
	CreatedAt           time.Time
}

// StatementBalance is one balance's posted figure at the start and the end
// of the statement's range.
type StatementBalance struct {
	Balance  string
	Currency string
	Opening  int64
	Closing  int64
	// Posted, Held and Available are the balance's figures now.
	Posted, Held, Available int64
}

// Statement is a page of an account's statement, newest first, with the
// opening and closing posted figure of each balance over the whole range.
type Statement struct {
	Account  string
	Lines    []StatementLine
	Total    int64
	Balances []StatementBalance
	// Truncated is set on an export that stopped at its cap (more lines
	// match than it holds; an export has no Total or Balances).
	Truncated bool
}

// LedgerEntryView is a journal entry as the back office shows it.
type LedgerEntryView struct {
	ID           int64
	Txn          int64
	TxnToken     string
	Kind         string
	Balance      string
	Account      string
	Internal     string
	Currency     string
	Amount       int64
	BalanceAfter int64
	CreatedAt    time.Time
}
