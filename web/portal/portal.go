package portal

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"

	"emi/internal/service/accounts"
	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/onboarding"
	"emi/internal/service/ops"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
	"emi/web/portal/accountsui"
	"emi/web/portal/cardsui"
	"emi/web/portal/frame"
	"emi/web/portal/onboardingui"
	"emi/web/portal/opsui"
	"emi/web/portal/partnersui"
	"emi/web/portal/peopleui"
	"emi/web/portal/staffui"
	"emi/web/portal/transfersui"
)

// Session lifetimes (the frame's): idle 30 min, absolute 12 h.
const (
	IdleTimeout = frame.IdleTimeout
	Lifetime    = frame.Lifetime
)

// WebhookService is what the portal needs of service.Webhooks: the partner
// pages' endpoints and events log, and an application's events.
type WebhookService interface {
	partnersui.WebhookService
	onboardingui.ApplicationEvents
}

// Deps are what the portal needs.
type Deps struct {
	Logger   *slog.Logger
	Staff    staffui.StaffService
	Partners *partners.Partners
	Audit    *kernel.Auditor
	Search   *kernel.Search
	Jobs     *kernel.Jobs
	Webhooks WebhookService
	// Users, AML and KYC are the people screens' services: profiles and
	// documents, the AML and KYC review queues, and the hosted KYC page.
	Users *people.Users
	AML   *people.AML
	KYC   *people.KYC
	// Onboarding and Watchlist are the company onboarding screens'
	// services: applications, companies, members, partners' validator
	// configurations, and the adverse-media watch list.
	Onboarding *onboarding.Onboarding
	Watchlist  *people.Watchlist
	// Review is the underwriters' queue: claims, decisions with four-eyes,
	// notes, hit decisions, saved views and the dashboard's metrics.
	Review *onboarding.Review
	// Monitor is transaction monitoring (its alerts' pages and rules).
	Monitor *monitoring.Monitor
	// Cases are compliance's cases and reports.
	Cases *monitoring.Cases
	// Alerts is the compliance alert queue (every screening hit waiting
	// for compliance); Inbox each person's mentions and assignments.
	Alerts *ops.Alerts
	Inbox  *staff.Inbox
	// Accounts is customer service's accounts: search, an account with its
	// history, block and unblock, four-eyes termination, and programs.
	Accounts *accounts.Accounts
	// Cards is customer service's cards: search, a card with its history,
	// texts, reveals and audit trail, every card action, the SMS outbox.
	Cards *cards.Cards
	// Authorizations lists a card's payments (authorization decisions
	// and their holds) and, in the sandbox, simulates, clears and reverses
	// them.
	Authorizations *cards.Authorizations
	// Transfers is the transfer page (both sides, ledger entries, audit)
	// and, in the sandbox, the settlement of outgoing payments.
	Transfers *transfers.Transfers
	// Incoming runs the suspense queue and the sandbox's incoming payment
	// simulator; Adjustments are four-eyes manual adjustments of balances.
	Incoming    *transfers.Incoming
	Adjustments *transfers.Adjustments
	// Sandbox shows the sandbox's simulators (incoming payments, card
	// authorizations, settlement of outgoing payments); production hides
	// them and refuses their routes.
	Sandbox bool
	// StepUp re-checks the signed-in staff member's password or TOTP code
	// before a card number is revealed (service.Staff).
	StepUp cards.StepUp
	// UpdateSanctions downloads the official sanctions lists now (the
	// admin's "Update now"); nil hides the button. It returns a catalogue
	// error (emi.ErrScreeningUpdate) when the update failed.
	UpdateSanctions func(ctx context.Context) error
	// JobCounts returns background jobs by state for the dashboard.
	JobCounts func(ctx context.Context) (map[string]int64, error)
	// Sessions is the scs store (our PostgreSQL store).
	Sessions scs.Store
	// TagSession ties the session token to a staff user so that all their
	// sessions can be revoked at once.
	TagSession func(ctx context.Context, token, staffID string) error
	// Secure is true when the back office is served over HTTPS: Secure
	// cookies with the __Host- prefix, and HSTS.
	Secure bool
	// ReadLagBound is EMI_READ_MAX_LAG when read replicas are configured
	// (0: none): pages read a replica within it, except for this long
	// after the staff member's own change (lagTolerance).
	ReadLagBound time.Duration
	// Now is the clock.
	Now func() time.Time
}

// Portal is the back office: the frame and one set of pages per area.
type Portal struct {
	deps       Deps // what it was built from (export_test.go builds it again unguarded)
	frame      *frame.Frame
	staff      *staffui.Pages
	partners   *partnersui.Pages
	people     *peopleui.Pages
	onboarding *onboardingui.Pages
	accounts   *accountsui.Pages
	transfers  *transfersui.Pages
	cards      *cardsui.Pages
	ops        *opsui.Pages
}

