// Package cardsui is the back office's card screens: the card search, a
// card with its history, texts, reveals and audit trail, every card
// action, the card's payments (and, in the sandbox, the payment
// simulator), and the SMS outbox. The card service decides what may be
// done to a card (cards.Capabilities); these pages render its answer.
package cardsui

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/cards"
	"emi/web/portal/frame"
)

// Deps are what the card pages need.
type Deps struct {
	Cards *cards.Cards
	// Authorizations lists a card's payments (authorization decisions
	// and their holds) and, in the sandbox, simulates, clears and reverses
	// them.
	Authorizations *cards.Authorizations
	// StepUp re-checks the signed-in staff member's password or TOTP code
	// before a card number is revealed.
	StepUp cards.StepUp
	// Sandbox shows the payment simulator; production has no such routes.
	Sandbox bool
}

// Pages are the card screens.
type Pages struct {
	frame   *frame.Frame
	cards   *cards.Cards
	auths   *cards.Authorizations
	stepUp  cards.StepUp
	sandbox bool
}

// New returns the card pages.
func New(f *frame.Frame, d Deps) *Pages {
	return &Pages{frame: f, cards: d.Cards, auths: d.Authorizations, stepUp: d.StepUp, sandbox: d.Sandbox}
}

// Nav are the card screens' navigation links.
func Nav() []frame.NavEntry {
	return []frame.NavEntry{
		{Href: "/backoffice/cards", Label: "Cards", Op: accounts.View},
		{Href: "/backoffice/sms", Label: "SMS outbox", Op: accounts.View},
	}
}

// Routes maps the card screens. Each card action is guarded by the
// operation the card service checks for it (cards.ActionOp).
func (p *Pages) Routes(r chi.Router) {
	guard := func(act emi.CardAction) func(next http.Handler) http.Handler {
		return p.frame.Guard(cards.ActionOp(act))
	}
	r.With(p.frame.Guard(accounts.View)).Get("/cards", p.cardList)
	r.With(p.frame.Guard(accounts.View), p.frame.ReadForm).Post("/cards", p.cardList) // the search form: a card number stays out of URLs
	r.With(p.frame.Guard(accounts.View)).Get("/cards/{card}", p.cardDetail)
	r.With(guard(emi.CardActivate)).Post("/cards/{card}/activate", p.cardActivate)
	r.With(guard(emi.CardUnblock)).Post("/cards/{card}/status", p.cardStatus)
	r.With(guard(emi.CardBlock)).Post("/cards/{card}/block", p.cardBlock)
	r.With(guard(emi.CardTerminate)).Post("/cards/{card}/terminate", p.cardTerminate)
	r.With(guard(emi.CardReplace)).Post("/cards/{card}/replace", p.cardReplace)
	r.With(guard(emi.CardConvert)).Post("/cards/{card}/convert", p.cardConvert)
	r.With(guard(emi.CardAssign)).Post("/cards/{card}/assign", p.cardAssign)
	r.With(guard(emi.CardSetGroups)).Post("/cards/{card}/groups", p.cardGroups)
	r.With(guard(emi.CardSet3DS)).Post("/cards/{card}/3ds/enrol", p.card3DSEnrol)
	r.With(guard(emi.CardSet3DS)).Post("/cards/{card}/3ds/update", p.card3DSUpdate)
	r.With(guard(emi.CardSet3DS)).Post("/cards/{card}/3ds/remove", p.card3DSRemove)
	r.With(guard(emi.CardResetPIN)).Post("/cards/{card}/pin/reset", p.cardResetPIN)
	r.With(guard(emi.CardSendPIN)).Post("/cards/{card}/pin/send", p.cardSendPIN)
	r.With(guard(emi.CardReveal)).Post("/cards/{card}/reveal", p.cardReveal)
	if p.sandbox {
		// The payment simulator: production has no such routes.
		r.With(guard(emi.CardPay)).Post("/cards/{card}/authorizations", p.cardSimulate)
		r.With(guard(emi.CardPay)).Post("/cards/{card}/authorizations/{authorization}/clear", p.cardAuthorizationClear)
		r.With(guard(emi.CardPay)).Post("/cards/{card}/authorizations/{authorization}/reverse", p.cardAuthorizationReverse)
	}
	r.With(p.frame.Guard(accounts.View)).Get("/sms", p.smsOutbox)
}
