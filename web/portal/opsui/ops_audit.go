package opsui

import (
	"net/http"
	"strconv"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/views/fragments"
	"emi/views/opsview"
)

// The audit log screen; the rows are laid out by history.go, which the
// entities' pages share.

// auditLog (GET /audit) lists the audit log, newest first, 50 a page.
func (p *Records) auditLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := emi.AuditFilter{
		ActorID: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")),
		ResourceType: strings.TrimSpace(q.Get("resource_type")), ResourceToken: strings.TrimSpace(q.Get("resource_token")),
		Limit: 50,
	}
	sort := frame.ReadSort(r, "time", "desc", "time", "action", "resource", "outcome")
	if q.Get("sort") != "" && sort.Err == "" {
		f.Sort = sort.Order()
	}
	view := opsview.AuditFilter{Actor: f.ActorID, Action: f.Action, ResourceType: f.ResourceType, ResourceToken: f.ResourceToken,
		From: q.Get("from"), To: q.Get("to"), Sort: sort.View(r)}
	f.From, f.To, view.Errors = frame.DateRange(q)
	if len(view.Errors) > 0 {
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "Audit log", opsview.Audit(view, nil, "", ""))
		return
	}
	if b, err := strconv.ParseInt(q.Get("before"), 10, 64); err == nil && b > 0 {
		f.BeforeID = b
	}
	entries, err := p.audit.List(r.Context(), f)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	rows := make([]fragments.AuditRow, len(entries))
	for i, e := range entries {
		rows[i] = frame.AuditRow(r, e)
	}
	p.frame.NameAuditIDs(r, rows)
	var prev, next string
	if len(entries) == f.Limit {
		nq := frame.CloneQuery(q)
		nq.Set("before", strconv.FormatInt(entries[len(entries)-1].ID, 10))
		next = "/backoffice/audit?" + nq.Encode()
	}
	if f.BeforeID != 0 {
		pq := frame.CloneQuery(q)
		pq.Del("before")
		prev = "/backoffice/audit?" + pq.Encode()
	}
	p.frame.Render(w, r, sort.Status(), "Audit log", opsview.Audit(view, rows, prev, next))
}