// New returns the portal.
func New(d Deps) *Portal { return newPortal(d, false) }

// newPortal is New; unguarded turns the route guards off, for the test that
// shows the services refuse on their own what the guards refuse (only
// export_test.go passes true).
func newPortal(d Deps, unguarded bool) *Portal {
	var companies frame.CompanyFinder
	if d.Onboarding != nil {
		companies = d.Onboarding
	}
	f := frame.New(frame.Deps{
		Logger: d.Logger, Staff: d.Staff, Partners: d.Partners, Companies: companies,
		Sessions: d.Sessions, TagSession: d.TagSession, Nav: nav(d),
		Config: frame.Config{Secure: d.Secure, ReadLagBound: d.ReadLagBound, Now: d.Now, Unguarded: unguarded},
	})
	cardPages := cardsui.New(f, cardsui.Deps{Cards: d.Cards, Authorizations: d.Authorizations, StepUp: d.StepUp, Sandbox: d.Sandbox})
	accountPages := accountsui.New(f, accountsui.Deps{Accounts: d.Accounts, Adjustments: d.Adjustments, Incoming: d.Incoming,
		Partners: d.Partners, Cards: cardPages, Sandbox: d.Sandbox})
	onboardingPages := onboardingui.New(f, onboardingui.Deps{Onboarding: d.Onboarding, Review: d.Review, Partners: d.Partners,
		Events: d.Webhooks, AccountPages: accountPages, CardPages: cardPages})
	return &Portal{
		deps:     d,
		frame:    f,
		staff:    staffui.New(f, d.Staff, d.Inbox),
		partners: partnersui.New(f, d.Partners, d.Webhooks, d.Onboarding),
		people: peopleui.New(f, peopleui.Deps{Users: d.Users, AML: d.AML, KYC: d.KYC, Watchlist: d.Watchlist, Audit: d.Audit,
			Cards: d.Cards, AccountPages: accountPages, CardPages: cardPages, UpdateSanctions: d.UpdateSanctions}),
		onboarding: onboardingPages,
		accounts:   accountPages,
		transfers: transfersui.New(f, transfersui.Deps{Transfers: d.Transfers, Incoming: d.Incoming, Adjustments: d.Adjustments,
			Accounts: d.Accounts, AccountPages: accountPages, Sandbox: d.Sandbox}),
		cards: cardPages,
		ops: opsui.New(f, opsui.Deps{Staff: d.Staff, Partners: d.Partners, AML: d.AML, KYC: d.KYC, Onboarding: d.Onboarding,
			Review: d.Review, Inbox: d.Inbox, JobCounts: d.JobCounts, Jobs: d.Jobs, Audit: d.Audit, Search: d.Search,
			Alerts: d.Alerts, Monitor: d.Monitor, Cases: d.Cases, AccountPages: accountPages, CardPages: cardPages, OnboardingPages: onboardingPages}),
	}
}

// nav is the navigation in the order staff read it: their own work first
// (dashboard, inbox, the queues), then the areas, then administration.
func nav(d Deps) []frame.NavEntry {
	dashboard, alerts, records := opsui.Nav(d.Alerts)
	inbox, staffList := staffui.Nav(d.Inbox)
	peopleLink, reviews := peopleui.Nav(d.AML, d.KYC)
	out := []frame.NavEntry{dashboard, inbox, alerts, opsui.CasesNav(d.Cases)}
	out = append(out, onboardingui.Nav(d.Onboarding)...)
	out = append(out, peopleLink)
	out = append(out, accountsui.Nav()...)
	out = append(out, cardsui.Nav()...)
	out = append(out, transfersui.Nav(d.Incoming, d.Adjustments)...)
	out = append(out, reviews...)
	out = append(out, partnersui.Nav(), staffList)
	return append(out, records...)
}

// Handler returns the back office mounted at /backoffice: security headers,
// cross-origin protection on every state change, sessions, then the routes.
func (p *Portal) Handler() http.Handler { return p.frame.Handler(p.Routes) }

// HostedKYC returns the hosted identification page people open from
// kyc_init's link (mounted at /kyc): no back-office session, no sign-in.
func (p *Portal) HostedKYC() http.Handler { return p.people.HostedKYC() }

// Recover is the portal's panic answer.
func (p *Portal) Recover(w http.ResponseWriter, r *http.Request) { p.frame.Recover(w, r) }

// Walk calls fn for every back-office route (method and pattern relative to
// /backoffice), for the tests that check every route: cross-origin
// protection, the role matrix, headers.
func (p *Portal) Walk(fn func(method, route string) error) error {
	r := chi.NewRouter()
	p.Routes(r)
	return chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		return fn(method, route)
	})
}
