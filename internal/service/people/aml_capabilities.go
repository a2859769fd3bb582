package people

import (
	"context"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	staffsvc "emi/internal/service/staff"
)

// AMLHitCapability answers what the signed-in person may record on one
// hit of an AML check, now, and why not: the rules of Decide, the
// decision engine's distinct-people rule included.
type AMLHitCapability struct {
	// Decide: the hit's decision form is offered (a true match at least).
	Decide bool
	// FalsePositive: a false positive would be accepted (proposed, taken
	// alone, or confirmed by a second person).
	FalsePositive bool
	// WhyNot says why the form, or its false positive, is not offered.
	WhyNot string
}

// WhyNotHitMine is what the officer who proposed a false positive reads.
const WhyNotHitMine = "You proposed this false positive: another compliance officer confirms it or records a true match."

// HitCapabilities answers for each hit of c (by number) and the staff
// member of ctx.
func (a *AML) HitCapabilities(ctx context.Context, c emi.AMLCheck) map[int]AMLHitCapability {
	me := kernel.StaffOf(ctx)
	out := make(map[int]AMLHitCapability, len(c.Hits))
	for _, h := range c.Hits {
		var hc AMLHitCapability
		switch {
		case !h.Open():
			hc.WhyNot = "The hit is decided."
		case c.Status != emi.AMLMatch:
			hc.WhyNot = "The check is " + string(c.Status) + ": nothing is left to decide."
		case !ReviewAML.AllowedFor(me):
			hc.WhyNot = "Your roles do not decide AML hits: it takes " + ReviewAML.Needs() + "."
		case !h.Pending():
			hc.Decide, hc.FalsePositive = true, true
		case h.DecidedBy == me.ActorID:
			// The proposer waits (they may still record a true match
			// through the service; the page offers nothing).
			hc.WhyNot = WhyNotHitMine
		default:
			hc.Decide = true
			if err := a.controls.Approve(ctx, staffsvc.ControlAMLHitFalsePositive, h.DecidedBy); err != nil {
				hc.WhyNot = strings.TrimSuffix(emi.AsError(err).Public, " Nothing was changed.")
				if hc.WhyNot == "" {
					hc.WhyNot = "Whether you may confirm it could not be checked now: try again."
				}
			} else {
				hc.FalsePositive = true
			}
		}
		out[h.N] = hc
	}
	return out
}
