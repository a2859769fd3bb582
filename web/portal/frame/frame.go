package frame

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/partners"
	"emi/web/httpx"
)

// Session keys.
const (
	keyStaff      = "staff_id"
	keySignedInAt = "signed_in_at" // unix nanoseconds of the last factor
	keyStage      = "stage"        // StageNewPassword, StagePassword or StageFull
	keyFlash      = "flash"
	keyFlashKind  = "flash_kind"
	keyWroteAt    = "wrote_at" // unix nanoseconds of the staff member's last change (lagTolerance)
)

// Sign-in stages.
const (
	StagePassword = "password" // first factor passed; TOTP (or enrolment) next
	// StageNewPassword: a temporary password passed; choosing a new one is
	// the only thing the session can do, then StagePassword.
	StageNewPassword = "new_password"
	StageFull        = "full" // both factors passed
)

// Session lifetimes: idle 30 min, absolute 12 h, so a session left open or
// stolen does not last.
const (
	IdleTimeout = 30 * time.Minute
	Lifetime    = 12 * time.Hour
)

// StaffDirectory is what the frame needs of the staff service: the
// signed-in member (their session checked) and everyone's names.
type StaffDirectory interface {
	Current(ctx context.Context, staffID string, signedInAt time.Time) (emi.StaffUser, error)
	Names(ctx context.Context) (map[string]string, error)
}

// CompanyFinder finds an onboarded merchant's company (OwnerLinks).
type CompanyFinder interface {
	Companies(ctx context.Context, q string, limit int) ([]emi.CompanyRow, error)
}

// Config is how the back office is served.
type Config struct {
	// Secure is true when the back office is served over HTTPS: Secure
	// cookies with the __Host- prefix, and HSTS.
	Secure bool
	// ReadLagBound is EMI_READ_MAX_LAG when read replicas are configured
	// (0: none): pages read a replica within it, except for this long
	// after the staff member's own change (lagTolerance).
	ReadLagBound time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Unguarded turns the route guards off so that a test can show the
	// services refuse on their own what the guards refuse. Only the
	// portal's export_test.go sets it (through portal's unexported
	// constructor); cmd/emi never does.
	Unguarded bool
}

// Deps are what the frame needs.
type Deps struct {
	Logger *slog.Logger
	Staff  StaffDirectory
	// Partners and Companies name partners and find the page of an
	// account's owner.
	Partners  *partners.Partners
	Companies CompanyFinder
	// Sessions is the scs store (our PostgreSQL store).
	Sessions scs.Store
	// TagSession ties the session token to a staff user so that all their
	// sessions can be revoked at once.
	TagSession func(ctx context.Context, token, staffID string) error
	// Nav is the navigation, in order (each area contributes its links).
	Nav    []NavEntry
	Config Config
}

// Frame is what every back-office screen shares: the session and who is
// signed in, the route guards, the page frame and navigation, flashes and
// the one way errors are answered. The areas' handlers hold one.
type Frame struct {
	log        *slog.Logger
	staff      StaffDirectory
	partners   *partners.Partners
	companies  CompanyFinder
	sessions   *scs.SessionManager
	tagSession func(ctx context.Context, token, staffID string) error
	nav        []NavEntry
	cfg        Config
}

// New returns the frame.
func New(d Deps) *Frame {
	sm := scs.New()
	sm.Store = d.Sessions
	sm.IdleTimeout = IdleTimeout
	sm.Lifetime = Lifetime
	sm.Cookie.Name = "emi_session"
	if d.Config.Secure {
		sm.Cookie.Name = "__Host-emi_session"
	}
	sm.Cookie.HttpOnly = true
	sm.Cookie.Secure = d.Config.Secure
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false
	if d.Config.Now == nil {
		d.Config.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Frame{log: d.Logger, staff: d.Staff, partners: d.Partners, companies: d.Companies, sessions: sm,
		tagSession: d.TagSession, nav: d.Nav, cfg: d.Config}
	sm.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) { f.ServerError(w, r, err) }
	return f
}

// Now is the back office's clock.
func (f *Frame) Now() time.Time { return f.cfg.Now() }

// Logger is the back office's logger.
func (f *Frame) Logger() *slog.Logger { return f.log }

// Secure reports whether the back office is served over HTTPS.
func (f *Frame) Secure() bool { return f.cfg.Secure }

// Handler returns the back office: security headers, cross-origin
// protection on every state change, sessions, the form guard, then the
// routes that routes maps.
func (f *Frame) Handler(routes func(chi.Router)) http.Handler {
	r := chi.NewRouter()
	r.Use(f.securityHeaders)
	r.Use(f.sessions.LoadAndSave)
	r.Use(f.formGuard)
	routes(r)
	r.NotFound(f.NotFound)
	r.MethodNotAllowed(f.NotFound)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.log.Warn("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
			"request_id", emi.RequestMetaFrom(r.Context()).RequestID)
		f.ErrorPage(w, r, http.StatusForbidden, "This request came from another site and was refused.")
	}))
	return cop.Handler(r)
}

// SignedIn is the middleware of every page behind sign-in: the session's
// staff member (both factors passed) as the request's principal, and the
// replica-lag tolerance of their reads.
func (f *Frame) SignedIn(r chi.Router) {
	r.Use(f.requireStaff)
	r.Use(f.lagTolerance)
}

// formGuard refuses (400) a request whose query or form holds a NUL
// character or invalid UTF-8, in a name or a value, before any handler
// sees it: PostgreSQL text refuses both, so such a value answered 500 on
// every screen that stores or looks one up (found by the hostile input
// sweep: sign-in, account, card, review-view and validator forms).
func (f *Frame) formGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			f.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		for k, vs := range r.Form {
			ok := httpx.StorableText(k)
			for _, v := range vs {
				ok = ok && httpx.StorableText(v)
			}
			if !ok {
				f.ErrorPage(w, r, http.StatusBadRequest, "The form holds characters that are not allowed (a NUL character or invalid UTF-8). Nothing was changed.")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// SignInState returns the session's staff member and sign-in stage (both
// "" when nobody is signing in).
func (f *Frame) SignInState(ctx context.Context) (staffID, stage string) {
	return f.sessions.GetString(ctx, keyStaff), f.sessions.GetString(ctx, keyStage)
}

// SignedInAt is when the session's staff member passed their last factor.
func (f *Frame) SignedInAt(ctx context.Context) time.Time {
	return time.Unix(0, f.sessions.GetInt64(ctx, keySignedInAt))
}

// AdvanceSignIn gives the session a new token (ASVS 7.2.4: the session id
// changes at every privilege change) and moves it to stage for staffID;
// factorPassed restarts the time of the last factor. At StageFull the
// session is tied to the staff member, so that revoking their sessions
// reaches it.
func (f *Frame) AdvanceSignIn(ctx context.Context, staffID, stage string, factorPassed bool) error {
	if err := f.sessions.RenewToken(ctx); err != nil {
		return err
	}
	f.sessions.Put(ctx, keyStaff, staffID)
	f.sessions.Put(ctx, keyStage, stage)
	if factorPassed {
		f.sessions.Put(ctx, keySignedInAt, f.Now().UnixNano())
	}
	if stage != StageFull || f.tagSession == nil {
		return nil
	}
	token, _, err := f.sessions.Commit(ctx)
	if err != nil {
		return err
	}
	return f.tagSession(ctx, token, staffID)
}

// EndSession destroys the session on the server.
func (f *Frame) EndSession(ctx context.Context) error { return f.sessions.Destroy(ctx) }
