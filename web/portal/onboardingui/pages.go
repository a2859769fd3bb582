// Package onboardingui is the back office's company onboarding screens:
// applications and their members, onboarded companies, the underwriters'
// review queue, an application's review (claims, two-person decisions,
// notes, hit decisions, corrections) and the review dashboard. The
// review service answers what a person may do to an application
// (onboarding.Review's ApplicationCapabilities); these pages render it.
package onboardingui

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/internal/service/staff"
	"emi/web/portal/accountsui"
	"emi/web/portal/cardsui"
	"emi/web/portal/frame"
)

// ApplicationEvents are the events sent about an application, for the
// staff who review applications (onboarding.View).
type ApplicationEvents interface {
	ApplicationEvents(ctx context.Context, token string) (emi.EventLog, error)
}

// Deps are what the onboarding pages need.
type Deps struct {
	Onboarding *onboarding.Onboarding
	// Review is the underwriters' queue: claims, decisions with four-eyes,
	// notes, hit decisions, saved views and the dashboard's metrics.
	Review   *onboarding.Review
	Partners *partners.Partners
	Events   ApplicationEvents
	// AccountPages and CardPages list an onboarded company's accounts and
	// cards on its page.
	AccountPages *accountsui.Pages
	CardPages    *cardsui.Pages
}

// Pages are the onboarding screens.
type Pages struct {
	frame        *frame.Frame
	onboarding   *onboarding.Onboarding
	review       *onboarding.Review
	partners     *partners.Partners
	events       ApplicationEvents
	accountPages *accountsui.Pages
	cardPages    *cardsui.Pages
}

// New returns the onboarding pages.
func New(f *frame.Frame, d Deps) *Pages {
	return &Pages{frame: f, onboarding: d.Onboarding, review: d.Review, partners: d.Partners, events: d.Events,
		accountPages: d.AccountPages, cardPages: d.CardPages}
}

// Nav are the onboarding screens' navigation links, the review queue's
// with its size.
func Nav(applications *onboarding.Onboarding) []frame.NavEntry {
	review := frame.NavEntry{Href: "/backoffice/review", Label: "Review queue", Op: onboarding.View}
	if applications != nil {
		review.Count = func(r *http.Request) (int64, error) {
			return applications.CountByStatus(r.Context(), emi.AppInReview)
		}
	}
	return []frame.NavEntry{
		review,
		{Href: "/backoffice/applications", Label: "Applications", Op: onboarding.View},
		{Href: "/backoffice/companies", Label: "Companies", Op: onboarding.View},
	}
}

// Routes maps the onboarding screens.
func (p *Pages) Routes(r chi.Router) {
	g := p.frame.Guard
	r.With(g(onboarding.View)).Get("/applications", p.applicationList)
	r.With(g(onboarding.View)).Get("/applications/{application}", p.applicationDetail)
	r.With(g(onboarding.View)).Get("/applications/{application}/members/{member}", p.memberDetail)
	r.With(g(onboarding.View)).Get("/review", p.reviewQueue)
	r.With(g(onboarding.View)).Get("/review.csv", p.reviewQueueCSV)
	r.With(g(onboarding.Decide)).Post("/review/next", p.reviewNext)
	r.With(g(onboarding.View)).Post("/review/views", p.reviewSaveView)
	r.With(g(onboarding.View)).Post("/review/views/{view}/delete", p.reviewDeleteView)
	r.With(g(onboarding.Reassign)).Post("/review/bulk", p.reviewBulk)
	r.With(g(onboarding.View)).Get("/review/metrics", p.reviewMetrics)
	r.With(g(onboarding.View)).Get("/review/decisions.csv", p.reviewDecisionsCSV)
	r.With(g(onboarding.Decide)).Post("/review/{application}/claim", p.reviewClaim)
	r.With(g(onboarding.Oversee)).Post("/review/{application}/release", p.reviewRelease)
	r.With(g(onboarding.Oversee)).Post("/review/{application}/assign", p.reviewAssign)
	r.With(g(staff.ApproveOp(staff.ControlApplicationApproval))).Post("/review/{application}/decide", p.reviewDecide)
	r.With(g(onboarding.Annotate)).Post("/review/{application}/notes", p.reviewNote)
	r.With(g(staff.DecideOp(staff.ControlHitFalsePositive))).Post("/review/{application}/hits", p.reviewHit)
	r.With(g(onboarding.Correct)).Post("/review/{application}/company", p.reviewEditCompany)
	r.With(g(onboarding.Correct)).Post("/review/{application}/members/{member}", p.reviewEditMember)
	r.With(g(onboarding.View)).Get("/companies", p.companyList)
	r.With(g(onboarding.View)).Get("/companies/{application}", p.companyDetail)
}
