package cards

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
)

// Card operations serve two callers: a partner through the API (scoped to
// its own cards; another partner's card is "not found", 12002) and staff
// in the back office (any card, with permissions, and a mandatory reason
// for every change that restricts the card). One code path does both, so
// the rules are the same wherever a change comes from.

// cardActor is who changes a card.
type cardActor struct {
	partnerID string // "" for staff and system
	actorID   string
	staff     bool
}

// actor resolves the caller for a card operation that needs perm when the
// caller is staff.
func (s *Cards) actor(ctx context.Context, perm emi.Permission) (cardActor, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok {
		return cardActor{}, emi.ErrCardNotFound
	}
	switch {
	case p.IsPartner():
		return cardActor{partnerID: p.PartnerID, actorID: p.ActorID}, nil
	case p.Type == emi.ActorStaff:
		if err := kernel.Require(ctx, perm); err != nil {
			return cardActor{}, err
		}
		return cardActor{actorID: p.ActorID, staff: true}, nil
	case p.Type == emi.ActorSystem:
		return cardActor{actorID: p.ActorID}, nil
	}
	return cardActor{}, emi.ErrCardNotFound
}

// party is who the actor is to the card state table.
func (a cardActor) party() emi.CardParty {
	if a.staff {
		return emi.ByStaff
	}
	return emi.ByPartner
}

// allows refuses (12005, with the table's reason) what the card state
// table does not allow a to do to c now.
func (s *Cards) allows(ctx context.Context, c emi.Card, act emi.CardAction, a cardActor) error {
	if v := emi.CardRules(c, act, a.party(), s.now.At(ctx).UTC()); !v.Allowed {
		return emi.ErrCardInvalidTransition.WithDetail("%s", v.Refusal)
	}
	return nil
}

// needReason refuses a staff change without a reason (the API has none).
func (a cardActor) needReason(reason string) error {
	if a.staff && strings.TrimSpace(reason) == "" {
		return emi.ErrCardValidation.Field("reason", "is required: say why the card is changed")
	}
	if len(reason) > 1000 {
		return emi.ErrCardValidation.Field("reason", "must be at most 1000 characters")
	}
	return nil
}

// Details returns a card (card_details) with its wallet tokens.
func (s *Cards) Details(ctx context.Context, token string) (emi.Card, error) {
	a, err := s.actor(ctx, emi.PermViewAccounts)
	if err != nil {
		return emi.Card{}, err
	}
	return s.store.Card(ctx, a.partnerID, token, false)
}

// List returns a page of the caller's cards (cards_list): page from 1,
// limit 1..100, filters merchant and user (and account); newest first.
func (s *Cards) List(ctx context.Context, f emi.CardFilter) ([]emi.Card, int64, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return nil, 0, err
	}
	var bad kernel.Problems
	if f.Page < 1 {
		bad.Add("page", "must be 1 or more")
	}
	if f.Limit < 1 || f.Limit > 100 {
		bad.Add("limit", "must be from 1 to 100")
	}
	if f.StartingAfter != "" {
		if _, err := s.store.Card(ctx, p.PartnerID, f.StartingAfter, false); errors.Is(err, emi.ErrCardNotFound) {
			bad.Add("starting_after", "is not one of your cards")
		} else if err != nil {
			return nil, 0, err
		}
	}
	if len(bad) > 0 {
		return nil, 0, emi.ErrCardValidation.WithFields(bad...)
	}
	f.PartnerID = p.PartnerID
	return s.store.Cards(ctx, f)
}

// change runs fn on the locked card and stores the result, in one
// transaction, when the card state table allows act on the card as it is
// (emi.CardRules; else 12005 with the table's reason: a terminated card
// refuses every change).
func (s *Cards) change(ctx context.Context, a cardActor, token string, act emi.CardAction, fn func(ctx context.Context, c *emi.Card) error) (emi.Card, error) {
	var out emi.Card
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		c, err := s.store.Card(ctx, a.partnerID, token, true)
		if err != nil {
			return err
		}
		if err := s.allows(ctx, c, act, a); err != nil {
			return err
		}
		if err := fn(ctx, &c); err != nil {
			return err
		}
		c.UpdatedAt = s.now.At(ctx).UTC()
		if err := s.store.UpdateCard(ctx, c); err != nil {
			return err
		}
		out, err = s.store.Card(ctx, "", c.Token, false)
		return err
	})
	return out, err
}

// history records one change of a card with its event and audit row.
func (s *Cards) history(ctx context.Context, a cardActor, c emi.Card, change, from, to, reason string, event emi.EventType, fields map[string]any) error {
	return s.historyCode(ctx, a, c, change, from, to, "", reason, event, fields)
}

