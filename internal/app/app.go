// Package app is emi's composition root: from one configuration it builds
// the database, stores, services, the HTTP handler and the worker pool. The
// binary and the end-to-end tests both wire through it, so the wiring exists
// once. Nothing but cmd/emi and tests imports it.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/iban"
	"emi/internal/postgres"
	"emi/internal/registry"
	"emi/internal/screening"
	"emi/internal/seal"
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
	"emi/internal/sms"
	"emi/internal/ukbank"
	"emi/internal/validate"
	"emi/internal/webhook"
	"emi/internal/worker"
	"emi/static"
	"emi/web"
	"emi/web/api"
	"emi/web/httpx"
	"emi/web/portal"
)

// App is everything wired from one configuration.
type App struct {
	Config config.Config
	Logger *slog.Logger
	DB     *postgres.DB
	Keys   *seal.Keyring
	// PartnerStore keeps partners, their API keys and the replay guard.
	PartnerStore *postgres.PartnerStore
	Jobs         *postgres.Jobs
	Now          kernel.Clock
	// StaffStore keeps staff users; Sessions is the back office's scs store.
	StaffStore *postgres.StaffStore
	Sessions   *postgres.SessionStore

	// listeners holds the live flag of each LISTEN connection
	// (listenerState).
	listenersMu sync.Mutex
	listeners   map[string]*atomic.Bool
	// keyCache keeps API keys in memory for the partner API's
	// authentication, live while RunKeyCache runs (see keycache.go).
	keyCache *keyCache

	Audit       *kernel.Auditor
	Partners    *partners.Partners
	Auth        *partners.Auth
	Idempotency *kernel.Idempotency
	Maintenance *ops.Maintenance
	Staff       *staff.Staff

	// WebhookStore keeps events, endpoints, deliveries and attempts;
	// WebhookClient makes the HTTP attempts (behind the SSRF guard).
	WebhookStore  *postgres.WebhookStore
	WebhookClient *webhook.Client
	Events        *kernel.Events
	Webhooks      *partners.Webhooks
	// webhookReserved are the loopback ports no webhook goes to (the
	// guard's Reserved): ReserveWebhookPort adds the ones emi serve
	// listens on.
	webhookReserved *webhook.ReservedPorts

	// People keeps merchants, users, documents, AML checks and KYC
	// sessions; Screener holds the loaded sanctions index.
	People   *postgres.PeopleStore
	Screener *screening.Screener
	Users    *people.Users
	AML      *people.AML
	// SandboxOutcomes makes the sandbox's human decisions; nil outside
	// EMI_MODE=sandbox (service.NewSandboxOutcomes refuses to build it).
	SandboxOutcomes *ops.SandboxOutcomes
	// TestClocks runs the sandbox partners' test clocks; nil outside
	// EMI_MODE=sandbox (ops.NewTestClocks refuses to build it), and so is
	// clockReader, so nothing in production reads a test clock.
	TestClocks  *ops.TestClocks
	clockReader kernel.ClockReader
	// MerchantScreening re-screens onboarded merchants' companies and
	// people when the lists or the watch list change.
	MerchantScreening *people.MerchantScreening
	KYC               *people.KYC

	// Onboarding runs applications; Checks their automatic checks;
	// Watchlist is the adverse-media watch list; Registry the trade
	// register (sandbox, or Companies House for GB when configured).
	OnboardingStore *postgres.OnboardingStore
	Onboarding      *onboarding.Onboarding
	Checks          *onboarding.Checks
	Watchlist       *people.Watchlist
	Registry        onboarding.Registry
	// Sanctions is the screening engine as the services see it.
	Sanctions people.Screener
	// Review is the underwriters' queue.
	Review *onboarding.Review
	// Alerts is the compliance alert queue; Inbox each staff user's
	// mentions and assignments.
	Alerts *ops.Alerts
	Inbox  *staff.Inbox
	// AccountStore keeps programs, accounts and balances.
	AccountStore *postgres.AccountStore
	Accounts     *accounts.Accounts
	// CardStore keeps cards; Cards issues and controls them.
	CardStore *postgres.CardStore
	Cards     *cards.Cards
	// LedgerStore and Ledger keep the double-entry ledger behind every
	// balance; Transfers moves money between balances.
	LedgerStore *postgres.LedgerStore
	Ledger      *accounts.Ledger
	// Limits decides the rolling-window limits that must hold under
	// concurrency (reveal quota, transfer destination misses).
	Limits        *postgres.LimitStore
	TransferStore *postgres.TransferStore
	Transfers     *transfers.Transfers
	// AuthorizationStore and Authorizations decide card payments (sandbox
	// simulator), hold their money and settle it; the maintenance job
	// releases expired holds.
	AuthorizationStore *postgres.AuthorizationStore
	Authorizations     *cards.Authorizations
	// IncomingStore keeps suspense items and manual adjustments; Incoming
	// takes money from outside (simulated in the sandbox) and runs the
	// suspense queue; Adjustments are four-eyes manual corrections.
	IncomingStore *postgres.IncomingStore
	// Monitor is transaction monitoring: every money movement recorded and
	// evaluated by the typologies; HistoryImport books a sandbox history
	// through it (contract §12).
	Monitor *monitoring.Monitor
	// Cases are compliance's cases, information requests, compliance
	// holds and suspicious transaction reports.
	Cases         *monitoring.Cases
	HistoryImport *ops.HistoryImport
	Incoming      *transfers.Incoming
	Adjustments   *transfers.Adjustments
	// Controls is the decision engine: who may approve a sensitive
	// decision, and whether the approvers are distinct people.
	Controls *staff.Controls
}

