package cardsui

import (
	"net/http"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/cards"
	"emi/views/cardsview"
	"emi/views/components"
	"emi/web/portal/frame"
)

// The card's payments on its page: every authorization decision with its
// reason code and the state of its hold and, in the sandbox, the payment
// simulator and the buttons that clear or reverse a hold. Rules live in
// service.Authorizations.
//
// The PIN typed in the simulator goes to the service and nowhere else: it
// is not shown back on a refused form, not put in a flash, the session or
// the audit row, and the request log has no form values.

// simulateForm is the simulator's form name (cardForm.which).
const simulateForm = "simulate"

// paymentsShown is how many of a card's latest authorizations its page lists.
const paymentsShown = 100

func authorizationHref(card, token string) string {
	return frame.CardHref(card) + "/authorizations/" + token
}

// holdLabel names the hold's state for people: an approved authorization
// holds money until it is cleared, released or expired.
func holdLabel(status string) string {
	switch status {
	case emi.AuthApproved:
		return "held"
	case emi.AuthDeclined:
		return ""
	}
	return status
}

// cardPayments lays out the card's authorizations and, in the sandbox for
// staff who manage cards, the simulator (f: its refused input).
func (p *Pages) cardPayments(r *http.Request, card emi.Card, currency string, f *cardForm) (*cardsview.CardPayments, error) {
	if p.auths == nil {
		return nil, nil
	}
	list, total, err := p.auths.ForCard(r.Context(), card.Token, emi.AuthorizationFilter{Page: 1, Limit: paymentsShown})
	if err != nil {
		return nil, err
	}
	manage := p.sandbox && frame.CanDo(r, cards.Manage)
	v := &cardsview.CardPayments{Total: total, Shown: len(list)}
	for _, a := range list {
		row := cardsview.PaymentRow{Token: a.Token, At: frame.FmtTime(a.CreatedAt), Channel: a.Channel, Merchant: a.MerchantName,
			Country: a.MerchantCountry, MCC: a.MCC, Amount: emi.FormatMinor(a.Amount) + " " + a.Currency, Decision: a.Decision,
			DecisionTone: map[string]string{emi.DecisionApproved: "ok", emi.DecisionDeclined: "bad"}[a.Decision],
			ReasonCode:   a.ReasonCode, Reason: a.Reason(), Hold: holdLabel(a.Status), HoldTone: frame.HoldTone(a.Status),
			ThreeDS: a.ThreeDS, PIN: a.PINEntered}
		if a.Decision == emi.DecisionApproved {
			row.Held = emi.FormatMinor(a.HoldAmount) + " " + a.Currency
		}
		if a.Status == emi.AuthCleared {
			row.Cleared = emi.FormatMinor(a.ClearedAmount) + " " + a.Currency
		}
		if a.ExpiresAt != nil && a.Open() {
			row.Expires = frame.FmtTime(*a.ExpiresAt)
		}
		if a.SettledAt != nil {
			row.Settled = frame.FmtTime(*a.SettledAt)
		}
		if manage && a.Open() {
			row.ClearAction, row.ReverseAction = authorizationHref(card.Token, a.Token)+"/clear", authorizationHref(card.Token, a.Token)+"/reverse"
			if f != nil && f.kept.Is("clear:"+a.Token) {
				row.Clear = f.kept
			}
		}
		v.Rows = append(v.Rows, row)
	}
	if manage {
		sim := &cardsview.PaymentSimulator{Action: frame.CardHref(card.Token) + "/authorizations", Currency: currency,
			Channels: emi.AuthorizationChannels, HoldDays: emi.AuthorizationHoldDays, PINTries: cards.MaxPINErrors, Vals: map[string]string{}}
		if f != nil && f.which == simulateForm {
			sim.Open, sim.Vals, sim.Errs, sim.Banner = true, f.vals, f.errs, f.banner
		}
		v.Simulator = sim
	}
	return v, nil
}

// cardSimulate (POST /cards/{card}/authorizations, sandbox): decides a
// simulated payment and shows the decision. A decline is a result, not an
// error; invalid input comes back on the form (without the PIN).
func (p *Pages) cardSimulate(w http.ResponseWriter, r *http.Request) {
	token := frame.Param(r, "card")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrCardNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		p.frame.RenderError(w, r, emi.ErrBadRequest)
		return
	}
	in := emi.AuthorizationRequest{Currency: r.PostFormValue("currency"), MCC: r.PostFormValue("mcc"),
		Channel: r.PostFormValue("channel"), PIN: r.PostFormValue("pin"), MerchantName: r.PostFormValue("merchant_name"),
		MerchantCountry: r.PostFormValue("merchant_country")}
	var bad []emi.FieldError
	if amt, ok := emi.ParseTypedAmount(strings.TrimSpace(r.PostFormValue("amount"))); ok {
		in.Amount = emi.Amount(amt)
	} else {
		bad = append(bad, emi.FieldError{Field: "amount", Message: "must be a decimal amount with at most two decimals (12.50 or 12,50)"})
	}
	switch r.PostFormValue("three_ds") {
	case "passed":
		in.ThreeDS = ptr(true)
	case "failed":
		in.ThreeDS = ptr(false)
	}
	if in.Channel != emi.ChannelOnline {
		in.ThreeDS = nil // the outcome select only means something online
	}
	var err error
	var au emi.Authorization
	if len(bad) > 0 {
		err = emi.ErrCardValidation.WithFields(bad...)
	} else {
		au, err = p.auths.Authorize(r.Context(), token, in)
	}
	if err != nil {
		e := emi.AsError(err)
		if e.Kind == emi.KindInvalid {
			f := &cardForm{which: simulateForm, vals: postedValues(r), errs: cardFieldErrors(e), banner: frame.Message(e)}
			p.frame.Flash(r.Context(), "bad", "The payment was not simulated: please correct the marked fields.")
			p.renderCardPage(w, r, formStatus(e), f)
			return
		}
		p.cardRefused(w, r, err, simulateForm, token)
		return
	}
	msg := "Approved (" + au.ReasonCode + "): " + emi.FormatMinor(au.HoldAmount) + " " + au.Currency + " held"
	kind := "ok"
	if au.ExpiresAt != nil {
		msg += " until " + frame.FmtTime(*au.ExpiresAt) + " UTC; clear or reverse it below."
	}
	if au.Decision == emi.DecisionDeclined {
		msg, kind = "Declined ("+au.ReasonCode+" "+au.Reason()+"). Nothing was held.", "bad"
	}
	p.frame.Flash(r.Context(), kind, msg)
	frame.Redirect(w, r, frame.CardHref(token))
}

