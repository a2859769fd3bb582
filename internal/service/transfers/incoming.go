package transfers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/iban"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/staff"
)

// IncomingStore keeps suspense items: incoming money that could not be
// credited to a customer.
type IncomingStore interface {
	InsertSuspenseItem(ctx context.Context, it emi.SuspenseItem) error
	// SuspenseItem returns an item; forUpdate locks its row. Returns
	// emi.ErrSuspenseNotFound.
	SuspenseItem(ctx context.Context, token string, forUpdate bool) (emi.SuspenseItem, error)
	// SuspenseItems returns a page (from 1) of open items, oldest first, or
	// of resolved ones, newest first, with the total. An order with a key
	// sorts by that column.
	SuspenseItems(ctx context.Context, open bool, page, limit int, order emi.SortOrder) ([]emi.SuspenseItem, int64, error)
	// ResolveSuspenseItem writes the resolution of an open item.
	ResolveSuspenseItem(ctx context.Context, token string, r emi.SuspenseResolution) error
	// CountOpenSuspense counts open items.
	CountOpenSuspense(ctx context.Context) (int64, error)

	// InsertSuspenseAssignment records the item and target of the request
	// a.Token.
	InsertSuspenseAssignment(ctx context.Context, a emi.SuspenseAssignment) error
	// SuspenseAssignment returns a request; forUpdate locks its row.
	// Returns emi.ErrSuspenseAssignmentNotFound.
	SuspenseAssignment(ctx context.Context, token string, forUpdate bool) (emi.SuspenseAssignment, error)
	// PendingSuspenseAssignments returns the pending request of each of
	// items that has one, by item.
	PendingSuspenseAssignments(ctx context.Context, items []string) (map[string]emi.SuspenseAssignment, error)
	// SetSuspenseAssignmentTransfer records the transfer an approval
	// created.
	SetSuspenseAssignmentTransfer(ctx context.Context, token, transfer string) error
}

// IncomingConfig configures Incoming.
type IncomingConfig struct {
	// Sandbox lets partners (sandbox_incoming_credit) and staff simulate
	// incoming payments; in production only the system (a bank feed) may
	// credit incoming money.
	Sandbox bool
	// Own is emi's identifiers: a UK account number under emi's sort code
	// is looked up by its GB IBAN too (OwnBank.UKIBAN), which finds
	// virtual accounts (their UK identifiers exist only inside their
	// IBAN). Transfers has the same (Transfers.SetOwnBank).
	Own OwnBank
}

// Incoming takes money arriving from outside emi (simulated in the
// sandbox): SEPA credits to an IBAN, Faster Payments to a UK account number
// and sort code (or a GB IBAN), and card top-ups to an account or balance.
// Money for a usable balance in its currency is credited at once; anything
// else is parked in suspense, where staff assign it to a balance (one
// requests, a second person approves: ControlSuspenseAssign) or return it
// to the sender.
type Incoming struct {
	tx        kernel.TxRunner
	store     IncomingStore
	transfers TransferStore
	ledger    *accounts.Ledger
	controls  *staff.Controls
	events    *kernel.Events
	audit     *kernel.Auditor
	validate  interface {
		Struct(any, *emi.Error) error
	}
	cfg     IncomingConfig
	monitor *monitoring.Monitor
	now     kernel.Clock
}

// IncomingDeps is what Incoming needs; NewIncoming checks that none is nil.
type IncomingDeps struct {
	Tx        kernel.TxRunner
	Store     IncomingStore
	Transfers TransferStore
	Ledger    *accounts.Ledger
	Controls  *staff.Controls
	Events    *kernel.Events
	Audit     *kernel.Auditor
	Validate  interface {
		Struct(any, *emi.Error) error
	}
	Config IncomingConfig
	// Monitor records every credit for transaction monitoring.
	Monitor *monitoring.Monitor
	Now     kernel.Clock
}

// NewIncoming returns the incoming payments service.
func NewIncoming(d IncomingDeps) *Incoming {
	kernel.MustHave("Incoming", d)
	return &Incoming{tx: d.Tx, store: d.Store, transfers: d.Transfers, ledger: d.Ledger, controls: d.Controls, events: d.Events, audit: d.Audit,
		validate: d.Validate, cfg: d.Config, monitor: d.Monitor, now: d.Now}
}

