package transfers

import (
	"context"
	"errors"
	"slices"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// AdjustmentStore keeps manual adjustment requests.
type AdjustmentStore interface {
	InsertAdjustment(ctx context.Context, a emi.Adjustment) error
	// Adjustment returns a request; forUpdate locks its row. Returns
	// emi.ErrAdjustmentNotFound.
	Adjustment(ctx context.Context, token string, forUpdate bool) (emi.Adjustment, error)
	// Adjustments lists requests: pending ones oldest first (pending=true),
	// or the latest decided ones, newest first; account "" for every
	// account. At most limit.
	Adjustments(ctx context.Context, account string, pending bool, limit int) ([]emi.Adjustment, error)
	// SetAdjustmentTxn records the ledger transaction of an approval.
	SetAdjustmentTxn(ctx context.Context, token string, txn int64) error
	// CountPendingAdjustments counts pending requests.
	CountPendingAdjustments(ctx context.Context) (int64, error)
}

// Adjustments are manual corrections of balances under four-eyes
// (AdjustmentFlow): a staff member asks for a credit or a debit with a
// reason; a different staff member approves it (posted at once: ledger
// adjustments <-> customer, emi.TxnAdjustment) or rejects it; the requester
// may withdraw it. Every step is audited on the account.
//
// Adjustments apply to active and blocked accounts (a block stops the
// customer's payments, not the institution's corrections), never to a
// terminated one. A debit may not take the balance's available figure
// below zero, whatever the program's overdraft (14003), checked when it is
// requested and again, under the balance's lock, when it is approved.
type Adjustments struct {
	tx        kernel.TxRunner
	store     AdjustmentStore
	transfers TransferStore
	ledger    *accounts.Ledger
	controls  *staff.Controls
	audit     *kernel.Auditor
	now       kernel.Clock
}

// AdjustmentsDeps is what Adjustments needs; NewAdjustments checks that none is nil.
type AdjustmentsDeps struct {
	Tx        kernel.TxRunner
	Store     AdjustmentStore
	Transfers TransferStore
	Ledger    *accounts.Ledger
	Controls  *staff.Controls
	Audit     *kernel.Auditor
	Now       kernel.Clock
}

// NewAdjustments returns the manual adjustments service.
func NewAdjustments(d AdjustmentsDeps) *Adjustments {
	kernel.MustHave("Adjustments", d)
	return &Adjustments{tx: d.Tx, store: d.Store, transfers: d.Transfers, ledger: d.Ledger, controls: d.Controls, audit: d.Audit, now: d.Now}
}

// Request records a pending adjustment of an account's balance in
// in.Currency (a virtual account's: its main account's balance; the entry
// will show on the virtual account). Errors: emi.ErrReviewValidation for a
// bad direction, amount or reason (all at once); 13002 for an unknown
// account; 14005 when it has no balance in the currency; 14004 when it is
// terminated; 14003 for a debit over the available balance.
func (s *Adjustments) Request(ctx context.Context, in emi.AdjustmentRequest) (emi.Adjustment, error) {
	if err := staff.RequirePropose(ctx, AdjustmentFlow.Control); err != nil {
		return emi.Adjustment{}, err
	}
	in.Currency, in.Reason = strings.ToUpper(strings.TrimSpace(in.Currency)), strings.TrimSpace(in.Reason)
	var bad kernel.Problems
	if !slices.Contains([]string{emi.AdjustmentCredit, emi.AdjustmentDebit}, in.Direction) {
		bad.Add("direction", "must be credit or debit")
	}
	accounts.CheckAmount(&bad, in.Amount)
	if _, err := kernel.StaffReason(in.Reason); err != nil {
		bad.Add("reason", "give a reason (3 to 2,000 characters)")
	}
	if len(bad) > 0 {
		return emi.Adjustment{}, emi.ErrReviewValidation.WithFields(bad...)
	}
	if !kernel.ValidToken(in.Account) {
		return emi.Adjustment{}, emi.ErrAccountNotFound
	}
	var out emi.Adjustment
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		party, err := s.party(ctx, in.Account, in.Currency)
		if err != nil {
			return err
		}
		if err := s.check(ctx, party, in.Direction, in.Amount); err != nil {
			return err
		}
		token := kernel.NewToken()
		req, err := s.controls.ProposeRequest(ctx, AdjustmentFlow, staff.Proposal{ID: token, Subject: adjustmentSubject(token),
			ResourceType: "account", ResourceToken: party.Account, PartnerID: party.PartnerID, Reason: in.Reason,
			Changes: map[string]any{"adjustment": token, "direction": in.Direction, "amount": emi.FormatMinor(in.Amount), "currency": in.Currency}})
		if err != nil {
			return err
		}
		out = emi.Adjustment{Token: token, Account: party.Account, Balance: party.Balance, PartnerID: party.PartnerID,
			Direction: in.Direction, Amount: in.Amount, Currency: in.Currency, Reason: req.Reason, Status: emi.AdjustmentPending,
			RequestedBy: req.ProposedBy, RequestedAt: req.ProposedAt}
		return s.store.InsertAdjustment(ctx, out)
	})
	return out, err
}

