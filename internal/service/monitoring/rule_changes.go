package monitoring

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// RuleChange is a proposed next version of a rule: for every program
// (Program "") or one program's override.
type RuleChange struct {
	Code    string             `json:"code"`
	Program string             `json:"program"`
	Score   int                `json:"score"`
	Enabled bool               `json:"enabled"`
	Shadow  bool               `json:"shadow"`
	Params  map[string]float64 `json:"params"`
	// Outcome is OutcomeAlert, OutcomeHold or OutcomeDecline ("": the
	// version in force's).
	Outcome string `json:"outcome"`
	Reason  string `json:"-"`
}

// Backtest is what a proposed rule would have changed over the stored
// history: its hits and the subjects it would have alerted, against the
// version in force, over the movements of the last Days days (the newest
// BacktestLimit of them; Truncated when there were more).
type Backtest struct {
	Days             int  `json:"days"`
	Movements        int  `json:"movements"`
	Truncated        bool `json:"truncated"`
	CurrentHits      int  `json:"current_hits"`
	ProposedHits     int  `json:"proposed_hits"`
	CurrentSubjects  int  `json:"current_subjects"`
	ProposedSubjects int  `json:"proposed_subjects"`
	// NewSubjects would be alerted by the proposal and are not by the
	// version in force; DroppedSubjects the other way round.
	NewSubjects     int `json:"new_subjects"`
	DroppedSubjects int `json:"dropped_subjects"`
}

// Backtest bounds.
const (
	BacktestDays  = 30
	BacktestLimit = 5000
)

// PendingRuleChange is a proposal waiting for a second compliance officer
// and what the reader may do with it.
type PendingRuleChange struct {
	Request     staff.Request
	Change      RuleChange
	BaseVersion int
	Backtest    Backtest
	Can         staff.RequestCapability
}

// RuleChangeFlow is a change of a monitoring rule: proposed by one
// compliance officer, applied when another approves
// (staff.ControlMonitoringRule); any other change of the rule meanwhile
// voids it, and it lapses after 14 days.
var RuleChangeFlow = staff.DeclareFlow(staff.Flow{
	Control:   staff.ControlMonitoringRule,
	Asked:     "this rule change",
	Changed:   "the rule",
	Proposed:  "monitoring.rule_change_proposed",
	Approved:  "monitoring.rule_change_applied",
	Rejected:  "monitoring.rule_change_rejected",
	Withdrawn: "monitoring.rule_change_withdrawn",
	Voided:    "monitoring.rule_change_voided",
	Lapse:     14 * 24 * time.Hour,
	Href:      func(r staff.Request) string { return "/backoffice/monitoring/rules#rule-" + r.ResourceToken },
})

// ruleSubject names a rule for the request lifecycle: "monitoring_rule:code/program".
func ruleSubject(code, program string) string {
	return staff.SubjectOf("monitoring_rule", code+"/"+program)
}

// ProposeRuleChange proposes the next version of a rule, with a backtest
// over the stored history (ViewAlerts to read, the decision table's
// Propose permission to propose). The parameters are the rule's own,
// each a number: amounts and counts zero or more, ratios and shares up to
// 1, counts and windows at least 1.
func (m *Monitor) ProposeRuleChange(ctx context.Context, c RuleChange) (PendingRuleChange, error) {
	if err := staff.RequirePropose(ctx, staff.ControlMonitoringRule); err != nil {
		return PendingRuleChange{}, err
	}
	rules, err := m.store.Rules(ctx)
	if err != nil {
		return PendingRuleChange{}, err
	}
	set := newRuleSet(rules)
	if err := m.checkChange(ctx, set, &c); err != nil {
		return PendingRuleChange{}, err
	}
	bt, err := m.backtest(ctx, set, c)
	if err != nil {
		return PendingRuleChange{}, err
	}
	var out PendingRuleChange
	err = m.tx.InTx(ctx, func(ctx context.Context) error {
		cur, found, err := m.store.LockRule(ctx, c.Code, c.Program)
		if err != nil {
			return err
		}
		base := 0
		if found {
			base = cur.Version
		}
		req, err := m.controls.ProposeRequest(ctx, RuleChangeFlow, staff.Proposal{Subject: ruleSubject(c.Code, c.Program),
			ResourceType: "monitoring_rule", ResourceToken: c.Code, Reason: c.Reason, Revision: strconv.Itoa(base),
			Changes: map[string]any{"code": c.Code, "program": c.Program, "score": c.Score, "enabled": c.Enabled,
				"shadow": c.Shadow, "params": c.Params, "outcome": c.Outcome, "backtest": bt}})
		if err != nil {
			return err
		}
		out = PendingRuleChange{Request: req, Change: c, BaseVersion: base, Backtest: bt}
		return m.store.InsertRuleChange(ctx, req.ID, base, c, bt)
	})
	return out, err
}

