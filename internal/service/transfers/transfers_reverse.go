package transfers

import (
	"context"
	"errors"
	"time"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// ReversalRequest is a pending request to reverse an internal transfer.
type ReversalRequest struct {
	Transfer    string    `db:"transfer"`
	RequestedBy string    `db:"requested_by"`
	Reason      string    `db:"reason"`
	RequestedAt time.Time `db:"requested_at"`
}

// RequestReversal asks for a completed internal transfer to be reversed
// (emi.PermManageMoney), with a reason of 3 to 2,000 characters. Nothing
// moves until another staff member approves (ApproveReversal). Refused with
// 14007 when the transfer is not a completed internal transfer or a
// request is already pending.
func (s *Transfers) RequestReversal(ctx context.Context, token, reason string) error {
	if err := kernel.Require(ctx, emi.PermManageMoney); err != nil {
		return err
	}
	reason, err := kernel.StaffReason(reason)
	if err != nil {
		return err
	}
	me := kernel.StaffOf(ctx).ActorID
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.store.Transfer(ctx, token, true)
		if err != nil {
			return err
		}
		if t.Type != emi.TransferInternal || t.Status != emi.TransferCompleted {
			return emi.ErrTransferInvalidTransition.WithDetail("transfer %s is %s %s", t.Token, t.Type, t.Status)
		}
		err = s.store.InsertReversalRequest(ctx, ReversalRequest{Transfer: t.Token, RequestedBy: me, Reason: reason, RequestedAt: s.now().UTC()})
		if errors.Is(err, emi.ErrNonUniqueValue) {
			return emi.ErrTransferInvalidTransition.WithDetail("a reversal of %s is already requested", t.Token)
		}
		if err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.reversal_requested", ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: t.PartnerID, Changes: map[string]any{"reason": reason, "amount": emi.FormatMinor(t.Amount), "currency": t.Currency}})
	})
}

// PendingReversal returns the pending reversal request of a transfer
// (emi.PermViewMoney).
func (s *Transfers) PendingReversal(ctx context.Context, token string) (ReversalRequest, bool, error) {
	if err := kernel.Require(ctx, emi.PermViewMoney); err != nil {
		return ReversalRequest{}, false, err
	}
	return s.store.ReversalRequest(ctx, token)
}

// DecideReversal decides a pending reversal request (emi.PermManageMoney).
// Approval must come from a person distinct from the requester (Controls;
// emi.ErrFourEyes); it posts a reversing ledger transaction (every entry
// negated) that moves the money back from the destination to the source,
// and the transfer becomes `returned` with the request's reason, sent to
// the partners as transfer.returned. Reject withdraws the request (the
// requester may withdraw their own). Both are audited.
//
// A transfer is reversed at most once: the transfer row is locked, the
// request must still be pending, its status is checked, and
// ledger_transactions.reverses is unique; of concurrent approvals exactly
// one succeeds and the others get 14007. An approval is refused with 14003
// when the destination no longer has the money (the customer spent it: a
// recovery case, not a reversal) and with 14004 when an account of either
// side is not active; the request then stays pending.
func (s *Transfers) DecideReversal(ctx context.Context, token string, approve bool) (emi.Transfer, error) {
	if err := kernel.Require(ctx, emi.PermManageMoney); err != nil {
		return emi.Transfer{}, err
	}
	var out emi.Transfer
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.store.Transfer(ctx, token, true)
		if err != nil {
			return err
		}
		req, found, err := s.store.ReversalRequest(ctx, t.Token)
		if err != nil {
			return err
		}
		if !found {
			return emi.ErrTransferInvalidTransition.WithDetail("no reversal of %s is pending", t.Token)
		}
		if !approve {
			if err := s.store.DeleteReversalRequest(ctx, t.Token); err != nil {
				return err
			}
			out = t
			return s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.reversal_rejected", ResourceType: "transfer", ResourceToken: t.Token,
				PartnerID: t.PartnerID, Changes: map[string]any{"requested_by": req.RequestedBy, "reason": req.Reason}})
		}
		if err := s.controls.Approve(ctx, staff.ControlTransferReversal, req.RequestedBy); err != nil {
			return err
		}
		if out, err = s.reverse(ctx, t, req.Reason); err != nil {
			return err
		}
		if err := s.store.DeleteReversalRequest(ctx, t.Token); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.reverse", ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: t.PartnerID, Changes: map[string]any{"reason": req.Reason, "requested_by": req.RequestedBy,
				"amount": emi.FormatMinor(t.Amount), "currency": t.Currency}})
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
