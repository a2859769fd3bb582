package portal

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/internal/service/ops"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
	"emi/web/httpx"
)

// Session keys.
const (
	keyStaff      = "staff_id"
	keySignedInAt = "signed_in_at" // unix nanoseconds of the last factor
	keyStage      = "stage"        // stageNewPassword, stagePassword or stageFull
	keyFlash      = "flash"
	keyFlashKind  = "flash_kind"
	keyCreds      = "credentials_once"
	keyWroteAt    = "wrote_at" // unix nanoseconds of the staff member's last change (lagTolerance)
)

// Sign-in stages.
const (
	stagePassword = "password" // first factor passed; TOTP (or enrolment) next
	// stageNewPassword: a temporary password passed; choosing a new one is
	// the only thing the session can do, then stagePassword.
	stageNewPassword = "new_password"
	stageFull        = "full" // both factors passed
)

// Session lifetimes: idle 30 min, absolute 12 h, so a session left open or
// stolen does not last.
const (
	IdleTimeout = 30 * time.Minute
	Lifetime    = 12 * time.Hour
)

// StaffService is what the portal needs of service.Staff.
type StaffService interface {
	SignIn(ctx context.Context, email, password string) (staff.SignInResult, error)
	BeginEnrollment(ctx context.Context, staffID string) (staff.Enrollment, error)
	ConfirmEnrollment(ctx context.Context, staffID, code string) ([]string, error)
	VerifyTOTP(ctx context.Context, staffID, code string) error
	UseRecoveryCode(ctx context.Context, staffID, code string) error
	Current(ctx context.Context, staffID string, signedInAt time.Time) (emi.StaffUser, error)
	ChangePassword(ctx context.Context, staffID, current, next string) error
	RegenerateRecoveryCodes(ctx context.Context, staffID, totpCode string) ([]string, error)
	Create(ctx context.Context, in emi.StaffCreate) (emi.StaffOutcome, error)
	List(ctx context.Context) ([]emi.StaffUser, error)
	Names(ctx context.Context) (map[string]string, error)
	Get(ctx context.Context, id string) (emi.StaffUser, error)
	SetRoles(ctx context.Context, staffID string, roles []emi.Role) (emi.StaffOutcome, error)
	Disable(ctx context.Context, staffID string) (emi.StaffOutcome, error)
	Enable(ctx context.Context, staffID string) error
	Suspend(ctx context.Context, staffID, reason string) error
	ConfirmSuspension(ctx context.Context, staffID string) error
	LiftSuspension(ctx context.Context, staffID string) error
	ResetCredentials(ctx context.Context, staffID string) (emi.StaffOutcome, error)
	Changes(ctx context.Context) ([]emi.StaffChange, error)
	ChangeCapabilities(ctx context.Context, changes []emi.StaffChange) map[string]staff.RequestCapability
	ApproveChange(ctx context.Context, changeID string) (emi.StaffOutcome, error)
	RejectChange(ctx context.Context, changeID, reason string) error
	RevokeSessions(ctx context.Context, staffID string) error
	SignOut(ctx context.Context, staffID string) error
}

// Deps are what the portal needs.
type Deps struct {
	Logger   *slog.Logger
	Staff    StaffService
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

// Portal is the back office.
type Portal struct {
	d        Deps
	sessions *scs.SessionManager
	// unguarded turns the route guards off so that a test can show the
	// services refuse on their own what the guards refuse (only
	// export_test.go sets it; production code never does).
	unguarded bool
}

// New returns the portal.
func New(d Deps) *Portal {
	sm := scs.New()
	sm.Store = d.Sessions
	sm.IdleTimeout = IdleTimeout
	sm.Lifetime = Lifetime
	sm.Cookie.Name = "emi_session"
	if d.Secure {
		sm.Cookie.Name = "__Host-emi_session"
	}
	sm.Cookie.HttpOnly = true
	sm.Cookie.Secure = d.Secure
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false
	if d.Now == nil {
		d.Now = time.Now
	}
	p := &Portal{d: d, sessions: sm}
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) { p.ServerError(w, r, err) }
	return p
}

// Handler returns the back office mounted at /backoffice: security headers,
// cross-origin protection on every state change, sessions, then the routes.
func (p *Portal) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(p.securityHeaders)
	r.Use(p.sessions.LoadAndSave)
	r.Use(p.formGuard)
	p.Routes(r)
	r.NotFound(p.NotFound)
	r.MethodNotAllowed(p.NotFound)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.d.Logger.Warn("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
			"request_id", emi.RequestMetaFrom(r.Context()).RequestID)
		p.ErrorPage(w, r, http.StatusForbidden, "This request came from another site and was refused.")
	}))
	return cop.Handler(r)
}

// formGuard refuses (400) a request whose query or form holds a NUL
// character or invalid UTF-8, in a name or a value, before any handler
// sees it: PostgreSQL text refuses both, so such a value answered 500 on
// every screen that stores or looks one up (found by the hostile input
// sweep: sign-in, account, card, review-view and validator forms).
func (p *Portal) formGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			p.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		for k, vs := range r.Form {
			ok := httpx.StorableText(k)
			for _, v := range vs {
				ok = ok && httpx.StorableText(v)
			}
			if !ok {
				p.ErrorPage(w, r, http.StatusBadRequest, "The form holds characters that are not allowed (a NUL character or invalid UTF-8). Nothing was changed.")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

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

// WebhookService is what the portal needs of service.Webhooks.
type WebhookService interface {
	AddEndpoint(ctx context.Context, partnerID, url, description string, types []emi.EventType) (emi.WebhookEndpoint, string, error)
	// The endpoint and delivery operations name the partner of the page
	// ({id}): another partner's endpoint or delivery is not found.
	SetEndpointEnabled(ctx context.Context, partnerID, endpointID string, enabled bool) error
	RotateEndpointSecret(ctx context.Context, partnerID, endpointID string) (string, time.Time, error)
	Endpoints(ctx context.Context, partnerID string) ([]emi.WebhookEndpoint, error)
	SendTest(ctx context.Context, partnerID, endpointID string) (emi.Event, error)
	Replay(ctx context.Context, partnerID, deliveryID string) error
	ReplayFailed(ctx context.Context, f emi.EventLogFilter) (int, error)
	EventsLog(ctx context.Context, f emi.EventLogFilter) (emi.EventLog, error)
	// ApplicationEvents are the events sent about an application, for the
	// staff who review applications (onboarding.View).
	ApplicationEvents(ctx context.Context, token string) (emi.EventLog, error)
}
