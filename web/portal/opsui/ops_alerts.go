package opsui

import (
	"fmt"
	"net/http"
	"strconv"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/ops"
	"emi/views/components"
	"emi/views/opsview"
	"emi/web/httpx"
)

// The compliance alert queue (service ops.Alerts) over applications' and
// AML checks' hits: claim, release, assign.

var alertKindLabels = map[string]string{emi.AlertAMLCheck: "AML check", emi.AlertApplication: "Application",
	emi.AlertMonitoring: "Transaction monitoring"}

// alertQueue (GET /alerts) is the compliance alert queue.
func (p *Alerts) alertQueue(w http.ResponseWriter, r *http.Request) {
	p.renderAlerts(w, r, http.StatusOK, "")
}

func (p *Alerts) renderAlerts(w http.ResponseWriter, r *http.Request, status int, problem string) {
	ctx := r.Context()
	alerts, err := p.alerts.Queue(ctx)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	me := frame.Me(r).ID
	v := opsview.AlertsView{Error: problem}
	if frame.CanDo(r, ops.WorkAlerts) {
		colleagues, err := p.alerts.Assignees(ctx)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		for _, u := range colleagues {
			v.Assignees = append(v.Assignees, components.Option{Value: u.ID, Label: u.Name + " (" + u.Email + ")"})
		}
	}
	now := p.frame.Now()
	for _, a := range alerts {
		row := opsview.AlertRow{Kind: a.Kind, Subject: a.Subject, Href: a.Href, Kindlabel: alertKindLabels[a.Kind], Source: a.Source,
			Partner: a.Partner, Subjects: a.Subjects, TopScore: fmt.Sprintf("%.3f", a.TopScore), Raised: frame.FmtTime(a.RaisedAt),
			Age: frame.Age(now, a.RaisedAt), Hits: strconv.Itoa(a.Hits), Open: strconv.Itoa(a.Open), Holder: "nobody",
			Merchant: a.Merchant, MerchantHref: a.MerchantHref}
		if row.Subjects == "" {
			row.Subjects = a.Subject
		}
		if a.Kind == emi.AlertMonitoring {
			row.TopScore = "—" // a monitoring alert's findings are rules, not name matches
		}
		if a.Claim != nil {
			row.Holder = frame.Who(r, a.Claim.StaffID, a.Claim.StaffName)
			row.HeldByMe = a.Claim.StaffID == me
		}
		caps := ops.AlertCapabilitiesOf(ctx, a.Claim)
		row.CanClaim, row.CanRelease, row.CanAssign = caps.Claim, caps.Release, caps.Assign
		v.Rows = append(v.Rows, row)
	}
	p.frame.RenderPrivate(w, r, status, "Compliance alerts", opsview.Alerts(v))
}

// alertAction runs a claim, release or assignment and shows the queue
// again: on success after a redirect, on a refusal with the reason.
func (p *Alerts) alertAction(w http.ResponseWriter, r *http.Request, do func() error, done string) {
	if err := do(); err != nil {
		e := emi.AsError(err)
		switch e.Kind {
		case emi.KindInvalid, emi.KindConflict:
			p.renderAlerts(w, r, httpx.Status(e.Kind), alertProblem(e))
		default:
			p.frame.RenderError(w, r, err)
		}
		return
	}
	p.frame.Flash(r.Context(), "ok", done)
	frame.Redirect(w, r, "/backoffice/alerts")
}

// alertProblem is a refusal in words: the catalogue's message and each
// field's problem (never the error's Detail, which is for logs).
func alertProblem(e *emi.Error) string {
	msg := frame.Message(e)
	for _, f := range e.Fields {
		msg += " " + f.Field + ": " + f.Message + "."
	}
	return msg
}

func (p *Alerts) alertClaim(w http.ResponseWriter, r *http.Request) {
	p.alertAction(w, r, func() error {
		return p.alerts.Claim(r.Context(), r.PostFormValue("kind"), r.PostFormValue("subject"))
	}, "The alert is yours now.")
}

func (p *Alerts) alertRelease(w http.ResponseWriter, r *http.Request) {
	p.alertAction(w, r, func() error {
		return p.alerts.Release(r.Context(), r.PostFormValue("kind"), r.PostFormValue("subject"))
	}, "Alert released.")
}

func (p *Alerts) alertAssign(w http.ResponseWriter, r *http.Request) {
	p.alertAction(w, r, func() error {
		return p.alerts.Assign(r.Context(), r.PostFormValue("kind"), r.PostFormValue("subject"), r.PostFormValue("to"), r.PostFormValue("reason"))
	}, "Alert assigned: your colleague finds it in their inbox.")
}