// NewLogger returns the structured logger the configuration asks for.
func NewLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// Open connects to the database and builds the services. now is the clock
// (time.Now in production). The caller closes the App.
func Open(ctx context.Context, cfg config.Config, logger *slog.Logger, now kernel.Clock) (*App, error) {
	keys, err := seal.NewKeyring(cfg.MasterKey, cfg.PreviousKeys...)
	if err != nil {
		return nil, fmt.Errorf("EMI_MASTER_KEY: %w", err)
	}
	db, err := OpenDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return build(cfg, logger, db, keys, now), nil
}

// OpenDB connects to the database without building the services, as
// EMI_DB_POOLER says (config.Load has checked its value).
func OpenDB(ctx context.Context, cfg config.Config) (*postgres.DB, error) {
	pooler, err := postgres.ParsePooler(cfg.DBPooler)
	if err != nil {
		return nil, fmt.Errorf("EMI_DB_POOLER: %w", err)
	}
	db, err := postgres.OpenWith(ctx, cfg.DatabaseURL, postgres.Options{Pooler: pooler})
	if err != nil {
		return nil, err
	}
	if err := db.AddReplicas(cfg.ReadDatabaseURLs, cfg.ReadMaxLag); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("EMI_READ_DATABASE_URL: %w", err)
	}
	return db, nil
}

