package transfers

import (
	"context"
	"errors"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// ReversalFlow is the reversal of a completed internal transfer by staff:
// one person asks with a reason, a second, distinct one approves
// (staff.ControlTransferReversal). A transfer cannot change once completed,
// so the request binds to nothing else.
var ReversalFlow = staff.DeclareFlow(staff.Flow{
	Control:   staff.ControlTransferReversal,
	Asked:     "the reversal of this transfer",
	Proposed:  "transfer.reversal_requested",
	Approved:  "transfer.reverse",
	Rejected:  "transfer.reversal_rejected",
	Withdrawn: "transfer.reversal_withdrawn",
	// The code the back office knew before the lifecycle.
	Codes: staff.RequestCodes{Pending: emi.ErrTransferInvalidTransition, Closed: emi.ErrTransferInvalidTransition},
	Href:  func(r staff.Request) string { return "/backoffice/transfers/" + r.ResourceToken },
})

func reversalSubject(transfer string) string { return staff.SubjectOf("transfer", transfer) }

// RequestReversal asks for a completed internal transfer to be reversed
// (ReversalFlow), with a reason of 3 to 2,000 characters. Nothing moves
// until another staff member approves (ApproveReversal). Refused with 14007
// when the transfer is not a completed internal transfer or a request is
// already pending.
func (s *Transfers) RequestReversal(ctx context.Context, token, reason string) error {
	if err := staff.RequirePropose(ctx, ReversalFlow.Control); err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.store.Transfer(ctx, token, true)
		if err != nil {
			return err
		}
		if !Reversible(t) || t.Status != emi.TransferCompleted {
			return emi.ErrTransferInvalidTransition.WithDetail("transfer %s is %s %s", t.Token, t.Type, t.Status)
		}
		_, err = s.controls.ProposeRequest(ctx, ReversalFlow, staff.Proposal{Subject: reversalSubject(t.Token),
			ResourceType: "transfer", ResourceToken: t.Token, PartnerID: t.PartnerID, Reason: reason,
			Changes: map[string]any{"amount": emi.FormatMinor(t.Amount), "currency": t.Currency}})
		return err
	})
}

// Reversible reports whether staff may ever ask for t to be reversed: an
// internal transfer (money outside emi cannot be pulled back).
func Reversible(t emi.Transfer) bool { return t.Type == emi.TransferInternal }

// CanRequestReversal reports whether the staff member of ctx may ask for
// t's reversal now, by RequestReversal's rules: a completed reversible
// transfer, no request pending, and the decision table's proposer.
func CanRequestReversal(ctx context.Context, t emi.Transfer, pending bool) bool {
	return Reversible(t) && t.Status == emi.TransferCompleted && !pending && staff.ProposeOp(ReversalFlow.Control).Allowed(ctx)
}

// PendingReversal returns the pending reversal request of a transfer and
// what the reader may do with it (emi.PermViewMoney).
func (s *Transfers) PendingReversal(ctx context.Context, token string) (staff.Request, staff.RequestCapability, bool, error) {
	if err := ViewMoney.Require(ctx); err != nil {
		return staff.Request{}, staff.RequestCapability{}, false, err
	}
	if !kernel.ValidToken(token) {
		return staff.Request{}, staff.RequestCapability{}, false, nil
	}
	r, found, err := s.controls.PendingRequest(ctx, reversalSubject(token))
	if err != nil || !found {
		return staff.Request{}, staff.RequestCapability{}, false, err
	}
	return r, s.controls.RequestCapabilities(ctx, r), true, nil
}