// historyCode is history with a block reason code (emi.BlockReasons, ""
// for none), kept on the history entry and in the audit row; the caller
// puts it in the event's fields.
func (s *Cards) historyCode(ctx context.Context, a cardActor, c emi.Card, change, from, to, code, reason string, event emi.EventType, fields map[string]any) error {
	if err := s.store.InsertCardChange(ctx, c.Token, emi.CardChange{Change: change, From: from, To: to, Reason: reason,
		ReasonCode: code, Actor: a.actorID, At: s.now.At(ctx).UTC()}); err != nil {
		return err
	}
	if event != "" {
		if _, err := s.events.Emit(ctx, c.PartnerID, event, "card", c.Token, fields); err != nil {
			return err
		}
	}
	changes := map[string]any{"from": from, "to": to}
	if reason != "" {
		changes["reason"] = reason
	}
	if code != "" {
		changes["reason_code"] = code
	}
	return s.audit.Record(ctx, emi.AuditEntry{Action: "card." + change, ResourceType: "card", ResourceToken: c.Token,
		PartnerID: c.PartnerID, Changes: changes})
}

// SetStatus sets a card active or inactive (card_status). Setting the
// status it has is accepted and changes nothing. Staff block a card with a
// reason code (Block): a staff request to set it inactive without one is
// refused on "reason_code" (the next person must know why it was blocked).
// The partner API has no reason codes (seed card_status takes `status`
// alone), so a partner's block keeps none. A card staff blocked as
// fraud_suspected is unblocked by staff only: a partner's card_status
// active answers 12005 until then.
func (s *Cards) SetStatus(ctx context.Context, token, status, reason string) (emi.Card, error) {
	act := emi.CardUnblock
	if status == emi.CardInactive {
		act = emi.CardBlock
	}
	a, err := s.actor(ctx, ActionPermission(act))
	if err != nil {
		return emi.Card{}, err
	}
	if status != emi.CardActive && status != emi.CardInactive {
		return emi.Card{}, emi.ErrCardValidation.Field("status", "must be active or inactive")
	}
	if status == emi.CardInactive {
		if a.staff {
			return s.Block(ctx, token, "", reason)
		}
		if err := a.needReason(reason); err != nil {
			return emi.Card{}, err
		}
	}
	return s.change(ctx, a, token, act, func(ctx context.Context, c *emi.Card) error {
		return s.setStatus(ctx, a, c, status, "", reason)
	})
}

// setStatus moves the locked card to active or inactive with a block
// reason code (inactive by staff) or none; the card remembers the code of
// its current status.
func (s *Cards) setStatus(ctx context.Context, a cardActor, c *emi.Card, status, code, reason string) error {
	if c.Status == status && (code == "" || c.StatusReason == code) {
		return nil
	}
	from := c.Status
	c.Status, c.StatusReason = status, code
	fields := map[string]any{"status": status, "previous_status": from}
	if code != "" {
		fields["reason_code"] = code
	}
	if from == status {
		// A blocked card blocked again for another reason: the reason is
		// recorded, the partner is not told of a status it already has.
		return s.historyCode(ctx, a, *c, "status", from, status, code, reason, "", nil)
	}
	return s.historyCode(ctx, a, *c, "status", from, status, code, reason, emi.EventCardStatusChanged, fields)
}

// Terminate terminates a card (card_terminate): final. Its CVV2 and PIN
// are erased in the same transaction, and its wallet tokens are deleted.
func (s *Cards) Terminate(ctx context.Context, token, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardTerminate))
	if err != nil {
		return emi.Card{}, err
	}
	if err := a.needReason(reason); err != nil {
		return emi.Card{}, err
	}
	return s.change(ctx, a, token, emi.CardTerminate, func(ctx context.Context, c *emi.Card) error {
		return s.terminate(ctx, a, c, "", reason)
	})
}

// terminate terminates the locked card, with a block reason code (lost
// or stolen) or none.
func (s *Cards) terminate(ctx context.Context, a cardActor, c *emi.Card, code, reason string) error {
	from := c.Status
	now := s.now.At(ctx).UTC()
	c.Status, c.TerminatedAt, c.StatusReason = emi.CardTerminated, &now, code
	fields := map[string]any{"status": emi.CardTerminated, "previous_status": from}
	if code != "" {
		fields["reason_code"] = code
	}
	return s.historyCode(ctx, a, *c, "status", from, emi.CardTerminated, code, reason, emi.EventCardStatusChanged, fields)
}

// TerminateForAccount terminates the cards of an account that is being
// terminated, inside the caller's transaction (contract §7).
func (s *Cards) TerminateForAccount(ctx context.Context, account, reason string) error {
	c, ok, err := s.store.OpenCardOfAccount(ctx, account)
	if err != nil || !ok {
		return err
	}
	p, _ := emi.PrincipalFrom(ctx)
	a := cardActor{actorID: p.ActorID, staff: p.Type == emi.ActorStaff}
	if err := s.terminate(ctx, a, &c, "", reason); err != nil {
		return err
	}
	c.UpdatedAt = s.now.At(ctx).UTC()
	return s.store.UpdateCard(ctx, c)
}

