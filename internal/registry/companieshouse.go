package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"emi/internal/emi"
)

// CompaniesHouseRegister is the Register name of records from the
// CompaniesHouse provider.
const CompaniesHouseRegister = "companies_house"

// Defaults of CompaniesHouseConfig.
const (
	// DefaultCompaniesHouseURL is the Companies House public data API.
	DefaultCompaniesHouseURL = "https://api.company-information.service.gov.uk"
	// DefaultCompaniesHouseTimeout bounds one lookup, response included.
	DefaultCompaniesHouseTimeout = 10 * time.Second
	// MaxCompaniesHouseBody is the largest response body read; a company
	// profile is a few kilobytes.
	MaxCompaniesHouseBody = 1 << 20
)

// CompaniesHouseConfig configures the CompaniesHouse provider.
type CompaniesHouseConfig struct {
	// BaseURL of the API, without the /company path; empty means
	// DefaultCompaniesHouseURL.
	BaseURL string
	// APIKey is the Companies House REST API key, sent as the user name of
	// HTTP basic authentication with an empty password. Required.
	APIKey string
	// Client sends the requests; nil means a new http.Client.
	Client *http.Client
	// Timeout bounds each lookup (on top of the client's own timeout and
	// the caller's context); zero means DefaultCompaniesHouseTimeout.
	Timeout time.Duration
}

// CompaniesHouse looks companies up in the UK Companies House register
// through its public data REST API (GET /company/{company_number}). It only
// answers for country GB; other countries are not found.
//
// Company numbers are trimmed and upper-cased; all-digit numbers shorter than
// eight characters are padded with leading zeros, as Companies House writes
// them (1234 is 00001234). A number that does not match ^[A-Z0-9]{1,8}$ is
// not found, without a request.
//
// A 404 answer is emi.ErrRegistryNotFound. Authentication failures (401,
// 403), throttling (429), server errors, other unexpected statuses, network
// errors, timeouts, oversized or malformed responses are
// emi.ErrProviderUnavailable, wrapping the cause. The API key never appears
// in an error.
type CompaniesHouse struct {
	base    string
	apiKey  string
	client  *http.Client
	timeout time.Duration
}

var _ Provider = (*CompaniesHouse)(nil)

// NewCompaniesHouse returns a Companies House provider. It fails when the API
// key is missing or the base URL is not an absolute http(s) URL.
func NewCompaniesHouse(cfg CompaniesHouseConfig) (*CompaniesHouse, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("registry: Companies House API key is required")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultCompaniesHouseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("registry: Companies House base URL %q must be an absolute http(s) URL without credentials", base)
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultCompaniesHouseTimeout
	}
	return &CompaniesHouse{
		base:    strings.TrimRight(base, "/"),
		apiKey:  cfg.APIKey,
		client:  client,
		timeout: timeout,
	}, nil
}

// CompanyNumber returns the Companies House form of a company number
// (trimmed, upper-cased, all-digit numbers padded to eight digits) and
// whether it is a well-formed number.
func CompanyNumber(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) < 1 || len(s) > 8 {
		return "", false
	}
	digits := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
		case 'A' <= c && c <= 'Z':
			digits = false
		default:
			return "", false
		}
	}
	if digits {
		s = strings.Repeat("0", 8-len(s)) + s
	}
	return s, true
}

// chProfile is the part of the Companies House company profile resource the
// provider reads.
type chProfile struct {
	CompanyName    string `json:"company_name"`
	CompanyNumber  string `json:"company_number"`
	CompanyStatus  string `json:"company_status"`
	DateOfCreation string `json:"date_of_creation"`
	Office         struct {
		CareOf       string `json:"care_of"`
		POBox        string `json:"po_box"`
		Premises     string `json:"premises"`
		AddressLine1 string `json:"address_line_1"`
		AddressLine2 string `json:"address_line_2"`
		Locality     string `json:"locality"`
		Region       string `json:"region"`
		PostalCode   string `json:"postal_code"`
		Country      string `json:"country"`
	} `json:"registered_office_address"`
}

