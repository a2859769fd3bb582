package opsui

import (
	"cmp"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/monitoring"
	"emi/internal/service/staff"
	"emi/views/components"
	"emi/views/opsview"
	"emi/web/portal/frame"
)

// caseList (GET /monitoring/cases) lists cases: in progress, closed or
// reported.
func (p *Monitoring) caseList(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	if status != "" && status != monitoring.CaseClosed && status != monitoring.CaseReported {
		status = ""
	}
	rows, err := p.cases.ListCases(r.Context(), monitoring.CaseFilter{Status: status, Limit: 500})
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	out := make([]opsview.CaseListRow, len(rows))
	for i, c := range rows {
		out[i] = opsview.CaseListRow{Token: c.Token, Subject: subjectName(c.SubjectName, c.Subject), Partner: c.PartnerName,
			Status: c.Status, Assignee: c.AssigneeName, Opened: frame.FmtTime(c.OpenedAt), Alerts: strconv.Itoa(c.Alerts)}
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, "Cases", opsview.CaseList(out, status))
}

func subjectName(name string, s monitoring.Subject) string {
	if name != "" {
		return name
	}
	return s.Kind + " " + s.Token
}

// casePage (GET /monitoring/cases/{case}) shows a case.
func (p *Monitoring) casePage(w http.ResponseWriter, r *http.Request) {
	p.renderCase(w, r, http.StatusOK, "", nil)
}

