package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/web/api"
)

var helps = map[string]string{
	"webhooks": webhooksHelp,
	"migrate": `emi migrate

Applies every pending database migration, each in its own transaction.
Running it again applies nothing. Needs DATABASE_URL.
`,
	"seed": `emi seed

Inserts the sandbox data of contract §11 (programs, group codes, demo staff as
they are built). Idempotent. Refused unless EMI_MODE=sandbox, so that a
production database never receives test data. Needs DATABASE_URL and
EMI_MASTER_KEY.
`,
	"serve": `emi serve

Serves the partner API (/v1, /v2, /v3), /healthz, /metrics and /openapi.yaml
on EMI_ADDR and runs the background workers. Refuses to start when the
database schema is older than this binary (run emi migrate). SIGTERM or
SIGINT drains requests and running jobs for up to EMI_SHUTDOWN_TIMEOUT.
Needs DATABASE_URL and EMI_MASTER_KEY.
`,
	"staff": `emi staff create --email E --name N --role R[,R] --password-stdin
emi staff totp --email E

create makes a back-office staff user, for example the first admin. Roles
are admin, underwriter, compliance, customer_service and auditor (several
with commas). The password is read from the first line of standard input,
never from the command line, and must pass the password policy: 12 to 128
characters with a letter and a digit, not a common password, not containing
the e-mail's name part. Two-factor authentication (TOTP) is set up at the
first sign-in.

  printf '%s\n' "$PASSWORD" | emi staff create --email ada@example.com \
      --name "Ada Admin" --role admin --password-stdin

totp prints the current TOTP code of a staff user who has set up two-factor
authentication, so that sandbox users can sign in without an authenticator
app (emi seed creates one user per role, password Sandbox-Staff-2026).
Each code works once; when the current one was used, the next step's code is
printed. Refused unless EMI_MODE=sandbox. Both need DATABASE_URL and
EMI_MASTER_KEY.
`,
	"generate": `emi generate applications|accounts|cards [--count N] [--free M]

accounts: inserts N synthetic EUR accounts (one user per ten accounts) with
their balances and valid Bulgarian IBANs, for the accounts benchmarks.

cards: the same N accounts, each with a virtual card whose PAN, CVV2 and
PIN are sealed like any card's, for the cards benchmarks (use a fresh
database: PANs are drawn at random and checked only within the run); --free
M leaves M of the accounts without a card, for the card_create benchmark.

Inserts N synthetic applications (default 100,000) of a new semi-automatic
"Bench Partner", each with a company, a UBO and ten check results (four
latest, six in the history), spread over 60 days and over every status, for
the review-queue benchmarks. Runs only with EMI_MODE=sandbox. Needs
DATABASE_URL and EMI_MASTER_KEY.
`,
	"partner": `emi partner create --name NAME [--processing automatic|semi-automatic] [--webhook-url URL] [--no-validator-config] [--signature-version 1|2] [--json]

Creates a partner with its master merchant, a first API key and the default
validator configuration (which application fields are mandatory; without it,
--no-validator-config, application_create answers 11008), and prints the
credentials. The API secret and webhook secret are shown only this once.
--signature-version 2 makes the key refuse the seed's version 1 signature
(contract §2): every request must then be signed with version 2
(x-signature-version: 2). The default, 1, accepts both versions.
With --json it prints exactly
  {"api_key", "api_secret", "merchant", "webhook_secret"}
(webhook_secret is empty without --webhook-url). Needs DATABASE_URL and
EMI_MASTER_KEY.
`,
}

func help(stdout io.Writer, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if args[0] == "env" {
		fmt.Fprintln(stdout, "Environment variables:")
		for _, v := range config.Vars {
			fmt.Fprintf(stdout, "  %-26s %-26s %s\n", v.Name, v.Default, v.Meaning)
		}
		return nil
	}
	h, ok := helps[args[0]]
	if !ok {
		return usageError{fmt.Sprintf("no help for %q", args[0])}
	}
	fmt.Fprint(stdout, h)
	return nil
}

func cmdMigrate(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv, "db")
	if err != nil {
		return err
	}
	db, err := app.OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	current, _, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrate: applied %d migration(s); schema at version %d\n", n, current)
	return nil
}