func build(cfg config.Config, logger *slog.Logger, db *postgres.DB, keys *seal.Keyring, clock kernel.Clock) *App {
	now := microseconds(clock)
	a := &App{Config: cfg, Logger: logger, DB: db, Keys: keys, Now: now}
	a.PartnerStore = postgres.NewPartnerStore(db)
	a.Jobs = postgres.NewJobs(db)
	v := validate.New()
	a.Audit = kernel.NewAuditor(postgres.NewAuditStore(db))
	// Sandbox mode lets webhooks reach loopback over plain http (make run,
	// tests), on the ports the operator allows only, never on emi's own or
	// the database's (a partner's webhook must not reach emi's own
	// services); production only public https addresses. Both are checked
	// at registration and again at every dial (DNS rebinding, a
	// configuration changed since).
	a.webhookReserved = webhook.NewReservedPorts()
	for _, r := range cfg.ReservedPorts() {
		a.webhookReserved.Add(r.Port, r.What)
	}
	guard := webhook.Guard{AllowLoopbackHTTP: cfg.Mode == config.ModeSandbox, Reserved: a.webhookReserved}
	for _, r := range cfg.SandboxWebhookPorts {
		guard.LoopbackPorts = append(guard.LoopbackPorts, webhook.PortRange{From: r.From, To: r.To})
	}
	a.keyCache = newKeyCache(a.PartnerStore, nil)
	a.Auth = partners.NewAuth(partners.AuthDeps{Keys: a.keyCache, Signatures: a.PartnerStore, Sealer: keys, Config: partners.AuthConfig{Window: cfg.AuthWindow}, Now: now})
	a.Idempotency = kernel.NewIdempotency(kernel.IdempotencyDeps{Tx: db, Store: postgres.NewIdempotencyStore(db), Keys: keys, Now: now})
	a.StaffStore = postgres.NewStaffStore(db)
	a.Sessions = postgres.NewSessionStore(db, now)
	a.Limits = postgres.NewLimitStore(db)
	a.Inbox = staff.NewInbox(staff.InboxDeps{Store: postgres.NewInboxStore(db), Now: now})
	a.Controls = staff.NewControls(staff.ControlsDeps{Links: a.StaffStore, Tx: db, Requests: postgres.NewRequestStore(db), Audit: a.Audit, Inbox: a.Inbox, Now: now})
	a.Staff = staff.NewStaff(staff.StaffDeps{Tx: db, Store: a.StaffStore, Sealer: keys, Audit: a.Audit, Validate: v, Controls: a.Controls, Inbox: a.Inbox, Config: staff.StaffConfig{Sandbox: cfg.Mode == config.ModeSandbox, Limits: a.Limits, PasswordCost: passwordCost(cfg)}, Now: now})
	a.WebhookStore = postgres.NewWebhookStore(db)
	a.Events = kernel.NewEvents(kernel.EventsDeps{Tx: db, Store: a.WebhookStore, Jobs: a.Jobs, Now: now})
	a.WebhookClient = webhook.NewClient(guard, "emi-webhooks/1", webhook.WithClock(now))
	clockStore := postgres.NewTestClockStore(db)
	if cfg.Mode == config.ModeSandbox {
		a.clockReader = clockStore
	}
	a.Webhooks = partners.NewWebhooks(partners.WebhooksDeps{Tx: db, Store: a.WebhookStore, Events: a.Events, Jobs: a.Jobs, Sealer: keys, Audit: a.Audit, Deliverer: a.WebhookClient, URLs: guard, Retry: func(res emi.WebhookResult, failed int, elapsed time.Duration) (time.Duration, bool) {
		return webhook.DelayAfter(res, failed, elapsed, nil)
	}, Config: partners.WebhooksConfig{MaxEndpoints: cfg.WebhookEndpoints, MaxEndpointsPerHost: cfg.WebhookEndpointsPerHost}, Clocks: a.clockReader, Now: now})
	a.Partners = partners.NewPartners(partners.PartnersDeps{Tx: db, Store: a.keyCache, Sealer: keys, Audit: a.Audit, Validate: v, Config: partners.PartnersConfig{SecretOverlap: cfg.SecretOverlap, Endpoints: a.Webhooks}, Now: now})
	a.People = postgres.NewPeopleStore(db)
	a.Screener = screening.NewScreener()
	screener := sanctions{s: a.Screener, cfg: sanctionsConfig{refresh: cfg.SanctionsRefresh, sources: nonEmpty(cfg.SanctionsURLs[:])}}
	a.Sanctions = screener
	a.OnboardingStore = postgres.NewOnboardingStore(db)
	a.Watchlist = people.NewWatchlist(people.WatchlistDeps{Tx: db, Store: a.People, Audit: a.Audit, Jobs: a.Jobs, Similar: screening.NameSimilarity, Validate: v, Now: now})
	a.AML = people.NewAML(people.AMLDeps{Tx: db, Store: a.People, Users: a.People, Screener: screener, Watch: a.Watchlist, Controls: a.Controls, Events: a.Events, Jobs: a.Jobs, Audit: a.Audit, Validate: v, Now: now})
	a.Users = people.NewUsers(people.UsersDeps{Tx: db, Store: a.People, Docs: a.People, AML: a.AML, Sealer: keys, Audit: a.Audit, Validate: v, Names: screener.Normalize, Now: now})
	a.KYC = people.NewKYC(people.KYCDeps{Tx: db, Store: a.People, Users: a.People, Docs: a.People, Sealer: keys, Provider: people.HostedKYC{PublicURL: cfg.PublicURL}, Events: a.Events, Audit: a.Audit, Now: now})
	a.Registry = newRegistry(cfg, logger)
	a.MerchantScreening = people.NewMerchantScreening(people.MerchantScreeningDeps{Tx: db, Store: a.People, Apps: a.OnboardingStore, Screener: screener, Watch: a.Watchlist, Audit: a.Audit, Now: now})
	// Services are built in dependency order, each with all it needs
	// (New(Deps), no setters): Checks before Onboarding and Review, Cards
	// and Ledger before Accounts, Authorizations before Maintenance.
	a.Checks = onboarding.NewChecks(onboarding.ChecksDeps{Tx: db, Store: a.OnboardingStore, Screener: screener,
		Registry: a.Registry, Media: a.Watchlist, Events: a.Events, Audit: a.Audit, Risk: onboarding.DefaultRiskModel(now),
		FalsePositives: a.People, NamesMatch: registry.NamesMatch, Settle: cfg.DecisionSettle, Now: now})
	a.Onboarding = onboarding.NewOnboarding(onboarding.OnboardingDeps{Tx: db, Store: a.OnboardingStore, Partners: a.PartnerStore,
		Users: a.People, Docs: a.People, Sealer: keys, Jobs: a.Jobs, Audit: a.Audit, Validate: v, Checks: a.Checks,
		IBAN: func(s string) error { return iban.Validate(iban.Normalize(s)) }, Now: now})
	a.Review = onboarding.NewReview(onboarding.ReviewDeps{Tx: db, Store: a.OnboardingStore, Staff: a.StaffStore,
		Controls: a.Controls, Checks: a.Checks, Events: a.Events, Audit: a.Audit, Inbox: a.Inbox,
		Views: a.OnboardingStore, Metrics: a.OnboardingStore, Now: now})
	// The sandbox's decisions exist in a sandbox only (nil otherwise).
	so, err := ops.NewSandboxOutcomes(ops.SandboxOutcomesDeps{Sandbox: cfg.Mode == config.ModeSandbox,
		KYC: a.KYC, AML: a.AML, Review: a.Review, Tx: db, Reset: postgres.NewSandboxResetStore(db), Audit: a.Audit, Now: now})
	if err == nil {
		a.SandboxOutcomes = so
	}
	a.Monitor = monitoring.NewMonitor(monitoring.Deps{Controls: a.Controls, Tx: db, Committed: db, Store: postgres.NewMonitoringStore(db), Jobs: a.Jobs, Audit: a.Audit,
		Sandbox: cfg.Mode == config.ModeSandbox, Off: cfg.BenchMonitoringOff, Now: now})
	a.Cases = monitoring.NewCases(monitoring.CasesDeps{Controls: a.Controls, Tx: db, Store: postgres.NewCaseStore(db), Monitor: a.Monitor,
		Events: a.Events, Sealer: keys, Audit: a.Audit, Now: now,
		Report: postgres.NewReportBuilder(db, cfg.Reporting, cfg.Mode == config.ModeSandbox)})
	a.Alerts = ops.NewAlerts(ops.AlertsDeps{Monitor: a.Monitor, Tx: db, Store: postgres.NewAlertStore(db), AML: a.People, Apps: a.OnboardingStore, Staff: a.StaffStore, Inbox: a.Inbox, Audit: a.Audit, Now: now})
	a.AccountStore = postgres.NewAccountStore(db)
	a.CardStore = postgres.NewCardStore(db)
	a.Cards = cards.NewCards(cards.CardsDeps{Tx: db, Store: a.CardStore, Accounts: a.AccountStore, AML: a.AML,
		Users: a.People, Vault: keys, SMS: smsProvider(cfg), Events: a.Events, Audit: a.Audit, Validate: v,
		Names: screener.Normalize, Config: cards.CardsConfig{RevealQuota: cfg.RevealQuota, Limits: a.Limits}, Now: now})
	a.LedgerStore = postgres.NewLedgerStore(db)
	a.Ledger = accounts.NewLedger(accounts.LedgerDeps{Tx: db, Store: a.LedgerStore, Now: now})
	a.Accounts = accounts.NewAccounts(accounts.AccountsDeps{Tx: db, Store: a.AccountStore,
		Ids: identifiers{bg: ukbank.DefaultBG, uk: ukbank.DefaultScheme}, Controls: a.Controls, Events: a.Events,
		Audit: a.Audit, Validate: v, Cards: a.Cards, Ledger: a.Ledger,
		Statements: postgres.NewStatementStore(db), Now: now})
	a.TransferStore = postgres.NewTransferStore(db)
	a.IncomingStore = postgres.NewIncomingStore(db)
	// Outgoing payments to emi's own identifiers are refused (they are
	// internal transfers); settlement is simulated in the sandbox only.
	own := transfers.OwnBank{UK: ukbank.DefaultScheme,
		IBANBankCodes: map[string]string{"BG": ukbank.DefaultBG.BankCode, "GB": ukbank.DefaultScheme.BankCode}}
	a.Transfers = transfers.NewTransfers(transfers.TransfersDeps{Tx: db, Store: a.TransferStore, Ledger: a.Ledger,
		Controls: a.Controls, Events: a.Events, Audit: a.Audit, Validate: v, Limits: a.Limits, Own: own,
		Sandbox: cfg.Mode == config.ModeSandbox, Suspense: a.IncomingStore, Monitor: a.Monitor, Now: now})
	a.AuthorizationStore = postgres.NewAuthorizationStore(db)
	a.Authorizations = cards.NewAuthorizations(cards.AuthorizationsDeps{Tx: db, Store: a.AuthorizationStore, Cards: a.Cards, Ledger: a.Ledger, Events: a.Events, Audit: a.Audit, Monitor: a.Monitor, Now: now})
	a.Maintenance = ops.NewMaintenance(ops.MaintenanceDeps{Jobs: a.Jobs, Sigs: a.PartnerStore, Idem: a.Idempotency,
		Staff: a.Staff, Holds: a.Authorizations, KYC: a.KYC, Monitoring: a.Monitor, Now: now})
	if tc, err := ops.NewTestClocks(ops.TestClocksDeps{Sandbox: cfg.Mode == config.ModeSandbox, Tx: db, Store: clockStore,
		Holds: a.Authorizations, KYC: a.KYC, Webhooks: a.Webhooks, Audit: a.Audit, Now: now}); err == nil {
		a.TestClocks = tc
	}
	a.HistoryImport = ops.NewHistoryImport(ops.HistoryImportDeps{Tx: db, Ledger: a.Ledger, Parties: a.TransferStore, Monitor: a.Monitor,
		Audit: a.Audit, Sandbox: cfg.Mode == config.ModeSandbox, Now: now})
	a.Incoming = transfers.NewIncoming(transfers.IncomingDeps{Tx: db, Store: a.IncomingStore, Transfers: a.TransferStore, Ledger: a.Ledger, Controls: a.Controls, Events: a.Events, Audit: a.Audit, Validate: v, Config: transfers.IncomingConfig{
		Sandbox: cfg.Mode == config.ModeSandbox,
		Own:     own,
	}, Monitor: a.Monitor, Now: now})
	a.Adjustments = transfers.NewAdjustments(transfers.AdjustmentsDeps{Tx: db, Store: a.IncomingStore, Transfers: a.TransferStore, Ledger: a.Ledger, Controls: a.Controls, Audit: a.Audit, Now: now})
	return a
}

