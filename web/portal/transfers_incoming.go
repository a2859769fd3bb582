package portal

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/transfers"
	"emi/views/components"
	"emi/views/pages"
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
func (p *Portal) suspense(w http.ResponseWriter, r *http.Request) {
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
func (p *Portal) renderSuspense(w http.ResponseWriter, r *http.Request, status int, open bool, page int, form *suspenseForm) {
	page = min(max(page, 1), maxAccountPage)
	keys := []string{"received", "amount", "payer", "reason"}
	if !open {
		keys = append(keys, "resolved")
	}
	sort := ReadSort(r, "", "", keys...)
	if status == http.StatusOK {
		status = sort.Status()
	}
	items, total, err := p.d.Incoming.SuspenseItems(r.Context(), open, page, sort.Order())
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := pages.SuspenseView{Open: open, Page: strconv.Itoa(page), Tabs: []pages.Tab{
		{Label: "Open", Href: "/backoffice/suspense", Active: open},
		{Label: "Resolved", Href: "/backoffice/suspense?status=resolved", Active: !open},
	}, Sort: sort.View(r)}
	// The headers link to the queue's tab, also when the page answers a
	// refused form's POST.
	v.Sort.Path, v.Sort.Query = "/backoffice/suspense", url.Values{}
	if !open {
		v.Sort.Query.Set("status", "resolved")
	}
	canResolve := CanDo(r, transfers.ManageMoney)
	now := p.d.Now()
	can := p.d.Incoming.AssignmentCapabilities(r.Context(), items)
	for _, it := range items {
		row := pages.SuspenseRow{Token: it.Token, Received: FmtTime(it.CreatedAt), Age: Age(now, it.CreatedAt),
			Amount: emi.FormatMinor(it.Amount), Currency: it.Currency, Payer: FirstNonEmpty(it.Payer.Name, "(no name)"),
			Scheme: it.Scheme, Identifier: it.Identifier, Reference: it.Reference, Reason: it.Reason,
			ReasonLabel: FirstNonEmpty(suspenseReasons[it.Reason], it.Reason), Status: it.Status, CanResolve: canResolve && open,
			ResolutionReason: it.ResolutionReason, ResolvedAt: FmtTimeOrEmpty(it.ResolvedAt)}
		row.PayerDetails = CounterpartyIdents(it.Payer)
		if it.Account != "" && CanDo(r, accounts.View) {
			row.AccountHref = AccountHref(it.Account)
		}
		if it.AssignedAccount != "" {
			row.AssignedAccount = it.AssignedAccount
			if CanDo(r, accounts.View) {
				row.AssignedHref = AccountHref(it.AssignedAccount)
			}
		}
		row.StatusTone = "ok"
		if it.Status == emi.SuspenseReturned {
			row.StatusTone = "warn"
		}
		if it.ResolvedBy != "" {
			row.ResolvedBy = StaffName(r, it.ResolvedBy, it.ResolvedByName)
		}
		if it.AssignRequestedBy != "" {
			row.RequestedBy = StaffName(r, it.AssignRequestedBy, it.AssignRequestedByName)
		}
		if a := it.Pending; a != nil && open {
			pv := &pages.PendingAssignment{Token: a.Token, Target: a.Target, Account: a.Account, Reason: a.Reason,
				RequestedBy: StaffName(r, a.RequestedBy, a.RequestedByName), Requested: FmtTime(a.RequestedAt),
				Mine: can[a.Token].Withdraw}
			if CanDo(r, accounts.View) {
				pv.AccountHref = AccountHref(a.Account)
			}
			pv.CanApprove, pv.CanReject, pv.WhyNot = can[a.Token].Approve, can[a.Token].Reject || can[a.Token].Withdraw, can[a.Token].WhyNotApprove
			row.Pending = pv
		}
		if form != nil && form.item == it.Token {
			row.Form = pages.SuspenseFormState{Which: form.which, To: form.to, Reason: form.reason, Error: form.message}
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
	if p.d.Sandbox && CanDo(r, transfers.ManageMoney) {
		v.Simulate = &pages.SimulateForm{Action: "/backoffice/suspense/simulate", Currencies: []string{"EUR", "GBP", "BGN"}}
		if form != nil && form.which == "simulate" {
			v.Simulate.Kept = form.kept
		}
	}
	p.RenderPrivate(w, r, status, "Suspense", pages.Suspense(v))
}

// suspenseItem is the item of an action, or "" after answering 404.
func (p *Portal) suspenseItem(w http.ResponseWriter, r *http.Request) string {
	token := Param(r, "item")
	if !LooksLikeToken(token) {
		p.RenderError(w, r, emi.ErrSuspenseNotFound)
		return ""
	}
	return token
}

// suspenseBack is the open queue's page a suspense form was on.
func suspenseBack(r *http.Request) (int, string) {
	page, _ := strconv.Atoi(r.PostFormValue("page"))
	page = min(max(page, 1), maxAccountPage)
	if page == 1 {
		return 1, "/backoffice/suspense"
	}
	return page, "/backoffice/suspense?page=" + strconv.Itoa(page)
}

// suspenseRefused answers a refused suspense form: 403, 404 and 500
// pages; otherwise the queue again (422) with the form as it was typed,
// open, and the reason it was refused beside it and in the banner.
func (p *Portal) suspenseRefused(w http.ResponseWriter, r *http.Request, err error, form suspenseForm) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden, emi.KindInternal:
		p.RenderError(w, r, err)
		return
	}
	if ErrorIs(err, emi.ErrSuspenseNotFound) || ErrorIs(err, emi.ErrSuspenseAssignmentNotFound) {
		p.RenderError(w, r, err)
		return
	}
	msg := Message(e)
	for _, f := range e.Fields {
		msg += " " + f.Field + ": " + f.Message + "."
	}
	form.message = msg
	p.Flash(r.Context(), "bad", msg)
	page, _ := suspenseBack(r)
	p.renderSuspense(w, r, http.StatusUnprocessableEntity, true, page, &form)
}

// suspenseAssign (POST /suspense/{item}/assign) requests the assignment
// of an item to a balance; a second staff member approves it.
func (p *Portal) suspenseAssign(w http.ResponseWriter, r *http.Request) {
	token := p.suspenseItem(w, r)
	if token == "" {
		return
	}
	to, reason := r.PostFormValue("to"), r.PostFormValue("reason")
	a, err := p.d.Incoming.RequestSuspenseAssignment(r.Context(), token, to, reason)
	if err != nil {
		p.suspenseRefused(w, r, err, suspenseForm{item: token, which: "assign", to: to, reason: reason})
		return
	}
	p.Flash(r.Context(), "ok", "Assignment to account "+a.Account+" requested. Nothing moves until a second staff member "+
		"approves it: someone other than you must.")
	_, back := suspenseBack(r)
	Redirect(w, r, back)
}

// suspenseAssignmentApprove (POST /suspense/assignments/{assignment}/approve).
func (p *Portal) suspenseAssignmentApprove(w http.ResponseWriter, r *http.Request) {
	p.suspenseAssignmentDecide(w, r, true)
}

// suspenseAssignmentReject (POST /suspense/assignments/{assignment}/reject):
// a rejection, or the requester's withdrawal.
func (p *Portal) suspenseAssignmentReject(w http.ResponseWriter, r *http.Request) {
	p.suspenseAssignmentDecide(w, r, false)
}

func (p *Portal) suspenseAssignmentDecide(w http.ResponseWriter, r *http.Request, approve bool) {
	token := Param(r, "assignment")
	if !LooksLikeToken(token) {
		p.RenderError(w, r, emi.ErrSuspenseAssignmentNotFound)
		return
	}
	note := r.PostFormValue("reason")
	a, t, err := p.d.Incoming.DecideSuspenseAssignment(r.Context(), token, approve, note)
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
		p.Flash(r.Context(), "ok", "Approved and assigned: "+emi.FormatMinor(t.Amount)+" "+t.Currency+" credited to account "+
			t.DestinationAccount+" (transfer "+t.Token+"). The partner is told (transfer.completed).")
	case a.Status == emi.AssignmentWithdrawn:
		p.Flash(r.Context(), "ok", "Assignment request withdrawn: nothing moved, the item is open.")
	default:
		p.Flash(r.Context(), "ok", "Assignment request rejected: nothing moved, the item is open.")
	}
	_, back := suspenseBack(r)
	Redirect(w, r, back)
}