// renderCase renders a case's page; a refused form comes back with why
// and what was typed.
func (p *Monitoring) renderCase(w http.ResponseWriter, r *http.Request, status int, problem string, typed map[string]string) {
	v, err := p.cases.View(r.Context(), frame.Param(r, "case"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	subject := components.KV{Label: "About", Value: subjectName(v.SubjectName, v.Subject), Title: v.Subject.Token}
	if v.Subject.Kind == monitoring.SubjectUser {
		subject.Href = "/backoffice/users/" + v.Subject.Token
	}
	pv := opsview.CasePageView{Token: v.Token, Status: v.Status, Ended: v.Ended(), CanWork: frame.CanDo(r, monitoring.WorkCases),
		Problem: problem, Typed: typed,
		Details: []components.KV{subject,
			{Label: "Partner", Value: v.PartnerName, Href: "/backoffice/partners/" + v.PartnerID},
			{Label: "Status", Value: v.Status, Tone: map[bool]string{true: "neutral", false: "warn"}[v.Ended()]},
			{Label: "Assignee", Value: v.AssigneeName},
			{Label: "Opened (UTC)", Value: frame.FmtTime(v.OpenedAt)},
		}}
	if v.ClosedReason != "" {
		pv.Details = append(pv.Details, components.KV{Label: "Closed because", Value: v.ClosedReason})
	}
	for _, a := range v.Alerts {
		for _, h := range a.Hits {
			pv.Hits = append(pv.Hits, opsview.MonitoringHit{Rule: h.Rule, Version: strconv.Itoa(h.Version), Score: strconv.Itoa(h.Score),
				Sentence: h.Sentence, At: frame.FmtTime(h.At), Ref: h.Ref})
		}
	}
	for _, m := range v.Movements {
		cm := opsview.CaseMovement{At: frame.FmtTime(m.At), Kind: m.Kind, Direction: m.Direction,
			Amount: emi.FormatMinor(m.Amount) + " " + m.Currency, EUR: emi.FormatMinor(m.EUR), Counterparty: m.Counterparty,
			Country: m.CounterpartyCountry, Ref: m.Ref}
		if m.Declined {
			cm.Declined = " (declined)"
		}
		pv.Movements = append(pv.Movements, cm)
	}
	canDecide := frame.CanDo(r, staff.ProposeOp(staff.ControlHeldTransfer))
	for _, h := range v.Holds {
		var why []string
		for _, hit := range h.Hits {
			why = append(why, hit.Sentence)
		}
		ch := opsview.CaseHold{Transfer: h.Transfer, Held: frame.FmtTime(h.HeldAt), Status: h.Status, Sentence: strings.Join(why, "; "),
			CanDecide: canDecide && h.Status == monitoring.HoldHeld}
		if h.DecidedAt != nil {
			ch.Decided = fmt.Sprintf("%s %s: %s", h.Status, frame.FmtTime(*h.DecidedAt), h.Reason)
		}
		pv.Holds = append(pv.Holds, ch)
	}
	if v.Hold != nil {
		pv.HoldInForce = fmt.Sprintf("A compliance hold is in force since %s: no money leaves this customer's accounts. %s",
			frame.FmtTime(v.Hold.PlacedAt), v.Hold.Reason)
	}
	for _, q := range v.Requests {
		pv.Requests = append(pv.Requests, opsview.CaseRequest{Token: q.Token, Topic: q.Topic, Question: q.Question, Status: q.Status,
			Answer: q.Answer, Requested: frame.FmtTime(q.RequestedAt), Due: frame.FmtTime(q.DueAt)})
	}
	for _, d := range v.Documents {
		pv.Docs = append(pv.Docs, opsview.CaseDoc{Token: d.Token, Name: d.Filename, Type: d.ContentType, Size: strconv.Itoa(d.Size),
			Uploaded: frame.FmtTime(d.UploadedAt)})
	}
	for _, e := range v.Events {
		pv.Steps = append(pv.Steps, opsview.CaseStep{At: frame.FmtTime(e.At), Who: cmp.Or(e.ActorName, "the partner"),
			Kind: strings.ReplaceAll(e.Kind, "_", " "), Body: e.Body})
	}
	if v.Report != nil {
		pv.Report = opsview.CaseReport{Exists: true, Approved: v.Report.Status == monitoring.ReportApproved, Narrative: v.Report.Narrative,
			Action: v.Report.Action, Drafted: frame.FmtTime(v.Report.DraftedAt)}
		if v.Report.ApprovedBy != "" {
			pv.Report.Approver = frame.Who(r, v.Report.ApprovedBy, "")
		}
	}
	if v.ReportRequest != nil {
		pv.Report.Pending, pv.Report.Request = true, v.ReportRequest.ID
		pv.Report.CanApprove, pv.Report.CanReject, pv.Report.CanWithdraw = v.ReportCan.Approve, v.ReportCan.Reject, v.ReportCan.Withdraw
		pv.Report.WhyNotApprove = v.ReportCan.WhyNotApprove
	}
	for _, o := range v.Officers {
		pv.Officers = append(pv.Officers, components.Option{Value: o.ID, Label: o.Name})
	}
	topics := make([]string, 0, len(monitoring.InformationTopics))
	for t := range monitoring.InformationTopics {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		pv.Topics = append(pv.Topics, components.Option{Value: t, Label: strings.ReplaceAll(t, "_", " ") + ": " + monitoring.InformationTopics[t]})
	}
	if typed["narrative"] != "" {
		pv.Report.Narrative, pv.Report.Action = typed["narrative"], typed["action"]
	}
	p.frame.RenderPrivate(w, r, status, "Case", opsview.CasePage(pv))
}

// caseOpen (POST /monitoring/{alert}/case) opens a case from an alert.
func (p *Monitoring) caseOpen(w http.ResponseWriter, r *http.Request) {
	c, err := p.cases.OpenCase(r.Context(), []string{frame.Param(r, "alert")}, r.PostFormValue("note"))
	if err != nil {
		p.caseRefused(w, r, "/backoffice/monitoring/"+frame.Param(r, "alert"), err)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Case opened; the alert left the queue.")
	frame.Redirect(w, r, "/backoffice/monitoring/cases/"+c.Token)
}

// caseAction answers a case form: the service call, then back to the case
// with what happened. A refusal for what was typed (a rule or a state)
// answers the case's page again (422 or 409) with why and the typed text
// kept; others flash or show their error page.
func (p *Monitoring) caseAction(done string, fn func(r *http.Request, token string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := frame.Param(r, "case")
		back := "/backoffice/monitoring/cases/" + token
		if err := fn(r, token); err != nil {
			e := emi.AsError(err)
			if e.Kind == emi.KindInvalid || e.Kind == emi.KindConflict {
				msg := frame.Message(e)
				for _, f := range e.Fields {
					msg += " " + f.Field + ": " + f.Message + "."
				}
				typed := map[string]string{}
				for _, k := range []string{"question", "note", "narrative", "action"} {
					typed[k] = r.PostFormValue(k)
				}
				if strings.HasSuffix(r.URL.Path, "/close") {
					typed["close_reason"] = r.PostFormValue("reason")
				}
				status := http.StatusUnprocessableEntity
				if e.Kind == emi.KindConflict {
					status = http.StatusConflict
				}
				p.renderCase(w, r, status, "Nothing was changed: "+msg, typed)
				return
			}
			p.caseRefused(w, r, back, err)
			return
		}
		p.frame.Flash(r.Context(), "ok", done)
		frame.Redirect(w, r, back)
	}
}

// caseRefused sends the officer back to the page with why (403, 404 and
// 500 pages for what the page cannot explain).
func (p *Monitoring) caseRefused(w http.ResponseWriter, r *http.Request, back string, err error) {
	p.frame.FlashError(w, r, err, back)
}

// Routes' handlers of a case's forms.
func (p *Monitoring) caseNote() http.HandlerFunc {
	return p.caseAction("Note added.", func(r *http.Request, t string) error {
		_, err := p.cases.AddNote(r.Context(), t, r.PostFormValue("note"))
		return err
	})
}

func (p *Monitoring) caseAssign() http.HandlerFunc {
	return p.caseAction("Assigned.", func(r *http.Request, t string) error {
		_, err := p.cases.Assign(r.Context(), t, r.PostFormValue("assignee"))
		return err
	})
}

func (p *Monitoring) caseInvestigate() http.HandlerFunc {
	return p.caseAction("The case is under investigation.", func(r *http.Request, t string) error {
		_, err := p.cases.Investigate(r.Context(), t)
		return err
	})
}

func (p *Monitoring) caseClose() http.HandlerFunc {
	return p.caseAction("Case closed without suspicion.", func(r *http.Request, t string) error {
		_, err := p.cases.Close(r.Context(), t, r.PostFormValue("reason"))
		return err
	})
}

func (p *Monitoring) caseRequest() http.HandlerFunc {
	return p.caseAction("The partner was asked; its answer will show here.", func(r *http.Request, t string) error {
		_, err := p.cases.RequestInformation(r.Context(), t, r.PostFormValue("topic"), r.PostFormValue("question"))
		return err
	})
}

func (p *Monitoring) caseHold() http.HandlerFunc {
	return p.caseAction("Compliance hold placed: no money leaves the customer's accounts.", func(r *http.Request, t string) error {
		_, err := p.cases.PlaceHold(r.Context(), t, r.PostFormValue("reason"))
		return err
	})
}

func (p *Monitoring) caseLift() http.HandlerFunc {
	return p.caseAction("Compliance hold lifted.", func(r *http.Request, t string) error {
		_, err := p.cases.LiftHold(r.Context(), t, r.PostFormValue("reason"))
		return err
	})
}

func (p *Monitoring) caseReport() http.HandlerFunc {
	return p.caseAction("Report submitted: a second officer with the reporting permission approves it.", func(r *http.Request, t string) error {
		_, err := p.cases.SubmitReport(r.Context(), t, r.PostFormValue("narrative"), r.PostFormValue("action"))
		return err
	})
}

func (p *Monitoring) caseReportApprove() http.HandlerFunc {
	return p.caseAction("Report approved: the goAML file is ready to upload to the FIU.", func(r *http.Request, t string) error {
		_, err := p.cases.ApproveReport(r.Context(), t, r.PostFormValue("request"))
		return err
	})
}

func (p *Monitoring) caseReportReject() http.HandlerFunc {
	return p.caseAction("The submission is closed; the draft stays.", func(r *http.Request, t string) error {
		return p.cases.RejectReport(r.Context(), t, r.PostFormValue("request"), r.PostFormValue("note"))
	})
}

// caseUpload (POST /monitoring/cases/{case}/documents) attaches a file.
func (p *Monitoring) caseUpload() http.HandlerFunc {
	return p.caseAction("Document attached.", func(r *http.Request, t string) error {
		f, h, err := r.FormFile("file")
		if err != nil {
			return emi.ErrReviewValidation.Field("file", "choose a file of at most 10 MiB")
		}
		defer f.Close()
		content, err := io.ReadAll(io.LimitReader(f, monitoring.MaxCaseDocument+1))
		if err != nil {
			return emi.ErrReviewValidation.Field("file", "could not be read")
		}
		_, err = p.cases.AttachDocument(r.Context(), t, h.Filename, content)
		return err
	})
}

// caseDocument (GET /monitoring/cases/{case}/documents/{document})
// downloads a document (audited).
func (p *Monitoring) caseDocument(w http.ResponseWriter, r *http.Request) {
	d, content, err := p.cases.Document(r.Context(), frame.Param(r, "case"), frame.Param(r, "document"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", d.ContentType)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.Filename}))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(content)
}

// caseReportFile (GET /monitoring/cases/{case}/report.xml) downloads the
// approved report's goAML file (audited).
func (p *Monitoring) caseReportFile(w http.ResponseWriter, r *http.Request) {
	rep, xml, err := p.cases.ReportFile(r.Context(), frame.Param(r, "case"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "str-" + rep.Token + ".xml"}))
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(xml)
}