// ReserveWebhookPort adds the port of addr, an address emi listens on, to
// the loopback ports no webhook is delivered to, whatever
// EMI_SANDBOX_WEBHOOK_PORTS lists: emi serve calls it once it listens, so
// EMI_ADDR=127.0.0.1:0 (a port the system picks) is covered too. what says
// what listens there, for the refusal's message.
func (a *App) ReserveWebhookPort(addr net.Addr, what string) {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.Port > 0 && tcp.Port <= 65535 {
		a.webhookReserved.Add(uint16(tcp.Port), what) // #nosec G115 -- 1..65535, checked on the line above
	}
}

// smsProvider picks the SMS provider of PIN texts (see config.SMSURL).
func smsProvider(cfg config.Config) cards.SMSProvider {
	switch {
	case cfg.SMSURL != "":
		return sms.NewGateway(cfg.SMSURL, cfg.SMSToken)
	case cfg.Mode == config.ModeSandbox:
		return sms.Sandbox{}
	}
	return sms.Unconfigured{}
}

// Close closes the database and the webhook client's idle connections.
func (a *App) Close() error {
	a.WebhookClient.CloseIdleConnections()
	return a.DB.Close()
}

// Handler builds the HTTP handler with its metrics registered on a new
// registry (served at /metrics). extra mounts test-only routes (nil in
// production).
func (a *App) Handler(extra ...func(r chi.Router, api *api.API)) http.Handler {
	apiHandler := a.API()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(jobDepth{count: a.Jobs.CountByState, desc: prometheus.NewDesc(
		"emi_jobs", "Background jobs by state (shared queue).", []string{"state"}, nil)})
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "emi_db_lag_tolerant_reads_total", ConstLabels: prometheus.Labels{"served_by": "replica"},
		Help: "Reads that tolerate EMI_READ_MAX_LAG (back-office pages, ledger verify), by where they went."},
		func() float64 { return float64(a.DB.ReplicaStats().Replica) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "emi_db_lag_tolerant_reads_total", ConstLabels: prometheus.Labels{"served_by": "primary"},
		Help: "Reads that tolerate EMI_READ_MAX_LAG (back-office pages, ledger verify), by where they went."},
		func() float64 { return float64(a.DB.ReplicaStats().Primary) }))
	for _, name := range []string{"jobs", "keys"} {
		live := a.listenerState(name)
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "emi_listener_live", ConstLabels: prometheus.Labels{"listener": name},
			Help: "1 while the LISTEN connection (EMI_LISTEN_DATABASE_URL) has shown that notifications arrive (its own came back); 0 before, after a loss, or behind a transaction pooler where they never do."},
			func() float64 {
				if live.Load() {
					return 1
				}
				return 0
			}))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "emi_api_key_cache_live",
		Help: "1 while the API-key cache has confirmed it sees every key change (LISTEN heartbeats come back), 0 while every request reads its key from the database."},
		func() float64 {
			if a.keyCache.Stats().Live {
				return 1
			}
			return 0
		}))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "emi_api_key_cache_misses_total",
		Help: "API-key look-ups the cache could not answer (read from the database)."},
		func() float64 { return float64(a.keyCache.Stats().Misses) }))
	back := a.Portal()
	return web.NewHandler(web.Deps{
		Logger:        a.Logger,
		Portal:        back.Handler(),
		PortalRecover: back.Recover,
		KYC:           back.HostedKYC(),
		Static:        static.FS,
		API:           apiHandler,
		Health:        a.Health,
		Registry:      reg,
		Metrics:       httpx.NewMetrics(reg),
		OpenAPI:       api.OpenAPI,
		PublicURL:     a.Config.PublicURL,
		Extra: func(r chi.Router) {
			for _, f := range extra {
				f(r, apiHandler)
			}
		},
	})
}

