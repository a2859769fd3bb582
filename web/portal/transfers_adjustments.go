package portal

import (
	"net/http"
	"strings"

	"emi/internal/emi"
	"emi/views/components"
	"emi/views/pages"
)

// Manual adjustments under four-eyes: the queue, the request from an
// account's page, approval and rejection. Rules live in service
// transfers.Adjustments; the account page's section is accounts_money.go.

// adjustments (GET /adjustments) lists pending adjustment requests and the
// latest decided ones. Both lists are bounded and sort by the same column
// in Go; their usual orders (the service's) differ, so no header is marked
// sorted until one is chosen.
func (p *Portal) adjustments(w http.ResponseWriter, r *http.Request) {
	sort := ReadSort(r, "", "", "requested", "account", "direction", "amount", "requested_by")
	pending, err := p.d.Adjustments.Pending(r.Context(), "")
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	decided, err := p.d.Adjustments.Decided(r.Context())
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := pages.AdjustmentsView{Pending: p.adjustmentRows(r, pending), Decided: p.adjustmentRows(r, decided), Sort: sort.View(r)}
	cols := map[string]func(pages.AdjustmentRow) string{
		"requested":    func(a pages.AdjustmentRow) string { return a.Requested },
		"account":      func(a pages.AdjustmentRow) string { return a.Account },
		"direction":    func(a pages.AdjustmentRow) string { return a.Direction },
		"amount":       func(a pages.AdjustmentRow) string { return a.Currency + PadNumber(a.Amount) },
		"requested_by": func(a pages.AdjustmentRow) string { return a.RequestedBy },
	}
	token := func(a pages.AdjustmentRow) string { return a.Token }
	SortRows(r, v.Pending, sort, cols, token)
	SortRows(r, v.Decided, sort, cols, token)
	p.RenderPrivate(w, r, sort.Status(), "Adjustments", pages.Adjustments(v))
}

// adjustmentRequest (POST /accounts/{account}/adjustments) asks for a
// manual adjustment of the account's balance.
func (p *Portal) adjustmentRequest(w http.ResponseWriter, r *http.Request) {
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	back := AccountHref(token)
	form := components.KeepForm("adjust", r.PostForm, "direction", "currency", "amount", "reason")
	minor, ok := emi.ParseTypedAmount(form.Value("amount"))
	if !ok {
		// The service's own checks still run, so every refused field is
		// named at once.
		form.Refuse("amount", AmountFormat)
	}
	a, err := p.d.Adjustments.Request(r.Context(), emi.AdjustmentRequest{Account: token, Currency: form.Value("currency"),
		Direction: form.Value("direction"), Amount: minor, Reason: form.Value("reason")})
	if !ok && (err == nil || emi.AsError(err).Kind != emi.KindInvalid) {
		// An unparsable amount reached the service as 0 and was refused
		// there; if it was not (never expected), nothing may be kept.
		err = emi.ErrReviewValidation
	}
	if err != nil {
		p.adjustmentRefused(w, r, err, form, token)
		return
	}
	p.Flash(r.Context(), "ok", "Adjustment requested ("+a.Direction+" "+emi.FormatMinor(a.Amount)+" "+a.Currency+
		"). Awaiting a second staff member: someone other than you must approve it.")
	Redirect(w, r, back)
}

// adjustmentRefused answers a refused adjustment request, so nothing typed
// is lost: the account page again (422) with the form open, what was typed
// kept, and each error beside its field: invalid input by the service's
// field names, a debit over the available balance on the amount, a currency
// the account has no balance in on the balance. Other refusals are the
// usual flash on the page.
func (p *Portal) adjustmentRefused(w http.ResponseWriter, r *http.Request, err error, form *components.Form, token string) {
	e := emi.AsError(err)
	if e.Kind != emi.KindInvalid && e.Kind != emi.KindConflict {
		p.moneyRefused(w, r, err, AccountHref(token))
		return
	}
	banner := KeepErrors(form, err, nil)
	switch {
	case form.Value("amount") == "":
		form.Errs["amount"] = "is required: 12.50 or 12,50"
	case len(form.Errs) == 0 && ErrorIs(err, emi.ErrCurrencyMismatch):
		form.Errs["currency"] = banner
	case len(form.Errs) == 0:
		form.General = banner
	}
	p.Flash(r.Context(), "bad", "Nothing was requested: "+banner+" See the adjustment form below.")
	p.renderAccountPage(w, r, http.StatusUnprocessableEntity, &accountForm{which: "adjust", kept: form})
}

// adjustmentApprove (POST /adjustments/{adjustment}/approve).
func (p *Portal) adjustmentApprove(w http.ResponseWriter, r *http.Request) {
	p.adjustmentDecide(w, r, true)
}

// adjustmentReject (POST /adjustments/{adjustment}/reject).
func (p *Portal) adjustmentReject(w http.ResponseWriter, r *http.Request) {
	p.adjustmentDecide(w, r, false)
}

func (p *Portal) adjustmentDecide(w http.ResponseWriter, r *http.Request, approve bool) {
	token := Param(r, "adjustment")
	if !LooksLikeToken(token) {
		p.RenderError(w, r, emi.ErrAdjustmentNotFound)
		return
	}
	back := "/backoffice/adjustments"
	if b := r.PostFormValue("back"); LooksLikeToken(strings.TrimPrefix(b, "/backoffice/accounts/")) {
		back = b // the account page the form was on
	}
	a, err := p.d.Adjustments.Decide(r.Context(), token, approve, r.PostFormValue("reason"))
	if err != nil {
		p.moneyRefused(w, r, err, back)
		return
	}
	if approve {
		p.Flash(r.Context(), "ok", "Adjustment approved and posted: "+a.Direction+" "+emi.FormatMinor(a.Amount)+" "+a.Currency+".")
	} else {
		p.Flash(r.Context(), "ok", "Adjustment rejected: nothing was posted.")
	}
	Redirect(w, r, back)
}
