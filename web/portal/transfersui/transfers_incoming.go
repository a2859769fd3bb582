package transfersui

import (
	"net/http"
	"net/url"
	"strconv"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/transfers"
	"emi/views/accountsview"
	"emi/views/components"
)

// Incoming money: the suspense queue (money that could not be credited, to
// assign or return) and the sandbox's incoming payment simulator (on the
// suspense page and the account page). Rules live in service
// transfers.Incoming; this file lays them out.

// suspenseReasons label why money went to suspense.
var suspenseReasons = map[string]string{
	emi.SuspenseUnknownIdentifier: "unknown identifier",
	emi.SuspenseAccountTerminated: "account terminated",
	emi.SuspenseAccountBlocked:    "account blocked",
	emi.SuspenseCurrencyNotHeld:   "currency not held",
}

// --- suspense ---

// suspense (GET /suspense) lists open suspense items, oldest first, or
// resolved ones (?status=resolved), 50 a page.
func (p *Pages) suspense(w http.ResponseWriter, r *http.Request) {
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	p.renderSuspense(w, r, http.StatusOK, r.URL.Query().Get("status") != "resolved", page, nil)
}

// suspenseForm is a refused suspense form, shown again as it was typed:
// which form (assign, return, approve, reject) of which item, and the
// message.
type suspenseForm struct {
	item, which, to, reason, message string
	// kept is a refused simulated payment (which is "simulate").
	kept *components.Form
}

// renderSuspense renders a page of the suspense queue; form, when set,
// fills a refused form of its item with what was typed and opens it.
//
// The queue sorts by its columns in SQL, by offset pages that keep the
// order; without ?sort= each tab has its usual order (open: oldest first;
// resolved: last resolved first), so no header is marked sorted. An
// action's redirect shows the queue in its usual order.
func (p *Pages) renderSuspense(w http.ResponseWriter, r *http.Request, status int, open bool, page int, form *suspenseForm) {
	page = min(max(page, 1), frame.MaxPage)
	keys := []string{"received", "amount", "payer", "reason"}
	if !open {
		keys = append(keys, "resolved")
	}
	sort := frame.ReadSort(r, "", "", keys...)
	if status == http.StatusOK {
		status = sort.Status()
	}
	items, total, err := p.incoming.SuspenseItems(r.Context(), open, page, sort.Order())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := accountsview.SuspenseView{Open: open, Page: strconv.Itoa(page), Tabs: []components.Tab{
		{Label: "Open", Href: "/backoffice/suspense", Active: open},
		{Label: "Resolved", Href: "/backoffice/suspense?status=resolved", Active: !open},
	}, Sort: sort.View(r)}
	// The headers link to the queue's tab, also when the page answers a
	// refused form's POST.
	v.Sort.Path, v.Sort.Query = "/backoffice/suspense", url.Values{}
	if !open {
		v.Sort.Query.Set("status", "resolved")
	}
	canResolve := frame.CanDo(r, transfers.ManageMoney)
	now := p.frame.Now()
	can := p.incoming.AssignmentCapabilities(r.Context(), items)
	for _, it := range items {
		row := accountsview.SuspenseRow{Token: it.Token, Received: frame.FmtTime(it.CreatedAt), Age: frame.Age(now, it.CreatedAt),
			Amount: emi.FormatMinor(it.Amount), Currency: it.Currency, Payer: frame.FirstNonEmpty(it.Payer.Name, "(no name)"),
			Scheme: it.Scheme, Identifier: it.Identifier, Reference: it.Reference, Reason: it.Reason,
			ReasonLabel: frame.FirstNonEmpty(suspenseReasons[it.Reason], it.Reason), Status: it.Status, CanResolve: canResolve && open,
			ResolutionReason: it.ResolutionReason, ResolvedAt: frame.FmtTimeOrEmpty(it.ResolvedAt)}
		row.PayerDetails = frame.CounterpartyIdents(it.Payer)
		if it.Account != "" && frame.CanDo(r, accounts.View) {
			row.AccountHref = frame.AccountHref(it.Account)
		}
		if it.AssignedAccount != "" {
			row.AssignedAccount = it.AssignedAccount
			if frame.CanDo(r, accounts.View) {
				row.AssignedHref = frame.AccountHref(it.AssignedAccount)
			}
		}
		row.StatusTone = "ok"
		if it.Status == emi.SuspenseReturned {
			row.StatusTone = "warn"
		}
		if it.ResolvedBy != "" {
			row.ResolvedBy = frame.StaffName(r, it.ResolvedBy, it.ResolvedByName)
		}
		if it.AssignRequestedBy != "" {
			row.RequestedBy = frame.StaffName(r, it.AssignRequestedBy, it.AssignRequestedByName)
		}
		if a := it.Pending; a != nil && open {
			pv := &accountsview.PendingAssignment{Token: a.Token, Target: a.Target, Account: a.Account, Reason: a.Reason,
				RequestedBy: frame.StaffName(r, a.RequestedBy, a.RequestedByName), Requested: frame.FmtTime(a.RequestedAt),
				Mine: can[a.Token].Withdraw}
			if frame.CanDo(r, accounts.View) {
				pv.AccountHref = frame.AccountHref(a.Account)
			}
			pv.CanApprove, pv.CanReject, pv.WhyNot = can[a.Token].Approve, can[a.Token].Reject || can[a.Token].Withdraw, can[a.Token].WhyNotApprove
			row.Pending = pv
		}
		if form != nil && form.item == it.Token {
			row.Form = accountsview.SuspenseFormState{Which: form.which, To: form.to, Reason: form.reason, Error: form.message}
		}
		v.Rows = append(v.Rows, row)
	}
	v.Total = strconv.FormatInt(total, 10) + " items"
	if total == 1 {
		v.Total = "1 item"
	}
	link := func(n int) string {
		q := url.Values{}
		if !open {
			q.Set("status", "resolved")
		}
		if n > 1 {
			q.Set("page", strconv.Itoa(n))
		}
		if sort.Key != "" {
			q.Set("sort", sort.Key)
			q.Set("dir", sort.Dir)
		}
		if len(q) == 0 {
			return "/backoffice/suspense"
		}
		return "/backoffice/suspense?" + q.Encode()
	}
	if page > 1 {
		v.Prev = link(page - 1)
	}
	if int64(page*transfers.SuspensePageSize) < total {
		v.Next = link(page + 1)
	}
	if p.sandbox && frame.CanDo(r, transfers.ManageMoney) {
		v.Simulate = &accountsview.SimulateForm{Action: "/backoffice/suspense/simulate", Currencies: []string{"EUR", "GBP", "BGN"}}
		if form != nil && form.which == "simulate" {
			v.Simulate.Kept = form.kept
		}
	}
	p.frame.RenderPrivate(w, r, status, "Suspense", accountsview.Suspense(v))
}

