package emi

import (
	"errors"
	"time"
)

// RegistryRecord is a company as a trade register knows it.
type RegistryRecord struct {
	// Register names the source ("sandbox", "companies_house").
	Register  string
	UIC       string
	LegalName string
	Country   string
	// Status as the register words it ("active", "dissolved", ...).
	Status string
	// IncorporatedOn is zero when the register does not say.
	IncorporatedOn time.Time
	Address        string
}

// Errors of trade-register and adverse-media providers. They never reach a
// client: the checks pipeline turns them into check results.
var (
	// ErrRegistryNotFound: the register has no company with that number.
	ErrRegistryNotFound = errors.New("registry: no such company")
	// ErrProviderUnavailable: the provider could not answer (outage,
	// timeout, throttling); the check ends "error" and is retried.
	ErrProviderUnavailable = errors.New("provider unavailable")
)
