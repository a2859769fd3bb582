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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service"
	"emi/internal/worker"
	"emi/web"
	"emi/web/api"
	"emi/web/httpx"
)

var helps = map[string]string{
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
	"partner": `emi partner create --name NAME [--processing automatic|semi-automatic] [--webhook-url URL] [--json]

Creates a partner with its master merchant and a first API key, and prints
the credentials. The API secret and webhook secret are shown only this once.
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
	db, err := openDB(ctx, cfg)
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
	cfg, err := loadConfig(getenv, "db", "key")
	if err != nil {
		return err
	}
	if cfg.Mode != config.ModeSandbox {
		return errors.New("seed inserts sandbox data and runs only with EMI_MODE=sandbox")
	}
	a, err := openApp(ctx, cfg, newLogger(cfg, io.Discard))
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.db.CheckSchema(ctx); err != nil {
		return err
	}
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
func seeders(a *app) []seeder { return nil }

func cmdPartner(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stderr, helps["partner"])
		return usageError{"usage: emi partner create --name NAME [--processing MODE] [--webhook-url URL] [--json]"}
	}
	fs := flag.NewFlagSet("partner create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "partner name (required)")
	processing := fs.String("processing", "automatic", "automatic or semi-automatic")
	webhook := fs.String("webhook-url", "", "webhook endpoint URL")
	asJSON := fs.Bool("json", false, "print the credentials as one JSON object")
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
	cfg, err := loadConfig(getenv, "db", "key")
	if err != nil {
		return err
	}
	a, err := openApp(ctx, cfg, newLogger(cfg, stderr))
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.db.CheckSchema(ctx); err != nil {
		return err
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("cli"))
	creds, err := a.partners.Create(ctx, emi.PartnerCreate{Name: *name, Processing: emi.Processing(*processing), WebhookURL: *webhook})
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

func cmdServe(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv, "db", "key")
	if err != nil {
		return err
	}
	logger := newLogger(cfg, stderr)
	a, err := openApp(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.db.CheckSchema(ctx); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(jobDepth{count: a.jobs.CountByState, desc: prometheus.NewDesc(
		"emi_jobs", "Background jobs by state (shared queue).", []string{"state"}, nil)})
	metrics := httpx.NewMetrics(reg)

	handler := web.NewHandler(web.Deps{
		Logger: logger,
		API: api.New(api.Deps{
			Auth: a.auth, Idempotency: a.idempotency, Partners: a.partners,
			RateLimit: cfg.RateLimit, RateWindow: cfg.RateWindow,
		}),
		Health:   func(ctx context.Context) error { return a.health(ctx) },
		Registry: reg,
		Metrics:  metrics,
		OpenAPI:  api.OpenAPI,
	})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second, // 20 MiB document uploads on slow links
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}

	pool := worker.New(a.jobs, worker.Config{Concurrency: cfg.Workers, ShutdownTimeout: cfg.ShutdownTimeout}, logger)
	pool.Handle(service.JobMaintenance, a.maintenance.Run)

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := pool.Run(workCtx); err != nil {
			logger.Error("worker pool stopped", "error", err)
		}
	}()
	go func() {
		defer wg.Done()
		a.scheduleMaintenance(workCtx)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logger.Info("serving", "addr", ln.Addr().String(), "mode", cfg.Mode, "key_id", a.keys.CurrentKeyID())
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
	wg.Wait()
	if shutdownErr != nil {
		return fmt.Errorf("shutdown: %w", shutdownErr)
	}
	logger.Info("stopped")
	return nil
}

// health is ready when the database answers and its schema is current.
func (a *app) health(ctx context.Context) error {
	if err := a.db.PingContext(ctx); err != nil {
		return errors.New("database unreachable")
	}
	if err := a.db.CheckSchema(ctx); err != nil {
		return errors.New("database schema not current")
	}
	return nil
}

// scheduleMaintenance enqueues the clean-up job every minute until ctx ends.
func (a *app) scheduleMaintenance(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if err := a.maintenance.Schedule(ctx); err != nil && ctx.Err() == nil {
			a.logger.Warn("schedule maintenance", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
