package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/emi"
)

const testKey = "ch-secret-key-3f9a1c"

// profileJSON is a company profile as Companies House returns it (abridged:
// the real resource has more fields, which the provider ignores).
const profileJSON = `{
  "company_name": "SANDBOX TRADING LIMITED",
  "company_number": "01234567",
  "company_status": "active",
  "date_of_creation": "2015-03-12",
  "jurisdiction": "england-wales",
  "type": "ltd",
  "has_charges": false,
  "registered_office_address": {
    "address_line_1": "1 Sandbox Street",
    "address_line_2": "Clerkenwell",
    "locality": "London",
    "postal_code": "EC1A 1BB",
    "country": "United Kingdom"
  },
  "sic_codes": ["64999"],
  "links": {"self": "/company/01234567"}
}`

// fakeCH is a fake Companies House API. It records the requests it gets.
type fakeCH struct {
	calls    atomic.Int32
	lastPath atomic.Value // string
	lastUser atomic.Value // string
	lastPass atomic.Value // string
	authOK   atomic.Bool
	handle   func(w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) (*fakeCH, *httptest.Server) {
	t.Helper()
	f := &fakeCH{handle: handle}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		f.lastPath.Store(r.URL.EscapedPath())
		u, p, ok := r.BasicAuth()
		f.lastUser.Store(u)
		f.lastPass.Store(p)
		f.authOK.Store(ok)
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		f.handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

func newCH(t *testing.T, srv *httptest.Server, mod func(*CompaniesHouseConfig)) *CompaniesHouse {
	t.Helper()
	cfg := CompaniesHouseConfig{BaseURL: srv.URL + "/", APIKey: testKey, Client: srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	ch, err := NewCompaniesHouse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func status(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "300")
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

func TestCompaniesHouseSuccess(t *testing.T) {
	f, srv := newFake(t, status(http.StatusOK, profileJSON))
	ch := newCH(t, srv, nil)
	rec, err := ch.Lookup(context.Background(), "gb", " 1234567 ")
	if err != nil {
		t.Fatal(err)
	}
	want := emi.RegistryRecord{
		Register:       "companies_house",
		UIC:            "01234567",
		LegalName:      "SANDBOX TRADING LIMITED",
		Country:        "GB",
		Status:         "active",
		IncorporatedOn: time.Date(2015, time.March, 12, 0, 0, 0, 0, time.UTC),
		Address:        "1 Sandbox Street, Clerkenwell, London, EC1A 1BB, United Kingdom",
	}
	if rec != want {
		t.Errorf("got  %+v\nwant %+v", rec, want)
	}
	if p := f.lastPath.Load(); p != "/company/01234567" {
		t.Errorf("path %v, want /company/01234567 (number padded to 8 digits)", p)
	}
	if !f.authOK.Load() || f.lastUser.Load() != testKey || f.lastPass.Load() != "" {
		t.Errorf("basic auth: ok=%v user=%q password=%q; want the key as user, empty password",
			f.authOK.Load(), f.lastUser.Load(), f.lastPass.Load())
	}
	if !NamesMatch("Sandbox Trading Ltd", rec.LegalName) {
		t.Error("the submitted name does not match the register's")
	}
}

func TestCompaniesHouseNumbers(t *testing.T) {
	f, srv := newFake(t, status(http.StatusOK, profileJSON))
	ch := newCH(t, srv, nil)
	for in, path := range map[string]string{
		"1":         "/company/00000001",
		"01234567":  "/company/01234567",
		"12345678":  "/company/12345678",
		"SC123456":  "/company/SC123456",
		"sc123456":  "/company/SC123456",
		" NI01234 ": "/company/NI01234",
	} {
		if _, err := ch.Lookup(context.Background(), "GB", in); err != nil {
			t.Errorf("Lookup(%q) = %v", in, err)
		}
		if got := f.lastPath.Load(); got != path {
			t.Errorf("Lookup(%q) asked %v, want %s", in, got, path)
		}
	}

	before := f.calls.Load()
	for _, in := range []string{
		"", "   ", "123456789", "100000001", "SC-12345", "SC 12345", "../admin", "0123%2F4",
		"12345678?x=1", "ÄB123456", "0123\n4567",
	} {
		_, err := ch.Lookup(context.Background(), "GB", in)
		if !errors.Is(err, emi.ErrRegistryNotFound) {
			t.Errorf("Lookup(%q) = %v, want not found", in, err)
		}
	}
	if n := f.calls.Load() - before; n != 0 {
		t.Errorf("%d calls for invalid numbers, want none", n)
	}
}

func TestCompaniesHouseOtherCountries(t *testing.T) {
	f, srv := newFake(t, status(http.StatusOK, profileJSON))
	ch := newCH(t, srv, nil)
	for _, country := range []string{"BG", "IE", "", "GBR", "UK"} {
		if _, err := ch.Lookup(context.Background(), country, "01234567"); !errors.Is(err, emi.ErrRegistryNotFound) {
			t.Errorf("Lookup(%q) = %v, want not found", country, err)
		}
	}
	if f.calls.Load() != 0 {
		t.Error("Companies House was asked about a non-GB company")
	}
}

func TestCompaniesHouseErrors(t *testing.T) {
	big := `{"company_name": "X", "padding": "` + strings.Repeat("a", MaxCompaniesHouseBody) + `"}`
	for _, c := range []struct {
		name  string
		h     func(http.ResponseWriter, *http.Request)
		want  error
		cause string
	}{
		{"404", status(http.StatusNotFound, `{"errors":[{"error":"company-profile-not-found","type":"ch:service"}]}`),
			emi.ErrRegistryNotFound, "no company 01234567"},
		{"401", status(http.StatusUnauthorized, `{"error":"Invalid Authorization","type":"ch:service"}`),
			emi.ErrProviderUnavailable, "401"},
		{"403", status(http.StatusForbidden, ``), emi.ErrProviderUnavailable, "403"},
		{"429", status(http.StatusTooManyRequests, `{"error":"rate limit"}`), emi.ErrProviderUnavailable, "rate limited"},
		{"500", status(http.StatusInternalServerError, `oops`), emi.ErrProviderUnavailable, "500"},
		{"502", status(http.StatusBadGateway, `<html>bad gateway</html>`), emi.ErrProviderUnavailable, "502"},
		{"503", status(http.StatusServiceUnavailable, ``), emi.ErrProviderUnavailable, "503"},
		{"400", status(http.StatusBadRequest, `{}`), emi.ErrProviderUnavailable, "400"},
		{"malformed JSON", status(http.StatusOK, `{"company_name": "SANDBOX`), emi.ErrProviderUnavailable, "malformed"},
		{"not JSON", status(http.StatusOK, `<html>maintenance</html>`), emi.ErrProviderUnavailable, "malformed"},
		{"wrong JSON type", status(http.StatusOK, `{"company_name": 42}`), emi.ErrProviderUnavailable, "malformed"},
		{"no company name", status(http.StatusOK, `{"company_number": "01234567"}`), emi.ErrProviderUnavailable, "company_name"},
		{"body too large", status(http.StatusOK, big), emi.ErrProviderUnavailable, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, srv := newFake(t, c.h)
			ch := newCH(t, srv, nil)
			_, err := ch.Lookup(context.Background(), "GB", "1234567")
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if c.want == emi.ErrProviderUnavailable && errors.Is(err, emi.ErrRegistryNotFound) {
				t.Errorf("an outage reported as not found: %v", err)
			}
			if !strings.Contains(err.Error(), c.cause) {
				t.Errorf("error %q does not mention %q", err, c.cause)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the API key leaked into %q", err)
			}
		})
	}
}

func TestCompaniesHouseTimeout(t *testing.T) {
	release := make(chan struct{})
	_, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)

	t.Run("client timeout", func(t *testing.T) {
		client := *srv.Client() // a copy: the server's client is shared
		client.Timeout = 50 * time.Millisecond
		ch := newCH(t, srv, func(c *CompaniesHouseConfig) { c.Client = &client })
		start := time.Now()
		_, err := ch.Lookup(context.Background(), "GB", "01234567")
		if !errors.Is(err, emi.ErrProviderUnavailable) {
			t.Fatalf("error %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %v", d)
		}
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("the API key leaked into %q", err)
		}
	})
	t.Run("configured timeout", func(t *testing.T) {
		ch := newCH(t, srv, func(c *CompaniesHouseConfig) { c.Timeout = 50 * time.Millisecond })
		_, err := ch.Lookup(context.Background(), "GB", "01234567")
		if !errors.Is(err, emi.ErrProviderUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want unavailable wrapping the deadline", err)
		}
	})
	t.Run("caller's context", func(t *testing.T) {
		ch := newCH(t, srv, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := ch.Lookup(ctx, "GB", "01234567")
		if !errors.Is(err, emi.ErrProviderUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want unavailable wrapping the deadline", err)
		}
	})
}

func TestCompaniesHouseUnreachable(t *testing.T) {
	_, srv := newFake(t, status(http.StatusOK, profileJSON))
	ch := newCH(t, srv, nil)
	srv.Close()
	_, err := ch.Lookup(context.Background(), "GB", "01234567")
	if !errors.Is(err, emi.ErrProviderUnavailable) {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the API key leaked into %q", err)
	}
}

func TestCompaniesHouseRedactsKey(t *testing.T) {
	ch := &CompaniesHouse{apiKey: testKey}
	err := ch.unavailable("request failed", errors.New("proxy said: bad credentials "+testKey))
	if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("not redacted: %v", err)
	}
	if !errors.Is(err, emi.ErrProviderUnavailable) {
		t.Errorf("not unavailable: %v", err)
	}
}

func TestCompaniesHouseDateAndAddress(t *testing.T) {
	_, srv := newFake(t, status(http.StatusOK, `{
		"company_name": " Sandbox Newco Ltd ",
		"company_number": "SC000001",
		"company_status": "active",
		"date_of_creation": "not a date",
		"registered_office_address": {"premises": "Unit 4", "address_line_1": " ", "locality": "Edinburgh", "postal_code": "EH1 1AA"}
	}`))
	ch := newCH(t, srv, nil)
	rec, err := ch.Lookup(context.Background(), "GB", "SC000001")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.IncorporatedOn.IsZero() || rec.Address != "Unit 4, Edinburgh, EH1 1AA" ||
		rec.LegalName != "Sandbox Newco Ltd" || rec.UIC != "SC000001" {
		t.Errorf("%+v", rec)
	}
}

func TestNewCompaniesHouse(t *testing.T) {
	ch, err := NewCompaniesHouse(CompaniesHouseConfig{APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if ch.base != DefaultCompaniesHouseURL || ch.timeout != DefaultCompaniesHouseTimeout || ch.client == nil {
		t.Errorf("defaults: %+v", ch)
	}
	for _, cfg := range []CompaniesHouseConfig{
		{},
		{APIKey: "  "},
		{APIKey: testKey, BaseURL: "api.company-information.service.gov.uk"},
		{APIKey: testKey, BaseURL: "ftp://example.com"},
		{APIKey: testKey, BaseURL: "https://user:pw@example.com"},
		{APIKey: testKey, BaseURL: "://"},
	} {
		if _, err := NewCompaniesHouse(cfg); err == nil {
			t.Errorf("NewCompaniesHouse(%+v) accepted", cfg)
		} else if strings.Contains(err.Error(), testKey) {
			t.Errorf("the API key leaked into %q", err)
		}
	}
}

func TestCompanyNumber(t *testing.T) {
	for in, want := range map[string]string{
		"1": "00000001", "1234567": "01234567", "12345678": "12345678",
		"SC123456": "SC123456", "oc301234": "OC301234", "R1234": "R1234",
		"123456789": "", "": "", "SC12 3456": "", "12-345": "",
	} {
		got, ok := CompanyNumber(in)
		if got != want || ok != (want != "") {
			t.Errorf("CompanyNumber(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