// Portal builds the back office. It is served over HTTPS (Secure cookies
// with the __Host- prefix, HSTS) when EMI_PUBLIC_URL is https.
func (a *App) Portal() *portal.Portal {
	var lagBound time.Duration
	if len(a.Config.ReadDatabaseURLs) > 0 {
		lagBound = a.Config.ReadMaxLag
	}
	return portal.New(portal.Deps{
		ReadLagBound: lagBound,
		Logger:       a.Logger,
		Staff:        a.Staff,
		Partners:     a.Partners,
		Audit:        a.Audit,
		Search:       kernel.NewSearch(a.Partners.Search, a.Staff.Search, a.Users.Search),
		JobCounts:    a.Jobs.CountByState,
		Jobs:         kernel.NewJobs(a.Jobs),
		Webhooks:     a.Webhooks,
		Sessions:     a.Sessions,
		TagSession:   a.Sessions.TagSession,
		Secure:       strings.HasPrefix(a.Config.PublicURL, "https://"),
		Now:          a.Now,

		Users: a.Users,
		AML:   a.AML,
		KYC:   a.KYC,

		Onboarding:  a.Onboarding,
		Watchlist:   a.Watchlist,
		Review:      a.Review,
		Alerts:      a.Alerts,
		Monitor:     a.Monitor,
		Cases:       a.Cases,
		Inbox:       a.Inbox,
		Accounts:    a.Accounts,
		Cards:       a.Cards,
		Transfers:   a.Transfers,
		Incoming:    a.Incoming,
		Adjustments: a.Adjustments,
		StepUp:      a.Staff,
		Sandbox:     a.Config.Mode == config.ModeSandbox,
		// The back office's "Update now": admin only, audited.
		UpdateSanctions: a.UpdateSanctionsForStaff,

		// The card's payments and the payment simulator (sandbox).
		Authorizations: a.Authorizations,
	})
}