// checkChange checks a proposal against the rules in force.
func (m *Monitor) checkChange(ctx context.Context, set ruleSet, c *RuleChange) error {
	c.Code, c.Program = strings.TrimSpace(c.Code), strings.TrimSpace(c.Program)
	def, ok := set[c.Code][""]
	if !ok {
		return emi.ErrReviewValidation.Field("code", "is not a monitoring rule")
	}
	var bad kernel.Problems
	if c.Program != "" {
		exists, err := m.store.ProgramExists(ctx, c.Program)
		if err != nil {
			return err
		}
		if !exists {
			bad.Add("program", "is not a program")
		}
	}
	if c.Outcome == "" {
		c.Outcome = def.Outcome
		if cur, ok := set[c.Code][c.Program]; ok {
			c.Outcome = cur.Outcome
		}
	}
	if !slices.Contains(Outcomes(), c.Outcome) {
		bad.Add("outcome", "must be alert, hold or decline")
	}
	if c.Score < 0 || c.Score > 100 {
		bad.Add("score", "must be between 0 and 100")
	}
	for name := range c.Params {
		if _, known := def.Params[name]; !known {
			bad.Add("params."+name, "is not a parameter of "+c.Code)
		}
	}
	for name := range def.Params {
		v, ok := c.Params[name]
		switch {
		case !ok:
			bad.Add("params."+name, "is required")
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			bad.Add("params."+name, "must be a number, zero or more")
		case (name == "ratio" || name == "share") && (v <= 0 || v > 1):
			bad.Add("params."+name, "must be more than 0 and at most 1")
		case (strings.HasPrefix(name, "min_count") || name == "min_counterparties" || name == "days" || name == "hours" || name == "minutes") && v < 1:
			bad.Add("params."+name, "must be 1 or more")
		case strings.HasPrefix(name, "factor_") && v < 1:
			bad.Add("params."+name, "must be 1 or more (a factor widens the declared band)")
		}
	}
	if c.Shadow && !c.Enabled {
		bad.Add("shadow", "a rule that is off does not run in shadow: turn it on in shadow mode")
	}
	if len(bad) > 0 {
		return emi.ErrReviewValidation.WithFields(bad...)
	}
	if cur, ok := set[c.Code][c.Program]; ok && cur.Score == c.Score && cur.Enabled == c.Enabled && cur.Shadow == c.Shadow &&
		cur.Outcome == c.Outcome && equalParams(cur.Params, c.Params) {
		return emi.ErrReviewValidation.Field("params", "the proposal is the version in force: change something")
	}
	return nil
}

