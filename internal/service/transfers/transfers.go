package transfers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/staff"
)

// TransferStore keeps transfers and finds the balances they name.
type TransferStore interface {
	// FindParty finds the balance a party names: by balance token, by
	// account token (its balance in currency; a virtual account's main
	// balance), by IBAN (a virtual IBAN routes to its main balance) or by
	// UK account number and sort code. found is false when nothing
	// matches; a match in another currency is returned as it is.
	FindParty(ctx context.Context, p emi.TransferParty, currency string) (party accounts.Party, found bool, err error)
	InsertTransfer(ctx context.Context, t emi.Transfer) error
	// HolderOnHold reports whether the user or onboarded merchant who
	// holds account (or the main account behind a virtual one) has a
	// screening check waiting for a compliance decision or confirmed a
	// true match (as UserScreening and MerchantScreening count them).
	HolderOnHold(ctx context.Context, account string) (bool, error)
	// Transfer returns a transfer with the IBANs and partners of its sides;
	// forUpdate locks it. Returns emi.ErrTransferNotFound.
	Transfer(ctx context.Context, token string, forUpdate bool) (emi.Transfer, error)
	// ListTransfers returns up to q.Limit+1 of the partner's transfers
	// (made by it, or either side an account of its), newest first (by
	// creation time, then token), after q.StartingAfter when set; a
	// q.Account that is not the partner's is emi.ErrTransferValidation.
	ListTransfers(ctx context.Context, partnerID string, q emi.TransferList) ([]emi.Transfer, error)
	// SetTransferReturned marks a transfer returned by the ledger
	// transaction returnTxn. Returns emi.ErrTransferInvalidTransition when
	// it is already returned (its return_txn is set once).
	SetTransferReturned(ctx context.Context, token string, returnTxn int64, reason string) error
	SetTransferStatus(ctx context.Context, token, status string) error
	// SetTransferReleased marks a held transfer released by the ledger
	// transaction releaseTxn, in status (completed or pending). Returns
	// emi.ErrTransferInvalidTransition when it is not held.
	SetTransferReleased(ctx context.Context, token string, releaseTxn int64, status string) error
	// TxnEntries returns the journal entries of the ledger transactions
	// ids, in posting order.
	TxnEntries(ctx context.Context, ids []int64) ([]emi.LedgerEntryView, error)
}

// Transfers moves money between balances held in emi (transfer_create) and
// reads transfers (transfer_details).
type Transfers struct {
	tx       kernel.TxRunner
	store    TransferStore
	ledger   *accounts.Ledger
	controls *staff.Controls
	events   *kernel.Events
	audit    *kernel.Auditor
	validate interface {
		Struct(any, *emi.Error) error
	}
	now kernel.Clock
	// own is emi's identifiers (outgoing payments to them are refused);
	// sandbox enables the settlement actions (transfers_outgoing.go).
	own     OwnBank
	sandbox bool
	// limits counts destination misses per API key (14006).
	limits kernel.RateLimiter
	// suspense keeps the suspense items of returned payments whose
	// account is terminated (TransfersDeps.Suspense).
	suspense IncomingStore
	// monitor records every transfer for transaction monitoring.
	monitor *monitoring.Monitor
}

// TransfersDeps is what the transfers service needs.
type TransfersDeps struct {
	Tx       kernel.TxRunner
	Store    TransferStore
	Ledger   *accounts.Ledger
	Controls *staff.Controls
	Events   *kernel.Events
	Audit    *kernel.Auditor
	Validate kernel.StructValidator
	// Limits counts destination misses per API key (14006).
	Limits kernel.RateLimiter
	// Own is emi's identifiers: outgoing payments to them are refused.
	Own OwnBank
	// Sandbox enables the settlement actions; in production they answer
	// emi.ErrRouteNotFound, as the API's sandbox-only routes do.
	Sandbox bool
	// Suspense keeps the suspense items of returned payments whose
	// account is terminated (the incoming store).
	Suspense IncomingStore
	// Monitor records every transfer for transaction monitoring.
	Monitor *monitoring.Monitor
	Now     kernel.Clock
}

// NewTransfers returns the transfers service.
func NewTransfers(d TransfersDeps) *Transfers {
	kernel.MustHave("Transfers", d)
	return &Transfers{tx: d.Tx, store: d.Store, ledger: d.Ledger, controls: d.Controls, events: d.Events, audit: d.Audit,
		validate: d.Validate, limits: d.Limits, now: d.Now, own: d.Own, sandbox: d.Sandbox, suspense: d.Suspense, monitor: d.Monitor}
}

