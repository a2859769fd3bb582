package portal

import (
	"context"
	"net/http"
	"strconv"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
)

// The navigation (frame): its links with the service operation (the one
// guarding the page it leads to) that shows each,
// and their badges, the size of each queue a link leads to, counted for
// the roles that see it. The frame asks the services directly, so it needs
// no screen.

// navEntry is a navigation link and the operation that shows it.
type navEntry struct {
	href, label string
	op          emi.Op
}

var nav = []navEntry{
	{"/backoffice/", "Dashboard", staff.ViewDashboard},
	{"/backoffice/inbox", "Inbox", staff.ViewDashboard},
	{"/backoffice/alerts", "Compliance alerts", people.View},
	{"/backoffice/review", "Review queue", onboarding.View},
	{"/backoffice/applications", "Applications", onboarding.View},
	{"/backoffice/companies", "Companies", onboarding.View},
	{"/backoffice/users", "People", people.View},
	{"/backoffice/accounts", "Accounts", accounts.View},
	{"/backoffice/programs", "Programs", accounts.View},
	{"/backoffice/cards", "Cards", accounts.View},
	{"/backoffice/sms", "SMS outbox", accounts.View},
	{"/backoffice/suspense", "Suspense", transfers.ViewMoney},
	{"/backoffice/adjustments", "Adjustments", transfers.ViewMoney},
	{"/backoffice/aml", "AML reviews", people.View},
	{"/backoffice/kyc", "KYC reviews", people.View},
	{"/backoffice/sanctions", "Sanctions lists", people.View},
	{"/backoffice/watchlist", "Watch list", people.View},
	{"/backoffice/partners", "Partners", partners.View},
	{"/backoffice/staff", "Staff", staff.ViewStaff},
	{"/backoffice/audit", "Audit log", kernel.ViewAudit},
	{"/backoffice/jobs", "Jobs", kernel.ViewJobs},
}

// queueCounts returns the sizes of the review queues by navigation href,
// for roles that see them. A failed count leaves its badge out: the
// navigation must not fail a page.
func (p *Portal) queueCounts(r *http.Request) map[string]string {
	out := map[string]string{}
	if n, ok := p.reviewCount(r); ok && n > 0 {
		out["/backoffice/review"] = strconv.FormatInt(n, 10)
	}
	p.moneyCounts(r, out)
	p.inboxCounts(r, out)
	if p.d.AML == nil || p.d.KYC == nil || !CanDo(r, people.View) {
		return out
	}
	ctx := r.Context()
	if n, err := p.d.AML.QueueSize(ctx); err != nil {
		p.d.Logger.Warn("count the AML queue", "error", err, "request_id", emi.RequestMetaFrom(ctx).RequestID)
	} else if n > 0 {
		out["/backoffice/aml"] = strconv.FormatInt(n, 10)
	}
	if n, err := p.d.KYC.QueueSize(ctx); err != nil {
		p.d.Logger.Warn("count the KYC queue", "error", err, "request_id", emi.RequestMetaFrom(ctx).RequestID)
	} else if n > 0 {
		out["/backoffice/kyc"] = strconv.FormatInt(n, 10)
	}
	return out
}

type reviewCountKey struct{}

// WithReviewCount hands the in-review count the queue page already has to
// the navigation badge, which then needs no query of its own.
func WithReviewCount(r *http.Request, n int64) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), reviewCountKey{}, n))
}

// reviewCount is the navigation badge of the review queue.
func (p *Portal) reviewCount(r *http.Request) (int64, bool) {
	if n, ok := r.Context().Value(reviewCountKey{}).(int64); ok {
		return n, true
	}
	if p.d.Onboarding == nil || !CanDo(r, onboarding.View) {
		return 0, false
	}
	n, err := p.d.Onboarding.CountByStatus(r.Context(), emi.AppInReview)
	if err != nil {
		p.d.Logger.Warn("count the review queue", "error", err, "request_id", emi.RequestMetaFrom(r.Context()).RequestID)
		return 0, false
	}
	return n, true
}

// moneyCounts adds the open suspense items and pending adjustments to the
// navigation's badges, for roles that see them.
func (p *Portal) moneyCounts(r *http.Request, out map[string]string) {
	if !CanDo(r, transfers.ViewMoney) {
		return
	}
	ctx := r.Context()
	if p.d.Incoming != nil {
		if n, err := p.d.Incoming.OpenSuspense(ctx); err != nil {
			p.d.Logger.Warn("count the suspense queue", "error", err, "request_id", emi.RequestMetaFrom(ctx).RequestID)
		} else if n > 0 {
			out["/backoffice/suspense"] = strconv.FormatInt(n, 10)
		}
	}
	if p.d.Adjustments != nil {
		if n, err := p.d.Adjustments.CountPending(ctx); err != nil {
			p.d.Logger.Warn("count pending adjustments", "error", err, "request_id", emi.RequestMetaFrom(ctx).RequestID)
		} else if n > 0 {
			out["/backoffice/adjustments"] = strconv.FormatInt(n, 10)
		}
	}
}

// inboxCounts adds the unread inbox items and, for compliance, the open
// alerts to the navigation badges. A failed count leaves its badge out.
func (p *Portal) inboxCounts(r *http.Request, out map[string]string) {
	ctx := r.Context()
	if p.d.Inbox != nil && CanDo(r, staff.ViewDashboard) {
		if n, err := p.d.Inbox.Unread(ctx); err == nil && n > 0 {
			out["/backoffice/inbox"] = strconv.FormatInt(n, 10)
		}
	}
	if p.d.Alerts != nil && CanDo(r, people.ReviewAML) {
		if n, err := p.d.Alerts.Count(ctx); err != nil {
			p.d.Logger.Warn("count the alert queue", "error", err, "request_id", emi.RequestMetaFrom(ctx).RequestID)
		} else if n > 0 {
			out["/backoffice/alerts"] = strconv.Itoa(n)
		}
	}
}
