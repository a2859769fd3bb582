package emi_test

import (
	"strings"
	"testing"
	"time"

	"emi/internal/emi"
)

var rulesNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// card is an active, activated, virtual card of an active account that
// expires in a year; each case changes what it is about.
func card(change func(c *emi.Card)) emi.Card {
	c := emi.Card{Token: "c", Type: emi.CardVirtual, Status: emi.CardActive, Activated: true, Account: "a",
		AccountStatus: emi.AccountActive, ExpiryMonth: 11, ExpiryYear: 2027}
	if change != nil {
		change(&c)
	}
	return c
}

// TestCardRulesRefusals: each refusal of the card state table, the state
// that causes it and the words it says, for the party it applies to.
func TestCardRulesRefusals(t *testing.T) {
	inactive := func(c *emi.Card) { c.Status = emi.CardInactive }
	terminated := func(c *emi.Card) { c.Status = emi.CardTerminated }
	cases := []struct {
		name string
		c    emi.Card
		act  emi.CardAction
		by   emi.CardParty
		says string
	}{
		{"activate an activated card", card(nil), emi.CardActivate, emi.ByPartner, "the card is already activated"},
		{"convert a plastic card", card(func(c *emi.Card) { c.Type = emi.CardPlastic }), emi.CardConvert, emi.ByStaff, "only a virtual card can be converted"},
		{"assign an assigned card", card(nil), emi.CardAssign, emi.ByPartner, "the card is already assigned to an account"},
		{"replace an active card", card(nil), emi.CardReplace, emi.ByStaff, "only a terminated card is replaced"},
		{"replace a blocked card", card(inactive), emi.CardReplace, emi.ByStaff, "only a terminated card is replaced"},
		{"a partner unblocks emi's fraud block", card(func(c *emi.Card) { inactive(c); c.StatusReason = emi.BlockFraudSuspected }),
			emi.CardUnblock, emi.ByPartner, "only emi's customer service can unblock it"},
		{"change a terminated card", card(terminated), emi.CardSetGroups, emi.ByStaff, "the card is terminated"},
		{"unblock a card reported stolen", card(func(c *emi.Card) { terminated(c); c.StatusReason = emi.BlockStolen }),
			emi.CardUnblock, emi.ByStaff, "the card was reported stolen: it is terminated and can never be unblocked"},
		{"reveal a terminated card", card(terminated), emi.CardReveal, emi.ByPartner, "its data is no longer revealed"},
		{"replace a replaced card", card(func(c *emi.Card) { terminated(c); c.ReplacedBy = "r" }), emi.CardReplace, emi.ByStaff, "the card was already replaced"},
		{"replace a card without an account", card(func(c *emi.Card) { terminated(c); c.Account = "" }), emi.CardReplace, emi.ByStaff,
			"the card has no account: the partner issues a new card"},
		{"provision a blocked card", card(inactive), emi.CardProvision, emi.ByPartner, "the card is blocked"},
		{"provision a card of a blocked account", card(func(c *emi.Card) { c.AccountStatus = emi.AccountBlocked }), emi.CardProvision,
			emi.ByPartner, "the card's account is not active"},
		{"provision a card not activated", card(func(c *emi.Card) { c.Activated = false }), emi.CardProvision, emi.ByPartner, "the card is not activated"},
		{"pay with an expired card", card(func(c *emi.Card) { c.ExpiryYear = 2026; c.ExpiryMonth = 10 }), emi.CardPay, emi.ByNetwork,
			"the card is past its expiry month"},
		{"pay with a card without an account", card(func(c *emi.Card) { c.Account = "" }), emi.CardPay, emi.ByNetwork, "no account to pay from"},
		{"unknown status", card(func(c *emi.Card) { c.Status = "lost" }), emi.CardBlock, emi.ByStaff, "the card's status lost is unknown"},
	}
	for _, tc := range cases {
		v := emi.CardRules(tc.c, tc.act, tc.by, rulesNow)
		if v.Allowed || !strings.Contains(v.Refusal, tc.says) {
			t.Errorf("%s: allowed %v, refusal %q; want refused with %q", tc.name, v.Allowed, v.Refusal, tc.says)
		}
		if v.Next != tc.c.Status {
			t.Errorf("%s: a refusal leads to %q, want the card's status %q", tc.name, v.Next, tc.c.Status)
		}
	}
	// The fraud block is the partner's only: staff lift it.
	fraud := card(func(c *emi.Card) { inactive(c); c.StatusReason = emi.BlockFraudSuspected })
	if v := emi.CardRules(fraud, emi.CardUnblock, emi.ByStaff, rulesNow); !v.Allowed || v.Next != emi.CardActive {
		t.Errorf("staff unblock a fraud block: %+v", v)
	}
}