// Credit books money arriving from outside emi (the sandbox's
// sandbox_incoming_credit, the back office's simulator; a bank feed later).
//
// Rules:
//   - sepa: EUR, to an IBAN (a virtual IBAN routes to its main account's
//     balance; the entry shows on the virtual account); the payer may give
//     an IBAN, which must be valid.
//   - faster_payments: GBP, to an account number and sort code or a GB
//     IBAN; the payer may give a UK account number with sort code or a GB
//     IBAN.
//   - card: any of emi's currencies, to an account (its balance in the
//     currency) or a balance token; the payer's card is known by its last
//     four digits only (card_last4, required).
//   - The payer's name is required; the reference is up to 140 printable
//     characters.
//
// A usable destination in the currency is credited: ledger incoming
// clearing -> customer (emi.TxnIncoming), a completed incoming transfer
// whose counterparty is the payer, and transfer.completed to the receiving
// partner. An unknown identifier, a terminated or blocked account (or main
// account), or a balance in another currency sends the money to suspense
// instead (incoming clearing -> suspense) with the reason.
//
// Blocked accounts: the money goes to suspense, not to the balance. A
// block stops every movement of an account, in both directions (internal
// transfers refuse a blocked destination with 14004 too), and a block is
// often put on for suspected fraud, when new money must not become
// spendable the day the block is lifted without someone looking at it.
// Staff assign the item once the account is unblocked, or return it.
//
// A partner (sandbox only) may credit its own accounts; an identifier of
// another partner's customer is treated exactly as one that matches
// nothing (contract §2, S4: a partner learns nothing of another's
// customers), so the credit goes to suspense as an unknown identifier. The
// sandbox simulates payments to your customers, never to others'. Staff
// (emi.PermManageMoney, sandbox only) may credit anything.
// Every credit is audited.
func (s *Incoming) Credit(ctx context.Context, in emi.IncomingCredit) (emi.IncomingResult, error) {
	partnerID, err := s.creditor(ctx)
	if err != nil {
		return emi.IncomingResult{}, err
	}
	dest, err := s.checkCredit(&in)
	if err != nil {
		return emi.IncomingResult{}, err
	}
	var out emi.IncomingResult
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		party, found, err := s.findDestination(ctx, in)
		if err != nil {
			return err
		}
		if found && partnerID != "" && party.PartnerID != partnerID {
			party, found = accounts.Party{}, false
		}
		reason := ""
		if !found {
			reason = emi.SuspenseUnknownIdentifier
		} else if reason, err = s.unusableReason(ctx, party, in.Currency); err != nil {
			return err
		}
		payer := payerOf(in)
		if reason != "" {
			it, err := s.toSuspense(ctx, in, payer, dest, reason, party, partnerID)
			if err != nil {
				return err
			}
			out = emi.IncomingResult{Status: emi.IncomingSuspense, SuspenseItem: it.Token}
			return nil
		}
		t, err := s.creditParty(ctx, party, in.Amount, in.Currency, in.Reference, payer, emi.TxnIncoming, emi.LedgerIncomingClearing)
		if err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "incoming.credit", ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: party.PartnerID, Changes: map[string]any{"scheme": in.Scheme, "amount": emi.FormatMinor(int64(in.Amount)),
				"currency": in.Currency, "destination_account": party.Account, "identifier": dest, "payer": payer.Name}}); err != nil {
			return err
		}
		if partnerID != "" {
			if t, err = PartnerView(t, partnerID); err != nil {
				return err
			}
		}
		out = emi.IncomingResult{Status: emi.IncomingCredited, Transfer: &t}
		return nil
	})
	return out, err
}

// creditor returns the calling partner ("" for staff and the system), or
// refuses the caller: outside the sandbox only the system credits incoming
// money, and the sandbox's operations answer as an unknown route.
func (s *Incoming) creditor(ctx context.Context) (string, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok {
		return "", emi.ErrForbidden
	}
	switch p.Type {
	case emi.ActorSystem:
		return "", nil
	case emi.ActorPartnerKey:
		if !s.cfg.Sandbox {
			return "", emi.ErrRouteNotFound
		}
		if !p.IsPartner() {
			return "", emi.ErrForbidden
		}
		return p.PartnerID, nil
	}
	if err := ManageMoney.Require(ctx); err != nil {
		return "", err
	}
	if !s.cfg.Sandbox {
		return "", emi.ErrRouteNotFound
	}
	return "", nil
}