// suspenseItem is the item of an action, or "" after answering 404.
func (p *Pages) suspenseItem(w http.ResponseWriter, r *http.Request) string {
	token := frame.Param(r, "item")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrSuspenseNotFound)
		return ""
	}
	return token
}

// suspenseBack is the open queue's page a suspense form was on.
func suspenseBack(r *http.Request) (int, string) {
	page, _ := strconv.Atoi(r.PostFormValue("page"))
	page = min(max(page, 1), frame.MaxPage)
	if page == 1 {
		return 1, "/backoffice/suspense"
	}
	return page, "/backoffice/suspense?page=" + strconv.Itoa(page)
}

// suspenseRefused answers a refused suspense form: 403, 404 and 500
// pages; otherwise the queue again (422) with the form as it was typed,
// open, and the reason it was refused beside it and in the banner.
func (p *Pages) suspenseRefused(w http.ResponseWriter, r *http.Request, err error, form suspenseForm) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden, emi.KindInternal:
		p.frame.RenderError(w, r, err)
		return
	}
	if frame.ErrorIs(err, emi.ErrSuspenseNotFound) || frame.ErrorIs(err, emi.ErrSuspenseAssignmentNotFound) {
		p.frame.RenderError(w, r, err)
		return
	}
	msg := frame.Message(e)
	for _, f := range e.Fields {
		msg += " " + f.Field + ": " + f.Message + "."
	}
	form.message = msg
	p.frame.Flash(r.Context(), "bad", msg)
	page, _ := suspenseBack(r)
	p.renderSuspense(w, r, http.StatusUnprocessableEntity, true, page, &form)
}

