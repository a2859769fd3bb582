package emi

import (
	"strconv"
	"strings"
	"time"
)

// Identifier schemes of a program's balances.
const (
	SchemeIBANBG = "iban_bg" // Bulgarian IBAN (EUR, BGN)
	SchemeUK     = "uk"      // UK account number + sort code, and the GB IBAN
)

// GroupKinds are the eight card group kinds (card_groups).
var GroupKinds = []string{"usage", "fees", "schedule_fees", "web_service_fees", "limits", "linkage", "mcc", "whitelist"}

// Program is operator configuration for accounts and cards.
type Program struct {
	Code               string
	Name               string
	Currencies         []string
	Schemes            []string
	CardsAllowed       bool
	CardTypes          []string
	BINPrefix          string
	CardValidityMonths int
	AMLRequired        bool
	Overdraft          bool
	// PINBySMS: card_send_pin may text the PIN to the cardholder.
	PINBySMS bool
	// WalletProvisioning: cards may be pushed to mobile wallets.
	WalletProvisioning bool
	// AllowedPartners nil: every partner.
	AllowedPartners []string
	// Groups by kind: the codes associated, and the default one.
	Groups   map[string][]string
	Defaults map[string]string
	// UpdatedAt is when the program last changed: the version an edit
	// must name (ProgramInput.Version), so a stale edit is refused.
	UpdatedAt time.Time
	// Pending is set on UpdateProgram's answer when the change moves risk
	// and was proposed rather than applied: a second administrator
	// approves it.
	Pending *ProgramChange `db:"-"`
}

// UsableBy reports whether a partner may use the program.
func (p Program) UsableBy(partnerID string) bool {
	if p.AllowedPartners == nil {
		return true
	}
	for _, id := range p.AllowedPartners {
		if id == partnerID {
			return true
		}
	}
	return false
}

// Account statuses.
const (
	AccountActive     = "active"
	AccountBlocked    = "blocked"
	AccountTerminated = "terminated"
)

// AccountCreate is the request of account_create.
type AccountCreate struct {
	Program            string `json:"program" validate:"required,max=40"`
	Merchant           string `json:"merchant" validate:"max=36"`
	User               string `json:"user" validate:"max=36"`
	Main               string `json:"main" validate:"max=36"`
	SkipIBANGeneration bool   `json:"skip_iban_generation"`
	Alias              string `json:"alias" validate:"max=200"`
}

// Balance is one balance of an account (minor units).
type Balance struct {
	Token     string `db:"token"`
	Account   string `db:"account"`
	Position  int    `db:"position"`
	Currency  string `db:"currency"`
	Available int64  `db:"available"`
	// Posted is the ledger balance (the sum of the balance's entries) and
	// Held the card authorizations not yet cleared: Available = Posted -
	// Held.
	Posted int64 `db:"posted"`
	Held   int64 `db:"held"`
	// Overdraft: the program lets Available go below zero.
	Overdraft     bool    `db:"overdraft"`
	IBAN          *string `db:"iban"`
	BIC           string  `db:"bic"`
	AccountNumber *string `db:"account_number"`
	SortCode      *string `db:"sort_code"`
}

// Account is an account with its balances (a virtual account shows its
// main account's balances, and its own IBANs).
type Account struct {
	Token        string
	PartnerID    string
	Program      string
	Merchant     string
	User         string
	Main         string
	Virtual      bool
	Alias        string
	Status       string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	TerminatedAt *time.Time
	Balances     []Balance
	// VirtualIBANs are a virtual account's own IBANs by currency.
	VirtualIBANs map[string]string
	// OwnerName is filled for the back office.
	OwnerName string
}

// AccountFilter selects accounts (accounts_list, back office).
type AccountFilter struct {
	PartnerID string
	Merchant  string
	User      string
	Program   string
	Q         string
	Page      int
	Limit     int
	// StartingAfter is an account of the partner: the page counts from
	// the account after it, newest first (a cursor).
	StartingAfter string
	// Sort is another order than the newest first (program, status,
	// created).
	Sort SortOrder
}

// AccountStatusChange is one entry of an account's status history.
type AccountStatusChange struct {
	From   string `db:"from_status"`
	To     string `db:"to_status"`
	Reason string `db:"reason"`
	Actor  string `db:"actor"`
	// ActorName names a staff actor, or says "partner API" for an API key.
	ActorName string    `db:"actor_name"`
	At        time.Time `db:"at"`
}

// FormatMinor writes an amount in minor units as a decimal string with
// the currency's two decimals ("1250.50"); EUR, BGN and GBP all have two.
func FormatMinor(v int64) string {
	neg := v < 0
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v/100, 10) + "." + pad2(v%100)
	if neg {
		s = "-" + s
	}
	return s
}

func pad2(v int64) string {
	s := strconv.FormatInt(v, 10)
	return strings.Repeat("0", 2-len(s)) + s
}

// ProgramChange is a proposed change of a program that moves risk,
// waiting for a second administrator (no one administrator alone may raise
// a program's risk).
type ProgramChange struct {
	// Request is the two-person request the change waits on.
	Request    string       `db:"request"`
	Program    string       `db:"program"`
	Input      ProgramInput `db:"-"`
	Risk       string       `db:"risk"`
	ProposedBy string       `db:"proposed_by"`
	ProposedAt time.Time    `db:"proposed_at"`
}