// checkCredit normalises and checks a credit (every problem at once, 14001)
// and returns how people read its destination.
func (s *Incoming) checkCredit(in *emi.IncomingCredit) (string, error) {
	in.Scheme, in.Currency = strings.TrimSpace(in.Scheme), strings.ToUpper(strings.TrimSpace(in.Currency))
	in.Reference = strings.TrimSpace(in.Reference)
	pay, d := &in.Payer, &in.Destination
	pay.Name, pay.IBAN = strings.TrimSpace(pay.Name), iban.Normalize(pay.IBAN)
	pay.AccountNumber, pay.SortCode, pay.CardLast4 = digitsOnly(pay.AccountNumber), digitsOnly(pay.SortCode), strings.TrimSpace(pay.CardLast4)
	d.Account, d.Balance, d.IBAN = strings.ToLower(strings.TrimSpace(d.Account)), strings.ToLower(strings.TrimSpace(d.Balance)), iban.Normalize(d.IBAN)
	d.AccountNumber, d.SortCode = digitsOnly(d.AccountNumber), digitsOnly(d.SortCode)

	var bad kernel.Problems
	if err := bad.AddErr("", s.validate.Struct(*in, emi.ErrTransferValidation)); err != nil {
		return "", err
	}
	accounts.CheckAmount(&bad, int64(in.Amount))
	checkReference(&bad, in.Reference)
	switch {
	case in.Currency == "" || bad.Has("currency"):
	case !emi.ValidCurrency(in.Currency):
		bad.Add("currency", "must be EUR, BGN or GBP")
	default:
		checkSchemeCurrency(&bad, in.Scheme, in.Currency)
	}
	if in.Scheme != "" && !slices.Contains(emi.IncomingSchemes, in.Scheme) {
		bad.Add("scheme", "must be sepa, faster_payments or card")
	}

	// The payer.
	if pay.Name == "" {
		bad.Add("payer.name", "is required")
	}
	checkPrintable(&bad, "payer.name", pay.Name)
	if pay.IBAN != "" && iban.Validate(pay.IBAN) != nil {
		bad.Add("payer.iban", "is not a valid IBAN")
	}
	if pay.AccountNumber != "" || pay.SortCode != "" {
		if !iban.ValidUKAccountNumber(pay.AccountNumber) || !iban.ValidSortCode(pay.SortCode) {
			bad.Add("payer.account_number", "a UK account number (8 digits) goes with its sort code (6 digits)")
		}
	}
	if pay.CardLast4 != "" && !cardLast4(pay.CardLast4) {
		bad.Add("payer.card_last4", "must be the last 4 digits of the card")
	}
	switch in.Scheme {
	case emi.SchemeSEPA:
		if pay.AccountNumber != "" || pay.SortCode != "" || pay.CardLast4 != "" {
			bad.Add("payer", "a SEPA payer is known by name and IBAN only")
		}
	case emi.SchemeFasterPayments:
		if pay.CardLast4 != "" {
			bad.Add("payer.card_last4", "is for card top-ups only")
		}
		if pay.IBAN != "" && !strings.HasPrefix(pay.IBAN, "GB") {
			bad.Add("payer.iban", "must be a GB IBAN for a Faster Payment")
		}
		if pay.IBAN != "" && pay.AccountNumber != "" {
			bad.Add("payer", "give an IBAN or an account number with sort code, not both")
		}
	case emi.SchemeCard:
		if pay.CardLast4 == "" && !bad.Has("payer.card_last4") {
			bad.Add("payer.card_last4", "is required for a card top-up")
		}
		if pay.IBAN != "" || pay.AccountNumber != "" || pay.SortCode != "" {
			bad.Add("payer", "a card top-up's payer is known by name and card_last4 only")
		}
	}

	// The destination.
	before := len(bad)
	checkParty(&bad, "destination", *d)
	if len(bad) == before {
		switch {
		case d.IBAN != "":
			if iban.Validate(d.IBAN) != nil {
				bad.Add("destination.iban", "is not a valid IBAN")
			}
		case d.AccountNumber != "":
			if !iban.ValidUKAccountNumber(d.AccountNumber) || !iban.ValidSortCode(d.SortCode) {
				bad.Add("destination", "a UK account number has 8 digits and its sort code 6")
			}
		case d.Account != "" && !kernel.ValidToken(d.Account):
			bad.Add("destination.account", "must be an account token")
		case d.Balance != "" && !kernel.ValidToken(d.Balance):
			bad.Add("destination.balance", "must be a balance token")
		}
		switch in.Scheme {
		case emi.SchemeSEPA:
			if d.IBAN == "" {
				bad.Add("destination", "a SEPA credit is sent to an iban")
			}
		case emi.SchemeFasterPayments:
			if d.AccountNumber == "" && !strings.HasPrefix(d.IBAN, "GB") {
				bad.Add("destination", "a Faster Payment is sent to an account_number with sort_code, or a GB iban")
			}
		case emi.SchemeCard:
			if d.Account == "" && d.Balance == "" {
				bad.Add("destination", "a card top-up is sent to an account or a balance")
			}
		}
	}
	if len(bad) > 0 {
		return "", emi.ErrTransferValidation.WithFields(bad...)
	}
	return describeParty(*d), nil
}

// findDestination resolves where a credit was sent (findIdentifier).
func (s *Incoming) findDestination(ctx context.Context, in emi.IncomingCredit) (accounts.Party, bool, error) {
	return findIdentifier(ctx, s.transfers, s.cfg.Own, in.Destination, in.Currency)
}