// Create sends money from a balance of the calling partner to any balance
// held in emi (transfer_create): one of the partner's own, named by token,
// IBAN or UK account number with sort code, or another partner's
// customer's, named by IBAN or account number with sort code only (a
// token of another partner is 14006, exactly as an unknown one: S4).
// Same currency only; a virtual account sends and receives on its main
// account's balance. Both accounts (and a virtual side's main account)
// must be active.
//
// Errors: 14001 for malformed input (every problem at once), 14002 when the
// source is not one of the partner's balances; then, about the source,
// 14005 (no balance in the currency), 14004 (blocked or terminated) and
// 14003 (funds short); about a destination of the partner's own, 14005,
// 14008 (the source's own balance) and 14004; and for any other destination
// one answer whatever its state, 14006 (so another partner's accounts
// cannot be probed), counted per API key (10029 beyond
// DestinationMissLimit). Nothing changes on any error.
func (s *Transfers) Create(ctx context.Context, in emi.TransferCreate) (emi.Transfer, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return emi.Transfer{}, err
	}
	in.Currency, in.Reference = strings.TrimSpace(in.Currency), strings.TrimSpace(in.Reference)
	var bad kernel.Problems
	if err := bad.AddErr("", s.validate.Struct(in, emi.ErrTransferValidation)); err != nil {
		return emi.Transfer{}, err
	}
	accounts.CheckAmount(&bad, int64(in.Amount))
	if in.Currency != "" && !emi.ValidCurrency(in.Currency) {
		bad.Add("currency", "must be EUR, BGN or GBP")
	}
	checkReference(&bad, in.Reference)
	checkParty(&bad, "source", in.Source)
	checkParty(&bad, "destination", in.Destination)
	if len(bad) > 0 {
		return emi.Transfer{}, emi.ErrTransferValidation.WithFields(bad...)
	}
	amount := int64(in.Amount)
	byIdentifier := !namedByToken(in.Destination)
	if byIdentifier {
		// A key whose destination misses are over the limit gets no
		// answer about any IBAN or account number until the window
		// moves: after the limit, a success would tell as much as 14006.
		if err := s.missBudget(ctx, p); err != nil {
			return emi.Transfer{}, err
		}
	}
	var out emi.Transfer
	var verdict monitoring.Verdict
	miss := false
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		miss, verdict = false, monitoring.Verdict{}
		src, found, err := s.store.FindParty(ctx, in.Source, in.Currency)
		if err != nil {
			return err
		}
		if !found || src.PartnerID != p.PartnerID {
			return emi.ErrTransferNotFound.Field("source", "is not a balance or account of yours")
		}
		if src.Currency != in.Currency {
			return emi.ErrCurrencyMismatch.Field("source", "has no "+in.Currency+" balance")
		}
		dst, found, err := s.store.FindParty(ctx, in.Destination, in.Currency)
		if err != nil {
			return err
		}
		// Tokens are the partner's own handles (contract §2: another
		// partner's token is reported exactly as one that does not exist);
		// another partner's customer is paid by its public payment
		// identifier, the IBAN or UK account number with sort code.
		own := found && dst.PartnerID == p.PartnerID
		if !own && !byIdentifier {
			miss = true
			return errDestinationMiss
		}
		if own {
			if dst.Currency != in.Currency {
				return emi.ErrCurrencyMismatch.Field("destination", "has no "+in.Currency+" balance")
			}
			if src.Balance == dst.Balance {
				if src.Account == dst.Account {
					return emi.ErrTransferValidation.Field("destination", "is the source itself")
				}
				// A main account and its virtual account share one balance:
				// nothing would move, and booking it would skip the funds
				// check.
				return emi.ErrSameBalance.Field("destination", "is held on the source's balance (a main account and its virtual account)")
			}
		}
		// Everything about the source is answered before anything about a
		// destination that is not the partner's own, and every problem of
		// such a destination (unknown, another currency, blocked,
		// terminated, a blocked main account) is one answer, 14006: the
		// answers about another partner's account never differ by its
		// state.
		sides := []accounts.Side{{Field: "source", Party: src}}
		if found && dst.Currency == in.Currency {
			sides = append(sides, accounts.Side{Field: "destination", Party: dst})
		}
		locked, unusable, err := s.ledger.LockStatus(ctx, sides...)
		if err != nil {
			return err
		}
		if unusable != nil && unusable.Field == "source" {
			what := "account"
			if unusable.Main {
				what = "main account"
			}
			return emi.ErrTransferAccountUnusable.Field("source", what+" is "+unusable.Status)
		}
		if err := s.complianceHold(ctx, src); err != nil {
			return err
		}
		if b, ok := locked[src.Balance]; ok && !b.Overdraft && b.Available < amount {
			return emi.ErrInsufficientFunds.Field("amount", "is more than the source's available balance")
		}
		if !own && (!found || dst.Currency != in.Currency || unusable != nil) {
			miss = true
			return errDestinationMiss
		}
		if unusable != nil {
			what := "account"
			if unusable.Main {
				what = "main account"
			}
			return emi.ErrTransferAccountUnusable.Field(unusable.Field, what+" is "+unusable.Status)
		}
		now := s.now.At(ctx).UTC()
		t := emi.Transfer{Token: kernel.NewToken(), PartnerID: p.PartnerID, Type: emi.TransferInternal, Status: emi.TransferCompleted,
			SourceAccount: src.Account, SourceBalance: src.Balance, DestinationAccount: dst.Account, DestinationBalance: dst.Balance,
			Amount: amount, Currency: in.Currency, Reference: in.Reference, CreatedAt: now, UpdatedAt: now,
			SourceIBAN: src.IBAN, DestinationIBAN: dst.IBAN, SourcePartner: src.PartnerID, DestinationPartner: dst.PartnerID}
		if verdict, err = s.screenInternal(ctx, t); err != nil {
			return err
		}
		if verdict.Outcome == monitoring.OutcomeDecline {
			return errDeclined
		}
		held := verdict.Outcome == monitoring.OutcomeHold
		kind, credit := emi.TxnTransfer, emi.Entry{Balance: dst.Balance, Account: dst.Account, Currency: in.Currency, Amount: amount}
		if held {
			kind, credit = emi.TxnReviewHold, emi.Entry{Internal: emi.LedgerReviewHold, Currency: in.Currency, Amount: amount}
			t.Status = emi.TransferHeldForReview
		}
		posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: kind, PartnerID: p.PartnerID, Reference: in.Reference,
			Entries: []emi.Entry{{Balance: src.Balance, Account: src.Account, Currency: in.Currency, Amount: -amount}, credit}})
		if errors.Is(err, emi.ErrInsufficientFunds) {
			return emi.ErrInsufficientFunds.Field("amount", "is more than the source's available balance")
		}
		if err != nil {
			return err
		}
		t.Txn = posted.ID
		if err := s.store.InsertTransfer(ctx, t); err != nil {
			return err
		}
		event := emi.EventTransferCompleted
		if held {
			event = emi.EventTransferHeldForReview
			if err := s.monitor.Held(ctx, verdict, t.Token); err != nil {
				return err
			}
		} else if !verdict.Received { // else recorded with the paying side
			if err := s.monitorReceived(ctx, t, verdict.Movement != 0); err != nil {
				return err
			}
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.create", ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: p.PartnerID, Changes: map[string]any{"amount": emi.FormatMinor(amount), "currency": in.Currency,
				"source_account": src.Account, "destination_account": dst.Account, "status": t.Status}}); err != nil {
			return err
		}
		if err := emitTransfer(ctx, s.events, t, event); err != nil {
			return err
		}
		out, err = PartnerView(t, p.PartnerID)
		return err
	})
	if miss {
		return emi.Transfer{}, s.destinationMiss(ctx, p)
	}
	if errors.Is(err, errDeclined) {
		return emi.Transfer{}, s.declined(ctx, verdict)
	}
	return out, err
}

