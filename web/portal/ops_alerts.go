package portal

import (
	"fmt"
	"net/http"
	"strconv"

	"emi/internal/emi"
	"emi/views/pages"
	"emi/web/httpx"
)

// inboxCounts adds the unread inbox items and, for compliance, the open
// alerts to the navigation badges. A failed count leaves its badge out.
func (p *Portal) inboxCounts(r *http.Request, out map[string]string) {
	ctx := r.Context()
	if p.d.Inbox != nil && canDo(r, emi.PermViewDashboard) {
		if n, err := p.d.Inbox.Unread(ctx); err == nil && n > 0 {
			out["/backoffice/inbox"] = strconv.FormatInt(n, 10)
		}
	}
	if p.d.Alerts != nil && canDo(r, emi.PermReviewAML) {
		if n, err := p.d.Alerts.Count(ctx); err != nil {
			p.d.Logger.Warn("count the alert queue", "error", err, "request_id", emi.RequestMetaFrom(ctx).RequestID)
		} else if n > 0 {
			out["/backoffice/alerts"] = strconv.Itoa(n)
		}
	}
}

var alertKindLabels = map[string]string{emi.AlertAMLCheck: "AML check", emi.AlertApplication: "Application"}

// alertQueue (GET /alerts) is the compliance alert queue.
func (p *Portal) alertQueue(w http.ResponseWriter, r *http.Request) {
	p.renderAlerts(w, r, http.StatusOK, "")
}

func (p *Portal) renderAlerts(w http.ResponseWriter, r *http.Request, status int, problem string) {
	ctx := r.Context()
	alerts, err := p.d.Alerts.Queue(ctx)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	me := current(r).ID
	mayAct := canDo(r, emi.PermReviewAML)
	v := pages.AlertsView{Error: problem}
	if mayAct {
		people, err := p.d.Alerts.Assignees(ctx)
		if err != nil {
			p.renderError(w, r, err)
			return
		}
		for _, u := range people {
			v.Assignees = append(v.Assignees, pages.Option{Value: u.ID, Label: u.Name + " (" + u.Email + ")"})
		}
	}
	now := p.d.Now()
	for _, a := range alerts {
		row := pages.AlertRow{Kind: a.Kind, Subject: a.Subject, Href: a.Href, Kindlabel: alertKindLabels[a.Kind], Source: a.Source,
			Partner: a.Partner, Subjects: a.Subjects, TopScore: fmt.Sprintf("%.3f", a.TopScore), Raised: fmtTime(a.RaisedAt),
			Age: age(now, a.RaisedAt), Hits: strconv.Itoa(a.Hits), Open: strconv.Itoa(a.Open), Holder: "nobody",
			Merchant: a.Merchant, MerchantHref: a.MerchantHref}
		if row.Subjects == "" {
			row.Subjects = a.Subject
		}
		if a.Claim != nil {
			row.Holder = who(r, a.Claim.StaffID, a.Claim.StaffName)
			row.HeldByMe = a.Claim.StaffID == me
		}
		row.CanClaim = mayAct && a.Claim == nil
		row.CanRelease = mayAct && a.Claim != nil && (row.HeldByMe || canDo(r, emi.PermManageStaff))
		row.CanAssign = mayAct
		v.Rows = append(v.Rows, row)
	}
	p.renderPrivate(w, r, status, "Compliance alerts", pages.Alerts(v))
}

// alertAction runs a claim, release or assignment and shows the queue
// again: on success after a redirect, on a refusal with the reason.
func (p *Portal) alertAction(w http.ResponseWriter, r *http.Request, do func() error, done string) {
	if err := do(); err != nil {
		e := emi.AsError(err)
		switch e.Kind {
		case emi.KindInvalid, emi.KindConflict:
			p.renderAlerts(w, r, httpx.Status(e.Kind), alertProblem(e))
		default:
			p.renderError(w, r, err)
		}
		return
	}
	p.flash(r.Context(), "ok", done)
	redirect(w, r, "/backoffice/alerts")
}

// alertProblem is a refusal in words: the catalogue's message and each
// field's problem (never the error's Detail, which is for logs).
func alertProblem(e *emi.Error) string {
	msg := Message(e)
	for _, f := range e.Fields {
		msg += " " + f.Field + ": " + f.Message + "."
	}
	return msg
}

func (p *Portal) alertClaim(w http.ResponseWriter, r *http.Request) {
	p.alertAction(w, r, func() error {
		return p.d.Alerts.Claim(r.Context(), r.PostFormValue("kind"), r.PostFormValue("subject"))
	}, "The alert is yours now.")
}

func (p *Portal) alertRelease(w http.ResponseWriter, r *http.Request) {
	p.alertAction(w, r, func() error {
		return p.d.Alerts.Release(r.Context(), r.PostFormValue("kind"), r.PostFormValue("subject"))
	}, "Alert released.")
}

func (p *Portal) alertAssign(w http.ResponseWriter, r *http.Request) {
	p.alertAction(w, r, func() error {
		return p.d.Alerts.Assign(r.Context(), r.PostFormValue("kind"), r.PostFormValue("subject"), r.PostFormValue("to"), r.PostFormValue("reason"))
	}, "Alert assigned: your colleague finds it in their inbox.")
}

// inboxRows lays out inbox items.
func inboxRows(r *http.Request, items []emi.InboxItem) []pages.InboxRow {
	rows := make([]pages.InboxRow, len(items))
	for i, it := range items {
		rows[i] = pages.InboxRow{ID: strconv.FormatInt(it.ID, 10), Kind: it.Kind, Href: it.Href, Body: it.Body,
			By: who(r, it.By, it.ByName), At: fmtTime(it.At), Unread: it.ReadAt == nil}
	}
	return rows
}

// inboxPage (GET /inbox) lists the person's notifications, newest first.
func (p *Portal) inboxPage(w http.ResponseWriter, r *http.Request) {
	items, err := p.d.Inbox.Mine(r.Context(), false, 100)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	p.renderPrivate(w, r, http.StatusOK, "Inbox", pages.InboxList(inboxRows(r, items), "No mention or assignment yet."))
}

// inboxRead (POST /inbox/read) marks one item (id) or all (id 0) read.
func (p *Portal) inboxRead(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PostFormValue("id"), 10, 64)
	if err != nil || id < 0 {
		p.renderError(w, r, emi.ErrReviewValidation.Field("id", "is not an inbox item"))
		return
	}
	if err := p.d.Inbox.MarkRead(r.Context(), id); err != nil {
		p.renderError(w, r, err)
		return
	}
	redirect(w, r, "/backoffice/inbox")
}