// findIdentifier looks an identifier up in emi (TransferStore.FindParty).
// A UK account number of emi's sort code is looked up by its GB IBAN too,
// which finds virtual accounts (their UK identifiers exist only inside
// their IBAN). Incoming credits and the outgoing refusal of emi's own
// identifiers share it, so both see the same accounts.
func findIdentifier(ctx context.Context, store TransferStore, own OwnBank, d emi.TransferParty, currency string) (accounts.Party, bool, error) {
	party, found, err := store.FindParty(ctx, d, currency)
	if err != nil || found || d.AccountNumber == "" {
		return party, found, err
	}
	if iban, ok := own.UKIBAN(d.SortCode, d.AccountNumber); ok {
		return store.FindParty(ctx, emi.TransferParty{IBAN: iban}, currency)
	}
	return party, false, nil
}

// unusableReason locks the party's balance and says why it cannot take
// money in currency ("" when it can): its account or main account is
// terminated or blocked (Ledger.LockStatus), or the balance is in another
// currency.
func (s *Incoming) unusableReason(ctx context.Context, party accounts.Party, currency string) (string, error) {
	_, u, err := s.ledger.LockStatus(ctx, accounts.Side{Field: "destination", Party: party})
	switch {
	case err != nil:
		return "", err
	case u != nil && u.Status == emi.AccountTerminated:
		return emi.SuspenseAccountTerminated, nil
	case u != nil:
		return emi.SuspenseAccountBlocked, nil
	case party.Currency != currency:
		return emi.SuspenseCurrencyNotHeld, nil
	}
	return "", nil
}

// creditParty moves amount from the internal account from (incoming
// clearing, or suspense for an assignment) to the party's balance in a
// ledger transaction of kind, records the completed incoming transfer and
// tells the receiving partner (transfer.completed). The caller has locked
// the balance and checked the accounts.
func (s *Incoming) creditParty(ctx context.Context, party accounts.Party, amount emi.Amount, currency, reference string,
	payer emi.Counterparty, kind, from string) (emi.Transfer, error) {
	minor := int64(amount)
	posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: kind, PartnerID: party.PartnerID, Reference: reference,
		Entries: []emi.Entry{
			{Internal: from, Currency: currency, Amount: -minor},
			{Balance: party.Balance, Account: party.Account, Currency: currency, Amount: minor},
		}})
	if err != nil {
		return emi.Transfer{}, err
	}
	now := s.now.At(ctx).UTC()
	t := emi.Transfer{Token: kernel.NewToken(), Type: emi.TransferIncoming, Status: emi.TransferCompleted,
		DestinationAccount: party.Account, DestinationBalance: party.Balance, Counterparty: payer,
		Amount: minor, Currency: currency, Reference: reference, Txn: posted.ID, CreatedAt: now, UpdatedAt: now,
		DestinationIBAN: party.IBAN, DestinationPartner: party.PartnerID}
	if err := s.transfers.InsertTransfer(ctx, t); err != nil {
		return emi.Transfer{}, err
	}
	key, country := monitoring.CounterpartyOf(payer)
	if err := s.monitor.Record(ctx, monitoring.Movement{PartnerID: party.PartnerID, Account: party.Account,
		Kind: monitoring.KindIncoming, Direction: monitoring.In, Amount: minor, Currency: currency,
		CounterpartyKey: key, CounterpartyCountry: country, Source: t.Token}); err != nil {
		return emi.Transfer{}, err
	}
	if err := emitTransfer(ctx, s.events, t, emi.EventTransferCompleted); err != nil {
		return emi.Transfer{}, err
	}
	return t, nil
}

// toSuspense parks a credit on the suspense account and records the item.
func (s *Incoming) toSuspense(ctx context.Context, in emi.IncomingCredit, payer emi.Counterparty, dest, reason string,
	party accounts.Party, partnerID string) (emi.SuspenseItem, error) {
	return parkInSuspense(ctx, s.ledger, s.store, s.audit, s.now, emi.LedgerTxn{Kind: emi.TxnIncoming, Reference: in.Reference},
		emi.LedgerIncomingClearing, "incoming.suspense", emi.SuspenseItem{Scheme: in.Scheme, Amount: int64(in.Amount),
			Currency: in.Currency, Payer: payer, Identifier: dest, Destination: in.Destination, Reason: reason,
			Reference: in.Reference, Account: party.Account, PartnerID: partnerID})
}

