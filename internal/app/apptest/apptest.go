// Package apptest runs the whole emi application for a test: a fresh
// database, the real wiring of internal/app, the real router behind an
// httptest server, a settable clock, captured logs, and a partner client that
// signs requests as contract §2 says and checks every response against
// openapi.yaml.
package apptest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/screening"
	"emi/internal/service/partners"
	"emi/web/api"
)

// Clock is a settable clock, safe for concurrent use. Its zero value
// follows the real time; Set and Advance move it.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.offset += d; c.mu.Unlock() }

// LogBuffer collects log output, safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *LogBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// Env is one running application.
type Env struct {
	App     *app.App
	Server  *httptest.Server
	Handler http.Handler
	Clock   *Clock
	Logs    *LogBuffer
	DBURL   string
	Config  config.Config

	validator *sharedValidator
}

// Options change the environment.
type Options struct {
	// Configure edits the configuration before the app is built.
	Configure func(*config.Config)
	// Routes mounts test-only operations behind the real middleware.
	Routes func(r chi.Router, a *api.API)
	// NoSanctions starts without sanctions lists (aml_check answers
	// 18000); otherwise the shared lists are loaded once per test binary.
	NoSanctions bool
	// DatabaseURL is a database the test made itself (on a private
	// cluster with a standby, say); "" for a fresh one of the shared
	// cluster. New migrates it.
	DatabaseURL string
	// MonitoringOff runs the app with transaction monitoring switched off
	// (config.Config.BenchMonitoringOff), for the benchmarks that compare
	// with it.
	MonitoringOff bool
}

var (
	sanctionsOnce  sync.Once
	sanctionsIndex *screening.Index
	sanctionsErr   error
)

// SanctionsDir is the directory of the shared sanctions lists:
// EMI_SANCTIONS_DIR, or ../shared/data/sanctions beside the module root.
func SanctionsDir() string {
	if d := os.Getenv("EMI_SANCTIONS_DIR"); d != "" {
		return d
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "..", "shared", "data", "sanctions")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "..", "shared", "data", "sanctions")
		}
	}
}

// Sanctions returns the lists index shared by every test of the binary.
func Sanctions(t testing.TB) *screening.Index {
	t.Helper()
	sanctionsOnce.Do(func() { sanctionsIndex, sanctionsErr = screening.LoadDir(SanctionsDir()) })
	if sanctionsErr != nil {
		t.Fatalf("apptest: sanctions lists: %v", sanctionsErr)
	}
	return sanctionsIndex
}