// Activate activates a plastic card once it has been received
// (card_activate). An activated card answers 12005. When the program
// requires an AML check and the card has none yet, aml is required. The
// AML link (aml, else the card's) is checked again against the card's
// holder: theirs, clear or cleared, not older than a change of their
// identity, and the holder without an undecided or confirmed hit (12009).
func (s *Cards) Activate(ctx context.Context, token, aml, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardActivate))
	if err != nil {
		return emi.Card{}, err
	}
	return s.change(ctx, a, token, emi.CardActivate, func(ctx context.Context, c *emi.Card) error {
		prog, err := s.accounts.Program(ctx, c.Program)
		if err != nil {
			return err
		}
		holder, err := s.holder(ctx, c.PartnerID, c.User)
		if err != nil {
			return err
		}
		if err := s.merchantHold(ctx, c.Merchant); err != nil {
			return err
		}
		link := aml
		if link == "" {
			link = c.AML
		}
		if prog.AMLRequired || link != "" {
			if err := s.checkAML(ctx, c.PartnerID, link, holder); err != nil {
				return err
			}
			c.AML = link
		}
		now := s.now.At(ctx).UTC()
		c.Activated, c.ActivatedAt = true, &now
		return s.history(ctx, a, *c, "activated", "false", "true", reason, emi.EventCardActivated, map[string]any{"status": c.Status})
	})
}

// Convert turns a virtual card into a plastic one (card_convert): the PAN,
// status and activation stay; a new expiry and CVV2 are issued. Delivery
// details come with the request or from the card's creation (else 12007).
func (s *Cards) Convert(ctx context.Context, token string, d *emi.Delivery, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardConvert))
	if err != nil {
		return emi.Card{}, err
	}
	if d != nil {
		if err := s.validate.Struct(d, emi.ErrCardValidation); err != nil {
			return emi.Card{}, prefixFields(err, "delivery_details")
		}
	}
	return s.change(ctx, a, token, emi.CardConvert, func(ctx context.Context, c *emi.Card) error {
		if d != nil {
			c.Delivery = normalizeDelivery(d)
		}
		if c.Delivery == nil {
			return emi.ErrDeliveryRequired.WithDetail("conversion needs delivery_details")
		}
		prog, err := s.accounts.Program(ctx, c.Program)
		if err != nil {
			return err
		}
		if why := programRefuses(prog, emi.CardConvert); why != "" {
			return emi.ErrCardProgramMismatch.WithDetail("%s", why)
		}
		c.Type = emi.CardPlastic
		c.ExpiryMonth, c.ExpiryYear = expiryFrom(s.now.At(ctx).UTC(), prog.CardValidityMonths)
		cvv, err := s.vault.Seal([]byte(secretDigits(3)), CVVContext(c.Token))
		if err != nil {
			return emi.Internal(err)
		}
		if err := s.store.ReplaceCVV(ctx, c.Token, cvv); err != nil {
			return err
		}
		return s.history(ctx, a, *c, "converted", emi.CardVirtual, emi.CardPlastic, reason, emi.EventCardConverted,
			map[string]any{"type": emi.CardPlastic, "expiry": c.Expiry()})
	})
}

// Assign gives a non-personalized card its account (card_assign): an
// account of the partner that may hold a card (12003), of the card's
// currency, of the card's owner when the card already has one, and without
// another card (12004). The account's owner becomes the holder, and the
// card's AML link (aml, else the card's) is checked against them as at
// activation (12009): a card activated under someone else's check needs
// aml, a check of the new holder. A card not yet activated and without a
// link is checked at card_activate.
func (s *Cards) Assign(ctx context.Context, token, account, aml, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardAssign))
	if err != nil {
		return emi.Card{}, err
	}
	if strings.TrimSpace(account) == "" {
		return emi.Card{}, emi.ErrCardValidation.Field("account", "is required")
	}
	return s.change(ctx, a, token, emi.CardAssign, func(ctx context.Context, c *emi.Card) error {
		acc, err := s.usableAccount(ctx, c.PartnerID, account)
		if err != nil {
			return err
		}
		if (c.Merchant != "" && acc.Merchant != c.Merchant) || (c.User != "" && acc.User != c.User) {
			return emi.ErrCardAccountUnusable.WithDetail("the account belongs to another owner than the card")
		}
		prog, err := s.accounts.Program(ctx, c.Program)
		if err != nil {
			return err
		}
		if len(prog.Currencies) > 0 && acc.Balances[0].Currency != prog.Currencies[0] {
			return emi.ErrCardProgramMismatch.WithDetail("the card is in %s, the account in %s", prog.Currencies[0], acc.Balances[0].Currency)
		}
		if open, ok, err := s.store.OpenCardOfAccount(ctx, acc.Token); err != nil {
			return err
		} else if ok {
			return emi.ErrActiveCardExists.WithDetail("card %s is not terminated", open.Token)
		}
		c.Account, c.Merchant, c.User = acc.Token, acc.Merchant, acc.User
		holder, err := s.holder(ctx, c.PartnerID, c.User)
		if err != nil {
			return err
		}
		if err := s.merchantHold(ctx, c.Merchant); err != nil {
			return err
		}
		link := aml
		if link == "" {
			link = c.AML
		}
		if link != "" || (prog.AMLRequired && c.Activated) {
			if err := s.checkAML(ctx, c.PartnerID, link, holder); err != nil {
				return err
			}
			c.AML = link
		}
		return s.history(ctx, a, *c, "assigned", "", acc.Token, reason, "", nil)
	})
}

