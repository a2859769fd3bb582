package cards_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	cardssvc "emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/servicetest"
)

// blockApp is the application with a partner whose own merchant holds an
// EUR account with a virtual card, and staff contexts.
type blockApp struct {
	env              *apptest.Env
	p                *apptest.Partner
	cs, cs2, auditor context.Context
	csID             string
	account          string
	card             emi.Card
}

func newBlockApp(t *testing.T) *blockApp {
	t.Helper()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	b := &blockApp{env: env, p: env.NewPartner(t, emi.PartnerCreate{Name: "Block Partner " + kernel.NewToken()[24:]}), csID: kernel.NewToken()}
	b.cs = servicetest.As(emi.StaffUser{ID: b.csID, Roles: []emi.Role{emi.RoleCustomerService}})
	b.cs2 = servicetest.As(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleCustomerService}})
	b.auditor = servicetest.As(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleAuditor}})
	acc, err := env.App.Accounts.Create(b.partner(), emi.AccountCreate{Program: "account_eur", Merchant: b.p.Merchant})
	if err != nil {
		t.Fatal(err)
	}
	b.account = acc.Token
	b.card = b.issue(t)
	return b
}

func (b *blockApp) partner() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: b.p.KeyID, PartnerID: b.p.ID,
		MasterMerchant: b.p.Merchant})
}