// CanRequestAdjustment reports whether the staff member of ctx may ask
// for an adjustment of account a now, by Request's rules: the decision
// table's proposer, an account that is not terminated (14004) and has a
// balance to adjust (balances, 14005 otherwise).
func CanRequestAdjustment(ctx context.Context, a emi.Account, balances int) bool {
	return a.Status != emi.AccountTerminated && balances > 0 && staff.ProposeOp(AdjustmentFlow.Control).Allowed(ctx)
}

// AdjustmentFlow is a manual adjustment's two-person request
// (staff.ControlAdjustment). The request cannot be edited; a rejection
// gives a reason.
var AdjustmentFlow = staff.DeclareFlow(staff.Flow{
	Control:           staff.ControlAdjustment,
	Asked:             "this adjustment",
	Proposed:          "adjustment.requested",
	Approved:          "adjustment.approved",
	Rejected:          "adjustment.rejected",
	Withdrawn:         "adjustment.withdrawn",
	RejectNeedsReason: true,
	// The code the back office knew before the lifecycle.
	Codes: staff.RequestCodes{Closed: emi.ErrAdjustmentDecided},
	Href:  func(r staff.Request) string { return "/backoffice/accounts/" + r.ResourceToken },
})

func adjustmentSubject(token string) string { return staff.SubjectOf("adjustment", token) }

// party finds an account's balance in currency.
func (s *Adjustments) party(ctx context.Context, account, currency string) (accounts.Party, error) {
	party, found, err := s.transfers.FindParty(ctx, emi.TransferParty{Account: account}, currency)
	if err != nil {
		return accounts.Party{}, err
	}
	if !found {
		return accounts.Party{}, emi.ErrAccountNotFound
	}
	if party.Currency != currency {
		return accounts.Party{}, emi.ErrCurrencyMismatch.Field("currency", "the account has no "+currency+" balance")
	}
	return party, nil
}

// check locks the balance and refuses a terminated account (or main
// account; Ledger.LockStatus) and a debit over the available balance. A
// blocked account may be adjusted.
func (s *Adjustments) check(ctx context.Context, party accounts.Party, direction string, amount int64) error {
	bs, u, err := s.ledger.LockStatus(ctx, accounts.Side{Field: "account", Party: party})
	if err != nil {
		return err
	}
	if u != nil && u.Status == emi.AccountTerminated {
		return emi.ErrTransferAccountUnusable.Field("account", "is terminated")
	}
	if direction == emi.AdjustmentDebit && bs[party.Balance].Available < amount {
		return emi.ErrInsufficientFunds.Field("amount", "is more than the available balance ("+
			emi.FormatMinor(bs[party.Balance].Available)+" "+party.Currency+"): an adjustment never overdraws")
	}
	return nil
}