// suspenseReturn (POST /suspense/{item}/return) sends an item back.
func (p *Portal) suspenseReturn(w http.ResponseWriter, r *http.Request) {
	token := p.suspenseItem(w, r)
	if token == "" {
		return
	}
	reason := r.PostFormValue("reason")
	if err := p.d.Incoming.ReturnSuspense(r.Context(), token, reason); err != nil {
		p.suspenseRefused(w, r, err, suspenseForm{item: token, which: "return", reason: reason})
		return
	}
	p.Flash(r.Context(), "ok", "Returned to the sender.")
	_, back := suspenseBack(r)
	Redirect(w, r, back)
}

// suspenseSimulate (POST /suspense/simulate, sandbox only) simulates a
// payment to any identifier.
func (p *Portal) suspenseSimulate(w http.ResponseWriter, r *http.Request) {
	if !p.d.Sandbox {
		p.NotFound(w, r)
		return
	}
	dest := emi.TransferParty{IBAN: r.PostFormValue("to_iban"), SortCode: r.PostFormValue("to_sort_code"),
		AccountNumber: r.PostFormValue("to_account_number"), Account: r.PostFormValue("to_account"), Balance: r.PostFormValue("to_balance")}
	p.simulate(w, r, dest, "/backoffice/suspense", func(kept *components.Form) {
		p.renderSuspense(w, r, http.StatusUnprocessableEntity, true, 1, &suspenseForm{which: "simulate", kept: kept})
	})
}