// SetGroups changes a card's groups (card_groups): absent keeps, ""
// removes, a code sets; every code must be associated with the card's
// program, or nothing changes (12006).
func (s *Cards) SetGroups(ctx context.Context, token string, g emi.CardGroups, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardSetGroups))
	if err != nil {
		return emi.Card{}, err
	}
	set := g.ByKind()
	if len(set) == 0 {
		return emi.Card{}, emi.ErrCardValidation.Field("", "give at least one group: "+strings.Join(emi.GroupKinds, ", "))
	}
	return s.change(ctx, a, token, emi.CardSetGroups, func(ctx context.Context, c *emi.Card) error {
		prog, err := s.accounts.Program(ctx, c.Program)
		if err != nil {
			return err
		}
		var wrong []emi.FieldError
		for _, kind := range emi.GroupKinds {
			code, ok := set[kind]
			if !ok || code == "" {
				continue
			}
			if !slices.Contains(prog.Groups[kind], code) {
				wrong = append(wrong, emi.FieldError{Field: kind, Message: "code " + code + " is not associated with program " + prog.Code})
			}
		}
		if len(wrong) > 0 {
			return emi.ErrGroupNotInProgram.WithFields(wrong...)
		}
		changes := map[string]any{}
		for _, kind := range emi.GroupKinds {
			code, ok := set[kind]
			if !ok || c.Groups[kind] == code {
				continue
			}
			changes[kind] = map[string]string{"from": c.Groups[kind], "to": code}
			if code == "" {
				delete(c.Groups, kind)
			} else {
				c.Groups[kind] = code
			}
		}
		if len(changes) == 0 {
			return nil
		}
		if err := s.store.InsertCardChange(ctx, c.Token, emi.CardChange{Change: "groups", Reason: reason, Actor: a.actorID, At: s.now.At(ctx).UTC()}); err != nil {
			return err
		}
		if reason != "" {
			changes["reason"] = reason
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "card.groups", ResourceType: "card", ResourceToken: c.Token,
			PartnerID: c.PartnerID, Changes: changes})
	})
}

// Enrol3DS enrols a card in 3DS (card_3ds_enrol): OTP by SMS needs a
// mobile number (12010); biometric alone needs none.
func (s *Cards) Enrol3DS(ctx context.Context, token string, in emi.ThreeDSEnrol, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardSet3DS))
	if err != nil {
		return emi.Card{}, err
	}
	if err := s.validate.Struct(in, emi.ErrCardValidation); err != nil {
		return emi.Card{}, err
	}
	if in.OTPSMS == "" && !in.Biometric {
		return emi.Card{}, emi.ErrCardNoMobile.WithDetail("OTP SMS enrolment needs otp_sms, the cardholder's mobile number")
	}
	return s.change(ctx, a, token, emi.CardSet3DS, func(ctx context.Context, c *emi.Card) error {
		from := threeDSState(c.ThreeDS)
		c.ThreeDS = emi.ThreeDS{OTPSMS: normalizePhone(in.OTPSMS), Biometric: in.Biometric}
		return s.history(ctx, a, *c, "3ds_enrol", from, threeDSState(c.ThreeDS), reason, "", nil)
	})
}

// Update3DS changes the enrolment phone number (card_3ds_update).
func (s *Cards) Update3DS(ctx context.Context, token, otpSMS, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardSet3DS))
	if err != nil {
		return emi.Card{}, err
	}
	if otpSMS == "" {
		// A required field left out is a validation error, as openapi.yaml's
		// schema says (it answered 409 / 12010 "no mobile", found by the
		// spec-driven negative test).
		return emi.Card{}, emi.ErrCardValidation.Field("otp_sms", "is required: the new mobile number")
	}
	if err := s.validate.Struct(emi.ThreeDSEnrol{OTPSMS: otpSMS}, emi.ErrCardValidation); err != nil {
		return emi.Card{}, err
	}
	return s.change(ctx, a, token, emi.CardSet3DS, func(ctx context.Context, c *emi.Card) error {
		if !c.ThreeDS.Enrolled() {
			return emi.ErrCardInvalidTransition.WithDetail("the card is not enrolled in 3DS: enrol it first")
		}
		from := emi.MaskPhone(c.ThreeDS.OTPSMS)
		c.ThreeDS.OTPSMS = normalizePhone(otpSMS)
		return s.history(ctx, a, *c, "3ds_update", from, emi.MaskPhone(c.ThreeDS.OTPSMS), reason, "", nil)
	})
}

// Remove3DS removes a 3DS method (card_3ds_remove): type otp_sms,
// biometric or all (contract §7). Removing what is not enrolled changes
// nothing.
func (s *Cards) Remove3DS(ctx context.Context, token, typ, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardSet3DS))
	if err != nil {
		return emi.Card{}, err
	}
	if typ != "otp_sms" && typ != "biometric" && typ != "all" {
		return emi.Card{}, emi.ErrCardValidation.Field("type", "must be one of: otp_sms, biometric, all")
	}
	if err := a.needReason(reason); err != nil {
		return emi.Card{}, err
	}
	return s.change(ctx, a, token, emi.CardSet3DS, func(ctx context.Context, c *emi.Card) error {
		from := threeDSState(c.ThreeDS)
		if typ == "otp_sms" || typ == "all" {
			c.ThreeDS.OTPSMS = ""
		}
		if typ == "biometric" || typ == "all" {
			c.ThreeDS.Biometric = false
		}
		if to := threeDSState(c.ThreeDS); to != from {
			return s.history(ctx, a, *c, "3ds_remove", from, to, reason, "", nil)
		}
		return nil
	})
}