// New starts an application on a fresh database. Everything is stopped and
// dropped when the test ends.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	url := opts.DatabaseURL
	if url == "" {
		url = pgtest.URL(t)
	} else {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("apptest: open %s: %v", url, err)
		}
		_, err = db.Migrate(context.Background())
		_ = db.Close()
		if err != nil {
			t.Fatalf("apptest: migrate: %v", err)
		}
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	getenv := func(k string) string {
		switch k {
		case "DATABASE_URL":
			return url
		case "EMI_MASTER_KEY":
			return base64.StdEncoding.EncodeToString(key)
		case "EMI_MODE":
			return "sandbox"
		case "EMI_RATE_LIMIT":
			return "0"
		case "EMI_DECISION_SETTLE":
			// Decide at once, without the settle period, so tests that wait
			// for an automatic decision stay fast; the settle period's own
			// tests set it through Options.Configure.
			return "0s"
		case "EMI_LOG_LEVEL":
			return "debug"
		case "EMI_SANDBOX_WEBHOOK_PORTS":
			// The tests' receivers listen on ports the system picks, so
			// every loopback port is allowed here, explicitly (the
			// sandbox's default is a few fixed ports). The reserved ones
			// stay refused whatever this says: this app's own listener
			// (EMI_PUBLIC_URL below) and the database's port, which
			// TestSandboxWebhooksNeverReachEmiOrTheDatabase checks.
			return "1-65535"
		}
		return ""
	}
	cfg, err := config.Load(getenv, "db", "key")
	if err != nil {
		t.Fatalf("apptest: config: %v", err)
	}
	// The server's address is known before the app is built, so links the
	// app makes (KYC pages) point at it.
	srv := httptest.NewUnstartedServer(nil)
	cfg.PublicURL = "http://" + srv.Listener.Addr().String()
	cfg.SanctionsDir = SanctionsDir()
	// Cheap staff password hashes: these tests create and sign in
	// thousands of staff users (a third of web/portal's CPU at the
	// standard cost). servicetest checks the standard cost itself.
	cfg.TestFixturePasswords = true
	cfg.BenchMonitoringOff = opts.MonitoringOff
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	logs := &LogBuffer{}
	clock := &Clock{}
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, logs), clock.Now)
	if err != nil {
		t.Fatalf("apptest: open: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	// The test server is this app's own listener, as emi serve's is.
	a.ReserveWebhookPort(srv.Listener.Addr(), "emi's own port (the address emi serve listens on)")
	runKeyCache(t, a)
	if !opts.NoSanctions {
		a.UseSanctions(Sanctions(t))
	}
	// The sandbox programs of contract §11, as emi seed creates them.
	if _, err := a.Accounts.SeedSandbox(emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))); err != nil {
		t.Fatalf("apptest: programs: %v", err)
	}
	var extra []func(chi.Router, *api.API)
	if opts.Routes != nil {
		extra = append(extra, opts.Routes)
	}
	h := a.Handler(extra...)
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (warnings, errors and the failed requests' lines):\n%s", LogExcerpt(logs.String(), 200))
		}
	})
	return &Env{App: a, Server: srv, Handler: h, Clock: clock, Logs: logs, DBURL: url, Config: cfg,
		validator: openAPIValidator(t)}
}

// Attach starts a second, independent application (its own pool, services
// and server) on the database of env, as a second `emi serve` process would
// be. It shares env's clock and configuration.
func Attach(t testing.TB, env *Env, routes ...func(r chi.Router, a *api.API)) *Env {
	t.Helper()
	return AttachWith(t, env, nil, routes...)
}

// AttachWith is Attach with env's configuration edited by configure first
// (the second instance without env's read replicas, say).
func AttachWith(t testing.TB, env *Env, configure func(*config.Config), routes ...func(r chi.Router, a *api.API)) *Env {
	t.Helper()
	cfg := env.Config
	cfg.ReadDatabaseURLs = slices.Clone(cfg.ReadDatabaseURLs)
	if configure != nil {
		configure(&cfg)
	}
	logs := &LogBuffer{}
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, logs), env.Clock.Now)
	if err != nil {
		t.Fatalf("apptest: attach: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	runKeyCache(t, a)
	if env.App.Screener.Current() != nil {
		a.UseSanctions(env.App.Screener.Current())
	}
	h := a.Handler(routes...)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	// Both servers are emi: neither is a webhook receiver for the other.
	a.ReserveWebhookPort(srv.Listener.Addr(), "emi's own port (the address emi serve listens on)")
	env.App.ReserveWebhookPort(srv.Listener.Addr(), "emi's own port (another emi serve process)")
	a.ReserveWebhookPort(env.Server.Listener.Addr(), "emi's own port (another emi serve process)")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("attached server's log (warnings, errors and the failed requests' lines):\n%s", LogExcerpt(logs.String(), 200))
		}
	})
	return &Env{App: a, Server: srv, Handler: h, Clock: env.Clock, Logs: logs, DBURL: env.DBURL, Config: cfg,
		validator: env.validator}
}

// As returns p's credentials bound to env's server.
func (e *Env) As(p *Partner) *Partner {
	c := *p
	c.env = e
	return &c
}