// DecideReversal decides a pending reversal request. Approval must come
// from a person distinct from the requester (ReversalFlow; emi.ErrFourEyes);
// it posts a reversing ledger transaction (every entry negated) that moves
// the money back from the destination to the source, and the transfer
// becomes `returned` with the request's reason, sent to the partners as
// transfer.returned. Otherwise the request ends: withdrawn by its
// requester, rejected by anyone else who may approve. Both are audited.
//
// A transfer is reversed at most once: the transfer row is locked, the
// request must still be pending, its status is checked, and
// ledger_transactions.reverses is unique; of concurrent approvals exactly
// one succeeds and the others get 14007. An approval is refused with 14003
// when the destination no longer has the money (the customer spent it: a
// recovery case, not a reversal) and with 14004 when an account of either
// side is not active; the request then stays pending.
//
// seen, when given, is the request the person saw: a different one waiting
// now is refused, never decided unseen.
func (s *Transfers) DecideReversal(ctx context.Context, token string, approve bool, seen ...string) (emi.Transfer, error) {
	if !kernel.ValidToken(token) {
		return emi.Transfer{}, emi.ErrTransferNotFound
	}
	seenID := ""
	if len(seen) > 0 {
		seenID = seen[0]
	}
	var t emi.Transfer
	lock := func(ctx context.Context, _ staff.Request) error {
		var err error
		t, err = s.store.Transfer(ctx, token, true)
		return err
	}
	if !approve {
		_, err := s.controls.DeclineRequest(ctx, ReversalFlow, reversalSubject(token), staff.Decline{Lock: lock, ID: seenID})
		return t, err
	}
	var out emi.Transfer
	_, err := s.controls.ApproveRequest(ctx, ReversalFlow, reversalSubject(token), staff.Approval{ID: seenID,
		Lock: func(ctx context.Context, r staff.Request) (string, error) { return "", lock(ctx, r) },
		Apply: func(ctx context.Context, r staff.Request) (map[string]any, error) {
			var err error
			if out, err = s.reverse(ctx, t, r.Reason); err != nil {
				return nil, err
			}
			return map[string]any{"requested_by": r.ProposedBy, "amount": emi.FormatMinor(t.Amount), "currency": t.Currency}, nil
		},
	})
	return out, err
}

// reverse posts the reversal of t (locked by the caller) and marks it
// returned.
func (s *Transfers) reverse(ctx context.Context, t emi.Transfer, reason string) (emi.Transfer, error) {
	if t.Type != emi.TransferInternal || t.Status != emi.TransferCompleted {
		return emi.Transfer{}, emi.ErrTransferInvalidTransition.WithDetail("transfer %s is %s %s", t.Token, t.Type, t.Status)
	}
	src := accounts.Party{Account: t.SourceAccount, Balance: t.SourceBalance}
	dst := accounts.Party{Account: t.DestinationAccount, Balance: t.DestinationBalance}
	var err error
	if src.Main, err = s.mainOf(ctx, src); err != nil {
		return emi.Transfer{}, err
	}
	if dst.Main, err = s.mainOf(ctx, dst); err != nil {
		return emi.Transfer{}, err
	}
	if err := s.ledger.LockUsable(ctx, accounts.Side{Field: "source", Party: src}, accounts.Side{Field: "destination", Party: dst}); err != nil {
		return emi.Transfer{}, err
	}
	orig, err := s.ledger.Txn(ctx, t.Txn)
	if err != nil {
		return emi.Transfer{}, err
	}
	rev, err := s.ledger.Post(ctx, accounts.Reversal(orig, "", "reversal of transfer "+t.Token))
	if errors.Is(err, emi.ErrInsufficientFunds) {
		return emi.Transfer{}, emi.ErrInsufficientFunds.WithDetail("the destination no longer holds the amount")
	}
	if err != nil {
		return emi.Transfer{}, err
	}
	if err := s.store.SetTransferReturned(ctx, t.Token, rev.ID, reason); err != nil {
		return emi.Transfer{}, err
	}
	out, err := s.store.Transfer(ctx, t.Token, false)
	if err != nil {
		return emi.Transfer{}, err
	}
	return out, emitTransfer(ctx, s.events, out, emi.EventTransferReturned)
}

// mainOf returns the account holding a side's balance.
func (s *Transfers) mainOf(ctx context.Context, p accounts.Party) (string, error) {
	got, found, err := s.store.FindParty(ctx, emi.TransferParty{Balance: p.Balance}, "")
	if err != nil {
		return "", err
	}
	if !found {
		return "", emi.Internal(errors.New("transfer names a balance that does not exist"))
	}
	return got.Account, nil
}