func ptr[T any](v T) *T { return &v }

// cardAuthorizationSettle runs a clear or a reverse (sandbox) and goes
// back to the card's page with the outcome.
func (p *Pages) cardAuthorizationSettle(w http.ResponseWriter, r *http.Request, clear bool) {
	card, token := frame.Param(r, "card"), frame.Param(r, "authorization")
	if !frame.LooksLikeToken(card) {
		p.frame.RenderError(w, r, emi.ErrCardNotFound)
		return
	}
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrAuthorizationNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		p.frame.RenderError(w, r, emi.ErrBadRequest)
		return
	}
	var au emi.Authorization
	var err error
	if clear {
		// The amount is typed: a refused one comes back on the page (422)
		// in its row's form, as typed, the reason beside it.
		form := components.KeepForm("clear:"+token, r.PostForm, "amount")
		var amount *int64
		if s := form.Value("amount"); s != "" {
			v, ok := emi.ParseTypedAmount(s)
			if !ok {
				const why = "must be a decimal amount with at most two decimals (12.50 or 12,50), or empty for the whole hold"
				form.Refuse("amount", why)
				// The flash says why too: the hold may have closed meanwhile,
				// and its row with it.
				p.frame.Flash(r.Context(), "bad", "Not cleared: the amount "+why+".")
				p.renderCardPage(w, r, http.StatusUnprocessableEntity, &cardForm{which: "clear", kept: form})
				return
			}
			amount = &v
		}
		au, err = p.auths.Clear(r.Context(), token, amount)
		if e := emi.AsError(err); err != nil && (e.Kind == emi.KindInvalid || len(e.Fields) > 0) && !e.Is(emi.ErrAuthorizationNotFound) {
			banner := frame.KeepErrors(form, err, nil)
			if !form.Invalid("amount") {
				form.Errs["amount"] = banner
			}
			p.frame.Flash(r.Context(), "bad", "Not cleared: "+banner)
			p.renderCardPage(w, r, formStatus(e), &cardForm{which: "clear", kept: form})
			return
		}
	} else {
		// Reverse has nothing typed (one button): a refusal is a flash.
		au, err = p.auths.Reverse(r.Context(), token)
	}
	if err != nil {
		// The hold is no longer open (its row has no form any more), or
		// the payment is not found: a flash on the card's page.
		e := emi.AsError(err)
		switch {
		case e.Kind == emi.KindForbidden || e.Kind == emi.KindInternal:
			p.frame.RenderError(w, r, err)
			return
		case e.Is(emi.ErrTransferInvalidTransition):
			p.frame.Flash(r.Context(), "bad", "Nothing changed: the payment is no longer held (it was declined, or already cleared, reversed or expired).")
		default:
			p.frame.Flash(r.Context(), "bad", frame.Message(e))
		}
		frame.Redirect(w, r, frame.CardHref(card))
		return
	}
	if clear {
		msg := "Cleared: " + emi.FormatMinor(au.ClearedAmount) + " " + au.Currency + " paid to card clearing"
		if rest := au.HoldAmount - au.ClearedAmount; rest > 0 {
			msg += ", the other " + emi.FormatMinor(rest) + " " + au.Currency + " released"
		}
		p.frame.Flash(r.Context(), "ok", msg+".")
	} else {
		p.frame.Flash(r.Context(), "ok", "Reversed: the hold of "+emi.FormatMinor(au.HoldAmount)+" "+au.Currency+" was released.")
	}
	frame.Redirect(w, r, frame.CardHref(au.Card))
}

// cardAuthorizationClear (POST /cards/{card}/authorizations/{authorization}/clear, sandbox).
func (p *Pages) cardAuthorizationClear(w http.ResponseWriter, r *http.Request) {
	p.cardAuthorizationSettle(w, r, true)
}

// cardAuthorizationReverse (POST /cards/{card}/authorizations/{authorization}/reverse, sandbox).
func (p *Pages) cardAuthorizationReverse(w http.ResponseWriter, r *http.Request) {
	p.cardAuthorizationSettle(w, r, false)
}
