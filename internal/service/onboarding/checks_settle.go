package onboarding

import (
	"time"

	"emi/internal/emi"
)

// The settle period of automatic decisions. Automatic processing decided
// about 40 ms after the last check ended, so a partner sending
// application_create, then the company, members and documents in separate
// calls, found the application approved or rejected (11003 on the next
// call) before its data was complete. An application under automatic
// processing is now decided only once its checks have ended (which needs
// the company and an active UBO, contract §11) and it has stayed unchanged
// for the settle period (EMI_DECISION_SETTLE: 3 s in the sandbox, 2 min in
// production). Semi-automatic processing and applications an underwriter
// took over go to review as before: a review decision is a person's.

// settles reports whether a's next decision is automatic, and so waits
// for the settle period.
func settles(a emi.Application) bool {
	return a.Processing == emi.ProcessingAutomatic && !a.Review.ManualReview
}

// settleLeft returns how long a must still stay unchanged before it is
// decided (0 or less: decide now). The last change is the application's
// updated_at: every partner change touches it (and a checks run that finds
// data missing does too, a few milliseconds later).
func (c *Checks) settleLeft(a emi.Application) time.Duration {
	if c == nil || c.settle <= 0 || !settles(a) {
		return 0
	}
	return a.UpdatedAt.Add(c.settle).Sub(c.now())
}

// WaitingFor says what an application that is not decided still waits
// for, for application_details: the data the checks need, the checks
// still running or retrying, the settle period, or an underwriter. Empty
// once decided.
func (o *Onboarding) WaitingFor(a emi.Application) []string {
	out := []string{}
	switch a.Status {
	case emi.AppApproved, emi.AppRejected:
		return out
	case emi.AppInReview:
		return append(out, "an underwriter's decision")
	case emi.AppInfoRequested:
		return append(out, "your change: an underwriter asked for information")
	}
	if a.Company == nil {
		out = append(out, "company: send it with company_update (or inside application_create)")
	}
	ubo := false
	for _, m := range a.Members {
		ubo = ubo || m.Status == "active" && m.IsUBO()
	}
	if !ubo {
		out = append(out, "members: an active member of type ubo (company_add_member)")
	}
	// The results of the latest run (CheckedRevision moves only with a
	// status change, which the settle period does not make).
	ended := len(a.Checks) > 0
	for _, r := range a.Checks {
		switch r.Status {
		case emi.CheckPending:
			ended = false
			out = append(out, "check "+r.Name+": waits for the data above")
		case emi.CheckError:
			ended = false
			out = append(out, "check "+r.Name+": its provider failed, retrying")
		}
	}
	if !ended && len(out) == 0 {
		out = append(out, "checks: running on your latest change")
	}
	if ended && o.checks != nil {
		if left := o.checks.settleLeft(a); left > 0 {
			out = append(out, "settle period: decided at "+a.UpdatedAt.Add(o.checks.settle).UTC().Format(time.RFC3339)+
				" if nothing changes (EMI_DECISION_SETTLE "+o.checks.settle.String()+")")
		}
	}
	return out
}