func threeDSState(t emi.ThreeDS) string {
	var parts []string
	if t.OTPSMS != "" {
		parts = append(parts, "otp_sms")
	}
	if t.Biometric {
		parts = append(parts, "biometric")
	}
	if len(parts) == 0 {
		return "not_enrolled"
	}
	return strings.Join(parts, "+")
}

// ResetPIN clears the PIN and CVV error counters (card_reset_pin).
func (s *Cards) ResetPIN(ctx context.Context, token, reason string) (emi.Card, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardResetPIN))
	if err != nil {
		return emi.Card{}, err
	}
	return s.change(ctx, a, token, emi.CardResetPIN, func(ctx context.Context, c *emi.Card) error {
		from := c.PINErrors + c.CVVErrors
		c.PINErrors, c.CVVErrors = 0, 0
		return s.history(ctx, a, *c, "pin_reset", strconv.Itoa(from), "0", reason, "", nil)
	})
}

// Card history changes that set a phone number a PIN text could go to.
var (
	threeDSNumberChanges  = []string{"3ds_enrol", "3ds_update"}
	deliveryNumberChanges = []string{"convert"}
)

// PINSMSHold is how long no PIN text is sent after a staff member changed
// the card's 3DS or delivery number (see pinMobile).
const PINSMSHold = 24 * time.Hour

// pinMobile is where a PIN text may go: the mobile number the partner set
// (the delivery phone, else the 3DS OTP number, else the user's phone),
// never a number a staff member set: a customer-service agent could
// re-point the 3DS number to their own phone and send the PIN there. For 24
// hours after a staff change of the 3DS or delivery number no PIN text is
// sent at all (emi.ErrPINSMSHold), so a change made to intercept the PIN is
// seen by the cardholder (their 3DS texts stop) before any PIN leaves.
func (s *Cards) pinMobile(ctx context.Context, c emi.Card, now time.Time) (string, error) {
	last, err := s.store.LastStaffChange(ctx, c.Token, append(slices.Clone(threeDSNumberChanges), deliveryNumberChanges...))
	if err != nil {
		return "", err
	}
	if !last.IsZero() && now.Sub(last) < PINSMSHold {
		return "", emi.ErrPINSMSHold.WithDetail("a staff member changed a phone number of the card at %s", last.Format(time.RFC3339)).
			Wrap(kernel.RetryAfter(last.Add(PINSMSHold).Sub(now)))
	}
	partnerSet := func(changes []string) (bool, error) {
		seen, err := s.store.LastChange(ctx, c.Token, changes)
		return !seen.ByStaff, err
	}
	if c.Delivery != nil && c.Delivery.Phone != "" {
		ok, err := partnerSet(deliveryNumberChanges)
		if err != nil || ok {
			return c.Delivery.Phone, err
		}
	}
	if c.ThreeDS.OTPSMS != "" {
		ok, err := partnerSet(threeDSNumberChanges)
		if err != nil || ok {
			return c.ThreeDS.OTPSMS, err
		}
	}
	if c.User != "" {
		p, err := s.store.UserPhone(ctx, c.User)
		return normalizePhone(p), err
	}
	return "", nil
}

// pinSMSScope is the rate-limit scope of a card's PIN texts.
const pinSMSScope = "card.pin_sms"

