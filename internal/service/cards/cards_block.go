package cards

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Blocking a card with a reason code, and replacing a lost or stolen card
// as card issuers do:
//
//   - Staff block a card with a reason code (emi.BlockReasons): lost,
//     stolen, fraud_suspected, customer_request or other (other needs a
//     note; a note is allowed with every code). The code is kept on the
//     history entry, on the card (its status's reason), in the audit row
//     and in the card.status_changed event.
//   - Lost and stolen terminate the card at once: its number, CVV2 and
//     PIN are compromised, so the card must never work again, and an
//     issuer does not leave that to a later unblock. Termination of a card
//     is a one-person staff action (Terminate, emi.PermManageCards; it is
//     not in the Policies table), so a lost or stolen block gives no one a
//     way around a four-eyes control: whoever may block a card that way
//     may already terminate it. Once terminated, nothing unblocks the
//     card (12005, naming the reason).
//   - A terminated card of an account may be replaced once (Replace): a
//     new card on the same account with the old card's settings. A
//     replacement is the one card a staff member issues; it cannot be
//     used to get a second card (one non-terminated card per account,
//     one replacement per card, both kept by the database).
//
// The partner API keeps the seed's card_status body (`status` alone, no
// unknown field): reason codes are the back office's. A partner's block
// has no code.

// Block blocks a card as staff with a reason code and an optional note
// (required with other). Lost and stolen terminate the card; the other
// codes set it inactive until it is set active again. Blocking an inactive
// card again with another code records the new reason (no event: the
// partner already knows the card is inactive).
func (s *Cards) Block(ctx context.Context, token, code, note string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardBlock))
	if err != nil {
		return emi.Card{}, err
	}
	if !a.staff {
		return emi.Card{}, emi.ErrForbidden.WithDetail("reason codes are set in the back office")
	}
	code, note = strings.TrimSpace(code), strings.TrimSpace(note)
	if err := checkBlockReason(code, note); err != nil {
		return emi.Card{}, err
	}
	act := emi.CardBlock
	if emi.BlockTerminates(code) {
		act = emi.CardTerminate
	}
	return s.change(ctx, a, token, act, func(ctx context.Context, c *emi.Card) error {
		if emi.BlockTerminates(code) {
			return s.terminate(ctx, a, c, code, note)
		}
		return s.setStatus(ctx, a, c, emi.CardInactive, code, note)
	})
}

// checkBlockReason refuses an unknown reason code, other without a note,
// and a note over 1,000 characters.
func checkBlockReason(code, note string) error {
	codes := strings.Join(emi.BlockReasons, ", ")
	switch {
	case code == "":
		return emi.ErrCardValidation.Field("reason_code", "is required: say why the card is blocked ("+codes+")")
	case !slices.Contains(emi.BlockReasons, code):
		return emi.ErrCardValidation.Field("reason_code", "must be one of "+codes)
	case code == emi.BlockOther && note == "":
		return emi.ErrCardValidation.Field("reason", "is required with the reason other: say why the card is blocked")
	case len(note) > 1000:
		return emi.ErrCardValidation.Field("reason", "must be at most 1000 characters")
	}
	return nil
}

