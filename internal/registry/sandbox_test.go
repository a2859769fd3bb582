package registry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"emi/internal/emi"
)

func TestSandboxContract(t *testing.T) {
	ctx := context.Background()
	s := NewSandbox()
	for _, c := range []struct {
		country, uic, name string
	}{
		{"GB", "100000001", "Sandbox Trading Ltd"},
		{"BG", "100000002", "Sandbox Bulgaria EOOD"},
	} {
		rec, err := s.Lookup(ctx, c.country, c.uic)
		if err != nil {
			t.Fatalf("Lookup(%s, %s) = %v", c.country, c.uic, err)
		}
		if rec.LegalName != c.name || rec.Country != c.country || rec.UIC != c.uic ||
			rec.Register != "sandbox" || rec.Status != "active" || rec.IncorporatedOn.IsZero() || rec.Address == "" {
			t.Errorf("Lookup(%s, %s) = %+v", c.country, c.uic, rec)
		}
	}
}

func TestSandboxLookup(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, time.March, 10, 23, 30, 0, 0, time.FixedZone("X", -2*3600))
	s := &Sandbox{Now: func() time.Time { return now }}
	for _, c := range []struct {
		name, country, uic string
		want               error
		legalName, status  string
		inc                time.Time
	}{
		{"GB company", "GB", "100000001", nil, "Sandbox Trading Ltd", "active", day(2015, 3, 12)},
		{"spaces trimmed", " gb ", " 100000001\t", nil, "Sandbox Trading Ltd", "active", day(2015, 3, 12)},
		{"BG company", "BG", "100000002", nil, "Sandbox Bulgaria EOOD", "active", day(2018, 6, 1)},
		{"dissolved", "GB", "100000003", nil, "Sandbox Dissolved Ltd", "dissolved", day(2009, 1, 20)},
		// now is 2026-03-11 01:30 UTC: 30 days before is 2026-02-09.
		{"recently incorporated", "GB", "100000004", nil, "Sandbox Newco Ltd", "active", day(2026, 2, 9)},
		{"Bulgarian AD", "BG", "100000005", nil, "Sandbox Holdings AD", "active", day(2004, 9, 15)},
		{"French SARL", "FR", "100000006", nil, "Société Sandbox SARL", "active", day(2020, 2, 3)},
		{"in liquidation", "GB", "100000007", nil, "Sandbox Insolvent Ltd", "liquidation", day(2012, 11, 5)},
		{"known number, other country", "BG", "100000001", emi.ErrRegistryNotFound, "", "", time.Time{}},
		{"known number, no country", "", "100000001", emi.ErrRegistryNotFound, "", "", time.Time{}},
		{"unknown number", "GB", "100000042", emi.ErrRegistryNotFound, "", "", time.Time{}},
		{"not exact", "GB", "1000000011", emi.ErrRegistryNotFound, "", "", time.Time{}},
		{"leading zeros are not ignored", "GB", "0100000001", emi.ErrRegistryNotFound, "", "", time.Time{}},
		{"empty", "GB", "", emi.ErrRegistryNotFound, "", "", time.Time{}},
		{"outage", "GB", "100000099", emi.ErrProviderUnavailable, "", "", time.Time{}},
		{"outage number in another country", "BG", "100000099", emi.ErrRegistryNotFound, "", "", time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := s.Lookup(ctx, c.country, c.uic)
			if !errors.Is(err, c.want) {
				t.Fatalf("Lookup(%q, %q) error = %v, want %v", c.country, c.uic, err, c.want)
			}
			if err != nil {
				if rec != (emi.RegistryRecord{}) {
					t.Errorf("record with an error: %+v", rec)
				}
				return
			}
			if rec.LegalName != c.legalName || rec.Status != c.status || !rec.IncorporatedOn.Equal(c.inc) ||
				rec.UIC != strings.TrimSpace(c.uic) || rec.Register != SandboxRegister {
				t.Errorf("Lookup(%q, %q) = %+v", c.country, c.uic, rec)
			}
		})
	}
}

func TestSandboxOutageIsNotNotFound(t *testing.T) {
	_, err := NewSandbox().Lookup(context.Background(), "GB", SandboxOutageUIC)
	if !errors.Is(err, emi.ErrProviderUnavailable) || errors.Is(err, emi.ErrRegistryNotFound) {
		t.Fatalf("outage: %v", err)
	}
	if !strings.Contains(err.Error(), "outage") {
		t.Errorf("the error does not say it is a simulated outage: %v", err)
	}
}

func TestSandboxNewcoOnWallClock(t *testing.T) {
	var s Sandbox // zero value
	rec, err := s.Lookup(context.Background(), "GB", SandboxNewcoUIC)
	if err != nil {
		t.Fatal(err)
	}
	age := time.Since(rec.IncorporatedOn)
	if age < NewcoAge || age > NewcoAge+48*time.Hour {
		t.Errorf("newco incorporated %v ago", age)
	}
}

func TestSandboxCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewSandbox().Lookup(ctx, "GB", SandboxTradingUIC)
	if !errors.Is(err, emi.ErrProviderUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled lookup: %v", err)
	}
}

func TestSandboxNamesMatchThemselves(t *testing.T) {
	for _, c := range sandboxCompanies {
		if !NamesMatch(c.LegalName, strings.ToUpper(c.LegalName)) {
			t.Errorf("%s does not match its upper-case form", c.LegalName)
		}
	}
}
