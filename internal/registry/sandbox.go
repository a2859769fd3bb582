package registry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"emi/internal/emi"
)

// SandboxRegister is the Register name of records from the Sandbox provider.
const SandboxRegister = "sandbox"

// Company numbers of the sandbox register with a documented behaviour, for
// sandbox users and tests.
const (
	// SandboxTradingUIC is Sandbox Trading Ltd (GB), active since
	// 2015-03-12.
	SandboxTradingUIC = "100000001"
	// SandboxBulgariaUIC is Sandbox Bulgaria EOOD (BG), active since
	// 2018-06-01.
	SandboxBulgariaUIC = "100000002"
	// SandboxDissolvedUIC is Sandbox Dissolved Ltd (GB), incorporated
	// 2009-01-20 and dissolved: its status is "dissolved".
	SandboxDissolvedUIC = "100000003"
	// SandboxNewcoUIC is Sandbox Newco Ltd (GB), active and always recently
	// incorporated: its incorporation date is 30 days before the day of the
	// lookup (UTC), to exercise rules about young companies.
	SandboxNewcoUIC = "100000004"
	// SandboxHoldingsUIC is Sandbox Holdings AD (BG), active since
	// 2004-09-15: a Bulgarian joint-stock company.
	SandboxHoldingsUIC = "100000005"
	// SandboxSocieteUIC is Société Sandbox SARL (FR), active since
	// 2020-02-03: a name with a diacritic and a French legal form.
	SandboxSocieteUIC = "100000006"
	// SandboxLiquidationUIC is Sandbox Insolvent Ltd (GB), incorporated
	// 2012-11-05, status "liquidation".
	SandboxLiquidationUIC = "100000007"
	// SandboxOutageUIC is Sandbox Outage Ltd (GB). It simulates a register
	// outage: every lookup of this number in GB fails with an error
	// matching emi.ErrProviderUnavailable.
	SandboxOutageUIC = "100000099"
)

// NewcoAge is how long before the lookup the sandbox company
// SandboxNewcoUIC was incorporated.
const NewcoAge = 30 * 24 * time.Hour

// sandboxCompanies is the sandbox register. IncorporatedOn of the "newco"
// entry is filled in at lookup time.
var sandboxCompanies = []emi.RegistryRecord{
	{
		UIC: SandboxTradingUIC, LegalName: "Sandbox Trading Ltd", Country: "GB",
		Status: "active", IncorporatedOn: day(2015, time.March, 12),
		Address: "1 Sandbox Street, London, EC1A 1BB, United Kingdom",
	},
	{
		UIC: SandboxBulgariaUIC, LegalName: "Sandbox Bulgaria EOOD", Country: "BG",
		Status: "active", IncorporatedOn: day(2018, time.June, 1),
		Address: "1 Vitosha Blvd, 1000 Sofia, Bulgaria",
	},
	{
		UIC: SandboxDissolvedUIC, LegalName: "Sandbox Dissolved Ltd", Country: "GB",
		Status: "dissolved", IncorporatedOn: day(2009, time.January, 20),
		Address: "2 Sandbox Street, Manchester, M1 1AE, United Kingdom",
	},
	{
		UIC: SandboxNewcoUIC, LegalName: "Sandbox Newco Ltd", Country: "GB",
		Status:  "active",
		Address: "3 Sandbox Street, Leeds, LS1 4AP, United Kingdom",
	},
	{
		UIC: SandboxHoldingsUIC, LegalName: "Sandbox Holdings AD", Country: "BG",
		Status: "active", IncorporatedOn: day(2004, time.September, 15),
		Address: "10 Tsar Osvoboditel Blvd, 1000 Sofia, Bulgaria",
	},
	{
		UIC: SandboxSocieteUIC, LegalName: "Société Sandbox SARL", Country: "FR",
		Status: "active", IncorporatedOn: day(2020, time.February, 3),
		Address: "5 rue du Bac à Sable, 75007 Paris, France",
	},
	{
		UIC: SandboxLiquidationUIC, LegalName: "Sandbox Insolvent Ltd", Country: "GB",
		Status: "liquidation", IncorporatedOn: day(2012, time.November, 5),
		Address: "4 Sandbox Street, Bristol, BS1 4DJ, United Kingdom",
	},
	{
		UIC: SandboxOutageUIC, LegalName: "Sandbox Outage Ltd", Country: "GB",
		Status: "active", IncorporatedOn: day(2016, time.July, 1),
		Address: "99 Sandbox Street, London, EC1A 1BB, United Kingdom",
	},
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// Sandbox is the embedded sandbox register. The zero value is ready to use.
//
// Lookup matches the company number exactly, after trimming spaces, and the
// country (trimmed, case-insensitive): a known number asked for in another
// country is not found. See the Sandbox...UIC constants for the companies.
type Sandbox struct {
	// Now returns the current time; nil means time.Now. It dates the
	// recently incorporated company.
	Now func() time.Time
}

var _ Provider = (*Sandbox)(nil)

// NewSandbox returns the sandbox register on the wall clock.
func NewSandbox() *Sandbox { return &Sandbox{} }

// Lookup returns the sandbox company registered under uic in country. The
// number SandboxOutageUIC in GB fails with emi.ErrProviderUnavailable, as
// does a lookup whose context is already done.
func (s *Sandbox) Lookup(ctx context.Context, country, uic string) (emi.RegistryRecord, error) {
	if err := ctx.Err(); err != nil {
		return emi.RegistryRecord{}, fmt.Errorf("%w: sandbox register: %w", emi.ErrProviderUnavailable, err)
	}
	country, uic = normCountry(country), strings.TrimSpace(uic)
	for _, c := range sandboxCompanies {
		if c.UIC != uic || c.Country != country {
			continue
		}
		if c.UIC == SandboxOutageUIC {
			return emi.RegistryRecord{}, fmt.Errorf("%w: sandbox register: company %s simulates a register outage",
				emi.ErrProviderUnavailable, uic)
		}
		c.Register = SandboxRegister
		if c.UIC == SandboxNewcoUIC {
			now := time.Now
			if s != nil && s.Now != nil {
				now = s.Now
			}
			t := now().UTC().Add(-NewcoAge)
			c.IncorporatedOn = day(t.Year(), t.Month(), t.Day())
		}
		return c, nil
	}
	return emi.RegistryRecord{}, fmt.Errorf("%w: sandbox register has no company %q in %q",
		emi.ErrRegistryNotFound, uic, country)
}