// API builds the partner API.
func (a *App) API() *api.API {
	return api.New(api.Deps{
		Auth: a.Auth, Idempotency: a.Idempotency, Partners: a.Partners, Events: a.Events,
		Users: a.Users, AML: a.AML, KYC: a.KYC, Onboarding: a.Onboarding, Accounts: a.Accounts,
		Cards: a.Cards, Transfers: a.Transfers, Incoming: a.Incoming, InformationRequests: a.Cases, Sandbox: a.Config.Mode == config.ModeSandbox, SandboxOutcomes: a.SandboxOutcomes, TestClocks: a.TestClocks, RateLimit: a.Config.RateLimit, RateWindow: a.Config.RateWindow,
		MaxInFlight: cmp.Or(a.Config.MaxInFlight, postgres.MaxOpenConns), QueueWait: a.Config.QueueWait,
		Authorizations: a.Authorizations, Review: a.Review, Webhooks: a.Webhooks,
	})
}

// Pool builds the worker pool with every job handler registered.
func (a *App) Pool() *worker.Pool {
	pool := worker.New(a.Jobs, worker.Config{Concurrency: a.Config.Workers, KeyConcurrency: a.Config.WebhookPartnerConcurrency,
		ShutdownTimeout: a.Config.ShutdownTimeout, Lease: a.Config.JobLease}, a.Logger)
	pool.Handle(ops.JobMaintenance, a.Maintenance.Run)
	pool.Handle(monitoring.JobEvaluate, a.Monitor.Run)
	pool.Handle(kernel.JobWebhookDeliver, a.Webhooks.Deliver)
	pool.Handle(people.JobAMLRescreen, a.AML.Rescreen)
	pool.Handle(onboarding.JobApplicationChecks, a.Checks.Run)
	pool.Handle(kernel.JobRescreenApplications, a.Onboarding.RescreenApplications)
	pool.Handle(people.JobWatchlistScreenUsers, a.AML.ScreenWatchlistEntry)
	pool.Handle(people.JobAMLRescreenMerchants, a.MerchantScreening.Rescreen)
	pool.Handle(people.JobWatchlistScreenMerchants, a.MerchantScreening.ScreenWatchlistEntry)
	return pool
}