// errDeclined ends a booking's transaction when transaction monitoring
// declined it; the caller answers declined.
var errDeclined = errors.New("declined by transaction monitoring")

// declined records a declined transfer's attempt for monitoring (its
// booking was rolled back) and answers emi.ErrTransferDeclined, which
// gives no reason.
func (s *Transfers) declined(ctx context.Context, v monitoring.Verdict) error {
	if err := s.monitor.RecordDeclined(ctx, v); err != nil {
		return err
	}
	return emi.ErrTransferDeclined
}

// errDestinationMiss ends Create's transaction when the destination is
// not one the partner may pay; Create answers it with destinationMiss.
var errDestinationMiss = errors.New("destination miss")

// Destination misses (14006) are limited per API key: each one tells a
// partner that an identifier is not a usable account of the currency, so an
// unlimited stream of them walks other partners' customers.
// DestinationMissLimit per DestinationMissWindow; beyond it 429 / 10029,
// and while a key is over the limit every transfer to an IBAN or account
// number answers 429 before anything is looked up.
const (
	DestinationMissLimit  = 20
	DestinationMissWindow = time.Hour
	destinationMissScope  = "transfer.destination_miss"
)

// missBudget refuses (429) a key that has used its destination misses.
func (s *Transfers) missBudget(ctx context.Context, p emi.Principal) error {
	if s.limits == nil {
		return nil
	}
	over, retry, err := s.limits.Over(ctx, destinationMissScope, p.ActorID, DestinationMissLimit, DestinationMissWindow, s.now.At(ctx).UTC())
	if err != nil {
		return err
	}
	if over {
		return emi.ErrRateLimited.WithDetail("%d destination misses in %s", DestinationMissLimit, DestinationMissWindow).Wrap(kernel.RetryAfter(retry))
	}
	return nil
}

