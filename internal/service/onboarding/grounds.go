package onboarding

import (
	"fmt"
	"sort"
	"strings"

	"emi/internal/emi"
)

// ApprovalGrounds states, in words, what an application's approval rests
// on: each automatic check's result and, for the sanctions check, every hit
// and how it was decided (by whom, and whether two people did), then the
// risk. It is what the decision record and the back office show as the
// reason of an approval (the record states the real grounds, and "every
// check passed" only when every check did). It is internal: the partner's
// decision_reason never carries it (hit decisions are not told to the
// partner).
func ApprovalGrounds(a emi.Application, hits map[string]emi.HitDecisionRecord) string {
	var parts []string
	allPassed := true
	for _, c := range a.Checks {
		if c.Name == emi.CheckRisk {
			continue
		}
		if c.Status != emi.CheckPassed {
			allPassed = false
		}
		part := checkLabel(c.Name) + ": " + c.Status
		if c.Name == emi.CheckSanctions {
			if hs := SanctionsHitsOf(c); len(hs) > 0 {
				part += " (" + hitGrounds(hs, hits) + ")"
			}
		} else if reason, _ := c.Details["reason"].(string); reason != "" && c.Status != emi.CheckPassed {
			part += " (" + reason + "; decided by the underwriters)"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		parts = append(parts, "no automatic check results")
	}
	head := "not every check passed: "
	if allPassed {
		head = "every check passed: "
	}
	risk := ""
	if a.RiskScore != "" {
		risk = fmt.Sprintf("; risk %s (%d points)", a.RiskScore, a.RiskPoints)
	}
	return head + strings.Join(parts, "; ") + risk
}

func checkLabel(name string) string {
	switch name {
	case emi.CheckTradeRegister:
		return "trade register"
	case emi.CheckSanctions:
		return "sanctions screening"
	case emi.CheckAdverseMedia:
		return "adverse media"
	}
	return strings.ReplaceAll(name, "_", " ")
}

// SanctionsHitsOf returns the hits of a sanctions check's result.
func SanctionsHitsOf(c emi.CheckResult) []map[string]any {
	var out []map[string]any
	switch hs := c.Details["hits"].(type) {
	case []any:
		for _, x := range hs {
			if h, ok := x.(map[string]any); ok {
				out = append(out, h)
			}
		}
	case []map[string]any:
		out = hs
	}
	return out
}

// hitGrounds describes each hit and its decision, in a stable order.
func hitGrounds(hs []map[string]any, decided map[string]emi.HitDecisionRecord) string {
	var out []string
	for _, h := range hs {
		name, _ := h["name"].(string)
		d, ok := decided[HitKey(h)]
		what := fmt.Sprintf("%s ↔ %v %v (score %v)", name, h["list"], h["entry_id"], h["score"])
		switch {
		case !ok:
			what += ": undecided"
		case d.Decision == emi.HitTrueMatch:
			what += ": true match by " + staffName(d.StaffName, d.StaffID)
		case d.Final():
			what += ": false positive by " + staffName(d.StaffName, d.StaffID) + ", confirmed by " + staffName(d.ConfirmedByName, d.ConfirmedBy)
		default:
			what += ": false positive proposed by " + staffName(d.StaffName, d.StaffID) + ", not confirmed"
		}
		out = append(out, what)
	}
	sort.Strings(out)
	return fmt.Sprintf("%d hit(s): ", len(hs)) + strings.Join(out, "; ")
}

func staffName(name, id string) string {
	if name != "" {
		return name
	}
	if id == "" {
		return "someone unknown"
	}
	return id
}