func equalParams(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// backtest evaluates the version in force and the proposal over the
// stored movements of the last BacktestDays days, each as of its own time.
func (m *Monitor) backtest(ctx context.Context, set ruleSet, c RuleChange) (Backtest, error) {
	bt := Backtest{Days: BacktestDays}
	mvs, truncated, err := m.store.RecentMovements(ctx, m.now.At(ctx).Add(-BacktestDays*24*time.Hour), BacktestLimit)
	if err != nil {
		return bt, err
	}
	bt.Movements, bt.Truncated = len(mvs), truncated
	proposed := Rule{Code: c.Code, Program: c.Program, Score: c.Score, Enabled: c.Enabled, Params: c.Params,
		Version: set[c.Code][c.Program].Version + 1}
	var fn check
	for _, ch := range checks {
		if ch.code == c.Code {
			fn = ch.fn
		}
	}
	now, next := map[string]bool{}, map[string]bool{}
	profiles := map[Subject]Profile{}
	for _, mv := range mvs {
		p, ok := profiles[mv.Subject]
		if !ok {
			if p, err = m.store.Profile(ctx, mv.Subject); err != nil {
				return bt, err
			}
			p.derive()
			profiles[mv.Subject] = p
		}
		key := mv.Subject.Kind + ":" + mv.Subject.Token
		curHit := false
		if r, ok := set.rule(c.Code, mv.Program); ok {
			s, err := fn(ctx, m.store, p, r, mv)
			if err != nil {
				return bt, err
			}
			if curHit = s != ""; curHit {
				bt.CurrentHits++
				now[key] = true
			}
		}
		// The proposal applies to its program's movements, or, for the
		// default, to those of programs without an override; the others
		// keep the version in force.
		inScope := c.Program == mv.Program || (c.Program == "" && !hasOverride(set, c.Code, mv.Program))
		if !inScope {
			if curHit {
				bt.ProposedHits++
				next[key] = true
			}
			continue
		}
		if !proposed.Enabled {
			continue
		}
		s, err := fn(ctx, m.store, p, proposed, mv)
		if err != nil {
			return bt, err
		}
		if s != "" {
			bt.ProposedHits++
			next[key] = true
		}
	}
	bt.CurrentSubjects, bt.ProposedSubjects = len(now), len(next)
	for k := range next {
		if !now[k] {
			bt.NewSubjects++
		}
	}
	for k := range now {
		if !next[k] {
			bt.DroppedSubjects++
		}
	}
	return bt, nil
}

func hasOverride(set ruleSet, code, program string) bool {
	_, ok := set[code][program]
	return ok && program != ""
}

// PendingRuleChanges returns the proposals waiting for a second officer
// (ViewAlerts).
func (m *Monitor) PendingRuleChanges(ctx context.Context) ([]PendingRuleChange, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	list, err := m.store.RuleChanges(ctx)
	if err != nil {
		return nil, err
	}
	var out []PendingRuleChange
	for _, p := range list {
		r, found, err := m.controls.PendingRequest(ctx, ruleSubject(p.Change.Code, p.Change.Program))
		if err != nil {
			return nil, err
		}
		if found && r.ID == p.Request.ID {
			p.Request, p.Can = r, m.controls.RequestCapabilities(ctx, r)
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b PendingRuleChange) int { return a.Request.ProposedAt.Compare(b.Request.ProposedAt) })
	return out, nil
}

// ApproveRuleChange applies a rule change another officer proposed
// (RuleChangeFlow: a distinct person, the engine's links included): the
// proposal becomes the rule's next version, in force for every movement
// evaluated from then on. A rule changed since the proposal voids it.
// seen is the request the approver saw.
func (m *Monitor) ApproveRuleChange(ctx context.Context, code, program, seen string) (Rule, error) {
	var out Rule
	_, err := m.controls.ApproveRequest(ctx, RuleChangeFlow, ruleSubject(code, program), staff.Approval{ID: seen,
		Lock: func(ctx context.Context, _ staff.Request) (string, error) {
			cur, found, err := m.store.LockRule(ctx, code, program)
			if err != nil || !found {
				return "0", err
			}
			return strconv.Itoa(cur.Version), nil
		},
		Apply: func(ctx context.Context, r staff.Request) (map[string]any, error) {
			p, err := m.store.RuleChange(ctx, r.ID)
			if err != nil {
				return nil, err
			}
			rules, err := m.store.Rules(ctx)
			if err != nil {
				return nil, err
			}
			def := newRuleSet(rules)[code][""]
			out = Rule{Code: code, Program: program, Version: p.BaseVersion + 1, Description: def.Description,
				Score: p.Change.Score, Enabled: p.Change.Enabled, Shadow: p.Change.Shadow, Params: p.Change.Params,
				Outcome: p.Change.Outcome}
			if err := m.store.ApplyRule(ctx, out); err != nil {
				return nil, err
			}
			m.forgetRules()
			return map[string]any{"code": code, "program": program, "version": out.Version, "params": out.Params,
				"score": out.Score, "enabled": out.Enabled, "shadow": out.Shadow, "outcome": out.Outcome}, nil
		},
	})
	return out, err
}

// RejectRuleChange ends a proposal without applying it: withdrawn by its
// proposer, rejected by another officer with a reason.
func (m *Monitor) RejectRuleChange(ctx context.Context, code, program, seen, note string) error {
	_, err := m.controls.DeclineRequest(ctx, RuleChangeFlow, ruleSubject(code, program), staff.Decline{ID: seen, Note: note,
		Lock: func(ctx context.Context, _ staff.Request) error {
			_, _, err := m.store.LockRule(ctx, code, program)
			return err
		}})
	return err
}
