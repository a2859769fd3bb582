package emi

import "time"

// CardAction is something done to a card: a change by a partner or by
// staff, a disclosure, or a payment.
type CardAction string

// The card actions of the state table (CardRules). Each is one partner
// operation, one back-office form, or both.
const (
	CardActivate  CardAction = "activate"         // card_activate
	CardBlock     CardAction = "block"            // card_status inactive; staff: block with a reason code
	CardUnblock   CardAction = "unblock"          // card_status active
	CardTerminate CardAction = "terminate"        // card_terminate
	CardReplace   CardAction = "replace"          // staff: replacement of a terminated card
	CardConvert   CardAction = "convert"          // card_convert
	CardAssign    CardAction = "assign"           // card_assign
	CardSetGroups CardAction = "groups"           // card_groups
	CardSet3DS    CardAction = "3ds"              // card_3ds_enrol, _update, _remove
	CardResetPIN  CardAction = "pin_reset"        // card_reset_pin (the wrong-PIN and CVV counters)
	CardSendPIN   CardAction = "pin_send"         // card_send_pin
	CardReveal    CardAction = "reveal"           // card data shown to a partner or to staff
	CardProvision CardAction = "wallet_provision" // card_wallet_provision
	CardPay       CardAction = "pay"              // an authorization at a merchant or ATM
)

// CardActions lists every action of the table, in the order the back
// office offers them.
var CardActions = []CardAction{CardBlock, CardUnblock, CardResetPIN, CardSendPIN, CardSet3DS, CardSetGroups,
	CardTerminate, CardActivate, CardConvert, CardAssign, CardReplace, CardReveal, CardProvision, CardPay}

// CardParty says who acts on a card: the rules differ for a few actions
// (only emi lifts a block it made on suspicion of fraud).
type CardParty int

// The parties of CardRules.
const (
	ByPartner CardParty = iota
	ByStaff
	ByNetwork // a payment (CardPay)
)

// CardVerdict is the state table's answer for one card, one action and
// one party.
type CardVerdict struct {
	Allowed bool
	// Next is the card's status once the action is done (its status when
	// the action does not change it).
	Next string
	// Refusal says why not, in words the partner or the staff member can
	// act on ("" when allowed).
	Refusal string
	// Decline is a refused payment's authorization reason code
	// (Reason…; CardPay only).
	Decline string
	// NoOp: allowed, and changes nothing (unblocking an active card: the
	// API accepts it; the back office offers no such button).
	NoOp bool
}

// cardCell is one cell of the table: next is the status the action leads
// to ("" keeps the status); refuse, when set, refuses the action in this
// status whatever else holds; noop marks an allowed action that changes
// nothing; check, when set, looks at the card's other
// fields (activation, type, account, block reason, expiry) and returns a
// refusal, or "" to allow.
type cardCell struct {
	noop   bool
	next   string
	refuse func(c Card) string
	check  func(c Card, by CardParty, now time.Time) string
}

// cardStatusRow is a status's row: its cells, and what the status means
// for the card's wallet tokens and whether anything may change any more.
type cardStatusRow struct {
	cells  map[CardAction]cardCell
	wallet string
	final  bool
}

// terminatedRefusal is the refusal of any change to a terminated card,
// naming why it was terminated when it was reported lost or stolen.
func terminatedRefusal(c Card) string {
	if BlockTerminates(c.StatusReason) {
		return "the card was reported " + BlockReasonLabel(c.StatusReason) +
			": it is terminated and can never be unblocked; issue a replacement instead"
	}
	return "the card is terminated"
}

func refuseAlways(why string) func(Card) string { return func(Card) string { return why } }

// The checks shared by the active and inactive rows.
var (
	notActivated = func(c Card, _ CardParty, _ time.Time) string {
		if c.Activated {
			return "the card is already activated"
		}
		return ""
	}
	virtualOnly = func(c Card, _ CardParty, _ time.Time) string {
		if c.Type != CardVirtual {
			return "only a virtual card can be converted"
		}
		return ""
	}
	noAccountYet = func(c Card, _ CardParty, _ time.Time) string {
		if c.Account != "" {
			return "the card is already assigned to an account"
		}
		return ""
	}
	notTerminatedForReplace = refuseAlways("only a terminated card is replaced: block it as lost or stolen, or terminate it, first")
	// payable is the card's side of a payment; the account's status is
	// read under the payment's balance lock (Authorizations), so a block
	// of the account that commits first is seen.
	payable = func(c Card, _ CardParty, now time.Time) string {
		switch {
		case c.Account == "":
			return "the card has no account to pay from"
		case !c.Activated:
			return "the card is not activated"
		case c.Expired(now):
			return "the card is past its expiry month"
		}
		return ""
	}
	provisionable = func(c Card, by CardParty, now time.Time) string {
		if why := payable(c, by, now); why != "" {
			return why
		}
		if c.AccountStatus != AccountActive {
			return "the card's account is not active"
		}
		return ""
	}
)