// SendPIN sends the card's PIN by SMS (card_send_pin) where the program
// allows it, to the card's mobile number (12010 without one), at most
// CardsConfig.PINSMSPerDay times a day. The stored message has the PIN
// masked; the audit row records a PIN disclosure by SMS.
func (s *Cards) SendPIN(ctx context.Context, token, reason string) (emi.SMSMessage, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardSendPIN))
	if err != nil {
		return emi.SMSMessage{}, err
	}
	c, err := s.store.Card(ctx, a.partnerID, token, false)
	if err != nil {
		return emi.SMSMessage{}, err
	}
	if err := s.allows(ctx, c, emi.CardSendPIN, a); err != nil {
		return emi.SMSMessage{}, err
	}
	prog, err := s.accounts.Program(ctx, c.Program)
	if err != nil {
		return emi.SMSMessage{}, err
	}
	if why := programRefuses(prog, emi.CardSendPIN); why != "" {
		return emi.SMSMessage{}, emi.ErrCardProgramMismatch.WithDetail("%s", why)
	}
	now := s.now.At(ctx).UTC()
	to, err := s.pinMobile(ctx, c, now)
	if err != nil {
		return emi.SMSMessage{}, err
	}
	if to == "" {
		return emi.SMSMessage{}, emi.ErrCardNoMobile.WithDetail("the card has no mobile number the partner set (delivery_details.phone, three_ds.otp_sms or the user's phone)")
	}
	// The daily limit is decided atomically (50 concurrent requests send
	// at most PINSMSPerDay texts): the text is counted before it is sent,
	// and taken back when the gateway refuses it (the cardholder got
	// nothing).
	if s.cfg.Limits == nil {
		return emi.SMSMessage{}, emi.Internal(errors.New("PIN texts need a rate limiter"))
	}
	ok, retry, err := s.cfg.Limits.Take(ctx, pinSMSScope, c.Token, s.cfg.PINSMSPerDay, 24*time.Hour, now)
	if err != nil {
		return emi.SMSMessage{}, err
	}
	if !ok {
		return emi.SMSMessage{}, emi.ErrRateLimited.WithDetail("the PIN of this card was sent %d times in 24 hours", s.cfg.PINSMSPerDay).
			Wrap(kernel.RetryAfter(retry))
	}
	release := func() { _ = s.cfg.Limits.Release(ctx, pinSMSScope, c.Token, now) }
	pin, err := s.openPIN(ctx, c.Token)
	if err != nil {
		release()
		return emi.SMSMessage{}, err
	}
	text := "Your card ending " + c.Last4 + " has PIN " + pin + ". Never share it."
	masked := strings.Replace(text, " "+pin+".", " "+strings.Repeat("•", len(pin))+".", 1)
	cardToken := c.Token
	m := emi.SMSMessage{PartnerID: c.PartnerID, Card: &cardToken, To: to, TextMasked: masked, Provider: s.sms.Name(),
		Status: "sent", CreatedAt: now}
	// The disclosure is audited before the PIN leaves emi: if the audit
	// row cannot be written, nothing is sent. A gateway refusal is
	// recorded after (outcome failure), beside the stored message.
	changes := map[string]any{"fields": []string{"pin"}, "channel": "sms", "to": emi.MaskPhone(to), "provider": m.Provider}
	if reason != "" {
		changes["reason"] = reason
	}
	if err := s.audit.Record(ctx, emi.AuditEntry{Action: "card.reveal", ResourceType: "card", ResourceToken: c.Token,
		PartnerID: c.PartnerID, Changes: changes}); err != nil {
		release()
		return m, err
	}
	ref, sendErr := s.sms.Send(ctx, to, text)
	m.ProviderRef = ref
	if sendErr != nil {
		m.Status, m.Error = "failed", truncate(sendErr.Error(), 500)
		release()
	}
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.InsertSMS(ctx, m); err != nil {
			return err
		}
		if sendErr == nil {
			return nil
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "card.pin_sms_failed", ResourceType: "card", ResourceToken: c.Token,
			PartnerID: c.PartnerID, Outcome: emi.OutcomeFailure, Changes: map[string]any{"to": emi.MaskPhone(to), "provider": m.Provider}})
	})
	if err != nil {
		return m, err
	}
	if sendErr != nil {
		return m, emi.ErrSMSUnavailable.WithDetail("the SMS gateway refused the message")
	}
	return m, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// SMSMessages lists the texts sent for a card (emi.PermViewAccounts),
// PINs masked.
func (s *Cards) SMSMessages(ctx context.Context, card string) ([]emi.SMSMessage, error) {
	if err := accounts.View.Require(ctx); err != nil {
		return nil, err
	}
	return s.store.SMSMessages(ctx, card, 200)
}

// Revealed card data.
type Revealed struct {
	FirstHalf  string
	SecondHalf string
	CVV        string
	Expiry     string
	PIN        string
	PAN        string
}

// Reveal fields.
const (
	RevealFirstHalf  = "first_half"
	RevealSecondHalf = "second_half"
	RevealPIN        = "pin"
)

// Reveal opens card data for the partner API (card_number halves,
// card_retrieve_pin, contract §6). Each reveal writes exactly one audit row
// naming the fields, never the values; a reveal of another partner's or an
// unknown card writes a "denied" row and answers 12002. A terminated card
// has no CVV2 or PIN any more and answers 12005.
func (s *Cards) Reveal(ctx context.Context, token, what string) (Revealed, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrCardNotFound)
	if err != nil {
		return Revealed{}, err
	}
	fields := map[string][]string{RevealFirstHalf: {"pan_first_half", "cvv"}, RevealSecondHalf: {"pan_second_half", "expiry"}, RevealPIN: {"pin"}}[what]
	if fields == nil {
		return Revealed{}, emi.Internal(errors.New("unknown reveal " + what))
	}
	c, err := s.store.Card(ctx, p.PartnerID, token, false)
	if err != nil {
		if errors.Is(err, emi.ErrCardNotFound) {
			s.denyReveal(ctx, token, fields, "unknown or foreign card")
		}
		return Revealed{}, err
	}
	return s.reveal(ctx, c, fields, "")
}

func (s *Cards) denyReveal(ctx context.Context, token string, fields []string, why string) {
	if !kernel.ValidToken(token) {
		token = ""
	}
	// Best effort outside any transaction: the refusal stands either way.
	_ = s.audit.Record(ctx, emi.AuditEntry{Action: "card.reveal", ResourceType: "card", ResourceToken: token,
		Outcome: emi.OutcomeDenied, Changes: map[string]any{"fields": fields, "why": why}})
}

