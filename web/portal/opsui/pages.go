// Package opsui is the back office's screens across the areas: the
// dashboard, the search of the header, the compliance alert queue, the
// audit log and the background jobs. Each is its own type with the few
// services it reads.
package opsui

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
	"emi/internal/service/onboarding"
	"emi/internal/service/ops"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/web/portal/accountsui"
	"emi/web/portal/cardsui"
	"emi/web/portal/frame"
	"emi/web/portal/onboardingui"
)

// StaffLister lists the staff members (the dashboard's team tile).
type StaffLister interface {
	List(ctx context.Context) ([]emi.StaffUser, error)
}

// Deps are what the screens across the areas need.
type Deps struct {
	Staff      StaffLister
	Partners   *partners.Partners
	AML        *people.AML
	KYC        *people.KYC
	Onboarding *onboarding.Onboarding
	Review     *onboarding.Review
	Inbox      *staff.Inbox
	// JobCounts returns background jobs by state for the dashboard.
	JobCounts func(ctx context.Context) (map[string]int64, error)
	Jobs      *kernel.Jobs
	Audit     *kernel.Auditor
	Search    *kernel.Search
	// Alerts is the compliance alert queue (every screening hit waiting
	// for compliance, every open monitoring alert); Monitor shows a
	// monitoring alert and the rules.
	Alerts  *ops.Alerts
	Monitor *monitoring.Monitor
	// Cases are compliance's cases and reports.
	Cases *monitoring.Cases
	// The areas' searches, which the header's search runs beside the
	// kernel's.
	AccountPages    *accountsui.Pages
	CardPages       *cardsui.Pages
	OnboardingPages *onboardingui.Pages
}

// Dashboard is the landing page: the queues and figures a role works on.
type Dashboard struct {
	frame      *frame.Frame
	staff      StaffLister
	partners   *partners.Partners
	aml        *people.AML
	kyc        *people.KYC
	onboarding *onboarding.Onboarding
	review     *onboarding.Review
	inbox      *staff.Inbox
	jobCounts  func(ctx context.Context) (map[string]int64, error)
}

// Search is the header's search across the areas.
type Search struct {
	frame     *frame.Frame
	search    *kernel.Search
	accounts  *accountsui.Pages
	cards     *cardsui.Pages
	companies *onboardingui.Pages
}

// Alerts is the compliance alert queue.
type Alerts struct {
	frame  *frame.Frame
	alerts *ops.Alerts
}

// Monitoring is transaction monitoring's alert page and rules.
type Monitoring struct {
	frame   *frame.Frame
	monitor *monitoring.Monitor
	cases   *monitoring.Cases
}

// Records are the audit log and the background jobs.
type Records struct {
	frame *frame.Frame
	audit *kernel.Auditor
	jobs  *kernel.Jobs
}

// Pages are the screens across the areas.
type Pages struct {
	dashboard  *Dashboard
	search     *Search
	alerts     *Alerts
	monitoring *Monitoring
	records    *Records
}

// New returns the screens across the areas.
func New(f *frame.Frame, d Deps) *Pages {
	return &Pages{
		dashboard: &Dashboard{frame: f, staff: d.Staff, partners: d.Partners, aml: d.AML, kyc: d.KYC,
			onboarding: d.Onboarding, review: d.Review, inbox: d.Inbox, jobCounts: d.JobCounts},
		search:     &Search{frame: f, search: d.Search, accounts: d.AccountPages, cards: d.CardPages, companies: d.OnboardingPages},
		alerts:     &Alerts{frame: f, alerts: d.Alerts},
		monitoring: &Monitoring{frame: f, monitor: d.Monitor, cases: d.Cases},
		records:    &Records{frame: f, audit: d.Audit, jobs: d.Jobs},
	}
}

// Nav are the navigation links of the screens across the areas: the
// dashboard, the alert queue (with its size for those who work it), the
// audit log and the jobs.
func Nav(queue *ops.Alerts) (dashboard, alerts frame.NavEntry, records []frame.NavEntry) {
	alerts = frame.NavEntry{Href: "/backoffice/alerts", Label: "Compliance alerts", Op: people.View}
	if queue != nil {
		alerts.Count = func(r *http.Request) (int64, error) {
			if !frame.CanDo(r, people.ReviewAML) {
				return 0, nil
			}
			n, err := queue.Count(r.Context())
			return int64(n), err
		}
	}
	return frame.NavEntry{Href: "/backoffice/", Label: "Dashboard", Op: staff.ViewDashboard}, alerts, []frame.NavEntry{
		{Href: "/backoffice/audit", Label: "Audit log", Op: kernel.ViewAudit},
		{Href: "/backoffice/jobs", Label: "Jobs", Op: kernel.ViewJobs},
	}
}