// suspenseAssign (POST /suspense/{item}/assign) requests the assignment
// of an item to a balance; a second staff member approves it.
func (p *Pages) suspenseAssign(w http.ResponseWriter, r *http.Request) {
	token := p.suspenseItem(w, r)
	if token == "" {
		return
	}
	to, reason := r.PostFormValue("to"), r.PostFormValue("reason")
	a, err := p.incoming.RequestSuspenseAssignment(r.Context(), token, to, reason)
	if err != nil {
		p.suspenseRefused(w, r, err, suspenseForm{item: token, which: "assign", to: to, reason: reason})
		return
	}
	p.frame.Flash(r.Context(), "ok", "Assignment to account "+a.Account+" requested. Nothing moves until a second staff member "+
		"approves it: someone other than you must.")
	_, back := suspenseBack(r)
	frame.Redirect(w, r, back)
}

// suspenseAssignmentApprove (POST /suspense/assignments/{assignment}/approve).
func (p *Pages) suspenseAssignmentApprove(w http.ResponseWriter, r *http.Request) {
	p.suspenseAssignmentDecide(w, r, true)
}

// suspenseAssignmentReject (POST /suspense/assignments/{assignment}/reject):
// a rejection, or the requester's withdrawal.
func (p *Pages) suspenseAssignmentReject(w http.ResponseWriter, r *http.Request) {
	p.suspenseAssignmentDecide(w, r, false)
}

func (p *Pages) suspenseAssignmentDecide(w http.ResponseWriter, r *http.Request, approve bool) {
	token := frame.Param(r, "assignment")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrSuspenseAssignmentNotFound)
		return
	}
	note := r.PostFormValue("reason")
	a, t, err := p.incoming.DecideSuspenseAssignment(r.Context(), token, approve, note)
	if err != nil {
		which := "reject"
		if approve {
			which = "approve"
		}
		p.suspenseRefused(w, r, err, suspenseForm{item: r.PostFormValue("item"), which: which, reason: note})
		return
	}
	switch {
	case t != nil:
		p.frame.Flash(r.Context(), "ok", "Approved and assigned: "+emi.FormatMinor(t.Amount)+" "+t.Currency+" credited to account "+
			t.DestinationAccount+" (transfer "+t.Token+"). The partner is told (transfer.completed).")
	case a.Status == emi.AssignmentWithdrawn:
		p.frame.Flash(r.Context(), "ok", "Assignment request withdrawn: nothing moved, the item is open.")
	default:
		p.frame.Flash(r.Context(), "ok", "Assignment request rejected: nothing moved, the item is open.")
	}
	_, back := suspenseBack(r)
	frame.Redirect(w, r, back)
}

// suspenseReturn (POST /suspense/{item}/return) sends an item back.
func (p *Pages) suspenseReturn(w http.ResponseWriter, r *http.Request) {
	token := p.suspenseItem(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if err := p.incoming.ReturnSuspense(r.Context(), token, reason); err != nil {
		p.suspenseRefused(w, r, err, suspenseForm{item: token, which: "return", reason: reason})
		return
	}
	p.frame.Flash(r.Context(), "ok", "Returned to the sender.")
	_, back := suspenseBack(r)
	frame.Redirect(w, r, back)
}

// suspenseSimulate (POST /suspense/simulate, sandbox only) simulates a
// payment to any identifier.
func (p *Pages) suspenseSimulate(w http.ResponseWriter, r *http.Request) {
	if !p.sandbox {
		p.frame.NotFound(w, r)
		return
	}
	dest := emi.TransferParty{IBAN: r.PostFormValue("to_iban"), SortCode: r.PostFormValue("to_sort_code"),
		AccountNumber: r.PostFormValue("to_account_number"), Account: r.PostFormValue("to_account"), Balance: r.PostFormValue("to_balance")}
	p.accountPages.SimulateIncoming(w, r, dest, "/backoffice/suspense", func(kept *components.Form) {
		p.renderSuspense(w, r, http.StatusUnprocessableEntity, true, 1, &suspenseForm{which: "simulate", kept: kept})
	})
}

// --- adjustments ---