// Decide approves (approve=true) or ends a pending adjustment. Only a
// person distinct from the requester may approve it (AdjustmentFlow: not
// the requester, nor anyone linked to them through an administrator who
// set up either's access; emi.ErrFourEyes); the requester withdraws it and
// anyone else with the permission rejects it, both with a reason. An
// approval posts the adjustment at once; a debit that would now overdraw
// is refused (14003) and the request stays pending. A decided request
// answers emi.ErrAdjustmentDecided: its row is locked first, so two
// concurrent decisions give exactly one.
func (s *Adjustments) Decide(ctx context.Context, token string, approve bool, note string) (emi.Adjustment, error) {
	if err := staff.RequireApprove(ctx, AdjustmentFlow.Control); err != nil {
		return emi.Adjustment{}, err
	}
	note = strings.TrimSpace(note)
	if !approve {
		var err error
		if note, err = kernel.StaffReason(note); err != nil {
			return emi.Adjustment{}, err
		}
	} else if len(note) > 2000 {
		return emi.Adjustment{}, emi.ErrReviewValidation.Field("reason", "must be at most 2,000 characters")
	}
	if !kernel.ValidToken(token) {
		return emi.Adjustment{}, emi.ErrAdjustmentNotFound
	}
	var a emi.Adjustment
	lock := func(ctx context.Context, _ staff.Request) error {
		var err error
		a, err = s.store.Adjustment(ctx, token, true)
		return err
	}
	if _, err := s.store.Adjustment(ctx, token, false); err != nil {
		return emi.Adjustment{}, err
	}
	if !approve {
		if _, err := s.controls.DeclineRequest(ctx, AdjustmentFlow, adjustmentSubject(token), staff.Decline{Note: note, Lock: lock}); err != nil {
			return emi.Adjustment{}, err
		}
		return s.store.Adjustment(ctx, token, false)
	}
	_, err := s.controls.ApproveRequest(ctx, AdjustmentFlow, adjustmentSubject(token), staff.Approval{
		Lock: func(ctx context.Context, r staff.Request) (string, error) { return "", lock(ctx, r) },
		Apply: func(ctx context.Context, r staff.Request) (map[string]any, error) {
			party, err := s.party(ctx, a.Account, a.Currency)
			if err != nil {
				return nil, err
			}
			if party.Balance != a.Balance {
				return nil, emi.Internal(errors.New("adjustment: the account's balance changed"))
			}
			if err := s.check(ctx, party, a.Direction, a.Amount); err != nil {
				return nil, err
			}
			minor := a.Amount
			if a.Direction == emi.AdjustmentDebit {
				minor = -minor
			}
			posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnAdjustment, PartnerID: a.PartnerID,
				Reference: "manual adjustment", Entries: []emi.Entry{
					{Internal: emi.LedgerAdjustments, Currency: a.Currency, Amount: -minor},
					{Balance: a.Balance, Account: a.Account, Currency: a.Currency, Amount: minor},
				}})
			if err != nil {
				return nil, err
			}
			if err := s.store.SetAdjustmentTxn(ctx, a.Token, posted.ID); err != nil {
				return nil, err
			}
			return map[string]any{"adjustment": a.Token, "direction": a.Direction, "amount": emi.FormatMinor(a.Amount),
				"currency": a.Currency, "requested_by": r.ProposedBy, "note": note}, nil
		},
		Note: note,
	})
	if err != nil {
		return emi.Adjustment{}, err
	}
	return s.store.Adjustment(ctx, token, false)
}

// Pending lists pending adjustments, oldest first: of one account, or of
// every account for account "" (emi.PermViewMoney).
func (s *Adjustments) Pending(ctx context.Context, account string) ([]emi.Adjustment, error) {
	if err := ViewMoney.Require(ctx); err != nil {
		return nil, err
	}
	if account != "" && !kernel.ValidToken(account) {
		return nil, nil
	}
	return s.store.Adjustments(ctx, account, true, 200)
}

// Decided lists the latest decided adjustments, newest first
// (emi.PermViewMoney).
func (s *Adjustments) Decided(ctx context.Context) ([]emi.Adjustment, error) {
	if err := ViewMoney.Require(ctx); err != nil {
		return nil, err
	}
	return s.store.Adjustments(ctx, "", false, 50)
}

// CountPending counts pending adjustments (emi.PermViewMoney).
func (s *Adjustments) CountPending(ctx context.Context) (int64, error) {
	if err := ViewMoney.Require(ctx); err != nil {
		return 0, err
	}
	return s.store.CountPendingAdjustments(ctx)
}

// Capabilities answers, for each pending adjustment of list (by token),
// what the reader may do with it: the decision engine's answer
// (staff.Controls.RequestCapabilities), so a screen offers exactly what
// Decide accepts.
func (s *Adjustments) Capabilities(ctx context.Context, list []emi.Adjustment) map[string]staff.RequestCapability {
	rs := make([]staff.Request, 0, len(list))
	for _, a := range list {
		if a.Status == emi.AdjustmentPending {
			rs = append(rs, staff.Request{ID: a.Token, Control: AdjustmentFlow.Control, Status: staff.RequestPending, ProposedBy: a.RequestedBy})
		}
	}
	return s.controls.RequestCapabilitiesOf(ctx, rs, nil)
}