// RunWorkers runs the background job pool until ctx ends, woken at once
// by the commit of every enqueued job (LISTEN/NOTIFY, across processes)
// and otherwise polling. It returns when the pool has stopped.
func (a *App) RunWorkers(ctx context.Context) error {
	pool := a.Pool()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go postgres.ListenJobs(lctx, a.Config.ListenDatabaseURL, pool.Notify, a.listenerState("jobs"), a.Logger)
	return pool.Run(ctx)
}

// RunKeyCache keeps the API key cache live until ctx ends: it listens for
// committed changes to keys and partners (LISTEN/NOTIFY, from every process
// sharing the database) and proves with heartbeats that it has seen them
// all. Without it running, or while its connection is down, every request
// reads its key from the database, as it would with no cache.
//
// Its connection is EMI_LISTEN_DATABASE_URL (default DATABASE_URL). Behind
// a transaction-mode pooler, where LISTEN is accepted and nothing ever
// arrives, no heartbeat comes back: the cache stays off (every request
// reads its key), a warning says why, and emi_listener_live{listener="keys"}
// and emi_api_key_cache_live stay 0.
func (a *App) RunKeyCache(ctx context.Context) {
	postgres.ListenPartnerKeys(ctx, a.Config.ListenDatabaseURL, a.keyCache, a.listenerState("keys"), a.Logger)
}