// destinationMiss counts a miss against the key and answers 14006, or
// 429 / 10029 when the key has no misses left (counted atomically, so a
// burst gets at most DestinationMissLimit answers of 14006).
func (s *Transfers) destinationMiss(ctx context.Context, p emi.Principal) error {
	notFound := emi.ErrDestinationNotFound.Field("destination", "matches no balance held in emi that can receive this currency")
	if s.limits == nil {
		return notFound
	}
	ok, retry, err := s.limits.Take(ctx, destinationMissScope, p.ActorID, DestinationMissLimit, DestinationMissWindow, s.now.At(ctx).UTC())
	if err != nil {
		return err
	}
	if !ok {
		return emi.ErrRateLimited.WithDetail("%d destination misses in %s", DestinationMissLimit, DestinationMissWindow).Wrap(kernel.RetryAfter(retry))
	}
	return notFound
}

// Details returns a transfer the calling partner sent or received
// (transfer_details). A partner sees the other partner's side by IBAN only.
func (s *Transfers) Details(ctx context.Context, token string) (emi.Transfer, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrTransferNotFound)
	if err != nil {
		return emi.Transfer{}, err
	}
	t, err := s.store.Transfer(ctx, token, false)
	if err != nil {
		return emi.Transfer{}, err
	}
	return PartnerView(t, p.PartnerID)
}

// ListDefault and ListMax bound transfers_list's page.
const (
	ListDefault = 20
	ListMax     = 100
)

// List returns a page of the calling partner's transfers (transfers_list),
// newest first, each as PartnerView shows it. A cursor (StartingAfter) is
// a transfer the partner sees; the next page starts after it, whatever was
// created since, so paging never repeats or skips a transfer.
func (s *Transfers) List(ctx context.Context, q emi.TransferList) (emi.TransferPage, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrTransferNotFound)
	if err != nil {
		return emi.TransferPage{}, err
	}
	var bad kernel.Problems
	if q.Limit < 1 || q.Limit > ListMax {
		bad.Add("limit", fmt.Sprintf("must be a whole number from 1 to %d", ListMax))
	}
	if q.Status != "" && !slices.Contains(emi.TransferStatuses, q.Status) {
		bad.Add("status", "must be one of "+strings.Join(emi.TransferStatuses, ", "))
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		bad.Add("to", "must be after from")
	}
	if q.Account != "" && !kernel.ValidToken(q.Account) {
		bad.Add("account", "is not one of your accounts")
	}
	if q.StartingAfter != "" {
		t, err := s.store.Transfer(ctx, q.StartingAfter, false)
		if err == nil {
			_, err = PartnerView(t, p.PartnerID)
		}
		switch {
		case errors.Is(err, emi.ErrTransferNotFound):
			bad.Add("starting_after", "is not one of your transfers")
		case err != nil:
			return emi.TransferPage{}, err
		}
	}
	if len(bad) > 0 {
		return emi.TransferPage{}, emi.ErrTransferValidation.WithFields(bad...)
	}
	rows, err := s.store.ListTransfers(ctx, p.PartnerID, q)
	if err != nil {
		return emi.TransferPage{}, err
	}
	page := emi.TransferPage{Limit: q.Limit, HasMore: len(rows) > q.Limit, Items: make([]emi.Transfer, 0, min(len(rows), q.Limit))}
	for _, t := range rows[:min(len(rows), q.Limit)] {
		v, err := PartnerView(t, p.PartnerID)
		if err != nil {
			return emi.TransferPage{}, err
		}
		page.Items = append(page.Items, v)
	}
	return page, nil
}

