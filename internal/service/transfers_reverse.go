package service

import (
	"context"
	"errors"

	"emi/internal/emi"
)

// Reverse undoes a completed internal transfer for customer service
// (emi.PermManageAccounts), with a mandatory reason: a reversing ledger
// transaction (every entry negated) moves the money back from the
// destination to the source, and the transfer becomes `returned` with the
// reason. The ledger keeps both transactions; nothing is edited.
//
// A transfer is reversed at most once: the transfer row is locked, its
// status checked, and ledger_transactions.reverses is unique, so of two
// concurrent reversals exactly one succeeds and the other gets 14007.
// Refused with 14003 when the destination no longer has the money (the
// customer spent it: that is a recovery case, not a reversal), and with
// 14004 when an account of either side is not active.
func (s *Transfers) Reverse(ctx context.Context, token, reason string) (emi.Transfer, error) {
	if err := require(ctx, emi.PermManageAccounts); err != nil {
		return emi.Transfer{}, err
	}
	reason, err := staffReason(reason)
	if err != nil {
		return emi.Transfer{}, err
	}
	var out emi.Transfer
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.store.Transfer(ctx, token, true)
		if err != nil {
			return err
		}
		if t.Type != emi.TransferInternal || t.Status != emi.TransferCompleted {
			return emi.ErrTransferInvalidTransition.WithDetail("transfer %s is %s %s", t.Token, t.Type, t.Status)
		}
		src := Party{Account: t.SourceAccount, Balance: t.SourceBalance}
		dst := Party{Account: t.DestinationAccount, Balance: t.DestinationBalance}
		if src.Main, err = s.mainOf(ctx, src); err != nil {
			return err
		}
		if dst.Main, err = s.mainOf(ctx, dst); err != nil {
			return err
		}
		if err := s.ledger.LockUsable(ctx, Side{"source", src}, Side{"destination", dst}); err != nil {
			return err
		}
		orig, err := s.ledger.Txn(ctx, t.Txn)
		if err != nil {
			return err
		}
		rev, err := s.ledger.Post(ctx, Reversal(orig, "", "reversal of transfer "+t.Token))
		if errors.Is(err, emi.ErrInsufficientFunds) {
			return emi.ErrInsufficientFunds.WithDetail("the destination no longer holds the amount")
		}
		if err != nil {
			return err
		}
		if err := s.store.SetTransferReturned(ctx, t.Token, rev.ID, reason); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.reverse", ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: t.PartnerID, Changes: map[string]any{"reason": reason, "amount": emi.FormatMinor(t.Amount), "currency": t.Currency}}); err != nil {
			return err
		}
		if out, err = s.store.Transfer(ctx, t.Token, false); err != nil {
			return err
		}
		return s.emitReturned(ctx, out)
	})
	return out, err
}

// mainOf returns the account holding a side's balance.
func (s *Transfers) mainOf(ctx context.Context, p Party) (string, error) {
	got, found, err := s.store.FindParty(ctx, emi.TransferParty{Balance: p.Balance}, "")
	if err != nil {
		return "", err
	}
	if !found {
		return "", emi.Internal(errors.New("transfer names a balance that does not exist"))
	}
	return got.Account, nil
}

// emitReturned tells the partners of both sides that the transfer was
// returned (reversed), each seeing its own side's tokens only.
func (s *Transfers) emitReturned(ctx context.Context, t emi.Transfer) error {
	seen := map[string]bool{}
	for _, partner := range []string{t.SourcePartner, t.DestinationPartner, t.PartnerID} {
		if partner == "" || seen[partner] {
			continue
		}
		seen[partner] = true
		v, err := PartnerView(t, partner)
		if err != nil {
			continue
		}
		f := map[string]any{"type": v.Type, "status": v.Status, "amount": emi.FormatMinor(v.Amount), "currency": v.Currency,
			"reference": v.Reference, "return_reason": v.ReturnReason}
		for k, val := range map[string]string{"source_account": v.SourceAccount, "source_balance": v.SourceBalance,
			"destination_account": v.DestinationAccount, "destination_balance": v.DestinationBalance} {
			if val != "" {
				f[k] = val
			}
		}
		if v.SourceAccount == "" && v.SourceIBAN != "" {
			f["source_iban"] = v.SourceIBAN
		}
		if v.DestinationAccount == "" && v.DestinationIBAN != "" {
			f["destination_iban"] = v.DestinationIBAN
		}
		if _, err := s.events.Emit(ctx, partner, emi.EventTransferReturned, "transfer", t.Token, f); err != nil {
			return err
		}
	}
	return nil
}
