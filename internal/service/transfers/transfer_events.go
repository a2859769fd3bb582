package transfers

import (
	"context"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// emitTransfer sends a transfer event (transfer.completed or
// transfer.returned) to every partner the transfer concerns: the partner
// that sent it and the partners holding its two sides, each once, each
// with its own view (TransferEventFields). Every transfer event of emi is
// built here: internal transfers, their reversals, incoming credits and
// outgoing payments.
func emitTransfer(ctx context.Context, events *kernel.Events, t emi.Transfer, typ emi.EventType) error {
	seen := map[string]bool{}
	partners := []string{t.PartnerID, t.SourcePartner, t.DestinationPartner}
	if typ == emi.EventTransferHeldForReview {
		// Held money has not reached the destination: only the sender
		// hears of it.
		partners = []string{t.PartnerID}
	}
	for _, partner := range partners {
		if partner == "" || seen[partner] {
			continue
		}
		seen[partner] = true
		f, ok := TransferEventFields(t, partner)
		if !ok {
			continue
		}
		if _, err := events.Emit(ctx, partner, typ, "transfer", t.Token, f); err != nil {
			return err
		}
	}
	return nil
}

// TransferEventFields is the data of a transfer event for partner (false
// when the transfer has nothing of the partner's), following PartnerView:
// the partner's own sides with their account and balance tokens (and
// IBAN), another partner's side by IBAN only, and the external party of an
// outgoing payment (destination_*) or an incoming credit (counterparty).
func TransferEventFields(t emi.Transfer, partner string) (map[string]any, bool) {
	v, err := PartnerView(t, partner)
	if err != nil {
		return nil, false
	}
	f := map[string]any{"type": v.Type, "status": v.Status, "amount": emi.FormatMinor(v.Amount), "currency": v.Currency,
		"reference": v.Reference}
	side := func(prefix, account, balance, iban string) {
		if account != "" {
			f[prefix+"_account"], f[prefix+"_balance"] = account, balance
		}
		if iban != "" {
			f[prefix+"_iban"] = iban
		}
	}
	c := v.Counterparty
	switch v.Type {
	case emi.TransferOutgoing:
		side("source", v.SourceAccount, v.SourceBalance, v.SourceIBAN)
		f["destination_name"] = c.Name
		if c.IBAN != "" {
			f["destination_iban"] = c.IBAN
		}
		if c.AccountNumber != "" {
			f["destination_account_number"], f["destination_sort_code"] = c.AccountNumber, c.SortCode
		}
	case emi.TransferIncoming:
		side("destination", v.DestinationAccount, v.DestinationBalance, v.DestinationIBAN)
		f["counterparty"] = counterpartyFields(c)
	default:
		side("source", v.SourceAccount, v.SourceBalance, v.SourceIBAN)
		side("destination", v.DestinationAccount, v.DestinationBalance, v.DestinationIBAN)
	}
	if v.Status == emi.TransferReturned {
		f["return_reason"] = v.ReturnReason
	}
	return f, true
}

// counterpartyFields is an external party as an event carries it.
func counterpartyFields(c emi.Counterparty) map[string]any {
	out := map[string]any{}
	for k, v := range map[string]string{"name": c.Name, "iban": c.IBAN, "bic": c.BIC, "account_number": c.AccountNumber,
		"sort_code": c.SortCode, "card_last4": c.CardLast4, "scheme": c.Scheme} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}
