package registry

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"emi/internal/emi"
)

// stub is a provider that records the lookups it answers.
type stub struct {
	name  string
	calls []string
}

func (s *stub) Lookup(_ context.Context, country, uic string) (emi.RegistryRecord, error) {
	s.calls = append(s.calls, country+"/"+uic)
	return emi.RegistryRecord{Register: s.name, UIC: uic, Country: country}, nil
}

func TestRouterDispatch(t *testing.T) {
	gb, ie, fallback := &stub{name: "gb"}, &stub{name: "ie"}, &stub{name: "fallback"}
	r := NewRouter(fallback, map[string]Provider{"gb": gb, " IE ": ie, "FR": nil})
	for _, c := range []struct{ country, want string }{
		{"GB", "gb"}, {"gb", "gb"}, {" GB", "gb"}, {"IE", "ie"},
		{"BG", "fallback"}, {"FR", "fallback"}, {"", "fallback"},
	} {
		rec, err := r.Lookup(context.Background(), c.country, "1")
		if err != nil || rec.Register != c.want {
			t.Errorf("Lookup(%q) answered by %q, %v; want %q", c.country, rec.Register, err, c.want)
		}
	}
	if len(gb.calls) != 3 || len(ie.calls) != 1 || len(fallback.calls) != 3 {
		t.Errorf("calls: gb %v, ie %v, fallback %v", gb.calls, ie.calls, fallback.calls)
	}
	// The provider gets the country as the caller wrote it.
	if gb.calls[1] != "gb/1" {
		t.Errorf("gb got %v", gb.calls)
	}
}

func TestRouterWithoutFallback(t *testing.T) {
	r := NewRouter(nil, map[string]Provider{"GB": &stub{name: "gb"}})
	if _, err := r.Lookup(context.Background(), "GB", "1"); err != nil {
		t.Fatal(err)
	}
	_, err := r.Lookup(context.Background(), "BG", "1")
	if !errors.Is(err, emi.ErrProviderUnavailable) || errors.Is(err, emi.ErrRegistryNotFound) {
		t.Errorf("unrouted country: %v", err)
	}
}

// TestRouterSandboxAndCompaniesHouse wires the real providers: GB goes to
// Companies House (so the sandbox's nine-digit GB numbers are not found
// there), BG to the sandbox.
func TestRouterSandboxAndCompaniesHouse(t *testing.T) {
	f, srv := newFake(t, status(http.StatusOK, profileJSON))
	ch := newCH(t, srv, nil)
	r := NewRouter(NewSandbox(), map[string]Provider{"GB": ch})

	rec, err := r.Lookup(context.Background(), "GB", "01234567")
	if err != nil || rec.Register != CompaniesHouseRegister {
		t.Fatalf("GB: %+v, %v", rec, err)
	}
	rec, err = r.Lookup(context.Background(), "BG", SandboxBulgariaUIC)
	if err != nil || rec.Register != SandboxRegister || rec.LegalName != "Sandbox Bulgaria EOOD" {
		t.Fatalf("BG: %+v, %v", rec, err)
	}
	if _, err := r.Lookup(context.Background(), "GB", SandboxTradingUIC); !errors.Is(err, emi.ErrRegistryNotFound) {
		t.Fatalf("sandbox GB number at Companies House: %v", err)
	}
	if f.calls.Load() != 1 {
		t.Errorf("Companies House called %d times, want 1", f.calls.Load())
	}

	// Without Companies House, the sandbox answers for GB too.
	r = NewRouter(NewSandbox(), nil)
	if rec, err := r.Lookup(context.Background(), "GB", SandboxTradingUIC); err != nil || rec.LegalName != "Sandbox Trading Ltd" {
		t.Fatalf("GB from the sandbox: %+v, %v", rec, err)
	}
	if _, err := r.Lookup(context.Background(), "GB", SandboxOutageUIC); !errors.Is(err, emi.ErrProviderUnavailable) {
		t.Fatalf("outage through the router: %v", err)
	}
}
