package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"emi/internal/config"
	"emi/internal/postgres"
	"emi/internal/seal"
	"emi/internal/service"
	"emi/internal/validate"
)

// app is everything wired from one configuration: the database, the stores
// and the services. Every subcommand builds the part it needs through it, so
// the wiring exists once.
type app struct {
	cfg    config.Config
	logger *slog.Logger
	db     *postgres.DB
	keys   *seal.Keyring
	store  *postgres.Store
	jobs   *postgres.Jobs
	now    service.Clock

	audit       *service.Auditor
	partners    *service.Partners
	auth        *service.Auth
	idempotency *service.Idempotency
	maintenance *service.Maintenance
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// loadConfig reads the environment; need lists what the command requires.
func loadConfig(getenv func(string) string, need ...string) (config.Config, error) {
	cfg, err := config.Load(getenv, need...)
	if err != nil {
		return cfg, fmt.Errorf("configuration: %w (see `emi help env`)", err)
	}
	return cfg, nil
}

// openApp connects to the database and builds the services. The caller
// closes it.
func openApp(ctx context.Context, cfg config.Config, logger *slog.Logger) (*app, error) {
	keys, err := seal.NewKeyring(cfg.MasterKey, cfg.PreviousKeys...)
	if err != nil {
		return nil, fmt.Errorf("EMI_MASTER_KEY: %w", err)
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, logger: logger, db: db, keys: keys, now: time.Now}
	a.store = postgres.NewStore(db)
	a.jobs = postgres.NewJobs(db)
	v := validate.New()
	a.audit = service.NewAuditor(a.store)
	a.partners = service.NewPartners(db, a.store, keys, a.audit, v,
		service.PartnersConfig{SecretOverlap: cfg.SecretOverlap, Sandbox: cfg.Mode == config.ModeSandbox}, a.now)
	a.auth = service.NewAuth(a.store, a.store, keys, service.AuthConfig{Window: cfg.AuthWindow}, a.now)
	a.idempotency = service.NewIdempotency(db, a.store, a.now)
	a.maintenance = service.NewMaintenance(a.jobs, a.store, a.idempotency, a.now)
	return a, nil
}

func (a *app) Close() error { return a.db.Close() }

// openDB connects without building the services (migrate needs no key).
func openDB(ctx context.Context, cfg config.Config) (*postgres.DB, error) {
	return postgres.Open(ctx, cfg.DatabaseURL)
}