// TestCardRulesTransitions: where each status change leads.
func TestCardRulesTransitions(t *testing.T) {
	for _, tc := range []struct {
		from string
		act  emi.CardAction
		next string
		noop bool
	}{
		{emi.CardActive, emi.CardBlock, emi.CardInactive, false},
		{emi.CardActive, emi.CardTerminate, emi.CardTerminated, false},
		{emi.CardActive, emi.CardUnblock, emi.CardActive, true},
		{emi.CardInactive, emi.CardUnblock, emi.CardActive, false},
		{emi.CardInactive, emi.CardBlock, emi.CardInactive, false},
		{emi.CardInactive, emi.CardTerminate, emi.CardTerminated, false},
		{emi.CardActive, emi.CardSetGroups, emi.CardActive, false},
		{emi.CardTerminated, emi.CardReplace, emi.CardTerminated, false},
	} {
		v := emi.CardRules(card(func(c *emi.Card) { c.Status = tc.from }), tc.act, emi.ByStaff, rulesNow)
		if !v.Allowed || v.Next != tc.next || v.NoOp != tc.noop {
			t.Errorf("%s × %s: %+v, want allowed, next %s, no-op %v", tc.from, tc.act, v, tc.next, tc.noop)
		}
	}
	// Terminated is final: every action but a replacement is refused.
	dead := card(func(c *emi.Card) { c.Status = emi.CardTerminated })
	if !emi.CardFinal(dead) || emi.CardFinal(card(nil)) {
		t.Error("CardFinal: only a terminated card is final")
	}
	for _, act := range emi.CardActions {
		if v := emi.CardRules(dead, act, emi.ByStaff, rulesNow); v.Allowed != (act == emi.CardReplace) {
			t.Errorf("terminated × %s: allowed %v", act, v.Allowed)
		}
	}
	// A card that is not terminated allows every change but those about
	// its other fields: the rows of active and inactive are complete.
	for _, st := range []string{emi.CardActive, emi.CardInactive} {
		c := card(func(c *emi.Card) { c.Status = st; c.Activated = false; c.Account = "" })
		for _, act := range emi.CardActions {
			v := emi.CardRules(c, act, emi.ByStaff, rulesNow)
			if strings.HasPrefix(v.Refusal, "not possible while") {
				t.Errorf("%s × %s has no cell in the table", st, act)
			}
		}
	}
}

// TestCardPaymentDeclines: a refused payment carries the network's code,
// and CanPay and the wallet status follow the same table.
func TestCardPaymentDeclines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		c       emi.Card
		decline string
		wallet  string
	}{
		{"terminated", card(func(c *emi.Card) { c.Status = emi.CardTerminated }), emi.ReasonCardNotUsable, emi.WalletDeleted},
		{"no account", card(func(c *emi.Card) { c.Account = ""; c.AccountStatus = "" }), emi.ReasonCardNotUsable, emi.WalletActive},
		{"blocked", card(func(c *emi.Card) { c.Status = emi.CardInactive }), emi.ReasonCardRestricted, emi.WalletSuspended},
		{"not activated", card(func(c *emi.Card) { c.Activated = false }), emi.ReasonCardRestricted, emi.WalletActive},
		{"expired", card(func(c *emi.Card) { c.ExpiryYear, c.ExpiryMonth = 2026, 10 }), emi.ReasonCardExpired, emi.WalletActive},
	} {
		v := emi.CardRules(tc.c, emi.CardPay, emi.ByNetwork, rulesNow)
		if v.Allowed || v.Decline != tc.decline {
			t.Errorf("%s: %+v, want declined %s", tc.name, v, tc.decline)
		}
		if tc.c.CanPay(rulesNow) {
			t.Errorf("%s: CanPay", tc.name)
		}
		if got := tc.c.WalletStatus(); got != tc.wallet {
			t.Errorf("%s: wallet %s, want %s", tc.name, got, tc.wallet)
		}
	}
	ok := card(nil)
	if v := emi.CardRules(ok, emi.CardPay, emi.ByNetwork, rulesNow); !v.Allowed || v.Decline != "" || !ok.CanPay(rulesNow) {
		t.Errorf("a usable card: %+v", v)
	}
	// The account is the payment's to read under its lock: the table
	// allows, CanPay and the wallet see the blocked account.
	blockedAccount := card(func(c *emi.Card) { c.AccountStatus = emi.AccountBlocked })
	if !emi.CardRules(blockedAccount, emi.CardPay, emi.ByNetwork, rulesNow).Allowed || blockedAccount.CanPay(rulesNow) ||
		blockedAccount.WalletStatus() != emi.WalletSuspended {
		t.Error("a card of a blocked account: the table decides the card's side only; CanPay and the wallet see the account")
	}
}