// issue issues a virtual card on the account as the partner, with a 3DS
// enrolment and an alias the replacement must keep.
func (b *blockApp) issue(t *testing.T) emi.Card {
	t.Helper()
	c, err := b.env.App.Cards.Create(b.partner(), emi.CardCreate{Account: b.account, Type: emi.CardVirtual, Alias: "travel",
		ThreeDS: &emi.ThreeDSEnrol{Biometric: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b *blockApp) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := b.env.App.DB.Get(&n, q, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func (b *blockApp) get(t *testing.T, token string) emi.Card {
	t.Helper()
	c, err := b.env.App.Cards.Details(b.cs, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refusedOn checks err is a validation error on field saying says.
func refusedOn(t *testing.T, what string, err error, field, says string) {
	t.Helper()
	e := emi.AsError(err)
	if !errors.Is(err, emi.ErrCardValidation) {
		t.Fatalf("%s: %v, want a validation error", what, err)
	}
	for _, f := range e.Fields {
		if f.Field == field && strings.Contains(f.Message, says) {
			return
		}
	}
	t.Fatalf("%s: fields %v, want %s %q", what, e.Fields, field, says)
}

// TestCardBlockReasonRules: a staff block needs a known reason code (other
// with a note); the code is stored on the card and its history, and sent
// in the event and the audit row. Refused blocks change nothing.
func TestCardBlockReasonRules(t *testing.T) {
	t.Parallel()
	b := newBlockApp(t)
	cards := b.env.App.Cards
	tok := b.card.Token
	history := func() int { return b.count(t, `SELECT count(*) FROM card_history WHERE card = $1`, tok) }
	before := history()

	_, err := cards.Block(b.cs, tok, "", "Customer called")
	refusedOn(t, "no reason code", err, "reason_code", "is required")
	_, err = cards.Block(b.cs, tok, "misplaced", "Customer called")
	refusedOn(t, "unknown reason code", err, "reason_code", "must be one of lost, stolen, fraud_suspected, customer_request, other")
	_, err = cards.Block(b.cs, tok, "LOST", "")
	refusedOn(t, "a code in capitals", err, "reason_code", "must be one of")
	_, err = cards.Block(b.cs, tok, emi.BlockOther, "  ")
	refusedOn(t, "other without a note", err, "reason", "is required with the reason other")
	_, err = cards.Block(b.cs, tok, emi.BlockCustomerRequest, strings.Repeat("x", 1001))
	refusedOn(t, "a note too long", err, "reason", "at most 1000")
	// A staff block through card_status (status inactive) without a code
	// is refused the same way: no way around the reason code.
	_, err = cards.SetStatus(b.cs, tok, emi.CardInactive, "Customer called")
	refusedOn(t, "staff card_status inactive", err, "reason_code", "is required")
	if _, err := cards.Block(b.partner(), tok, emi.BlockLost, ""); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("a partner's block with a code: %v, want forbidden (reason codes are the back office's)", err)
	}
	if _, err := cards.Block(b.auditor, tok, emi.BlockCustomerRequest, ""); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("an auditor's block: %v", err)
	}
	if c := b.get(t, tok); c.Status != emi.CardActive || c.StatusReason != "" || history() != before {
		t.Fatalf("after refused blocks: %s %q, %d history entries (was %d)", c.Status, c.StatusReason, history(), before)
	}

	// A block with a code and no note (allowed but for other).
	c, err := cards.Block(b.cs, tok, emi.BlockCustomerRequest, "")
	if err != nil || c.Status != emi.CardInactive || c.StatusReason != emi.BlockCustomerRequest {
		t.Fatalf("customer_request block: %+v %v", c.StatusReason, err)
	}
	// Blocked again for another reason: recorded, without a second event.
	c, err = cards.Block(b.cs, tok, emi.BlockFraudSuspected, "Two declined payments abroad")
	if err != nil || c.Status != emi.CardInactive || c.StatusReason != emi.BlockFraudSuspected {
		t.Fatalf("fraud_suspected block: %q %v", c.StatusReason, err)
	}
	h, err := cards.Get(b.cs, tok)
	if err != nil {
		t.Fatal(err)
	}
	last := h.History[len(h.History)-1]
	if last.ReasonCode != emi.BlockFraudSuspected || last.Reason != "Two declined payments abroad" || last.To != emi.CardInactive || last.Actor != b.csID {
		t.Fatalf("history entry %+v", last)
	}
	if n := b.count(t, `SELECT count(*) FROM events WHERE type = $1 AND resource_token = $2 AND data->>'status' = 'inactive'
		AND data->>'reason_code' = 'customer_request' AND data->>'previous_status' = 'active'`, emi.EventCardStatusChanged, tok); n != 1 {
		t.Fatalf("%d card.status_changed events with reason_code customer_request", n)
	}
	if n := b.count(t, `SELECT count(*) FROM events WHERE type = $1 AND resource_token = $2`, emi.EventCardStatusChanged, tok); n != 1 {
		t.Fatalf("%d card.status_changed events: a block of an inactive card tells the partner nothing new", n)
	}
	if n := b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'card.status' AND resource_token = $1 AND actor_id = $2
		AND changes->>'reason_code' = 'fraud_suspected' AND changes->>'reason' = 'Two declined payments abroad'`, tok, b.csID); n != 1 {
		t.Fatalf("%d audit rows of the fraud_suspected block", n)
	}
	// A partner's repeated inactive keeps the staff reason; its unblock
	// clears it.
	if c, err := cards.SetStatus(b.partner(), tok, emi.CardInactive, ""); err != nil || c.StatusReason != emi.BlockFraudSuspected {
		t.Fatalf("partner inactive on a blocked card: %q %v", c.StatusReason, err)
	}
	if c, err := cards.SetStatus(b.cs, tok, emi.CardActive, ""); err != nil || c.Status != emi.CardActive || c.StatusReason != "" {
		t.Fatalf("unblock: %s %q %v", c.Status, c.StatusReason, err)
	}
}

// TestCardLostOrStolenTerminates: lost and stolen terminate the card at
// once (CVV2 and PIN erased, the event says terminated with the code), and
// no one can unblock it afterwards, neither staff nor the partner API.
func TestCardLostOrStolenTerminates(t *testing.T) {
	t.Parallel()
	b := newBlockApp(t)
	cards := b.env.App.Cards
	tok := b.card.Token
	c, err := cards.Block(b.cs, tok, emi.BlockStolen, "Bag stolen on the tram")
	if err != nil || c.Status != emi.CardTerminated || c.StatusReason != emi.BlockStolen || c.TerminatedAt == nil {
		t.Fatalf("stolen: %s %q %v", c.Status, c.StatusReason, err)
	}
	if n := b.count(t, `SELECT count(*) FROM cards WHERE token = $1 AND cvv_sealed IS NULL AND pin_sealed IS NULL`, tok); n != 1 {
		t.Fatal("the stolen card keeps its CVV2 or PIN")
	}
	if n := b.count(t, `SELECT count(*) FROM events WHERE type = $1 AND resource_token = $2 AND data->>'status' = 'terminated'
		AND data->>'reason_code' = 'stolen'`, emi.EventCardStatusChanged, tok); n != 1 {
		t.Fatalf("%d card.status_changed events (terminated, stolen)", n)
	}
	if n := b.count(t, `SELECT count(*) FROM card_history WHERE card = $1 AND change = 'status' AND to_value = 'terminated'
		AND reason_code = 'stolen' AND reason = 'Bag stolen on the tram'`, tok); n != 1 {
		t.Fatalf("%d history entries of the stolen block", n)
	}
	for who, ctx := range map[string]context.Context{"staff": b.cs, "another staff member": b.cs2, "the partner": b.partner()} {
		_, err := cards.SetStatus(ctx, tok, emi.CardActive, "found it")
		if !errors.Is(err, emi.ErrCardInvalidTransition) || !strings.Contains(emi.AsError(err).Detail, "reported stolen") {
			t.Fatalf("unblock of a stolen card by %s: %v", who, err)
		}
	}
	if _, err := cards.Block(b.cs, tok, emi.BlockCustomerRequest, ""); !errors.Is(err, emi.ErrCardInvalidTransition) {
		t.Fatalf("a block of a terminated card: %v", err)
	}
	if c := b.get(t, tok); c.Status != emi.CardTerminated || c.StatusReason != emi.BlockStolen {
		t.Fatalf("after the attempts: %s %q", c.Status, c.StatusReason)
	}
}

// TestCardReplacement: a terminated card is replaced once, on its
// account, with its settings; the new card is linked to the old one,
// audited on both and told to the partner. Refused while the card is not
// terminated, once replaced, and while the account has another card.
func TestCardReplacement(t *testing.T) {
	t.Parallel()
	b := newBlockApp(t)
	cards := b.env.App.Cards
	tok := b.card.Token
	if _, err := cards.Replace(b.cs, tok, "", ""); !errors.Is(err, emi.ErrCardInvalidTransition) {
		t.Fatalf("replace an active card: %v", err)
	}
	if _, err := cards.Block(b.cs, tok, emi.BlockFraudSuspected, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cards.Replace(b.cs, tok, "", ""); !errors.Is(err, emi.ErrCardInvalidTransition) {
		t.Fatalf("replace a blocked (not terminated) card: %v", err)
	}
	if _, err := cards.Block(b.cs, tok, emi.BlockLost, "Lost at the airport"); err != nil {
		t.Fatal(err)
	}
	if _, err := cards.Replace(b.partner(), tok, "", ""); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("a partner's replace: %v", err)
	}
	if _, err := cards.Replace(b.auditor, tok, "", ""); !errors.Is(err, emi.ErrForbidden) {
		t.Fatalf("an auditor's replace: %v", err)
	}
	_, err := cards.Replace(b.cs, tok, "not-a-token", "")
	refusedOn(t, "a bad AML token", err, "aml", "AML check token")

	n, err := cards.Replace(b.cs, tok, "", "Customer asked for a new card")
	if err != nil {
		t.Fatal(err)
	}
	old := b.get(t, tok)
	switch {
	case n.Token == tok || n.Replaces != tok || old.ReplacedBy != n.Token:
		t.Fatalf("links: new %s replaces %q; old replaced by %q", n.Token, n.Replaces, old.ReplacedBy)
	case n.Account != b.account || n.Program != old.Program || n.Type != old.Type || n.Alias != "travel" || !n.ThreeDS.Biometric:
		t.Fatalf("settings not kept: %+v", n)
	case n.Status != emi.CardActive || !n.Activated || n.StatusReason != "":
		t.Fatalf("the replacement is %s, activated %v", n.Status, n.Activated)
	case n.Last4 == old.Last4 && n.First6 == old.First6 && n.Expiry() == old.Expiry():
		t.Fatal("the replacement has the old card's number")
	}
	for k, v := range old.Groups {
		if n.Groups[k] != v {
			t.Fatalf("group %s: %q, want %q", k, n.Groups[k], v)
		}
	}
	if _, err := cards.Reveal(b.partner(), n.Token, cardssvc.RevealPIN); err != nil {
		t.Fatalf("the replacement has no PIN: %v", err)
	}
	if c := b.count(t, `SELECT count(*) FROM events WHERE type = $1 AND resource_token = $2 AND data->>'replaces' = $3
		AND data->>'reason_code' = 'lost'`, emi.EventCardReplaced, n.Token, tok); c != 1 {
		t.Fatalf("%d card.replaced events", c)
	}
	if c := b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'card.replace' AND resource_token = $1 AND actor_id = $2
		AND changes->>'replacement' = $3 AND changes->>'reason' = 'Customer asked for a new card'`, tok, b.csID, n.Token); c != 1 {
		t.Fatalf("%d card.replace audit rows", c)
	}
	if c := b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'card.create' AND resource_token = $1 AND actor_id = $2
		AND changes->>'replaces' = $3`, n.Token, b.csID, tok); c != 1 {
		t.Fatalf("%d card.create audit rows of the replacement", c)
	}
	if c := b.count(t, `SELECT count(*) FROM card_history WHERE card = $1 AND change = 'replaced' AND actor = $2`, tok, b.csID); c != 1 {
		t.Fatalf("%d replaced history entries on the old card", c)
	}

	// Once replaced, never again, whoever asks.
	if _, err := cards.Replace(b.cs2, tok, "", ""); !errors.Is(err, emi.ErrCardInvalidTransition) ||
		!strings.Contains(emi.AsError(err).Detail, "already replaced") {
		t.Fatalf("second replacement: %v", err)
	}

	// A terminated card whose account got a new card from the partner:
	// the account has its card, no replacement.
	if _, err := cards.Terminate(b.cs, n.Token, "Customer closes the card"); err != nil {
		t.Fatal(err)
	}
	fresh := b.issue(t)
	if _, err := cards.Replace(b.cs, n.Token, "", ""); !errors.Is(err, emi.ErrActiveCardExists) {
		t.Fatalf("replace while the account has card %s: %v", fresh.Token, err)
	}
	// A terminated card without a reason code is replaced too, once the
	// account's card is gone.
	if _, err := cards.Terminate(b.cs, fresh.Token, "Customer closes the card"); err != nil {
		t.Fatal(err)
	}
	r, err := cards.Replace(b.cs, n.Token, "", "")
	if err != nil || r.Replaces != n.Token {
		t.Fatalf("replacement of a terminated card: %v", err)
	}
	if c := b.count(t, `SELECT count(*) FROM events WHERE type = $1 AND resource_token = $2 AND NOT data ? 'reason_code'`,
		emi.EventCardReplaced, r.Token); c != 1 {
		t.Fatalf("%d card.replaced events without a reason code", c)
	}
}

// TestCardReplacementRace: eight replacement requests for one stolen card
// at once, from two staff members, give exactly one new card; the others
// are refused (already replaced, or the account has a card).
func TestCardReplacementRace(t *testing.T) {
	t.Parallel()
	b := newBlockApp(t)
	cards := b.env.App.Cards
	if _, err := cards.Block(b.cs, b.card.Token, emi.BlockStolen, ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := b.cs
			if i%2 == 1 {
				ctx = b.cs2
			}
			_, errs[i] = cards.Replace(ctx, b.card.Token, "", "")
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, emi.ErrCardInvalidTransition), errors.Is(err, emi.ErrActiveCardExists):
		default:
			t.Fatalf("unexpected refusal: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d replacements succeeded, want 1", ok)
	}
	if n := b.count(t, `SELECT count(*) FROM cards WHERE account = $1 AND status <> 'terminated'`, b.account); n != 1 {
		t.Fatalf("%d open cards on the account", n)
	}
	if n := b.count(t, `SELECT count(*) FROM events WHERE type = $1 AND data->>'replaces' = $2`, emi.EventCardReplaced, b.card.Token); n != 1 {
		t.Fatalf("%d card.replaced events", n)
	}
}

// TestCardFraudBlockIsLiftedByStaffOnly: emi blocked the card on
// suspicion of fraud, so the partner (or a fraudster who talks the
// partner's support into it) cannot undo that with card_status active,
// not even after blocking the card again itself; emi's customer service
// can. A block for another reason, or the partner's own block, the
// partner lifts as before. Before this rule the partner's call
// reactivated the card: this test failed there.
func TestCardFraudBlockIsLiftedByStaffOnly(t *testing.T) {
	t.Parallel()
	b := newBlockApp(t)
	cards := b.env.App.Cards
	tok := b.card.Token
	if _, err := cards.Block(b.cs, tok, emi.BlockFraudSuspected, "Card testing pattern"); err != nil {
		t.Fatal(err)
	}
	if _, err := cards.SetStatus(b.partner(), tok, emi.CardActive, ""); !errors.Is(err, emi.ErrCardInvalidTransition) ||
		!strings.Contains(emi.AsError(err).Detail, "suspicion of fraud") {
		t.Fatalf("the partner lifts a fraud block: %v", err)
	}
	if _, err := cards.SetStatus(b.partner(), tok, emi.CardInactive, "customer called"); err != nil {
		t.Fatalf("the partner blocks the blocked card again: %v", err)
	}
	if _, err := cards.SetStatus(b.partner(), tok, emi.CardActive, ""); !errors.Is(err, emi.ErrCardInvalidTransition) {
		t.Fatalf("the partner lifts a fraud block after blocking it again itself: %v", err)
	}
	if c := b.get(t, tok); c.Status != emi.CardInactive || c.StatusReason != emi.BlockFraudSuspected {
		t.Fatalf("after the partner's attempts: %s %q", c.Status, c.StatusReason)
	}
	if c, err := cards.SetStatus(b.cs2, tok, emi.CardActive, "Cleared with the cardholder"); err != nil || c.Status != emi.CardActive || c.StatusReason != "" {
		t.Fatalf("customer service lifts the fraud block: %+v %v", c.Status, err)
	}
	// Other blocks: the partner lifts them.
	if _, err := cards.Block(b.cs, tok, emi.BlockCustomerRequest, ""); err != nil {
		t.Fatal(err)
	}
	if c, err := cards.SetStatus(b.partner(), tok, emi.CardActive, ""); err != nil || c.Status != emi.CardActive {
		t.Fatalf("the partner lifts a customer-request block: %v", err)
	}
	if _, err := cards.SetStatus(b.partner(), tok, emi.CardInactive, "customer called"); err != nil {
		t.Fatal(err)
	}
	if c, err := cards.SetStatus(b.partner(), tok, emi.CardActive, ""); err != nil || c.Status != emi.CardActive {
		t.Fatalf("the partner lifts its own block: %v", err)
	}
}