func (s *Cards) reveal(ctx context.Context, c emi.Card, fields []string, reason string) (Revealed, error) {
	if v := emi.CardRules(c, emi.CardReveal, emi.ByPartner, s.now.At(ctx).UTC()); !v.Allowed {
		s.denyReveal(ctx, c.Token, fields, v.Refusal)
		return Revealed{}, emi.ErrCardInvalidTransition.WithDetail("%s", v.Refusal)
	}
	sealed, err := s.store.Sealed(ctx, c.Token)
	if err != nil {
		return Revealed{}, err
	}
	var out Revealed
	defer func() {
		if err != nil {
			// A value that does not open is an attempt on the card's data
			// all the same: audited as a failure, without any value.
			_ = s.audit.Record(ctx, emi.AuditEntry{Action: "card.reveal", ResourceType: "card", ResourceToken: c.Token,
				PartnerID: c.PartnerID, Outcome: emi.OutcomeFailure, Changes: map[string]any{"fields": fields, "why": "card data does not open"}})
		}
	}()
	for _, f := range fields {
		switch f {
		case "pan_first_half", "pan_second_half", "pan":
			if out.PAN == "" {
				if out.PAN, err = s.open(sealed.PAN, PANContext(c.Token)); err != nil {
					return Revealed{}, err
				}
			}
			half := len(out.PAN) / 2
			out.FirstHalf, out.SecondHalf = out.PAN[:half], out.PAN[half:]
		case "cvv":
			if out.CVV, err = s.open(sealed.CVV, CVVContext(c.Token)); err != nil {
				return Revealed{}, err
			}
		case "pin":
			if out.PIN, err = s.open(sealed.PIN, PINContext(c.Token)); err != nil {
				return Revealed{}, err
			}
		case "expiry":
			out.Expiry = c.Expiry()
		}
	}
	changes := map[string]any{"fields": fields}
	if reason != "" {
		changes["reason"] = reason
	}
	if err := s.audit.Record(ctx, emi.AuditEntry{Action: "card.reveal", ResourceType: "card", ResourceToken: c.Token,
		PartnerID: c.PartnerID, Changes: changes}); err != nil {
		return Revealed{}, err
	}
	// Only the fields asked for leave this function.
	if !slices.Contains(fields, "pan") {
		out.PAN = ""
	}
	if !slices.Contains(fields, "pan_first_half") {
		out.FirstHalf = ""
	}
	if !slices.Contains(fields, "pan_second_half") {
		out.SecondHalf = ""
	}
	return out, nil
}

// openPIN opens a card's sealed PIN (SendPIN, a payment's PIN check).
func (s *Cards) openPIN(ctx context.Context, card string) (string, error) {
	sealed, err := s.store.Sealed(ctx, card)
	if err != nil {
		return "", err
	}
	return s.open(sealed.PIN, PINContext(card))
}

// open opens a sealed card value; a value that does not open (moved from
// another row, or under a removed key) is an internal error, never data.
func (s *Cards) open(sealed []byte, context string) (string, error) {
	if sealed == nil {
		return "", emi.ErrCardInvalidTransition.WithDetail("the value was erased")
	}
	b, err := s.vault.Open(sealed, context)
	if err != nil {
		return "", emi.Internal(errors.New("card data does not open: " + err.Error()))
	}
	return string(b), nil
}

// StepUp re-checks a staff member's password or TOTP code before a
// sensitive action (internal/service.Staff implements it).
type StepUp interface {
	StepUp(ctx context.Context, staffID, secret string) error
}

// revealScope is the rate-limit scope of each staff member's reveals and
// full-PAN searches.
const revealScope = "card.reveal"

// takeReveal counts one reveal (or full-PAN search) against the staff
// member's quota (CardsConfig.RevealQuota per RevealWindow), atomically:
// concurrent attempts never get more than the quota through. When the
// quota is reached it writes a "card.reveal_quota" audit row (denied) and
// returns emi.ErrRevealQuota; the caller's refused attempt is audited by
// the caller.
func (s *Cards) takeReveal(ctx context.Context, staffID, token string, fields []string) error {
	if s.cfg.Limits == nil {
		return emi.Internal(errors.New("card reveals need a rate limiter"))
	}
	ok, retry, err := s.cfg.Limits.Take(ctx, revealScope, staffID, s.cfg.RevealQuota, s.cfg.RevealWindow, s.now.At(ctx).UTC())
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	if !kernel.ValidToken(token) {
		token = ""
	}
	_ = s.audit.Record(ctx, emi.AuditEntry{Action: "card.reveal_quota", ResourceType: "card", ResourceToken: token,
		Outcome: emi.OutcomeDenied, Changes: map[string]any{"fields": fields, "quota": s.cfg.RevealQuota,
			"window": s.cfg.RevealWindow.String(), "retry_after_seconds": kernel.RetryAfter(retry).Seconds()}})
	s.denyReveal(ctx, token, fields, "reveal quota reached")
	return emi.ErrRevealQuota.WithDetail("%d reveals in %s", s.cfg.RevealQuota, s.cfg.RevealWindow)
}

