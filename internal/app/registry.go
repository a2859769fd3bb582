package app

import (
	"log/slog"
	"net/http"
	"time"

	"emi/internal/config"
	"emi/internal/registry"
	"emi/internal/service/onboarding"
)

// newRegistry builds the trade register: the embedded sandbox register of
// contract §11 for every country, and Companies House for GB companies when
// EMI_COMPANIES_HOUSE_KEY is set.
func newRegistry(cfg config.Config, logger *slog.Logger) onboarding.Registry {
	sandbox := registry.NewSandbox()
	routes := map[string]registry.Provider{}
	if cfg.CompaniesHouseKey != "" {
		ch, err := registry.NewCompaniesHouse(registry.CompaniesHouseConfig{BaseURL: cfg.CompaniesHouseURL,
			APIKey: cfg.CompaniesHouseKey, Client: &http.Client{Timeout: 15 * time.Second}})
		if err != nil {
			logger.Error("Companies House disabled: the sandbox register answers for GB", "error", err)
		} else {
			routes["GB"] = ch
		}
	}
	return registry.NewRouter(sandbox, routes)
}
