package opsui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/monitoring"
	"emi/internal/service/staff"
	"emi/views/components"
	"emi/views/opsview"
	"emi/web/httpx"
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
	v.Case, v.CanOpenCase = a.Case, a.Status == monitoring.AlertOpen && frame.CanDo(r, monitoring.WorkCases)
	for _, h := range a.Hits {
		v.Hits = append(v.Hits, opsview.MonitoringHit{Rule: h.Rule, Version: strconv.Itoa(h.Version), Score: strconv.Itoa(h.Score),
			Sentence: h.Sentence, At: frame.FmtTime(h.At), Ref: h.Ref})
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, "Monitoring alert", opsview.MonitoringAlert(v))
}

// monitoringRules (GET /monitoring/rules) lists the rules in force and
// the changes waiting for a second officer.
func (p *Monitoring) monitoringRules(w http.ResponseWriter, r *http.Request) {
	p.renderRules(w, r, http.StatusOK, "")
}

func (p *Monitoring) renderRules(w http.ResponseWriter, r *http.Request, status int, problem string) {
	ctx := r.Context()
	rules, err := p.monitor.RulesInForce(ctx)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	shadow, err := p.monitor.ShadowCounts(ctx, 30)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	pending, err := p.monitor.PendingRuleChanges(ctx)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	stats, err := p.cases.RuleStats(ctx)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	record := map[string]string{}
	for _, st := range stats {
		prec := "precision: no case ended yet"
		if v, ok := st.Precision(); ok {
			prec = fmt.Sprintf("precision %.0f %% (%d reported, %d closed without suspicion)", 100*v, st.Reported, st.ClosedNoSuspicion)
		}
		record[st.Rule] = fmt.Sprintf("%d alerts, %d cases; %s", st.Alerts, st.Cases, prec)
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
	canPropose := frame.CanDo(r, staff.ProposeOp(staff.ControlMonitoringRule))
	rows := make([]opsview.MonitoringRule, len(rules))
	for i, ru := range rules {
		params, _ := json.Marshal(ru.Params)
		row := opsview.MonitoringRule{Code: ru.Code, Program: programLabel(ru.Program), ProgramCode: ru.Program,
			Version: strconv.Itoa(ru.Version), Score: strconv.Itoa(ru.Score), State: ruleState(ru.Enabled, ru.Shadow),
			Description: ru.Description, Params: string(params), ShadowHits: strconv.FormatInt(shadow[ru.Code], 10), CanPropose: canPropose,
			Outcome: ru.Outcome, Record: cmp.Or(record[ru.Code], "no alert yet")}
		names := make([]string, 0, len(ru.Params))
		for name := range ru.Params {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			row.Inputs = append(row.Inputs, components.KV{Label: name, Value: strconv.FormatFloat(ru.Params[name], 'f', -1, 64)})
		}
		rows[i] = row
	}
	var proposals []opsview.MonitoringProposal
	for _, pc := range pending {
		change, _ := json.Marshal(map[string]any{"params": pc.Change.Params, "score": pc.Change.Score,
			"state": ruleState(pc.Change.Enabled, pc.Change.Shadow)})
		bt := pc.Backtest
		summary := fmt.Sprintf("%d movements: %d hits now, %d proposed; %d customers alerted now, %d proposed (%d new, %d no longer)",
			bt.Movements, bt.CurrentHits, bt.ProposedHits, bt.CurrentSubjects, bt.ProposedSubjects, bt.NewSubjects, bt.DroppedSubjects)
		if bt.Truncated {
			summary += fmt.Sprintf("; the newest %d movements only", bt.Movements)
		}
		proposals = append(proposals, opsview.MonitoringProposal{Request: pc.Request.ID, Code: pc.Change.Code,
			Program: programLabel(pc.Change.Program), ProgramCode: pc.Change.Program,
			Proposer: frame.Who(r, pc.Request.ProposedBy, pc.Request.ProposedByName), Proposed: frame.FmtTime(pc.Request.ProposedAt),
			Reason: pc.Request.Reason, Change: string(change), Backtest: summary,
			CanApprove: pc.Can.Approve, CanReject: pc.Can.Reject, CanWithdraw: pc.Can.Withdraw, WhyNotApprove: pc.Can.WhyNotApprove})
	}
	p.frame.Render(w, r, status, "Monitoring rules", opsview.MonitoringRules(rows, proposals, problem))
}

func programLabel(program string) string {
	if program == "" {
		return "every program"
	}
	return program
}

func ruleState(enabled, shadow bool) string {
	switch {
	case !enabled:
		return "off"
	case shadow:
		return "shadow"
	}
	return "live"
}

// ruleProposal (POST /monitoring/rules/{code}/propose) proposes a rule's
// next version.
func (p *Monitoring) ruleProposal(w http.ResponseWriter, r *http.Request) {
	c := monitoring.RuleChange{Code: frame.Param(r, "code"), Program: r.PostFormValue("program"), Reason: r.PostFormValue("reason"),
		Outcome: r.PostFormValue("outcome"), Params: map[string]float64{}}
	var bad []string
	score, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("score")))
	if err != nil {
		bad = append(bad, "score: must be a whole number from 0 to 100")
	}
	c.Score = score
	switch r.PostFormValue("state") {
	case "live":
		c.Enabled = true
	case "shadow":
		c.Enabled, c.Shadow = true, true
	case "off":
	default:
		bad = append(bad, "state: must be live, shadow or off")
	}
	for key, vs := range r.PostForm {
		name, ok := strings.CutPrefix(key, "param.")
		if !ok || len(vs) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(vs[0]), ",", "."), 64)
		if err != nil {
			bad = append(bad, name+": must be a number")
			continue
		}
		c.Params[name] = v
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		p.renderRules(w, r, http.StatusUnprocessableEntity, "Nothing was proposed: "+strings.Join(bad, "; ")+".")
		return
	}
	if _, err := p.monitor.ProposeRuleChange(r.Context(), c); err != nil {
		p.ruleRefused(w, r, err)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Proposed. Another compliance officer applies it by approving it.")
	frame.Redirect(w, r, "/backoffice/monitoring/rules")
}