// StaffReveal opens a card's full PAN for customer service
// (emi.PermRevealCardData): the staff member enters a current TOTP code and
// gives a reason; the reveal is audited like the API's. A step-up is good
// for one reveal: a TOTP code works once, whereas a password could be sent
// again with every request of a script, so a password is refused here. Each
// reveal counts against the staff member's quota (takeReveal: 10 an hour by
// default), decided atomically.
func (s *Cards) StaffReveal(ctx context.Context, stepUp StepUp, token, secret, reason string) (Revealed, error) {
	p, _ := emi.PrincipalFrom(ctx)
	fields := []string{"pan"}
	if err := kernel.Require(ctx, ActionPermission(emi.CardReveal)); err != nil {
		s.denyReveal(ctx, token, fields, "role may not reveal card data")
		return Revealed{}, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return Revealed{}, emi.ErrCardValidation.Field("reason", "is required: say why you need the card number")
	}
	if len(reason) > 1000 {
		return Revealed{}, emi.ErrCardValidation.Field("reason", "must be at most 1000 characters")
	}
	code := strings.ReplaceAll(strings.TrimSpace(secret), " ", "")
	if len(code) != 6 || !kernel.AllDigits(code) {
		s.denyReveal(ctx, token, fields, "no one-time code")
		return Revealed{}, emi.ErrCardValidation.Field("secret", "must be a current 6-digit TOTP code: each code confirms one reveal")
	}
	if err := stepUp.StepUp(ctx, p.ActorID, code); err != nil {
		s.denyReveal(ctx, token, fields, "TOTP code not confirmed")
		return Revealed{}, err
	}
	if err := s.takeReveal(ctx, p.ActorID, token, fields); err != nil {
		return Revealed{}, err
	}
	c, err := s.store.Card(ctx, "", token, false)
	if err != nil {
		return Revealed{}, err
	}
	return s.reveal(ctx, c, fields, reason)
}

// Wallet provisioning.

// WalletProvision is what a wallet app needs to add a card: the wallet
// token and, in the sandbox, a payload signed by emi standing in for the
// token service provider's encrypted pass data.
type WalletProvision struct {
	WalletToken emi.WalletToken
	Payload     string
	Signature   string
}

// ProvisionWallet adds the card to a mobile wallet (added operation
// card_wallet_provision) where the program allows push provisioning
// (12008); the card must be active, activated and its account active
// (12005). The payload carries no card data: the wallet app forwards it
// to the token service, which asks emi for the card by token.
func (s *Cards) ProvisionWallet(ctx context.Context, token, wallet, device string) (WalletProvision, error) {
	a, err := s.actor(ctx, ActionPermission(emi.CardProvision))
	if err != nil {
		return WalletProvision{}, err
	}
	if wallet != "apple_pay" && wallet != "google_pay" {
		return WalletProvision{}, emi.ErrCardValidation.Field("wallet", "must be apple_pay or google_pay")
	}
	if len(device) > 100 {
		return WalletProvision{}, emi.ErrCardValidation.Field("device_name", "must be at most 100 characters")
	}
	var out WalletProvision
	_, err = s.change(ctx, a, token, emi.CardProvision, func(ctx context.Context, c *emi.Card) error {
		prog, err := s.accounts.Program(ctx, c.Program)
		if err != nil {
			return err
		}
		if why := programRefuses(prog, emi.CardProvision); why != "" {
			return emi.ErrCardProgramMismatch.WithDetail("%s", why)
		}
		w := emi.WalletToken{Token: kernel.NewToken(), Card: c.Token, Wallet: wallet, DeviceName: strings.TrimSpace(device), CreatedAt: s.now.At(ctx).UTC()}
		if err := s.store.InsertWalletToken(ctx, w); err != nil {
			return err
		}
		payload, _ := json.Marshal(map[string]any{"card": c.Token, "wallet_token": w.Token, "wallet": wallet,
			"last4": c.Last4, "expiry": c.Expiry(), "issued_at": w.CreatedAt.Unix()})
		out.WalletToken = w
		out.Payload = base64.RawURLEncoding.EncodeToString(payload)
		out.Signature = base64.RawURLEncoding.EncodeToString(s.vault.Lookup(walletPayloadContext, []byte(out.Payload)))
		return s.history(ctx, a, *c, "wallet_added", "", wallet, "", "", nil)
	})
	return out, err
}

// walletPayloadContext keys the sandbox payload signature: an HMAC-SHA256
// under the vault's lookup key, in a context of its own.
const walletPayloadContext = "cards.wallet_payload"

// VerifyWalletPayload checks a sandbox provisioning payload's signature.
func (s *Cards) VerifyWalletPayload(payload, signature string) bool {
	sig, err := base64.RawURLEncoding.DecodeString(signature)
	if err != nil {
		return false
	}
	for _, want := range s.vault.LookupAll(walletPayloadContext, []byte(payload)) {
		if hmac.Equal(sig, want) {
			return true
		}
	}
	return false
}

// prefixFields puts a path prefix on the field errors of a validation
// error.
func prefixFields(err error, prefix string) error {
	e := emi.AsError(err)
	if e.Kind != emi.KindInvalid {
		return err
	}
	var bad kernel.Problems
	_ = bad.AddErr(prefix, err)
	c := *e
	c.Fields = bad // in place of the unprefixed ones, not beside them
	return &c
}