// parkInSuspense is the one way money reaches the suspense account: it
// posts txn (its kind, partner and reference; the entries are made here)
// moving the item's amount from the internal account from to suspense,
// records the open item for the back office's suspense queue and audits
// it under action. The item's token, txn, status and time are filled in.
// Incoming credits that cannot be credited and returned outgoing payments
// whose account is terminated both come here, so money on suspense always
// has its item.
func parkInSuspense(ctx context.Context, ledger *accounts.Ledger, store IncomingStore, audit *kernel.Auditor, now kernel.Clock,
	txn emi.LedgerTxn, from, action string, it emi.SuspenseItem) (emi.SuspenseItem, error) {
	txn.Entries = []emi.Entry{
		{Internal: from, Currency: it.Currency, Amount: -it.Amount},
		{Internal: emi.LedgerSuspense, Currency: it.Currency, Amount: it.Amount},
	}
	posted, err := ledger.Post(ctx, txn)
	if err != nil {
		return emi.SuspenseItem{}, err
	}
	it.Token, it.Txn, it.Status, it.CreatedAt = kernel.NewToken(), posted.ID, emi.SuspenseOpen, now().UTC()
	if err := store.InsertSuspenseItem(ctx, it); err != nil {
		return emi.SuspenseItem{}, err
	}
	return it, audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "suspense_item", ResourceToken: it.Token,
		PartnerID: it.PartnerID, Changes: map[string]any{"scheme": it.Scheme, "amount": emi.FormatMinor(it.Amount),
			"currency": it.Currency, "identifier": it.Identifier, "reason": it.Reason, "account": it.Account,
			"payer": it.Payer.Name}})
}

// payerOf is the payer as a transfer's counterparty.
func payerOf(in emi.IncomingCredit) emi.Counterparty {
	p := in.Payer
	c := emi.Counterparty{Name: p.Name, IBAN: p.IBAN, AccountNumber: p.AccountNumber, SortCode: p.SortCode,
		CardLast4: p.CardLast4, Scheme: in.Scheme}
	if c.IBAN != "" && strings.HasPrefix(c.IBAN, "GB") && len(c.IBAN) == 22 && c.AccountNumber == "" && in.Scheme == emi.SchemeFasterPayments {
		c.SortCode, c.AccountNumber = c.IBAN[8:14], c.IBAN[14:]
	}
	return c
}

// describeParty is how people read an identifier.
func describeParty(d emi.TransferParty) string {
	switch {
	case d.IBAN != "":
		return "IBAN " + d.IBAN
	case d.AccountNumber != "":
		return "sort code " + fmtSortCode(d.SortCode) + " account " + d.AccountNumber
	case d.Account != "":
		return "account " + d.Account
	case d.Balance != "":
		return "balance " + d.Balance
	}
	return ""
}

// cardLast4 reports whether s is the last four digits of a card.
func cardLast4(s string) bool {
	return len(s) == 4 && strings.Trim(s, "0123456789") == ""
}

// digitsOnly drops spaces and hyphens (sort codes are written 04-00-69);
// anything else is kept, for the format checks to refuse.
func digitsOnly(s string) string {
	return strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(s))
}

// --- the suspense queue (back office) ---

// SuspensePageSize is the number of suspense items a page lists.
const SuspensePageSize = 50

// SuspenseItems lists open suspense items, oldest first (open=true), or
// resolved ones, newest first (emi.PermViewMoney), or in order when it
// has a key (the store's whitelist maps it to a column).
func (s *Incoming) SuspenseItems(ctx context.Context, open bool, page int, order emi.SortOrder) ([]emi.SuspenseItem, int64, error) {
	if err := ViewMoney.Require(ctx); err != nil {
		return nil, 0, err
	}
	items, total, err := s.store.SuspenseItems(ctx, open, max(page, 1), SuspensePageSize, order)
	if err != nil || !open || len(items) == 0 {
		return items, total, err
	}
	tokens := make([]string, len(items))
	for i, it := range items {
		tokens[i] = it.Token
	}
	pending, err := s.store.PendingSuspenseAssignments(ctx, tokens)
	if err != nil {
		return nil, 0, err
	}
	for i := range items {
		if a, ok := pending[items[i].Token]; ok {
			items[i].Pending = &a
		}
	}
	return items, total, nil
}

// OpenSuspense counts open suspense items (emi.PermViewMoney), for the
// navigation's badge.
func (s *Incoming) OpenSuspense(ctx context.Context) (int64, error) {
	if err := ViewMoney.Require(ctx); err != nil {
		return 0, err
	}
	return s.store.CountOpenSuspense(ctx)
}

