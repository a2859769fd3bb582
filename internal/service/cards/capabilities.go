package cards

import (
	"context"

	"emi/internal/emi"
)

// actionPermission is the staff permission each card action needs; a
// partner acts on its own cards with its key. The back office guards its
// card routes with it (ActionPermission) and the service checks it
// (actorFor), so the two cannot drift.
var actionPermission = map[emi.CardAction]emi.Permission{
	emi.CardActivate:  emi.PermManageCards,
	emi.CardBlock:     emi.PermManageCards,
	emi.CardUnblock:   emi.PermManageCards,
	emi.CardTerminate: emi.PermManageCards,
	emi.CardReplace:   emi.PermManageCards,
	emi.CardConvert:   emi.PermManageCards,
	emi.CardAssign:    emi.PermManageCards,
	emi.CardSetGroups: emi.PermManageCards,
	emi.CardSet3DS:    emi.PermManageCards,
	emi.CardResetPIN:  emi.PermManageCards,
	emi.CardSendPIN:   emi.PermManageCards,
	emi.CardReveal:    emi.PermRevealCardData,
	emi.CardProvision: emi.PermManageCards,
	emi.CardPay:       emi.PermManageCards, // the sandbox's payment simulator
}

// ActionPermission is the staff permission a card action needs.
func ActionPermission(act emi.CardAction) emi.Permission {
	if p, ok := actionPermission[act]; ok {
		return p
	}
	return emi.PermManageCards
}

// staffOnly are the actions only staff take: a partner issues a new card
// with card_create rather than a replacement.
var staffOnly = map[emi.CardAction]bool{emi.CardReplace: true}

// Capability is the answer for one action: allowed, or refused and why.
type Capability struct {
	Allowed bool
	Reason  string
}

// CardCapabilities answers "what may this person do to this card, now,
// and if not, why?" for the signed-in staff member: every action of
// emi.CardActions that a person takes (not a payment), from their
// permissions, the card state table and the card's program. The back
// office shows the forms of the allowed ones and nothing else; the
// service refuses the others whatever is posted.
type CardCapabilities struct {
	// Final: nothing about the card may change any more (terminated).
	Final bool
	// Manages: the person's role changes cards at all (their page shows
	// the card's actions, or why there are none).
	Manages bool
	Actions map[emi.CardAction]Capability
}

// Can reports whether act is allowed.
func (c CardCapabilities) Can(act emi.CardAction) bool { return c.Actions[act].Allowed }

// Capabilities answers for the staff member of ctx and the card of v.
func (s *Cards) Capabilities(ctx context.Context, v CardView) CardCapabilities {
	p, _ := emi.PrincipalFrom(ctx)
	out := CardCapabilities{Final: emi.CardFinal(v.Card), Manages: p.Can(emi.PermManageCards),
		Actions: map[emi.CardAction]Capability{}}
	now := s.now.At(ctx).UTC()
	for _, act := range emi.CardActions {
		if act == emi.CardPay {
			continue
		}
		switch {
		case !p.Can(ActionPermission(act)):
			out.Actions[act] = Capability{Reason: "your role does not include " + string(ActionPermission(act))}
			continue
		case staffOnly[act] && p.Type != emi.ActorStaff:
			out.Actions[act] = Capability{Reason: "staff only"}
			continue
		}
		verdict := emi.CardRules(v.Card, act, emi.ByStaff, now)
		if !verdict.Allowed {
			out.Actions[act] = Capability{Reason: verdict.Refusal}
			continue
		}
		if verdict.NoOp {
			out.Actions[act] = Capability{Reason: "nothing to do: the card is already " + v.Status}
			continue
		}
		if why := programRefuses(v.Program, act); why != "" {
			out.Actions[act] = Capability{Reason: why}
			continue
		}
		out.Actions[act] = Capability{Allowed: true}
	}
	return out
}

// programRefuses is the card program's say on an action the state table
// allows ("" when the program allows it): plastic cards (to convert to),
// PINs by SMS and wallet provisioning are per program.
func programRefuses(prog emi.Program, act emi.CardAction) string {
	switch {
	case act == emi.CardConvert:
		if err := programAllows(prog, emi.CardPlastic); err != nil {
			return emi.AsError(err).Detail
		}
	case act == emi.CardSendPIN && !prog.PINBySMS:
		return "program " + prog.Code + " does not send PINs by SMS"
	case act == emi.CardProvision && !prog.WalletProvisioning:
		return "program " + prog.Code + " does not allow push provisioning"
	}
	return ""
}
