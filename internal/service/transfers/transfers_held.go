package transfers

import (
	"context"
	"slices"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/staff"
)

// Transfers held for review. Transaction monitoring holds a transfer
// before its money reaches the destination (monitoring.Screen): the money
// leaves the source for the institution's review_hold account and the
// transfer waits in status held_for_review. Compliance decides, from the
// alert or the case:
//
//   - release: the money moves on (review_hold -> the destination's
//     balance for an internal transfer, which completes; -> outgoing
//     clearing for a payment to another bank, which becomes pending as
//     any payment sent);
//   - return: the money goes back to the source (to suspense when the
//     source's account was terminated meanwhile), the transfer is
//     returned.
//
// One compliance officer decides (staff.ControlHeldTransfer), never the
// transfer's initiator nor anyone the decision engine links to them. In
// the sandbox the partner stands in for compliance (SandboxDecideHeld), as
// it does for AML reviews: it has nobody else to decide.

// HeldReturnReason is the return reason a partner reads on a held
// transfer that was returned: the same words whatever compliance found,
// so that it tells nobody what the review was about.
const HeldReturnReason = "returned after review"

// Held transfer decisions.
const (
	HeldRelease = "release"
	HeldReturn  = "return"
)

// DecideHeld releases or returns a held transfer (staff: aml.review, the
// decision engine's check that the decider is not the initiator). note
// is compliance's reason, kept with the hold and never shown to the
// partner.
func (s *Transfers) DecideHeld(ctx context.Context, token, decision, note string) (emi.Transfer, error) {
	if err := staff.RequirePropose(ctx, staff.ControlHeldTransfer); err != nil {
		return emi.Transfer{}, err
	}
	note = strings.TrimSpace(note)
	if len(note) < 3 || len(note) > 500 {
		return emi.Transfer{}, emi.ErrReviewValidation.Field("reason", "give a reason (3 to 500 characters)")
	}
	return s.decideHeld(ctx, token, "", decision, note)
}

// SandboxDecideHeld is the sandbox's stand-in for compliance: the partner
// releases or returns its own held transfer (sandbox only; production
// answers emi.ErrRouteNotFound).
func (s *Transfers) SandboxDecideHeld(ctx context.Context, token, decision string) (emi.Transfer, error) {
	if !s.sandbox {
		return emi.Transfer{}, emi.ErrRouteNotFound
	}
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return emi.Transfer{}, err
	}
	return s.decideHeld(ctx, token, p.PartnerID, decision, "sandbox: decided by the partner")
}

// decideHeld decides under the transfer's lock; partnerID "" is staff.
func (s *Transfers) decideHeld(ctx context.Context, token, partnerID, decision, note string) (emi.Transfer, error) {
	if decision != HeldRelease && decision != HeldReturn {
		return emi.Transfer{}, emi.ErrTransferValidation.Field("decision", "must be release or return")
	}
	var out emi.Transfer
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		t, err := s.store.Transfer(ctx, token, true)
		if err != nil {
			return err
		}
		if partnerID != "" && t.PartnerID != partnerID {
			return emi.ErrTransferNotFound
		}
		if !t.Held() {
			return emi.ErrTransferInvalidTransition.WithDetail("the transfer is %s, not held for review", t.Status).
				WithPublic("The transfer is %s: only a transfer held for review is released or returned.", t.Status)
		}
		h, found, err := s.monitor.LockHold(ctx, t.Token)
		if err != nil {
			return err
		}
		if !found {
			return emi.Internal(errInconsistentHold)
		}
		if partnerID == "" {
			initiators, err := s.initiators(ctx, h)
			if err != nil {
				return err
			}
			if err := s.controls.Approve(ctx, staff.ControlHeldTransfer, initiators...); err != nil {
				return err
			}
		}
		var event emi.EventType
		status := monitoring.HoldReleased
		if decision == HeldRelease {
			if event, err = s.releaseHeld(ctx, t); err != nil {
				return err
			}
		} else {
			status = monitoring.HoldReturned
			if err := s.returnHeld(ctx, t, partnerID); err != nil {
				return err
			}
			event = emi.EventTransferReturned
		}
		if err := s.monitor.DecideHold(ctx, h, status, note); err != nil {
			return err
		}
		if out, err = s.store.Transfer(ctx, t.Token, false); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "transfer.held_" + decision, ResourceType: "transfer", ResourceToken: t.Token,
			PartnerID: t.PartnerID, Changes: map[string]any{"from": t.Status, "to": out.Status, "alert": h.Alert, "reason": note}}); err != nil {
			return err
		}
		if event == "" {
			return nil
		}
		return emitTransfer(ctx, s.events, out, event)
	})
	if err != nil {
		return emi.Transfer{}, err
	}
	if partnerID != "" {
		return PartnerView(out, partnerID)
	}
	return out, nil
}

