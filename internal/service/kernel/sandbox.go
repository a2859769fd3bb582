package kernel

import (
	"context"
	"emi/internal/emi"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SandboxAs returns ctx with a sandbox reviewer as the principal, keeping
// the request's metadata for the audit log.
func SandboxAs(ctx context.Context, id string) context.Context {
	return emi.WithPrincipal(ctx, emi.Principal{Type: emi.ActorSystem, ActorID: id})
}

// SandboxPartner returns the calling partner.
func SandboxPartner(ctx context.Context, notFound *emi.Error) (emi.Principal, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || !p.IsPartner() {
		return emi.Principal{}, notFound
	}
	return p, nil
}

// SandboxReviewError turns the back office's refusals, which a partner's
// catalogue does not have, into the sandbox's: a decision the rules refuse
// (a sanctions hit open or confirmed) is a conflict the partner can read.
func SandboxReviewError(err error) error {
	switch {
	case errors.Is(err, emi.ErrSanctionsBlocked), errors.Is(err, emi.ErrSanctionsUndecided):
		return emi.ErrNotInReview.Field("action", "a sanctions hit of the application blocks approval: reject it, or request information").Wrap(err)
	case errors.Is(err, emi.ErrReviewValidation):
		e := emi.AsError(err)
		return emi.ErrValidation.WithFields(e.Fields...)
	case errors.Is(err, emi.ErrReviewClosed), errors.Is(err, emi.ErrReviewStale), errors.Is(err, emi.ErrNotAssignee):
		return emi.ErrNotInReview.Wrap(err)
	}
	return err
}

// CheckOutcome adds a problem unless outcome is one of allowed.
func CheckOutcome(p *Problems, outcome string, allowed ...string) {
	if !slices.Contains(allowed, outcome) {
		p.Add("outcome", "must be one of: "+strings.Join(allowed, ", "))
	}
}

// SandboxText returns the trimmed text, or def when it is empty; a text
// of 1 or 2 characters, or over max, is a problem (the back office's
// decisions take at least 3).
func SandboxText(p *Problems, field, text, def string, limit int) string {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return def
	case len(t) < 3 || len(t) > limit:
		p.Add(field, fmt.Sprintf("must be 3 to %d characters", limit))
	}
	return t
}

// Sandbox reviewers: the two people the sandbox plays. Two, because a
// false positive on a strong sanctions hit and the approval of a High-risk
// application take two distinct people; they are system principals (no
// staff account, no sign-in), and every row they write names these ids.
const (
	SandboxReviewerID       = "00000000-0000-7000-8000-5a2db0000001"
	SandboxSecondReviewerID = "00000000-0000-7000-8000-5a2db0000002"
)

// SandboxPlayed reports whether a decision was taken by a reviewer the
// sandbox plays. Such a decision answers the partner's test and is never
// remembered beyond it: the false-positive memory does not learn from it,
// so a documented test value (the docs' listed name) answers a match on
// every call, whatever a test run decided before (issue 34, D1).
func SandboxPlayed(actorIDs ...string) bool {
	for _, id := range actorIDs {
		if id == SandboxReviewerID || id == SandboxSecondReviewerID {
			return true
		}
	}
	return false
}