// ruleApprove (POST /monitoring/rules/{code}/approve) applies a change
// another officer proposed.
func (p *Monitoring) ruleApprove(w http.ResponseWriter, r *http.Request) {
	rule, err := p.monitor.ApproveRuleChange(r.Context(), frame.Param(r, "code"), r.PostFormValue("program"), r.PostFormValue("request"))
	if err != nil {
		p.ruleRefused(w, r, err)
		return
	}
	p.frame.Flash(r.Context(), "ok", fmt.Sprintf("Applied: %s version %d is in force.", rule.Code, rule.Version))
	frame.Redirect(w, r, "/backoffice/monitoring/rules")
}

// ruleReject (POST /monitoring/rules/{code}/reject) rejects a proposal (or
// withdraws one's own).
func (p *Monitoring) ruleReject(w http.ResponseWriter, r *http.Request) {
	err := p.monitor.RejectRuleChange(r.Context(), frame.Param(r, "code"), r.PostFormValue("program"), r.PostFormValue("request"),
		r.PostFormValue("note"))
	if err != nil {
		p.ruleRefused(w, r, err)
		return
	}
	p.frame.Flash(r.Context(), "ok", "The proposal is closed; the rule is unchanged.")
	frame.Redirect(w, r, "/backoffice/monitoring/rules")
}

// ruleRefused answers a refused rule change: the rules page again, with
// why, for a rule the service refused (403, 404 and 500 pages otherwise).
func (p *Monitoring) ruleRefused(w http.ResponseWriter, r *http.Request, err error) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden, emi.KindNotFound, emi.KindInternal:
		p.frame.RenderError(w, r, err)
		return
	}
	msg := frame.Message(e)
	for _, f := range e.Fields {
		msg += " " + f.Field + ": " + f.Message + "."
	}
	p.renderRules(w, r, httpx.Status(e.Kind), msg)
}
