// Package registry looks companies up in trade registers for company
// onboarding (know your business).
//
// Three providers implement the service layer's Registry interface (Lookup by
// country and company number):
//
//   - Sandbox: an embedded register of made-up companies, for the sandbox
//     environment and tests;
//   - CompaniesHouse: the UK Companies House public data API (GB only);
//   - Router: sends each lookup to the provider configured for its country,
//     and every other country to a fallback.
//
// A typical wiring in the composition root:
//
//	ch, err := registry.NewCompaniesHouse(registry.CompaniesHouseConfig{APIKey: key})
//	...
//	reg := registry.NewRouter(registry.NewSandbox(), map[string]registry.Provider{"GB": ch})
//
// Every provider reports a company it does not know with an error that
// matches emi.ErrRegistryNotFound, and a register that cannot answer with one
// that matches emi.ErrProviderUnavailable and wraps the cause.
//
// NamesMatch compares the company name an applicant submitted with the name
// on the register.
package registry

import (
	"context"
	"fmt"
	"strings"

	"emi/internal/emi"
)

// Provider is a trade register: it has the method set of the service layer's
// Registry interface.
type Provider interface {
	// Lookup returns the company registered under uic in country (an ISO
	// 3166 alpha-2 code). Errors match emi.ErrRegistryNotFound when there
	// is no such company and emi.ErrProviderUnavailable, wrapping the
	// cause, when the register cannot answer.
	Lookup(ctx context.Context, country, uic string) (emi.RegistryRecord, error)
}

// Router dispatches lookups by country: the provider configured for the
// country answers, or the fallback for countries without one.
type Router struct {
	routes   map[string]Provider
	fallback Provider
}

var _ Provider = (*Router)(nil)

// NewRouter returns a Router that sends lookups for each country in routes to
// its provider and the lookups for every other country to fallback. Country
// codes are matched case-insensitively. A nil fallback is allowed: lookups
// for unrouted countries then fail with emi.ErrProviderUnavailable, since no
// register can answer them (they are not reported as "no such company").
// Nil providers in routes are ignored.
func NewRouter(fallback Provider, routes map[string]Provider) *Router {
	r := &Router{routes: make(map[string]Provider, len(routes)), fallback: fallback}
	for c, p := range routes {
		if p != nil {
			r.routes[normCountry(c)] = p
		}
	}
	return r
}

// Lookup asks the provider configured for country, or the fallback.
func (r *Router) Lookup(ctx context.Context, country, uic string) (emi.RegistryRecord, error) {
	p := r.Provider(country)
	if p == nil {
		return emi.RegistryRecord{}, fmt.Errorf("%w: no trade register configured for country %q",
			emi.ErrProviderUnavailable, normCountry(country))
	}
	return p.Lookup(ctx, country, uic)
}

// Provider returns the provider that answers for country: its route, or the
// fallback (which may be nil).
func (r *Router) Provider(country string) Provider {
	if p, ok := r.routes[normCountry(country)]; ok {
		return p
	}
	return r.fallback
}

// normCountry trims and upper-cases a country code.
func normCountry(c string) string { return strings.ToUpper(strings.TrimSpace(c)) }