// limitBody caps a request's body: an upload beyond it is refused while
// it is read, before it fills memory or disk.
func limitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}

// CasesNav is the link to compliance's cases, with the number in
// progress.
func CasesNav(cases *monitoring.Cases) frame.NavEntry {
	e := frame.NavEntry{Href: "/backoffice/monitoring/cases", Label: "Cases", Op: monitoring.ViewAlerts}
	if cases != nil {
		e.Count = func(r *http.Request) (int64, error) { return cases.CountActive(r.Context()) }
	}
	return e
}

// Routes maps the screens across the areas.
func (p *Pages) Routes(r chi.Router) {
	g := p.dashboard.frame.Guard
	r.Get("/", p.dashboard.page)
	r.Get("/search", p.search.page)
	r.With(p.search.frame.ReadForm).Post("/search", p.search.page) // the header's form: what is typed stays out of URLs
	r.With(g(people.View)).Get("/alerts", p.alerts.alertQueue)
	r.With(g(ops.WorkAlerts)).Post("/alerts/claim", p.alerts.alertClaim)
	r.With(g(ops.ReleaseAlerts)).Post("/alerts/release", p.alerts.alertRelease)
	r.With(g(ops.WorkAlerts)).Post("/alerts/assign", p.alerts.alertAssign)
	r.With(g(monitoring.ViewAlerts)).Get("/monitoring/rules", p.monitoring.monitoringRules)
	r.With(g(staff.ProposeOp(staff.ControlMonitoringRule))).Post("/monitoring/rules/{code}/propose", p.monitoring.ruleProposal)
	r.With(g(staff.ApproveOp(staff.ControlMonitoringRule))).Post("/monitoring/rules/{code}/approve", p.monitoring.ruleApprove)
	r.With(g(staff.ProposeOp(staff.ControlMonitoringRule))).Post("/monitoring/rules/{code}/reject", p.monitoring.ruleReject)
	r.With(g(monitoring.ViewAlerts)).Get("/monitoring/cases", p.monitoring.caseList)
	r.With(g(monitoring.ViewAlerts)).Get("/monitoring/cases/{case}", p.monitoring.casePage)
	r.With(g(monitoring.WorkCases)).Get("/monitoring/cases/{case}/documents/{document}", p.monitoring.caseDocument)
	r.With(g(monitoring.WorkCases)).Get("/monitoring/cases/{case}/report.xml", p.monitoring.caseReportFile)
	r.With(g(monitoring.WorkCases)).Post("/monitoring/cases/{case}/note", p.monitoring.caseNote())
	r.With(g(monitoring.WorkCases)).Post("/monitoring/cases/{case}/assign", p.monitoring.caseAssign())
	r.With(g(monitoring.WorkCases)).Post("/monitoring/cases/{case}/investigate", p.monitoring.caseInvestigate())
	r.With(g(monitoring.WorkCases)).Post("/monitoring/cases/{case}/close", p.monitoring.caseClose())
	r.With(g(monitoring.WorkCases)).Post("/monitoring/cases/{case}/request", p.monitoring.caseRequest())
	r.With(g(monitoring.WorkCases)).Post("/monitoring/cases/{case}/hold", p.monitoring.caseHold())
	r.With(g(monitoring.WorkCases)).Post("/monitoring/cases/{case}/lift", p.monitoring.caseLift())
	r.With(g(monitoring.WorkCases)).With(limitBody(monitoring.MaxCaseDocument+1<<20)).Post("/monitoring/cases/{case}/documents", p.monitoring.caseUpload())
	r.With(g(staff.ProposeOp(staff.ControlReport))).Post("/monitoring/cases/{case}/report", p.monitoring.caseReport())
	r.With(g(staff.ApproveOp(staff.ControlReport))).Post("/monitoring/cases/{case}/report/approve", p.monitoring.caseReportApprove())
	r.With(g(staff.ApproveOp(staff.ControlReport))).Post("/monitoring/cases/{case}/report/reject", p.monitoring.caseReportReject())
	r.With(g(monitoring.ViewAlerts)).Get("/monitoring/{alert}", p.monitoring.monitoringAlert)
	r.With(g(monitoring.WorkCases)).Post("/monitoring/{alert}/case", p.monitoring.caseOpen)
	r.With(g(kernel.ViewAudit)).Get("/audit", p.records.auditLog)
	r.With(g(kernel.ViewJobs)).Get("/jobs", p.records.jobsPage)
}