// cardTable is the card state table: status × action → allowed, next
// status, refusal. Every card rule of the service, the authorizations, the
// wallets and the back office reads it (CardRules); an action missing from
// a row is refused in that status.
var cardTable = map[string]cardStatusRow{
	CardActive: {wallet: WalletActive, cells: liveRow(map[CardAction]cardCell{
		CardBlock:     {next: CardInactive},
		CardUnblock:   {noop: true}, // setting the status a card has is accepted and changes nothing
		CardProvision: {check: provisionable},
		CardPay:       {check: payable},
	})},
	CardInactive: {wallet: WalletSuspended, cells: liveRow(map[CardAction]cardCell{
		CardBlock: {}, // blocked again, for another reason: recorded, status kept
		CardUnblock: {next: CardActive, check: func(c Card, by CardParty, _ time.Time) string {
			// emi blocked the card because it suspects fraud: only emi,
			// having investigated, lifts that block (as issuers do). A
			// partner could otherwise undo a risk decision with one
			// card_status call, or be talked into it by the fraudster.
			if by != ByStaff && c.StatusReason == BlockFraudSuspected {
				return "emi blocked this card on suspicion of fraud: only emi's customer service can unblock it"
			}
			return ""
		}},
		CardProvision: {refuse: refuseAlways("the card is blocked")},
		CardPay:       {refuse: refuseAlways("the card is blocked")},
	})},
	CardTerminated: {wallet: WalletDeleted, final: true, cells: map[CardAction]cardCell{
		CardReplace: {check: func(c Card, _ CardParty, _ time.Time) string {
			switch {
			case c.ReplacedBy != "":
				return "the card was already replaced"
			case c.Account == "":
				return "the card has no account: the partner issues a new card (card_create)"
			}
			return ""
		}},
		CardReveal: {refuse: refuseAlways("the card is terminated: its data is no longer revealed")},
	}},
}

// liveRow is a row of a status that is not final: the cells active and
// inactive share, with the status's own.
func liveRow(own map[CardAction]cardCell) map[CardAction]cardCell {
	row := map[CardAction]cardCell{
		CardActivate:  {check: notActivated},
		CardTerminate: {next: CardTerminated},
		CardReplace:   {refuse: notTerminatedForReplace},
		CardConvert:   {check: virtualOnly},
		CardAssign:    {check: noAccountYet},
		CardSetGroups: {},
		CardSet3DS:    {},
		CardResetPIN:  {},
		CardSendPIN:   {},
		CardReveal:    {},
	}
	for act, cell := range own {
		row[act] = cell
	}
	return row
}

// CardRules answers whether party by may do act to card c at now, the
// status it leads to, and why not. A payment refused gets its decline
// reason code as well.
func CardRules(c Card, act CardAction, by CardParty, now time.Time) CardVerdict {
	row, ok := cardTable[c.Status]
	if !ok {
		return CardVerdict{Next: c.Status, Refusal: "the card's status " + c.Status + " is unknown", Decline: ReasonCardNotUsable}
	}
	v := CardVerdict{Next: c.Status}
	cell, ok := row.cells[act]
	switch {
	case !ok:
		v.Refusal = terminatedRefusal(c)
		if c.Status != CardTerminated {
			v.Refusal = "not possible while the card is " + c.Status
		}
	case cell.refuse != nil:
		v.Refusal = cell.refuse(c)
	case cell.check != nil:
		v.Refusal = cell.check(c, by, now)
	}
	if v.Refusal != "" {
		if act == CardPay {
			v.Decline = payDecline(c, now)
		}
		return v
	}
	v.Allowed, v.NoOp = true, cell.noop
	if cell.next != "" {
		v.Next = cell.next
	}
	return v
}

// payDecline is a refused payment's reason code: the network's codes
// distinguish a card that can never pay (14), one restricted for now (62),
// and an expired one (54); a blocked account (78) is the caller's to see.
func payDecline(c Card, now time.Time) string {
	switch {
	case c.Status == CardTerminated || c.Account == "":
		return ReasonCardNotUsable
	case c.Status != CardActive || !c.Activated:
		return ReasonCardRestricted
	}
	return ReasonCardExpired
}

// CardFinal reports whether nothing about the card may change any more
// (its status's row is final: terminated).
func CardFinal(c Card) bool { return cardTable[c.Status].final }

// CardCanPay reports whether the card may be used to pay at now (contract
// §7): the table allows the payment and the card's account is active.
func CardCanPay(c Card, now time.Time) bool {
	return CardRules(c, CardPay, ByNetwork, now).Allowed && c.AccountStatus == AccountActive
}

// CardWalletStatus is the state of a card's wallet tokens: its status's
// (deleted once terminated, suspended while blocked), and suspended while
// its account is not active.
func CardWalletStatus(c Card) string {
	w := cardTable[c.Status].wallet
	if w == WalletActive && c.AccountStatus != "" && c.AccountStatus != AccountActive {
		return WalletSuspended
	}
	if w == "" {
		return WalletSuspended
	}
	return w
}