func cmdSeed(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	a, err := openForCommand(ctx, getenv, io.Discard, func(cfg config.Config) error {
		if cfg.Mode != config.ModeSandbox {
			return errors.New("seed inserts sandbox data and runs only with EMI_MODE=sandbox")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer a.Close()
	for _, s := range seeders(a) {
		n, err := s.run(ctx)
		if err != nil {
			return fmt.Errorf("seed %s: %w", s.name, err)
		}
		fmt.Fprintf(stdout, "seed: %s: %d created\n", s.name, n)
	}
	fmt.Fprintln(stdout, "seed: done")
	return nil
}

// seeder inserts one kind of sandbox data, creating only what is missing.
type seeder struct {
	name string
	run  func(ctx context.Context) (created int, err error)
}

// seeders lists the sandbox data, in dependency order. Each feature adds its
// own (programs with the accounts, staff with the back office).
func seeders(a *app.App) []seeder {
	return []seeder{
		// One staff user per role (service.SandboxStaff), password
		// service.SandboxStaffPassword, TOTP enrolled: emi staff totp
		// --email E prints a code.
		{name: "staff", run: func(ctx context.Context) (int, error) {
			return a.Staff.SeedSandbox(emi.WithPrincipal(ctx, emi.SystemPrincipal("seed")))
		}},
		// The programs of contract §11 with their card group codes.
		{name: "programs", run: func(ctx context.Context) (int, error) {
			return a.Accounts.SeedSandbox(emi.WithPrincipal(ctx, emi.SystemPrincipal("seed")))
		}},
	}
}

func cmdPartner(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stderr, helps["partner"])
		return usageError{"usage: emi partner create --name NAME [--processing MODE] [--webhook-url URL] [--signature-version 1|2] [--json]"}
	}
	fs := flag.NewFlagSet("partner create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "partner name (required)")
	processing := fs.String("processing", "automatic", "automatic or semi-automatic")
	webhook := fs.String("webhook-url", "", "webhook endpoint URL")
	asJSON := fs.Bool("json", false, "print the credentials as one JSON object")
	noValidator := fs.Bool("no-validator-config", false, "create the partner without the default validator configuration (application_create then answers 11008)")
	sigVersion := fs.Int("signature-version", 1, "the lowest signature version the key accepts: 1 (both) or 2 (version 2 only)")
	fs.Usage = func() { fmt.Fprint(stderr, helps["partner"]) }
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *sigVersion != emi.SignatureV1 && *sigVersion != emi.SignatureV2 {
		return usageError{fmt.Sprintf("--signature-version %d: must be 1 or 2", *sigVersion)}
	}
	a, err := openForCommand(ctx, getenv, stderr, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("cli"))
	creds, err := a.Partners.Create(ctx, emi.PartnerCreate{Name: *name, Processing: emi.Processing(*processing), WebhookURL: *webhook, NoValidatorConfig: *noValidator,
		SignatureVersion: *sigVersion})
	if err != nil {
		return describe(err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(creds)
	}
	fmt.Fprintf(stdout, "partner:        %s (%s)\nmerchant:       %s\napi_key:        %s\napi_secret:     %s\n",
		creds.Partner.Name, creds.Partner.ID, creds.Merchant, creds.APIKey, creds.APISecret)
	if creds.WebhookSecret != "" {
		fmt.Fprintf(stdout, "webhook_secret: %s\n", creds.WebhookSecret)
	}
	fmt.Fprintln(stdout, "The secrets are shown only this once.")
	return nil
}

// describe turns a catalogue error into a message for the command line.
func describe(err error) error {
	var e *emi.Error
	if !errors.As(err, &e) || e.Kind == emi.KindInternal {
		return err
	}
	var parts []string
	for _, f := range e.Fields {
		parts = append(parts, f.Field+" "+f.Message)
	}
	if len(parts) == 0 {
		return errors.New(e.Key)
	}
	return usageError{strings.Join(parts, "; ")}
}

func cmdServe(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv, "db", "key")
	if err != nil {
		return err
	}
	logger := app.NewLogger(cfg, stderr)
	a, err := app.Open(ctx, cfg, logger, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.DB.CheckSchema(ctx); err != nil {
		return err
	}
	// Without lists emi still serves; aml_check answers 18000 until an
	// update succeeds (the error is logged).
	_ = a.LoadSanctions(ctx)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	a.ReserveWebhookPort(ln.Addr(), "emi's own port (the address emi serve listens on)")
	if cfg.DebugAddr != "" {
		dln, err := debugListener(cfg.DebugAddr)
		if err != nil {
			_ = ln.Close()
			return err
		}
		a.ReserveWebhookPort(dln.Addr(), "emi's profiling port (EMI_DEBUG_ADDR)")
		dsrv := debugServer()
		go func() { _ = dsrv.Serve(dln) }()
		defer func() { _ = dsrv.Close() }()
		logger.Info("profiling endpoint (net/http/pprof)", "addr", dln.Addr().String())
	}
	const readTimeout = 60 * time.Second
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       readTimeout, // 20 MiB document uploads on slow links
		// The API's work deadline (api.RequestTimeout) starts once the
		// body is read, so an answer may be written that long after the
		// slowest upload, plus room to write it.
		WriteTimeout:   readTimeout + api.RequestTimeout + 10*time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
	}

	// Workers get their own context: on SIGTERM the HTTP server drains first,
	// then the workers finish their running jobs.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var wg sync.WaitGroup
	wg.Add(5)
	go func() {
		defer wg.Done()
		a.ScheduleSanctionsUpdates(workCtx)
	}()
	go func() {
		defer wg.Done()
		a.RunKeyCache(workCtx)
	}()
	go func() {
		defer wg.Done()
		if err := a.RunWorkers(workCtx); err != nil {
			logger.Error("worker pool stopped", "error", err)
		}
	}()
	go func() {
		defer wg.Done()
		a.ScheduleMaintenance(workCtx, time.Minute)
	}()
	go func() {
		defer wg.Done()
		a.ScheduleMonitoring(workCtx, 2*time.Second)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logger.Info("serving", "addr", ln.Addr().String(), "mode", cfg.Mode, "key_id", a.Keys.CurrentKeyID())
	fmt.Fprintf(stdout, "emi: serving on http://%s\n", ln.Addr())

	select {
	case err := <-serveErr:
		stopWork()
		wg.Wait()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	shutdownErr := srv.Shutdown(sctx)
	stopWork()
	// Bounded like the HTTP drain (a listener stuck reconnecting to a
	// standby kept a process up 16 minutes after SIGTERM). A job still
	// running is abandoned with its lease, and retried by another process
	// when the lease ends (EMI_JOB_LEASE).
	if !waitUntil(sctx, &wg) {
		logger.Error("shutdown: background work still running at the end of EMI_SHUTDOWN_TIMEOUT; stopping anyway (unfinished jobs are retried when their lease ends)",
			"timeout", cfg.ShutdownTimeout.String())
		if shutdownErr == nil {
			shutdownErr = errors.New("background work still running at the end of EMI_SHUTDOWN_TIMEOUT")
		}
	}
	if shutdownErr != nil {
		return fmt.Errorf("shutdown: %w", shutdownErr)
	}
	logger.Info("stopped")
	return nil
}

// waitUntil waits for wg until ctx ends, and reports whether wg finished.
func waitUntil(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// loadConfig reads the environment; need lists what the command requires.
func loadConfig(getenv func(string) string, need ...string) (config.Config, error) {
	cfg, err := config.Load(getenv, need...)
	if err != nil {
		return cfg, fmt.Errorf("configuration:\n%w\n(see `emi help env`)", err)
	}
	return cfg, nil
}

// openForCommand loads the configuration, opens the app and checks that the
// schema is current: the start of every command that works on data. check,
// when not nil, vets the configuration first (e.g. sandbox-only commands).
// The caller closes the app.
func openForCommand(ctx context.Context, getenv func(string) string, stderr io.Writer, check func(config.Config) error) (*app.App, error) {
	cfg, err := loadConfig(getenv, "db", "key")
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(cfg); err != nil {
			return nil, err
		}
	}
	a, err := app.Open(ctx, cfg, app.NewLogger(cfg, stderr), nil)
	if err != nil {
		return nil, err
	}
	if err := a.DB.CheckSchema(ctx); err != nil {
		_ = a.Close()
		return nil, err
	}
	return a, nil
}