// RequestSuspenseAssignment asks for an open suspense item to be credited
// to a balance (ControlSuspenseAssign's propose permission,
// emi.PermManageMoney), named by to: an IBAN, an account token (its
// balance in the item's currency) or a balance token, with a required
// reason. Nothing moves: the item stays open, on the suspense account,
// with the pending request, until a second, distinct person approves it
// (DecideSuspenseAssignment). The target is checked now as it will be at
// approval: an unknown target is 14006, a balance in another currency
// 14005, a blocked or terminated account (or main account) 14004. An item
// has at most one pending request (emi.ErrSuspenseAssignmentPending); a
// resolved item is emi.ErrSuspenseResolved. Audited
// (suspense.assign_requested).
func (s *Incoming) RequestSuspenseAssignment(ctx context.Context, token, to, reason string) (emi.SuspenseAssignment, error) {
	if err := staff.RequirePropose(ctx, AssignmentFlow.Control); err != nil {
		return emi.SuspenseAssignment{}, err
	}
	reason, err := kernel.StaffReason(reason)
	if err != nil {
		return emi.SuspenseAssignment{}, err
	}
	target, err := s.assignTarget(to)
	if err != nil {
		return emi.SuspenseAssignment{}, err
	}
	var out emi.SuspenseAssignment
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		it, err := s.openItem(ctx, token)
		if err != nil {
			return err
		}
		if err := s.noPendingAssignment(ctx, it.Token); err != nil {
			return err
		}
		party, err := s.usableTarget(ctx, target, it.Currency)
		if err != nil {
			return err
		}
		out = emi.SuspenseAssignment{Token: kernel.NewToken(), Item: it.Token, Target: targetText(target), Account: party.Account,
			Balance: party.Balance, PartnerID: party.PartnerID, Reason: reason, Status: emi.AssignmentPending}
		req, err := s.controls.ProposeRequest(ctx, AssignmentFlow, staff.Proposal{ID: out.Token, Subject: assignmentSubject(it.Token),
			ResourceType: "suspense_item", ResourceToken: it.Token, PartnerID: party.PartnerID, Reason: reason,
			Changes: map[string]any{"assignment": out.Token, "amount": emi.FormatMinor(it.Amount), "currency": it.Currency,
				"target": out.Target, "account": party.Account, "balance": party.Balance}})
		if err != nil {
			return err
		}
		out.RequestedBy, out.RequestedAt = req.ProposedBy, req.ProposedAt
		return s.store.InsertSuspenseAssignment(ctx, out)
	})
	return out, err
}

// AssignmentFlow is the assignment of a suspense item to a balance
// (staff.ControlSuspenseAssign): one person asks with the target and a
// reason, a second, distinct one approves; the request cannot be edited
// and a rejection gives a reason. One assignment waits per item.
var AssignmentFlow = staff.DeclareFlow(staff.Flow{
	Control:           staff.ControlSuspenseAssign,
	Asked:             "the assignment of this suspense item",
	Proposed:          "suspense.assign_requested",
	Approved:          "suspense.assign",
	Rejected:          "suspense.assign_rejected",
	Withdrawn:         "suspense.assign_withdrawn",
	RejectNeedsReason: true,
	// The codes the back office knew before the lifecycle.
	Codes: staff.RequestCodes{Pending: emi.ErrSuspenseAssignmentPending, Closed: emi.ErrSuspenseAssignmentDecided},
	Href:  func(staff.Request) string { return "/backoffice/suspense" },
})

func assignmentSubject(item string) string { return staff.SubjectOf("suspense", item) }

// noPendingAssignment refuses an item (locked by the caller) that has an
// assignment waiting for a second person.
func (s *Incoming) noPendingAssignment(ctx context.Context, item string) error {
	r, found, err := s.controls.PendingRequest(ctx, assignmentSubject(item))
	if err != nil {
		return err
	}
	if found {
		return emi.ErrSuspenseAssignmentPending.WithDetail("assignment %s of item %s, requested by %s, is pending",
			r.ID, item, r.ProposedBy).WithPublic(staff.RefusedPending, AssignmentFlow.Asked)
	}
	return nil
}

// usableTarget resolves a target and locks its balance: it must exist
// (14006), be in currency (14005), and its account and main account must
// be active (14004, Ledger.LockUsable).
func (s *Incoming) usableTarget(ctx context.Context, target emi.TransferParty, currency string) (accounts.Party, error) {
	party, found, err := s.findTarget(ctx, target, currency)
	if err != nil {
		return accounts.Party{}, err
	}
	if !found {
		return accounts.Party{}, emi.ErrDestinationNotFound.Field("to", "matches no balance held in emi")
	}
	if party.Currency != currency {
		return accounts.Party{}, emi.ErrCurrencyMismatch.Field("to", "has no "+currency+" balance")
	}
	if err := s.ledger.LockUsable(ctx, accounts.Side{Field: "to", Party: party}); err != nil {
		return accounts.Party{}, err
	}
	return party, nil
}