// runKeyCache runs the app's API key cache, as emi serve does, until the
// test ends (before the app closes).
func runKeyCache(t testing.TB, a *app.App) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.RunKeyCache(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// openAPIValidator gives an environment a validator of openapi.yaml for
// its own use until its test ends: libopenapi's validators are not safe
// for concurrent use.
//
// Building one compiles every schema of openapi.yaml: a quarter of
// web/api's CPU under -race when each env built its own (294 of 1,121 CPU
// seconds). An env takes a validator built before and no longer used (free
// validators are kept per process; an env uses its own under its mutex) and
// gives it back when its test ends, so a package builds about as many as it
// runs tests at once.
func openAPIValidator(t testing.TB) *sharedValidator {
	t.Helper()
	freeValidators.Lock()
	var v *sharedValidator
	if n := len(freeValidators.v); n > 0 {
		v = freeValidators.v[n-1]
		freeValidators.v = freeValidators.v[:n-1]
	}
	freeValidators.Unlock()
	if v == nil {
		v = &sharedValidator{v: newOpenAPIValidator(t)}
	}
	t.Cleanup(func() {
		freeValidators.Lock()
		defer freeValidators.Unlock()
		freeValidators.v = append(freeValidators.v, v)
	})
	return v
}

// sharedValidator is a validator with the mutex its users hold: libopenapi's
// validator is not safe for concurrent use.
type sharedValidator struct {
	mu sync.Mutex
	v  validator.Validator
}

// freeValidators are the built validators no env is using.
var freeValidators struct {
	sync.Mutex
	v []*sharedValidator
}

func newOpenAPIValidator(t testing.TB) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(api.OpenAPI)
	if err != nil {
		t.Fatalf("apptest: openapi.yaml does not parse: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("apptest: openapi validator: %v", errs)
	}
	return v
}

// Partner is a partner's credentials.
type Partner struct {
	env       *Env
	ID        string
	KeyID     string
	APIKey    string
	APISecret string
	Merchant  string
	Webhook   string
}

// NewPartner creates a partner through the service, as `emi partner create`
// does.
func (e *Env) NewPartner(t testing.TB, in emi.PartnerCreate) *Partner {
	t.Helper()
	if in.Name == "" {
		in.Name = "partner-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	c, err := e.App.Partners.Create(ctx, in)
	if err != nil {
		t.Fatalf("apptest: create partner: %v", err)
	}
	return &Partner{env: e, ID: c.Partner.ID, KeyID: c.KeyID, APIKey: c.APIKey, APISecret: c.APISecret, Merchant: c.Merchant, Webhook: c.WebhookSecret}
}

// Request describes one call. Zero fields take defaults: the timestamp is
// the env clock's now, the hash is computed, the body is signed for POST and
// PUT.
type Request struct {
	Method    string
	Path      string
	Operation string
	Body      []byte
	JSON      any // marshalled into Body when Body is nil
	Timestamp string
	Hash      string
	NoAuth    bool
	// SignatureVersion 2 signs with contract §2's version 2 (method, path
	// with query, Nonce, the body as it is) and sends x-signature-version;
	// 0 or 1 sign with version 1.
	SignatureVersion int
	// Nonce is sent as x-nonce when not empty (signed in version 2 only).
	Nonce  string
	Header map[string]string
	// SkipOpenAPI leaves the response unchecked (test-only operations).
	SkipOpenAPI bool
}

// Response is a decoded answer.
type Response struct {
	Status  int
	Header  http.Header
	Raw     []byte
	Code    int
	Message string
	Data    map[string]any
	Errors  []emi.FieldError
}

// String describes the response for failure messages.
func (r Response) String() string {
	return fmt.Sprintf("HTTP %d code %d %s", r.Status, r.Code, r.Raw)
}

// Sign fills in the timestamp and hash of rq as a correct client would.
func (p *Partner) Sign(rq *Request) {
	if rq.JSON != nil && rq.Body == nil {
		rq.Body, _ = json.Marshal(rq.JSON)
	}
	if rq.Timestamp == "" {
		rq.Timestamp = strconv.FormatInt(p.env.Clock.Now().Unix(), 10)
	}
	if rq.Hash == "" && rq.SignatureVersion == emi.SignatureV2 {
		rq.Hash = partners.SignatureV2([]byte(p.APISecret), p.APIKey, rq.Timestamp, rq.Operation, rq.Method, rq.Path, rq.Nonce, rq.Body)
	}
	if rq.Hash == "" {
		var signed []byte
		if rq.Method == http.MethodPost || rq.Method == http.MethodPut {
			signed = rq.Body
		}
		rq.Hash = partners.Signature([]byte(p.APISecret), p.APIKey, rq.Timestamp, rq.Operation, signed)
	}
}

// HTTPRequest builds the signed *http.Request for rq.
func (p *Partner) HTTPRequest(t testing.TB, rq Request) *http.Request {
	t.Helper()
	if !rq.NoAuth {
		p.Sign(&rq)
	} else if rq.JSON != nil && rq.Body == nil {
		rq.Body, _ = json.Marshal(rq.JSON)
	}
	var body io.Reader
	if rq.Body != nil {
		body = bytes.NewReader(rq.Body)
	}
	req, err := http.NewRequest(rq.Method, p.env.Server.URL+rq.Path, body)
	if err != nil {
		t.Fatal(err)
	}
	if rq.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if !rq.NoAuth {
		req.Header.Set("x-api-key", p.APIKey)
		req.Header.Set("x-timestamp", rq.Timestamp)
		req.Header.Set("x-hash", rq.Hash)
		if rq.SignatureVersion != 0 {
			req.Header.Set("x-signature-version", strconv.Itoa(rq.SignatureVersion))
		}
		if rq.Nonce != "" {
			req.Header.Set("x-nonce", rq.Nonce)
		}
	}
	for k, v := range rq.Header {
		req.Header.Set(k, v)
	}
	return req
}

// Do sends rq and decodes the envelope. It fails the test when the answer
// is not a JSON envelope or does not match openapi.yaml.
func (p *Partner) Do(t testing.TB, rq Request) Response {
	t.Helper()
	req := p.HTTPRequest(t, rq)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rq.Method, rq.Path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := Decode(t, res.StatusCode, res.Header, raw)
	if !rq.SkipOpenAPI {
		p.env.CheckOpenAPI(t, req, res, raw)
	}
	return out
}

// Decode parses an envelope; it fails the test when raw is not one.
func Decode(t testing.TB, status int, h http.Header, raw []byte) Response {
	t.Helper()
	r := Response{Status: status, Header: h, Raw: raw}
	var env struct {
		Code    *int             `json:"code"`
		Message string           `json:"message"`
		Data    map[string]any   `json:"data"`
		Errors  []emi.FieldError `json:"errors"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Code == nil {
		t.Fatalf("HTTP %d: body is not a JSON envelope with a code: %s", status, raw)
	}
	if ct := h.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("HTTP %d: content type %q, want application/json; charset=utf-8", status, ct)
	}
	r.Code, r.Message, r.Data, r.Errors = *env.Code, env.Message, env.Data, env.Errors
	return r
}

// CheckOpenAPI fails the test when the response does not match openapi.yaml.
func (e *Env) CheckOpenAPI(t testing.TB, req *http.Request, res *http.Response, raw []byte) {
	t.Helper()
	res.Body = io.NopCloser(bytes.NewReader(raw))
	e.validator.mu.Lock()
	ok, errs := e.validator.v.ValidateHttpResponse(req, res)
	e.validator.mu.Unlock()
	if !ok {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error()+": "+e.Reason)
			for _, se := range e.SchemaValidationErrors {
				msgs = append(msgs, "  "+se.Reason+" at "+se.FieldPath)
			}
		}
		t.Fatalf("%s %s: HTTP %d response does not match openapi.yaml:\n%s\nbody: %s",
			req.Method, req.URL.Path, res.StatusCode, strings.Join(msgs, "\n"), raw)
	}
}

// Expect fails the test unless r has the code and HTTP status.
func Expect(t testing.TB, what string, r Response, code, status int) {
	t.Helper()
	if r.Code != code || r.Status != status {
		t.Fatalf("%s: want HTTP %d code %d, got %s", what, status, code, r)
	}
}

// ExpectField fails the test unless r is an error naming field.
func ExpectField(t testing.TB, what string, r Response, field string) {
	t.Helper()
	for _, f := range r.Errors {
		if f.Field == field {
			return
		}
	}
	t.Fatalf("%s: no error names field %q: %s", what, field, r)
}

// Silence keeps slog's default logger quiet in tests that build handlers by
// hand.
var Silence = slog.New(slog.NewTextHandler(io.Discard, nil))