// listenerState is the live flag of one listener ("jobs", "keys"),
// exported as emi_listener_live.
func (a *App) listenerState(name string) *atomic.Bool {
	a.listenersMu.Lock()
	defer a.listenersMu.Unlock()
	if a.listeners == nil {
		a.listeners = map[string]*atomic.Bool{}
	}
	if a.listeners[name] == nil {
		a.listeners[name] = &atomic.Bool{}
	}
	return a.listeners[name]
}

// KeyCacheStats returns the API key cache's counters.
func (a *App) KeyCacheStats() KeyCacheStats { return a.keyCache.Stats() }

// Health is nil when the database answers and its schema is current.
func (a *App) Health(ctx context.Context) error {
	if err := a.DB.PingContext(ctx); err != nil {
		return errors.New("database unreachable")
	}
	// A connection cut between the ping and the version read is an
	// outage, not a schema to migrate.
	if err := a.DB.CheckSchema(ctx); errors.Is(err, postgres.ErrSchemaNotCurrent) {
		return errors.New("database schema not current")
	} else if err != nil {
		return errors.New("database unreachable")
	}
	// A standby answers pings and reads: only this tells the load balancer
	// that every write here would fail (after a failover, the database
	// address may lead to a standby).
	if err := a.DB.CheckWritable(ctx); errors.Is(err, postgres.ErrReadOnly) {
		return errors.New("database is read-only (a standby)")
	} else if err != nil {
		return errors.New("database unreachable")
	}
	return nil
}

// ScheduleMonitoring enqueues the monitoring evaluation job every
// interval until ctx ends. Each recorded movement queues the job too, but
// a job already running makes that enqueue a no-op (one pending job per
// key), and the running job may have looked for work just before the
// movement committed: the tick bounds how long such a movement waits.
func (a *App) ScheduleMonitoring(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := a.Monitor.Schedule(ctx); err != nil && ctx.Err() == nil {
			a.Logger.Warn("schedule monitoring", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ScheduleMaintenance enqueues the clean-up job every interval until ctx
// ends.
func (a *App) ScheduleMaintenance(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := a.Maintenance.Schedule(ctx); err != nil && ctx.Err() == nil {
			a.Logger.Warn("schedule maintenance", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// jobDepth exports the number of jobs per state as a gauge, read from the
// database at scrape time so every instance reports the shared queue.
type jobDepth struct {
	count func(ctx context.Context) (map[string]int64, error)
	desc  *prometheus.Desc
}

func (j jobDepth) Describe(ch chan<- *prometheus.Desc) { ch <- j.desc }
func (j jobDepth) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := j.count(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(j.desc, err)
		return
	}
	for _, st := range emi.JobStates() {
		ch <- prometheus.MustNewConstMetric(j.desc, prometheus.GaugeValue, float64(counts[string(st)]), string(st))
	}
}

// nonEmpty returns the non-empty strings of l (the list addresses
// configured; an EU or UK list may be switched off).
func nonEmpty(l []string) []string {
	var out []string
	for _, s := range l {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// passwordCost is the staff password hashing cost cfg asks for: the
// standard one unless a test fixture set Config.TestFixturePasswords.
func passwordCost(cfg config.Config) staff.PasswordCost {
	if cfg.TestFixturePasswords {
		return staff.PasswordCostTestFixture
	}
	return staff.PasswordCostStandard
}

// microseconds is clock read to the microsecond, the precision PostgreSQL
// keeps: a time the services stamp is the time they store, so an object's
// answer to its create and to every later read carry the same instant
// (creates used to answer nanoseconds, reads microseconds).
func microseconds(clock kernel.Clock) kernel.Clock {
	return func() time.Time { return clock().Truncate(time.Microsecond) }
}