// DecideSuspenseAssignment decides a pending assignment request
// (emi.PermManageMoney): approve=true credits the item to the requested
// balance; false rejects the request (by anyone with the permission) or,
// by its requester, withdraws it, with a reason (note) of 3 to 2,000
// characters. An approval's note is optional.
//
// Only a person distinct from the requester approves (Controls.Approve,
// ControlSuspenseAssign: not the requester, nor anyone linked to them
// through an administrator who set up either's access; emi.ErrFourEyes).
// Under the item's row lock, every check of the request is made again: the
// item must still be open, the target must still name the same balance and
// account (the approval is bound to them), in the item's currency, with
// both accounts active (14004 for a target blocked or terminated since;
// the request then stays pending, to be rejected or approved once the
// account is usable again). The ledger then moves suspense -> customer
// (emi.TxnSuspenseAssign), an incoming transfer from the original payer is
// created and its partner told (transfer.completed), and the item becomes
// assigned (resolved by the approver, with the request's reason).
//
// A decided request answers emi.ErrSuspenseAssignmentDecided: the item's
// row and then the request's are locked first, so of concurrent decisions
// exactly one wins and the money moves at most once. Audited:
// suspense.assign (the approval that posted it), suspense.assign_rejected
// or suspense.assign_withdrawn.
func (s *Incoming) DecideSuspenseAssignment(ctx context.Context, request string, approve bool, note string) (emi.SuspenseAssignment, *emi.Transfer, error) {
	if err := staff.RequireApprove(ctx, AssignmentFlow.Control); err != nil {
		return emi.SuspenseAssignment{}, nil, err
	}
	note = strings.TrimSpace(note)
	if !approve {
		var err error
		if note, err = kernel.StaffReason(note); err != nil {
			return emi.SuspenseAssignment{}, nil, err
		}
	} else if len(note) > 2000 {
		return emi.SuspenseAssignment{}, nil, emi.ErrReviewValidation.Field("reason", "must be at most 2,000 characters")
	}
	if !kernel.ValidToken(request) {
		return emi.SuspenseAssignment{}, nil, emi.ErrSuspenseAssignmentNotFound
	}
	peek, err := s.store.SuspenseAssignment(ctx, request, false)
	if err != nil {
		return emi.SuspenseAssignment{}, nil, err
	}
	// Lock order: the item, then the request (as RequestSuspenseAssignment
	// and ReturnSuspense, which lock the item before reading requests).
	var it emi.SuspenseItem
	lock := func(ctx context.Context, _ staff.Request) error {
		var err error
		it, err = s.store.SuspenseItem(ctx, peek.Item, true)
		return err
	}
	subject := assignmentSubject(peek.Item)
	if !approve {
		if _, err := s.controls.DeclineRequest(ctx, AssignmentFlow, subject, staff.Decline{Note: note, Lock: lock, ID: peek.Token}); err != nil {
			return emi.SuspenseAssignment{}, nil, err
		}
		out, err := s.store.SuspenseAssignment(ctx, request, false)
		return out, nil, err
	}
	var posted *emi.Transfer
	_, err = s.controls.ApproveRequest(ctx, AssignmentFlow, subject, staff.Approval{ID: peek.Token, Note: note,
		Lock: func(ctx context.Context, r staff.Request) (string, error) { return "", lock(ctx, r) },
		Apply: func(ctx context.Context, r staff.Request) (map[string]any, error) {
			a := peek
			if it.Status != emi.SuspenseOpen {
				// Not reachable while ReturnSuspense refuses an item with a
				// pending request; kept as the resolved-once line.
				return nil, emi.ErrSuspenseResolved.WithDetail("item %s is %s", it.Token, it.Status)
			}
			target, err := s.assignTarget(a.Target)
			if err != nil {
				return nil, emi.Internal(fmt.Errorf("suspense assignment %s: stored target: %w", a.Token, err))
			}
			party, err := s.usableTarget(ctx, target, it.Currency)
			if err != nil {
				return nil, err
			}
			if party.Account != a.Account || party.Balance != a.Balance {
				return nil, emi.ErrTransferInvalidTransition.WithDetail("assignment %s: %s now names account %s balance %s, not %s %s",
					a.Token, a.Target, party.Account, party.Balance, a.Account, a.Balance)
			}
			t, err := s.creditParty(ctx, party, emi.Amount(it.Amount), it.Currency, it.Reference, it.Payer,
				emi.TxnSuspenseAssign, emi.LedgerSuspense)
			if err != nil {
				return nil, err
			}
			if err := s.store.ResolveSuspenseItem(ctx, it.Token, emi.SuspenseResolution{Status: emi.SuspenseAssigned,
				By: kernel.StaffOf(ctx).ActorID, Reason: r.Reason, Txn: t.Txn, Transfer: t.Token, AssignedAccount: party.Account,
				At: s.now.At(ctx).UTC()}); err != nil {
				return nil, err
			}
			if err := s.store.SetSuspenseAssignmentTransfer(ctx, a.Token, t.Token); err != nil {
				return nil, err
			}
			posted = &t
			return map[string]any{"assignment": a.Token, "requested_by": r.ProposedBy, "note": note, "amount": emi.FormatMinor(it.Amount),
				"currency": it.Currency, "account": party.Account, "transfer": t.Token}, nil
		},
	})
	if err != nil {
		return emi.SuspenseAssignment{}, nil, err
	}
	out, err := s.store.SuspenseAssignment(ctx, request, false)
	return out, posted, err
}

// targetText is how a request stores its target: the token or the IBAN.
func targetText(t emi.TransferParty) string {
	if t.IBAN != "" {
		return t.IBAN
	}
	return t.Balance
}