// Replace issues, as staff, the replacement of a terminated card (lost,
// stolen, or terminated for any reason) on the same account: same program,
// type, groups, 3DS enrolment, names and delivery details as the old card;
// a new number, expiry, CVV2 and PIN (the old PIN was erased at
// termination; the cardholder gets the new one by card_retrieve_pin or
// card_send_pin). A virtual replacement is usable at once; a plastic one
// is sent to the old card's delivery address and activated on receipt
// (card_activate). The account must be usable and without another
// non-terminated card (12003, 12004); the holder passes the card AML
// control as at issue (aml, else the old card's check; 12009). A card is
// replaced once: two requests at once give one card (the old card is
// locked, and the database keeps one replacement per card). Audited on
// both cards; the partner is told (card.replaced).
func (s *Cards) Replace(ctx context.Context, token, aml, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardReplace))
	if err != nil {
		return emi.Card{}, err
	}
	if !a.staff {
		return emi.Card{}, emi.ErrForbidden.WithDetail("a partner issues cards with card_create")
	}
	reason, aml = strings.TrimSpace(reason), strings.TrimSpace(aml)
	if len(reason) > 1000 {
		return emi.Card{}, emi.ErrCardValidation.Field("reason", "must be at most 1000 characters")
	}
	if aml != "" && !kernel.ValidToken(strings.ToLower(aml)) {
		return emi.Card{}, emi.ErrCardValidation.Field("aml", "must be an AML check token")
	}
	var out emi.Card
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		if _, err := s.store.Card(ctx, "", token, true); err != nil {
			return err
		}
		// Read again once locked: a replacement committed while this
		// request waited for the lock is seen by this new statement.
		old, err := s.store.Card(ctx, "", token, false)
		if err != nil {
			return err
		}
		// Staff read these refusals: cards are named by their masked
		// number, as on the back office's pages.
		if v := emi.CardRules(old, emi.CardReplace, emi.ByStaff, s.now.At(ctx).UTC()); !v.Allowed {
			if old.ReplacedBy == "" {
				return emi.ErrCardInvalidTransition.WithDetail("%s", v.Refusal)
			}
			by, err := s.store.Card(ctx, "", old.ReplacedBy, false)
			if err != nil {
				return err
			}
			return emi.ErrCardInvalidTransition.WithDetail("%s by card %s", v.Refusal, by.MaskedPAN())
		}
		acc, err := s.usableAccount(ctx, old.PartnerID, old.Account)
		if err != nil {
			return err
		}
		prog, err := s.accounts.Program(ctx, old.Program)
		if err != nil {
			return err
		}
		if err := programAllows(prog, old.Type); err != nil {
			return err
		}
		if open, ok, err := s.store.OpenCardOfAccount(ctx, acc.Token); err != nil {
			return err
		} else if ok {
			return emi.ErrActiveCardExists.WithDetail("the account already has card %s, which is not terminated", open.MaskedPAN())
		}
		if old.Type == emi.CardPlastic && old.Delivery == nil {
			return emi.ErrDeliveryRequired.WithDetail("the card has no delivery details: the partner issues a new plastic card (card_create)")
		}
		holder, err := s.holder(ctx, old.PartnerID, acc.User)
		if err != nil {
			return err
		}
		link := aml
		if link == "" {
			link = old.AML
		}
		if prog.AMLRequired || link != "" {
			if err := s.checkAML(ctx, old.PartnerID, link, holder); err != nil {
				return err
			}
		}
		now := s.now.At(ctx).UTC()
		c := emi.Card{Token: kernel.NewToken(), PartnerID: old.PartnerID, Program: prog.Code, Account: acc.Token, Merchant: acc.Merchant,
			User: acc.User, Type: old.Type, Status: emi.CardActive, Activated: old.Type == emi.CardVirtual, AML: link,
			EmbossName: old.EmbossName, EmbossNameLine4: old.EmbossNameLine4, Fulfil1: old.Fulfil1, Fulfil2: old.Fulfil2,
			ThermalLine1: old.ThermalLine1, ThermalLine2: old.ThermalLine2, FirstName: old.FirstName, LastName: old.LastName,
			Alias: old.Alias, URL: old.URL, Delivery: old.Delivery, Groups: maps.Clone(old.Groups), ThreeDS: old.ThreeDS,
			Replaces: old.Token, CreatedAt: now, UpdatedAt: now}
		if c.Groups == nil {
			c.Groups = map[string]string{}
		}
		if c.Activated {
			c.ActivatedAt = &now
		}
		c.ExpiryMonth, c.ExpiryYear = expiryFrom(now, prog.CardValidityMonths)
		if err := s.issue(ctx, &c, prog.BINPrefix, secretDigits(4)); err != nil {
			return err
		}
		why := "replaces card " + old.MaskedPAN()
		if reason != "" {
			why += ": " + reason
		}
		if err := s.store.InsertCardChange(ctx, c.Token, emi.CardChange{Change: "issued", To: c.Status, Reason: why, Actor: a.actorID, At: now}); err != nil {
			return err
		}
		if err := s.store.InsertCardChange(ctx, old.Token, emi.CardChange{Change: "replaced", To: c.MaskedPAN(), Reason: reason,
			Actor: a.actorID, At: now}); err != nil {
			return err
		}
		fields := map[string]any{"replaces": old.Token, "type": c.Type, "status": c.Status, "activated": c.Activated,
			"masked_pan": c.MaskedPAN(), "expiry": c.Expiry()}
		changes := map[string]any{"replacement": c.Token, "masked": c.MaskedPAN()}
		if old.StatusReason != "" {
			fields["reason_code"], changes["reason_code"] = old.StatusReason, old.StatusReason
		}
		if reason != "" {
			changes["reason"] = reason
		}
		if _, err := s.events.Emit(ctx, c.PartnerID, emi.EventCardReplaced, "card", c.Token, fields); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "card.replace", ResourceType: "card", ResourceToken: old.Token,
			PartnerID: old.PartnerID, Changes: changes}); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, emi.AuditEntry{Action: "card.create", ResourceType: "card", ResourceToken: c.Token,
			PartnerID: c.PartnerID, Changes: map[string]any{"replaces": old.Token, "program": c.Program, "account": c.Account,
				"type": c.Type, "activated": c.Activated, "masked": c.MaskedPAN(), "three_ds": c.ThreeDS.Enrolled()}}); err != nil {
			return err
		}
		out, err = s.store.Card(ctx, "", c.Token, false)
		return err
	})
	return out, err
}

// merchantHold refuses a card on the accounts of an onboarded merchant
// with a screening hit waiting for a compliance decision or confirmed a
// true match (12009), as holder does for a user.
func (s *Cards) merchantHold(ctx context.Context, merchant string) error {
	if merchant == "" {
		return nil
	}
	if s.aml == nil {
		return emi.Internal(errors.New("cards: no AML service for the merchant's check"))
	}
	st, err := s.aml.MerchantScreening(ctx, merchant)
	if err != nil {
		return err
	}
	switch {
	case st.Confirmed > 0:
		return emi.ErrCardAMLRequired.WithDetail("the card's merchant is a confirmed sanctions match")
	case st.Open > 0:
		return emi.ErrCardAMLRequired.WithDetail("the card's merchant has a sanctions screening hit waiting for a compliance decision")
	}
	return nil
}
