package emi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// The institution's own ledger accounts (one per currency each). Customer
// balances are the other side of every movement.
const (
	LedgerIncomingClearing = "incoming_clearing" // money received from other banks and card top-ups, not yet settled
	LedgerOutgoingClearing = "outgoing_clearing" // money sent to other banks, not yet settled
	LedgerCardClearing     = "card_clearing"     // card payments owed to the card scheme
	LedgerFees             = "fees"              // fees earned
	LedgerSuspense         = "suspense"          // received money that could not be credited to a customer
	LedgerAdjustments      = "adjustments"       // manual corrections approved by two staff members
	LedgerOpening          = "opening"           // balances that existed before the ledger
	// LedgerReviewHold is money of transfers held for review by
	// transaction monitoring, between the transfer and compliance's
	// decision (released on, or returned to the source).
	LedgerReviewHold = "review_hold"
)

// LedgerInternalAccounts lists the institution's accounts.
var LedgerInternalAccounts = []string{LedgerIncomingClearing, LedgerOutgoingClearing, LedgerCardClearing,
	LedgerFees, LedgerSuspense, LedgerAdjustments, LedgerOpening, LedgerReviewHold}

// Ledger transaction kinds.
const (
	TxnTransfer       = "transfer"
	TxnIncoming       = "incoming"
	TxnOutgoing       = "outgoing"
	TxnOutgoingReturn = "outgoing_return"
	TxnSuspenseAssign = "suspense_assign"
	TxnSuspenseReturn = "suspense_return"
	TxnAdjustment     = "adjustment"
	TxnCardClearing   = "card_clearing"
	TxnReversal       = "reversal"
	// A transfer held for review: parked (source -> review_hold), then
	// released (review_hold -> destination or outgoing clearing) or
	// returned (review_hold -> source).
	TxnReviewHold    = "review_hold"
	TxnReviewRelease = "review_release"
	TxnReviewReturn  = "review_return"
)

// Entry is one journal entry: it moves a customer balance (Balance, shown
// on Account) or one of the institution's accounts (Internal) by Amount
// minor units; positive credits, negative debits.
type Entry struct {
	Balance  string
	Account  string
	Internal string
	Currency string
	Amount   int64
	// Release is the part of a card hold this entry settles (card clearing):
	// the balance's held figure falls by it, so available does not change
	// twice for one payment.
	Release int64
}

// LedgerTxn is a ledger transaction to post: entries that sum to zero per
// currency.
type LedgerTxn struct {
	Token     string
	Kind      string
	PartnerID string
	Reference string
	// Reverses is the id of the transaction a reversal undoes.
	Reverses int64
	Entries  []Entry
}

// PostedTxn is a committed ledger transaction.
type PostedTxn struct {
	ID        int64
	Token     string
	Kind      string
	CreatedAt time.Time
	Entries   []PostedEntry
}

// PostedEntry is an entry with its place in the sequence and, for a
// customer balance, the balance's posted figure right after it.
type PostedEntry struct {
	Entry
	ID           int64
	BalanceAfter int64
}

// BalanceState is a customer balance locked for a movement, with the
// status of the account that holds it.
type BalanceState struct {
	Token         string `db:"token"`
	Account       string `db:"account"`
	Currency      string `db:"currency"`
	Posted        int64  `db:"posted"`
	Held          int64  `db:"held"`
	Available     int64  `db:"available"`
	Overdraft     bool   `db:"overdraft"`
	AccountStatus string `db:"account_status"`
}

// Currencies emi holds, with their minor units (all have two).
var currencyMinorUnits = map[string]int{"EUR": 2, "BGN": 2, "GBP": 2}

// ValidCurrency reports whether emi holds money in cur.
func ValidCurrency(cur string) bool { _, ok := currencyMinorUnits[cur]; return ok }

// Amount is a positive or negative money amount in minor units. In JSON it
// is a decimal string with at most the currency's two decimals ("12.50");
// a JSON number is read from its exact text, never through a float.
type Amount int64

