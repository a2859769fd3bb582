package transfersui

import (
	"net/http"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/views/accountsview"
)

// Manual adjustments under four-eyes: the queue, the request from an
// account's page, approval and rejection. Rules live in service
// transfers.Adjustments; the account page's section is accounts_money.go.

// adjustmentQueue (GET /adjustments) lists pending adjustment requests and the
// latest decided ones. Both lists are bounded and sort by the same column
// in Go; their usual orders (the service's) differ, so no header is marked
// sorted until one is chosen.
func (p *Pages) adjustmentQueue(w http.ResponseWriter, r *http.Request) {
	sort := frame.ReadSort(r, "", "", "requested", "account", "direction", "amount", "requested_by")
	pending, err := p.adjustments.Pending(r.Context(), "")
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	decided, err := p.adjustments.Decided(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := accountsview.AdjustmentsView{Pending: p.accountPages.AdjustmentRows(r, pending), Decided: p.accountPages.AdjustmentRows(r, decided), Sort: sort.View(r)}
	cols := map[string]func(accountsview.AdjustmentRow) string{
		"requested":    func(a accountsview.AdjustmentRow) string { return a.Requested },
		"account":      func(a accountsview.AdjustmentRow) string { return a.Account },
		"direction":    func(a accountsview.AdjustmentRow) string { return a.Direction },
		"amount":       func(a accountsview.AdjustmentRow) string { return a.Currency + frame.PadNumber(a.Amount) },
		"requested_by": func(a accountsview.AdjustmentRow) string { return a.RequestedBy },
	}
	token := func(a accountsview.AdjustmentRow) string { return a.Token }
	frame.SortRows(r, v.Pending, sort, cols, token)
	frame.SortRows(r, v.Decided, sort, cols, token)
	p.frame.RenderPrivate(w, r, sort.Status(), "Adjustments", accountsview.Adjustments(v))
}

// adjustmentApprove (POST /adjustments/{adjustment}/approve).
func (p *Pages) adjustmentApprove(w http.ResponseWriter, r *http.Request) {
	p.adjustmentDecide(w, r, true)
}

// adjustmentReject (POST /adjustments/{adjustment}/reject).
func (p *Pages) adjustmentReject(w http.ResponseWriter, r *http.Request) {
	p.adjustmentDecide(w, r, false)
}

func (p *Pages) adjustmentDecide(w http.ResponseWriter, r *http.Request, approve bool) {
	token := frame.Param(r, "adjustment")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrAdjustmentNotFound)
		return
	}
	back := "/backoffice/adjustments"
	if b := r.PostFormValue("back"); frame.LooksLikeToken(strings.TrimPrefix(b, "/backoffice/accounts/")) {
		back = b // the account page the form was on
	}
	a, err := p.adjustments.Decide(r.Context(), token, approve, r.PostFormValue("reason"))
	if err != nil {
		p.frame.FlashMoneyError(w, r, err, back)
		return
	}
	if approve {
		p.frame.Flash(r.Context(), "ok", "Adjustment approved and posted: "+a.Direction+" "+emi.FormatMinor(a.Amount)+" "+a.Currency+".")
	} else {
		p.frame.Flash(r.Context(), "ok", "Adjustment rejected: nothing was posted.")
	}
	frame.Redirect(w, r, back)
}