// PartnerView is t as partnerID may see it: emi.ErrTransferNotFound when
// neither side is the partner's; the other side's account and balance
// tokens blanked when it belongs to another partner.
func PartnerView(t emi.Transfer, partnerID string) (emi.Transfer, error) {
	mine := t.PartnerID == partnerID || t.SourcePartner == partnerID || t.DestinationPartner == partnerID
	if !mine {
		return emi.Transfer{}, emi.ErrTransferNotFound
	}
	if t.SourcePartner != partnerID && t.PartnerID != partnerID {
		t.SourceAccount, t.SourceBalance = "", ""
	}
	if t.DestinationPartner != partnerID {
		t.DestinationAccount, t.DestinationBalance = "", ""
	}
	return t, nil
}

// checkReference allows printable text only (it reaches statements, other
// banks and CSV exports).
func checkReference(bad *kernel.Problems, ref string) { checkPrintable(bad, "reference", ref) }

// checkPrintable is kernel.Problems.CheckPrintable.
func checkPrintable(bad *kernel.Problems, field, s string) { bad.CheckPrintable(field, s) }

// checkParty requires exactly one way of naming a side.
// namedByToken reports whether a party is named by an account or balance
// token rather than by a payment identifier.
func namedByToken(p emi.TransferParty) bool {
	return strings.TrimSpace(p.Account) != "" || strings.TrimSpace(p.Balance) != ""
}

func checkParty(bad *kernel.Problems, field string, p emi.TransferParty) {
	n := 0
	for _, v := range []string{p.Account, p.Balance, p.IBAN} {
		if strings.TrimSpace(v) != "" {
			n++
		}
	}
	if p.AccountNumber != "" || p.SortCode != "" {
		n++
		if p.AccountNumber == "" || p.SortCode == "" {
			bad.Add(field, "account_number and sort_code go together")
			return
		}
	}
	switch {
	case n == 0:
		bad.Add(field, "give one of balance, account, iban, or account_number with sort_code")
	case n > 1:
		bad.Add(field, "give only one of balance, account, iban, or account_number with sort_code")
	}
}

// complianceHold refuses money leaving src while its holder has a screening
// hit that compliance has not decided, or confirmed (a hit on an active
// customer, raised by a list or watch-list change or a change of identity,
// blocks outgoing transfers until it is decided). Called after LockUsable,
// which locks the account row: a decision that clears the hit meanwhile is
// seen by the next request.
func (s *Transfers) complianceHold(ctx context.Context, src accounts.Party) error {
	held, err := s.store.HolderOnHold(ctx, src.Account)
	if err != nil {
		return err
	}
	if held {
		return emi.ErrTransferComplianceHold.Field("source", "its holder is under compliance review; no money leaves the account until it ends")
	}
	return nil
}

// screenInternal records an internal transfer's paying side for
// transaction monitoring (outgoing for the source's owner, the
// destination as counterparty) and runs the rules that stop money on it;
// the receiving side is recorded with it unless the verdict stops the
// money (Verdict.Received).
func (s *Transfers) screenInternal(ctx context.Context, t emi.Transfer) (monitoring.Verdict, error) {
	dstKey, dstCountry := monitoring.CounterpartyOf(emi.Counterparty{IBAN: t.DestinationIBAN, Name: t.DestinationAccount})
	return s.monitor.Screen(ctx, monitoring.Movement{PartnerID: t.SourcePartner, Account: t.SourceAccount,
		Kind: monitoring.KindTransferInternal, Direction: monitoring.Out, Amount: t.Amount, Currency: t.Currency,
		CounterpartyKey: dstKey, CounterpartyCountry: dstCountry, Source: t.Token}, receivedSide(t))
}

// receivedSide is an internal transfer's receiving side for transaction
// monitoring: incoming for the destination's owner (under its own
// partner), the source as counterparty.
func receivedSide(t emi.Transfer) monitoring.Movement {
	srcKey, srcCountry := monitoring.CounterpartyOf(emi.Counterparty{IBAN: t.SourceIBAN, Name: t.SourceAccount})
	return monitoring.Movement{PartnerID: t.DestinationPartner, Account: t.DestinationAccount,
		Kind: monitoring.KindTransferInternal, Direction: monitoring.In, Amount: t.Amount, Currency: t.Currency,
		CounterpartyKey: srcKey, CounterpartyCountry: srcCountry, Source: t.Token}
}

// monitorReceived records an internal transfer's receiving side when the
// money reaches it and the screening did not (a released hold). queued:
// the transaction queued the evaluation already (the paying side's Screen
// recorded a movement), which one job evaluates with this one.
func (s *Transfers) monitorReceived(ctx context.Context, t emi.Transfer, queued bool) error {
	mv := receivedSide(t)
	if queued {
		return s.monitor.RecordUnqueued(ctx, mv)
	}
	return s.monitor.Record(ctx, mv)
}