// Lookup returns the company registered under uic at Companies House. The
// record's Country is GB; IncorporatedOn is date_of_creation (zero when it is
// missing or not a YYYY-MM-DD date); Address joins the non-empty parts of the
// registered office address with ", ".
func (c *CompaniesHouse) Lookup(ctx context.Context, country, uic string) (emi.RegistryRecord, error) {
	if cc := normCountry(country); cc != "GB" {
		return emi.RegistryRecord{}, fmt.Errorf("%w: Companies House registers GB companies only, not %q",
			emi.ErrRegistryNotFound, cc)
	}
	number, ok := CompanyNumber(uic)
	if !ok {
		return emi.RegistryRecord{}, fmt.Errorf("%w: %q is not a Companies House company number",
			emi.ErrRegistryNotFound, strings.TrimSpace(uic))
	}

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/company/"+url.PathEscape(number), nil)
	if err != nil {
		return emi.RegistryRecord{}, c.unavailable("building the request", err)
	}
	req.SetBasicAuth(c.apiKey, "")
	req.Header.Set("Accept", "application/json")

	resp, err := c.client.Do(req)
	if err != nil {
		return emi.RegistryRecord{}, c.unavailable("request failed", err)
	}
	defer resp.Body.Close()

	switch code := resp.StatusCode; {
	case code == http.StatusOK:
	case code == http.StatusNotFound:
		drain(resp.Body)
		return emi.RegistryRecord{}, fmt.Errorf("%w: Companies House has no company %s", emi.ErrRegistryNotFound, number)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		drain(resp.Body)
		return emi.RegistryRecord{}, c.unavailable("", fmt.Errorf("the API key was refused (HTTP %d)", code))
	case code == http.StatusTooManyRequests:
		drain(resp.Body)
		return emi.RegistryRecord{}, c.unavailable("", fmt.Errorf("rate limited (HTTP %d, Retry-After %q)", code, resp.Header.Get("Retry-After")))
	default:
		drain(resp.Body)
		return emi.RegistryRecord{}, c.unavailable("", fmt.Errorf("unexpected HTTP status %d", code))
	}

	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCompaniesHouseBody+1))
	if err != nil {
		return emi.RegistryRecord{}, c.unavailable("reading the response", err)
	}
	if len(body) > MaxCompaniesHouseBody {
		return emi.RegistryRecord{}, c.unavailable("", fmt.Errorf("response larger than %d bytes", MaxCompaniesHouseBody))
	}

	var p chProfile
	if err := json.Unmarshal(body, &p); err != nil {
		return emi.RegistryRecord{}, c.unavailable("malformed response", err)
	}
	if strings.TrimSpace(p.CompanyName) == "" {
		return emi.RegistryRecord{}, c.unavailable("", errors.New("response without company_name"))
	}
	rec := emi.RegistryRecord{
		Register:  CompaniesHouseRegister,
		UIC:       strings.TrimSpace(p.CompanyNumber),
		LegalName: strings.TrimSpace(p.CompanyName),
		Country:   "GB",
		Status:    strings.TrimSpace(p.CompanyStatus),
		Address: joinNonEmpty(p.Office.CareOf, p.Office.POBox, p.Office.Premises,
			p.Office.AddressLine1, p.Office.AddressLine2, p.Office.Locality,
			p.Office.Region, p.Office.PostalCode, p.Office.Country),
	}
	if rec.UIC == "" {
		rec.UIC = number
	}
	if t, err := time.Parse(time.DateOnly, strings.TrimSpace(p.DateOfCreation)); err == nil {
		rec.IncorporatedOn = t
	}
	return rec, nil
}

// unavailable wraps cause in emi.ErrProviderUnavailable. Should the cause's
// text contain the API key, the cause is replaced by its text with the key
// redacted.
func (c *CompaniesHouse) unavailable(what string, cause error) error {
	if msg := cause.Error(); c.apiKey != "" && strings.Contains(msg, c.apiKey) {
		cause = errors.New(strings.ReplaceAll(msg, c.apiKey, "[redacted]"))
	}
	if what == "" {
		return fmt.Errorf("%w: Companies House: %w", emi.ErrProviderUnavailable, cause)
	}
	return fmt.Errorf("%w: Companies House: %s: %w", emi.ErrProviderUnavailable, what, cause)
}

// drain reads a little of an unwanted body so that the connection can be
// reused.
func drain(r io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(r, 64<<10)) }

// joinNonEmpty joins the trimmed non-empty parts with ", ".
func joinNonEmpty(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}