// releaseHeld moves a held transfer's money on and returns the event to
// send ("" none: a payment to another bank becomes pending, as one sent;
// transfer.completed or transfer.returned follows).
func (s *Transfers) releaseHeld(ctx context.Context, t emi.Transfer) (emi.EventType, error) {
	debit := emi.Entry{Internal: emi.LedgerReviewHold, Currency: t.Currency, Amount: -t.Amount}
	if t.Type == emi.TransferOutgoing {
		posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnReviewRelease, PartnerID: t.PartnerID, Reference: t.Reference,
			Entries: []emi.Entry{debit, {Internal: emi.LedgerOutgoingClearing, Currency: t.Currency, Amount: t.Amount}}})
		if err != nil {
			return "", err
		}
		return "", s.store.SetTransferReleased(ctx, t.Token, posted.ID, emi.TransferPending)
	}
	dst, found, err := s.store.FindParty(ctx, emi.TransferParty{Account: t.DestinationAccount}, t.Currency)
	if err != nil {
		return "", err
	}
	if !found || dst.Balance != t.DestinationBalance {
		return "", emi.ErrTransferAccountUnusable.Field("destination", "no longer holds the transfer's balance: return the transfer")
	}
	if err := s.ledger.LockUsable(ctx, accounts.Side{Field: "destination", Party: dst}); err != nil {
		return "", err
	}
	posted, err := s.ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnReviewRelease, PartnerID: t.PartnerID, Reference: t.Reference,
		Entries: []emi.Entry{debit, {Balance: dst.Balance, Account: t.DestinationAccount, Currency: t.Currency, Amount: t.Amount}}})
	if err != nil {
		return "", err
	}
	if err := s.store.SetTransferReleased(ctx, t.Token, posted.ID, emi.TransferCompleted); err != nil {
		return "", err
	}
	// The money reaches the destination now: its owner's monitoring sees
	// it arrive.
	return emi.EventTransferCompleted, s.monitorReceived(ctx, t, false)
}

// returnHeld gives a held transfer's money back to the source (suspense
// when the source's account was terminated meanwhile).
func (s *Transfers) returnHeld(ctx context.Context, t emi.Transfer, partnerID string) error {
	credit, err := s.returnCredit(ctx, t)
	if err != nil {
		return err
	}
	txn := emi.LedgerTxn{Kind: emi.TxnReviewReturn, PartnerID: t.PartnerID, Reference: t.Reference}
	var id int64
	if credit.Internal == emi.LedgerSuspense {
		ident := emi.TransferParty{IBAN: t.SourceIBAN}
		if ident.IBAN == "" {
			ident = emi.TransferParty{Balance: t.SourceBalance}
		}
		it, err := parkInSuspense(ctx, s.ledger, s.suspense, s.audit, s.now, txn, emi.LedgerReviewHold, "transfer.held_return_suspense",
			emi.SuspenseItem{Scheme: t.Counterparty.Scheme, Amount: t.Amount, Currency: t.Currency, Payer: t.Counterparty,
				Identifier: describeParty(ident), Destination: ident, Reason: emi.SuspenseAccountTerminated, Reference: t.Reference,
				Account: t.SourceAccount, PartnerID: partnerID})
		if err != nil {
			return err
		}
		id = it.Txn
	} else {
		txn.Entries = []emi.Entry{{Internal: emi.LedgerReviewHold, Currency: t.Currency, Amount: -t.Amount}, credit}
		posted, err := s.ledger.Post(ctx, txn)
		if err != nil {
			return err
		}
		id = posted.ID
	}
	return s.store.SetTransferReturned(ctx, t.Token, id, HeldReturnReason)
}

// initiators are the people behind a held transfer, whom the decision
// engine keeps from deciding it: the staff user who initiated it, or, for
// a transfer an API key sent, every staff user who ever held that key's
// secret (who created the partner with it, created the key or rotated its
// secret: the audit log's rows by staff actors). An administrator who
// minted a key, sent money with it and set up the compliance officer who
// would release it is one person to the engine.
func (s *Transfers) initiators(ctx context.Context, h monitoring.Hold) ([]string, error) {
	if id, ok := strings.CutPrefix(h.InitiatedBy, string(emi.ActorStaff)+":"); ok {
		return []string{id}, nil
	}
	key, ok := strings.CutPrefix(h.InitiatedBy, string(emi.ActorPartnerKey)+":")
	if !ok || key == "" {
		return nil, nil
	}
	var out []string
	add := func(f emi.AuditFilter, actions ...string) error {
		f.Limit = 200
		rows, err := s.audit.Trail(ctx, f)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.ActorType == emi.ActorStaff && slices.Contains(actions, r.Action) && !slices.Contains(out, r.ActorID) {
				out = append(out, r.ActorID)
			}
		}
		return nil
	}
	if err := add(emi.AuditFilter{ResourceType: "partner_key", ResourceToken: key}, "partner_key.create", "partner_key.rotate_secret"); err != nil {
		return nil, err
	}
	if err := add(emi.AuditFilter{ResourceType: "partner", ResourceToken: h.PartnerID}, "partner.create"); err != nil {
		return nil, err
	}
	return out, nil
}

var errInconsistentHold = inconsistentHold{}

type inconsistentHold struct{}

func (inconsistentHold) Error() string { return "a held transfer has no hold record" }