// ReturnSuspense sends an open suspense item back to its sender
// (emi.PermManageMoney): suspense -> incoming clearing
// (emi.TxnSuspenseReturn), with a required reason. Resolved once: the
// item's row is locked first (emi.ErrSuspenseResolved).
//
// An item with an assignment waiting for a second person is not returned
// (emi.ErrSuspenseAssignmentPending): a colleague has asked for the money
// to go to a customer and a second person may be approving it, so one
// person does not overrule that request by acting on the item. Whoever
// wants it returned rejects the request first, with a reason (one step,
// open to anyone with the permission, audited), then returns it.
func (s *Incoming) ReturnSuspense(ctx context.Context, token, reason string) error {
	if err := ManageMoney.Require(ctx); err != nil {
		return err
	}
	reason, err := kernel.StaffReason(reason)
	if err != nil {
		return err
	}
	me := kernel.StaffOf(ctx).ActorID
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		it, err := s.openItem(ctx, token)
		if err != nil {
			return err
		}
		if err := s.noPendingAssignment(ctx, it.Token); err != nil {
			return err
		}
		posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnSuspenseReturn, Reference: it.Reference,
			Entries: []emi.Entry{
				{Internal: emi.LedgerSuspense, Currency: it.Currency, Amount: -it.Amount},
				{Internal: emi.LedgerIncomingClearing, Currency: it.Currency, Amount: it.Amount},
			}})
		if err != nil {
			return err
		}
		if err := s.store.ResolveSuspenseItem(ctx, it.Token, emi.SuspenseResolution{Status: emi.SuspenseReturned, By: me,
			Reason: reason, Txn: posted.ID, At: s.now.At(ctx).UTC()}); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "suspense.return", ResourceType: "suspense_item", ResourceToken: it.Token,
			Changes: map[string]any{"reason": reason, "amount": emi.FormatMinor(it.Amount), "currency": it.Currency}})
	})
}

// openItem locks an item and refuses a resolved one.
func (s *Incoming) openItem(ctx context.Context, token string) (emi.SuspenseItem, error) {
	if !kernel.ValidToken(token) {
		return emi.SuspenseItem{}, emi.ErrSuspenseNotFound
	}
	it, err := s.store.SuspenseItem(ctx, token, true)
	if err != nil {
		return it, err
	}
	if it.Status != emi.SuspenseOpen {
		return it, emi.ErrSuspenseResolved.WithDetail("item %s is %s", it.Token, it.Status)
	}
	return it, nil
}

// assignTarget reads what an item is assigned to: a token (a balance or
// an account) or an IBAN.
func (s *Incoming) assignTarget(to string) (emi.TransferParty, error) {
	to = strings.TrimSpace(to)
	if t := strings.ToLower(to); kernel.ValidToken(t) {
		return emi.TransferParty{Balance: t, Account: t}, nil
	}
	i := iban.Normalize(to)
	if i == "" || iban.Validate(i) != nil {
		return emi.TransferParty{}, emi.ErrReviewValidation.Field("to", "give an IBAN, an account token or a balance token")
	}
	return emi.TransferParty{IBAN: i}, nil
}

// findTarget resolves an assignment target; a token is tried as a balance,
// then as an account.
func (s *Incoming) findTarget(ctx context.Context, t emi.TransferParty, currency string) (accounts.Party, bool, error) {
	if t.IBAN != "" {
		return s.transfers.FindParty(ctx, emi.TransferParty{IBAN: t.IBAN}, currency)
	}
	p, found, err := s.transfers.FindParty(ctx, emi.TransferParty{Balance: t.Balance}, currency)
	if err != nil || found {
		return p, found, err
	}
	return s.transfers.FindParty(ctx, emi.TransferParty{Account: t.Account}, currency)
}

// SuspenseAge is how long an item has been waiting, for the queue.
func SuspenseAge(it emi.SuspenseItem, now time.Time) time.Duration {
	end := now
	if it.ResolvedAt != nil {
		end = *it.ResolvedAt
	}
	return max(end.Sub(it.CreatedAt), 0)
}

// AssignmentCapabilities answers, for the pending assignment of each item
// of items (by assignment token), what the reader may do with it: the
// decision engine's answer (staff.Controls.RequestCapabilities), so a
// screen offers exactly what DecideSuspenseAssignment accepts.
func (s *Incoming) AssignmentCapabilities(ctx context.Context, items []emi.SuspenseItem) map[string]staff.RequestCapability {
	var rs []staff.Request
	for _, it := range items {
		if a := it.Pending; a != nil && a.Status == emi.AssignmentPending {
			rs = append(rs, staff.Request{ID: a.Token, Control: AssignmentFlow.Control, Status: staff.RequestPending, ProposedBy: a.RequestedBy})
		}
	}
	return s.controls.RequestCapabilitiesOf(ctx, rs, nil)
}