// ParseAmount reads a decimal amount with at most two decimals ("12", "12.5",
// "12.50") into minor units. It refuses signs other than a leading "-",
// exponents, spaces, more than two decimals and values over 10^15 minor
// units.
func ParseAmount(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 13 || (hasDot && (frac == "" || len(frac) > 2)) {
		return 0, false
	}
	for _, r := range whole + frac {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	for len(frac) < 2 {
		frac += "0"
	}
	v, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// ParseTypedAmount reads an amount a person typed into a back-office form:
// what ParseAmount reads, surrounding spaces, and a decimal comma where it
// cannot be a thousands separator ("12,50" and "12,5" are 12.50; "1,250"
// and "1,250.00" are refused, since they mean 1.25 to some readers and
// 1250 to others). The partner API keeps ParseAmount's strict form.
func ParseTypedAmount(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if whole, frac, ok := strings.Cut(s, ","); ok {
		if strings.ContainsAny(frac, ",.") || len(frac) == 0 || len(frac) > 2 {
			return 0, false
		}
		s = whole + "." + frac
	}
	return ParseAmount(s)
}

// UnmarshalJSON reads a JSON string holding a decimal amount ("12.50")
// exactly. A JSON number is refused: the API declares amounts as strings
// (openapi.yaml, Amount), and 12345 read as 12,345.00 would credit what
// a client that meant minor units never asked for (issue 34).
func (a *Amount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '"' {
		return amountError{}
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return amountError{}
	}
	v, ok := ParseAmount(s)
	if !ok {
		return amountError{}
	}
	*a = Amount(v)
	return nil
}

// MarshalJSON writes the decimal string.
func (a Amount) MarshalJSON() ([]byte, error) { return json.Marshal(FormatMinor(int64(a))) }

// amountError is the field message of a malformed amount.
type amountError struct{}

func (amountError) Error() string { return "invalid amount" }

// FieldMessage is shown to the client (web/httpx.FieldMessager).
func (amountError) FieldMessage() string {
	return "must be a decimal amount with at most two decimals, as a string (\"12.50\")"
}

// Transfer types and statuses.
const (
	TransferInternal = "internal"
	TransferOutgoing = "outgoing"
	TransferIncoming = "incoming"

	TransferPending   = "pending"
	TransferCompleted = "completed"
	TransferReturned  = "returned"
	// TransferHeldForReview: transaction monitoring held the transfer
	// before the money reached its destination; compliance releases it
	// (internal: completed; outgoing: pending) or returns it to the
	// source (returned).
	TransferHeldForReview = "held_for_review"
)

// TransferParty names one side of a transfer in a request: exactly one of
// a balance, an account, an IBAN, or (GBP) an account number with its sort
// code.
type TransferParty struct {
	Account       string `json:"account" validate:"max=36"`
	Balance       string `json:"balance" validate:"max=36"`
	IBAN          string `json:"iban" validate:"max=42"`
	AccountNumber string `json:"account_number" validate:"max=8"`
	SortCode      string `json:"sort_code" validate:"max=8"`
}

// TransferCreate is the request of transfer_create: money from a balance
// of the partner to any balance held in emi.
type TransferCreate struct {
	Source      TransferParty `json:"source"`
	Destination TransferParty `json:"destination"`
	Amount      Amount        `json:"amount"`
	Currency    string        `json:"currency" validate:"required,len=3"`
	Reference   string        `json:"reference" validate:"max=140"`
}

// Counterparty is the external side of an outgoing or incoming transfer.
type Counterparty struct {
	Name          string `json:"name,omitempty"`
	IBAN          string `json:"iban,omitempty"`
	BIC           string `json:"bic,omitempty"`
	AccountNumber string `json:"account_number,omitempty"`
	SortCode      string `json:"sort_code,omitempty"`
	// CardLast4 is the last four digits of the card an incoming card
	// top-up came from (never more of the card number).
	CardLast4 string `json:"card_last4,omitempty"`
	// Scheme: sepa, faster_payments, card (incoming card top-up).
	Scheme string `json:"scheme,omitempty"`
}

// Transfer is a movement as customers see it.
type Transfer struct {
	Token              string       `db:"token"`
	PartnerID          string       `db:"partner_id"`
	Type               string       `db:"type"`
	Status             string       `db:"status"`
	SourceAccount      string       `db:"source_account"`
	SourceBalance      string       `db:"source_balance"`
	DestinationAccount string       `db:"destination_account"`
	DestinationBalance string       `db:"destination_balance"`
	Counterparty       Counterparty `db:"-"`
	Amount             int64        `db:"amount"`
	Currency           string       `db:"currency"`
	Reference          string       `db:"reference"`
	Txn                int64        `db:"txn"`
	ReturnTxn          int64        `db:"return_txn"`
	// ReleaseTxn moved a held transfer's money on when compliance
	// released it.
	ReleaseTxn   int64     `db:"release_txn"`
	ReturnReason string    `db:"return_reason"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
	// Filled for responses: the IBANs of the two customer sides (a
	// virtual account's own IBAN where the side is a virtual account), and
	// the partners that hold them.
	SourceIBAN         string `db:"-"`
	DestinationIBAN    string `db:"-"`
	SourcePartner      string `db:"-"`
	DestinationPartner string `db:"-"`
}

// CanComplete tells whether the receiving bank may still complete t, an
// outgoing payment (the sandbox's settlement): only while it is pending.
func (t Transfer) CanComplete() bool { return t.Status == TransferPending }

// Held tells whether t waits for a compliance decision (released or
// returned by staff, never by the receiving bank).
func (t Transfer) Held() bool { return t.Status == TransferHeldForReview }

// CanReturn tells whether the receiving bank may still return t, an
// outgoing payment (the sandbox's settlement): until it is returned, a
// completed payment included.
func (t Transfer) CanReturn() bool {
	return t.Status != TransferReturned && t.Status != TransferHeldForReview
}

// LedgerReport is the result of a ledger verification.
type LedgerReport struct {
	Transactions int64
	Entries      int64
	Balances     int64
	// Positions are the net of the customer balances (Customers) and of
	// the institution's accounts (Institution) per currency; they sum to
	// zero when the ledger is sound.
	Positions []LedgerPosition
	// Problems names each broken rule with how many rows break it.
	Problems []string
}

// OK reports whether no rule is broken.
func (r LedgerReport) OK() bool { return len(r.Problems) == 0 }

// LedgerPosition is one currency's net positions.
type LedgerPosition struct {
	Currency    string `db:"currency"`
	Customers   int64  `db:"customers"`
	Institution int64  `db:"institution"`
}

// TransferStatuses are the transfer statuses a list may filter on.
var TransferStatuses = []string{TransferPending, TransferCompleted, TransferReturned, TransferHeldForReview}

// TransferList is a transfers_list query: the partner's transfers (either
// side its own), newest first, optionally of one account, in one status,
// created in [From, To); StartingAfter is the last transfer of the
// previous page (a cursor).
type TransferList struct {
	Account, Status string
	From, To        time.Time
	Limit           int // 1 to transfers.ListMax; the API sends ListDefault when none is asked
	StartingAfter   string
}

// TransferPage is one page of transfers_list.
type TransferPage struct {
	Items   []Transfer
	Limit   int
	HasMore bool
}
