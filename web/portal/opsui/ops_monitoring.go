package opsui

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"emi/internal/service/monitoring"
	"emi/views/components"
	"emi/views/opsview"
	"emi/web/portal/frame"
)

// monitoringAlert (GET /monitoring/{alert}) shows a transaction
// monitoring alert: whom it is about and every rule's finding.
func (p *Monitoring) monitoringAlert(w http.ResponseWriter, r *http.Request) {
	a, err := p.monitor.AlertByToken(r.Context(), frame.Param(r, "alert"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	subject := components.KV{Label: "About", Value: a.SubjectName, Title: a.Subject.Token}
	if a.Subject.Kind == monitoring.SubjectUser {
		subject.Href = "/backoffice/users/" + a.Subject.Token
	}
	if subject.Value == "" {
		subject.Value = a.Subject.Kind + " " + a.Subject.Token
	}
	v := opsview.MonitoringAlertView{Token: a.Token, Details: []components.KV{
		subject,
		{Label: "Kind of customer", Value: map[string]string{monitoring.SubjectUser: "person", monitoring.SubjectMerchant: "merchant"}[a.Subject.Kind]},
		{Label: "Partner", Value: a.PartnerName, Href: "/backoffice/partners/" + a.PartnerID},
		{Label: "Status", Value: a.Status, Tone: map[bool]string{true: "warn", false: "neutral"}[a.Status == monitoring.AlertOpen]},
		{Label: "Score", Value: strconv.Itoa(a.Score)},
		{Label: "Raised (UTC)", Value: frame.FmtTime(a.RaisedAt)},
		{Label: "Last finding (UTC)", Value: frame.FmtTime(a.UpdatedAt)},
	}}
	for _, h := range a.Hits {
		v.Hits = append(v.Hits, opsview.MonitoringHit{Rule: h.Rule, Version: strconv.Itoa(h.Version), Score: strconv.Itoa(h.Score),
			Sentence: h.Sentence, At: frame.FmtTime(h.At), Ref: h.Ref})
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, "Monitoring alert", opsview.MonitoringAlert(v))
}

// monitoringRules (GET /monitoring/rules) lists the rules in force.
func (p *Monitoring) monitoringRules(w http.ResponseWriter, r *http.Request) {
	rules, err := p.monitor.RulesInForce(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	order := map[string]int{}
	for i, c := range monitoring.Codes() {
		order[c] = i
	}
	sort.SliceStable(rules, func(i, j int) bool {
		if rules[i].Code != rules[j].Code {
			return order[rules[i].Code] < order[rules[j].Code]
		}
		return rules[i].Program < rules[j].Program
	})
	rows := make([]opsview.MonitoringRule, len(rules))
	for i, ru := range rules {
		params, _ := json.Marshal(ru.Params)
		state := "live"
		switch {
		case !ru.Enabled:
			state = "off"
		case ru.Shadow:
			state = "shadow"
		}
		program := ru.Program
		if program == "" {
			program = "every program"
		}
		rows[i] = opsview.MonitoringRule{Code: ru.Code, Program: program, Version: strconv.Itoa(ru.Version), Score: strconv.Itoa(ru.Score),
			State: state, Description: ru.Description, Params: string(params)}
	}
	p.frame.Render(w, r, http.StatusOK, "Monitoring rules", opsview.MonitoringRules(rows))
}