// accountSimulate (POST /accounts/{account}/incoming, sandbox only)
// simulates a payment to one of the account's identifiers.
func (p *Portal) accountSimulate(w http.ResponseWriter, r *http.Request) {
	if !p.d.Sandbox {
		p.NotFound(w, r)
		return
	}
	token := p.accountToken(w, r)
	if token == "" {
		return
	}
	p.simulate(w, r, identifierParty(r.PostFormValue("to")), AccountHref(token), func(kept *components.Form) {
		p.renderAccountPage(w, r, http.StatusUnprocessableEntity, &accountForm{which: "simulate", kept: kept})
	})
}

// simulateFields are the simulator's fields, in form order.
var simulateFields = []string{"scheme", "amount", "currency", "reference", "payer_name", "payer_iban", "payer_sort_code",
	"payer_account_number", "payer_card_last4", "to", "to_iban", "to_sort_code", "to_account_number", "to_account", "to_balance"}

// simulate books the simulated payment of the form with destination dest. A
// refused payment answers the page again (422, by again) with the form
// open, what was typed kept and each error beside its field.
func (p *Portal) simulate(w http.ResponseWriter, r *http.Request, dest emi.TransferParty, back string, again func(*components.Form)) {
	form := components.KeepForm("simulate", r.PostForm, simulateFields...)
	minor, ok := emi.ParseTypedAmount(form.Value("amount"))
	if !ok {
		form.Refuse("amount", AmountFormat)
		p.Flash(r.Context(), "bad", "The payment was not made: please correct the marked fields.")
		again(form)
		return
	}
	in := emi.IncomingCredit{Scheme: form.Value("scheme"), Amount: emi.Amount(minor), Currency: form.Value("currency"),
		Reference: form.Value("reference"), Destination: dest, Payer: emi.IncomingPayer{Name: form.Value("payer_name"),
			IBAN: form.Value("payer_iban"), SortCode: form.Value("payer_sort_code"),
			AccountNumber: form.Value("payer_account_number"), CardLast4: form.Value("payer_card_last4")}}
	res, err := p.d.Incoming.Credit(r.Context(), in)
	if err != nil {
		switch emi.AsError(err).Kind {
		case emi.KindForbidden, emi.KindInternal:
			p.moneyRefused(w, r, err, back)
			return
		}
		banner := KeepErrors(form, err, func(field string) string {
			// The destination is the identifier chosen (account page) or
			// typed (suspense page: to_iban, to_sort_code…).
			if rest, ok := strings.CutPrefix(field, "destination."); ok {
				if form.Value("to_"+rest) != "" {
					return "to_" + rest
				}
				return "to"
			}
			return field
		})
		if !form.Refused() {
			form.General = banner
		}
		p.Flash(r.Context(), "bad", "The payment was not made: "+banner)
		again(form)
		return
	}
	if res.Status == emi.IncomingCredited {
		p.Flash(r.Context(), "ok", "Credited: "+emi.FormatMinor(minor)+" "+res.Transfer.Currency+" to account "+
			res.Transfer.DestinationAccount+" (transfer "+res.Transfer.Token+"). The partner is told (transfer.completed).")
	} else {
		p.Flash(r.Context(), "warn", "The payment could not be credited: it is in the suspense queue (item "+res.SuspenseItem+").")
		back = "/backoffice/suspense"
	}
	Redirect(w, r, back)
}

// identifierParty decodes an account page's identifier option:
// iban:<IBAN>, uk:<sort code>:<account number>, account:<token>,
// balance:<token>.
func identifierParty(v string) emi.TransferParty {
	kind, rest, _ := strings.Cut(v, ":")
	switch kind {
	case "iban":
		return emi.TransferParty{IBAN: rest}
	case "uk":
		sort, number, _ := strings.Cut(rest, ":")
		return emi.TransferParty{SortCode: sort, AccountNumber: number}
	case "account":
		return emi.TransferParty{Account: rest}
	case "balance":
		return emi.TransferParty{Balance: rest}
	}
	return emi.TransferParty{}
}

// --- adjustments ---
