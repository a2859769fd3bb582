// Package config reads emi's configuration from an injected getenv, so tests
// and the binary share one parser and nothing reads os.Getenv elsewhere.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Mode is sandbox or production (contract §10).
type Mode string

// Modes. Sandbox allows plain-http loopback webhook endpoints and the
// sandbox-only operations.
const (
	ModeSandbox    Mode = "sandbox"
	ModeProduction Mode = "production"
)

// Config is everything emi reads from its environment.
type Config struct {
	DatabaseURL string
	// DBPooler is what stands between emi and PostgreSQL (EMI_DB_POOLER):
	// "transaction" (the default: a transaction-mode pooler, or unknown),
	// "none" (a direct connection or a session-mode pooler) or
	// "transaction-prepared" (a transaction-mode pooler that keeps
	// prepared statements, PgBouncer >= 1.21 with max_prepared_statements).
	// postgres.Pooler says what each allows.
	DBPooler string
	// ListenDatabaseURL is the connection LISTEN/NOTIFY uses (the API-key
	// cache, the job wake-ups, their heartbeats): a direct connection or a
	// session-mode pool (EMI_LISTEN_DATABASE_URL); default DatabaseURL.
	// Through a transaction-mode pooler LISTEN is accepted and nothing
	// arrives: the listeners notice (their own notifications do not come
	// back) and say so in the log and in emi_listener_live, and the key
	// cache stays off and the workers poll meanwhile.
	ListenDatabaseURL string
	// ReadDatabaseURLs are read replicas (EMI_READ_DATABASE_URL, URLs
	// separated by spaces): the reads that tolerate ReadMaxLag of
	// staleness go there (emi.WithLagTolerant). Empty: every read goes
	// to DatabaseURL.
	ReadDatabaseURLs []string
	// ReadMaxLag bounds a replica's replay lag (EMI_READ_MAX_LAG): a
	// replica further behind is not read from until it catches up, and a
	// staff member's reads go to the primary for this long after they
	// change something.
	ReadMaxLag time.Duration
	// MasterKey is the current 32-byte master key (EMI_MASTER_KEY);
	// PreviousKeys are older keys still needed to open data sealed under
	// them during a rotation (EMI_PREVIOUS_MASTER_KEYS, comma separated).
	MasterKey    []byte
	PreviousKeys [][]byte
	Mode         Mode
	Addr         string
	PublicURL    string
	SanctionsDir string
	// TestFixturePasswords makes new staff password hashes cheap
	// (staff.PasswordCostTestFixture). No variable sets it: Load always
	// leaves it false, and only the HTTP-level test fixtures (apptest) set
	// it in code, because they create and sign in thousands of staff users.
	TestFixturePasswords bool
	// BenchMonitoringOff switches transaction monitoring off
	// (monitoring.Deps.Off) for the benchmarks that measure what it costs
	// by comparing with it. No variable sets it: Load always leaves it
	// false, and only the test fixtures (apptest.Options.MonitoringOff)
	// set it in code. Production cannot run without monitoring.
	BenchMonitoringOff bool
	// SanctionsRefresh is how often emi serve downloads the official lists
	// from SanctionsURLs (0: never; the lists of SanctionsDir are used).
	SanctionsRefresh time.Duration
	// SanctionsURLs are the SDN, ALT, UN, EU and UK list addresses; an
	// empty EU or UK address leaves that list out of the downloads.
	SanctionsURLs [5]string
	// DecisionSettle is how long an application under automatic processing
	// must stay unchanged before it is decided: a partner sending the
	// company, members and documents in several calls is not decided on the
	// first of them.
	DecisionSettle time.Duration
	// CompaniesHouseKey enables trade-register lookups of GB companies in
	// Companies House (CompaniesHouseURL); without it the sandbox register
	// answers.
	CompaniesHouseKey string
	CompaniesHouseURL string
	// SMSURL and SMSToken configure the HTTP SMS gateway of card_send_pin;
	// without a URL the sandbox provider answers in sandbox mode and PIN
	// texts are refused in production.
	SMSURL   string
	SMSToken string
	// Reporting is the institution as its suspicious transaction reports
	// name it (goAML): EMI_GOAML_RENTITY_ID (the FIU's id of emi),
	// EMI_GOAML_BRANCH, EMI_INSTITUTION_NAME, EMI_INSTITUTION_BIC,
	// EMI_INSTITUTION_CITY, EMI_INSTITUTION_COUNTRY. The sandbox has
	// placeholders; in production a report cannot be approved until they
	// are set (the approval says which is missing).
	Reporting Reporting
	// DebugAddr, when set, is a loopback address where emi serve exposes
	// net/http/pprof (CPU profiles for the benchmark); empty: nowhere.
	DebugAddr string
	LogLevel  slog.Level
	LogFormat string // json or text

	// RateLimit is the number of API requests one API key may make per
	// RateWindow; 0 disables the limit.
	RateLimit  int
	RateWindow time.Duration

	// MaxInFlight is how many partner API requests one process works on at
	// once; a request beyond waits up to QueueWait for a place, then is
	// answered 503 / 10503 with Retry-After (so an overloaded process sheds
	// load instead of timing out every request). 0 means the size of the
	// database pool (app wires it).
	MaxInFlight int
	QueueWait   time.Duration

	// AuthWindow is how far x-timestamp may be from the server clock.
	AuthWindow time.Duration
	// SecretOverlap is how long a rotated API secret stays valid.
	SecretOverlap time.Duration
	// RevealQuota is how many card numbers one staff member may reveal
	// (or look up by full PAN) per hour.
	RevealQuota int

	ShutdownTimeout time.Duration
	Workers         int
	// JobLease is how long a claimed job stays held without news from its
	// worker: it bounds how late the jobs of a crashed process are retried.
	JobLease time.Duration

	// WebhookEndpoints is how many enabled webhook endpoints one partner
	// may have, and WebhookEndpointsPerHost how many of them may share a
	// host name (one event is one delivery per endpoint, so endpoints
	// multiply emi's traffic).
	WebhookEndpoints        int
	WebhookEndpointsPerHost int
	// WebhookPartnerConcurrency is how many of one partner's webhook
	// deliveries one process runs at once (the others wait in the queue).
	WebhookPartnerConcurrency int
	// SandboxWebhookPorts are the loopback ports sandbox webhooks may be
	// delivered to (EMI_SANDBOX_WEBHOOK_PORTS); emi's own ports and the
	// database's are refused even when listed (see ReservedPorts).
	SandboxWebhookPorts []PortRange
}

// PortRange is an inclusive range of TCP ports.
type PortRange struct{ From, To uint16 }

// String writes r as "8081" or "9000-9010".
func (r PortRange) String() string {
	if r.From == r.To {
		return strconv.Itoa(int(r.From))
	}
	return strconv.Itoa(int(r.From)) + "-" + strconv.Itoa(int(r.To))
}

// ParsePorts reads a comma-separated list of ports and inclusive ranges
// ("8081,9000-9010"); "none" is the empty list. The error says what is
// wrong without repeating the value.
func ParsePorts(v string) ([]PortRange, error) {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "none") {
		return []PortRange{}, nil
	}
	out := []PortRange{}
	for i, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		from, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		to, err2 := from, error(nil)
		if isRange {
			to, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		}
		if err1 != nil || err2 != nil || from == 0 || to < from {
			return nil, fmt.Errorf("entry %d is not a port (1-65535) or a range such as 9000-9010", i+1)
		}
		out = append(out, PortRange{From: uint16(from), To: uint16(to)})
	}
	return out, nil
}

// Reserved port of a kind: emi's own listener, its profiling endpoint, the
// database.
type ReservedPort struct {
	Port uint16
	What string
}

// ReservedPorts are the loopback ports no webhook is ever delivered to,
// whatever SandboxWebhookPorts says: EMI_ADDR's and EMI_PUBLIC_URL's
// (emi itself; the scheme's port when the URL has none), EMI_DEBUG_ADDR's
// (pprof), and DATABASE_URL's (5432 when it names none, and 5432, the
// PostgreSQL default, in any case). A port 0 (EMI_ADDR=127.0.0.1:0: chosen
// when emi serve listens) is left out: emi serve reserves the port it got.
func (c Config) ReservedPorts() []ReservedPort {
	var out []ReservedPort
	add := func(port, what string) {
		if n, err := strconv.ParseUint(port, 10, 16); err == nil && n > 0 {
			out = append(out, ReservedPort{Port: uint16(n), What: what})
		}
	}
	if _, port, err := net.SplitHostPort(c.Addr); err == nil {
		add(port, "emi's own port (EMI_ADDR)")
	}
	if u, err := url.Parse(c.PublicURL); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		add(port, "emi's own port (EMI_PUBLIC_URL)")
	}
	if _, port, err := net.SplitHostPort(c.DebugAddr); err == nil {
		add(port, "emi's profiling port (EMI_DEBUG_ADDR)")
	}
	add("5432", "the PostgreSQL port")
	for _, d := range []struct{ name, url string }{
		{"DATABASE_URL", c.DatabaseURL}, {"EMI_LISTEN_DATABASE_URL", c.ListenDatabaseURL}, {"EMI_READ_DATABASE_URL", strings.Join(c.ReadDatabaseURLs, " ")},
	} {
		for _, one := range strings.Fields(d.url) {
			for _, port := range databasePorts(one) {
				add(port, "the database's port ("+d.name+")")
			}
		}
	}
	return out
}

// Vars documents every variable, for --help and the operators' guide (web/docs/guides/operators.md).
var Vars = []struct{ Name, Default, Meaning string }{
	{"DATABASE_URL", "(required)", "PostgreSQL URL, e.g. postgres://emi@localhost/emi?sslmode=disable"},
	{"EMI_DB_POOLER", "transaction", "what stands before PostgreSQL: transaction (a transaction-mode pooler such as PgBouncer's, or unknown: nothing is prepared), none (a direct connection or a session-mode pooler: the hot reads are prepared), transaction-prepared (PgBouncer >= 1.21 with max_prepared_statements)"},
	{"EMI_LISTEN_DATABASE_URL", "DATABASE_URL", "direct (or session-mode) connection for LISTEN/NOTIFY: API-key cache invalidation and job wake-ups. Set it behind a transaction pooler, where notifications never arrive: emi then warns, the key cache stays off and workers poll"},
	{"EMI_READ_DATABASE_URL", "", "read replicas (postgres:// URLs separated by spaces) for back-office pages, statements, exports and ledger verify; partner API reads stay on the primary"},
	{"EMI_READ_MAX_LAG", "5s", "a replica further behind is not read from (the primary answers); a staff member's pages read the primary this long after their own change"},
	{"EMI_MASTER_KEY", "(required)", "base64 of 32 random bytes; encrypts secrets, card data and documents"},
	{"EMI_PREVIOUS_MASTER_KEYS", "", "comma-separated older master keys, kept during a key rotation"},
	{"EMI_MODE", "production", "sandbox or production"},
	{"EMI_ADDR", ":8080", "listen address of emi serve"},
	{"EMI_PUBLIC_URL", "http://localhost:8080", "address people and partners reach (KYC links)"},
	{"EMI_SANCTIONS_DIR", "../shared/data/sanctions", "directory of the sanctions lists"},
	{"EMI_SANCTIONS_REFRESH", "0 (sandbox), 6h (production)", "how often the official lists are downloaded (0 = never)"},
	{"EMI_DECISION_SETTLE", "3s (sandbox), 2m (production)", "how long an automatic application must stay unchanged before it is decided"},
	{"EMI_SANCTIONS_SDN_URL", "https://www.treasury.gov/ofac/downloads/sdn.csv", "OFAC SDN list address"},
	{"EMI_SANCTIONS_ALT_URL", "https://www.treasury.gov/ofac/downloads/alt.csv", "OFAC alias list address"},
	{"EMI_SANCTIONS_UN_URL", "https://scsanctions.un.org/resources/xml/en/consolidated.xml", "UN consolidated list address"},
	{"EMI_SANCTIONS_EU_URL", "https://webgate.ec.europa.eu/fsd/fsf/public/files/xmlFullSanctionsList_1_1/content?token=dG9rZW4tMjAxNw", "EU consolidated list address (FSF XML export); none: not downloaded"},
	{"EMI_SANCTIONS_UK_URL", "https://ofsistorage.blob.core.windows.net/publishlive/2022format/ConList.csv", "UK consolidated list address (OFSI CSV); none: not downloaded"},
	{"EMI_COMPANIES_HOUSE_KEY", "", "Companies House REST API key: GB companies are verified there (otherwise the sandbox register answers)"},
	{"EMI_COMPANIES_HOUSE_URL", "https://api.company-information.service.gov.uk", "Companies House API address"},
	{"EMI_SMS_URL", "", "HTTP SMS gateway for PIN texts (POST {to, text}); unset: sandbox outbox in sandbox mode, refused in production"},
	{"EMI_SMS_TOKEN", "", "bearer token of the SMS gateway"},
	{"EMI_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"EMI_DEBUG_ADDR", "", "loopback address (127.0.0.1:6060) for net/http/pprof; unset: no profiling endpoint; any other address is refused"},
	{"EMI_LOG_FORMAT", "json", "json or text"},
	{"EMI_RATE_LIMIT", "600", "API requests per API key per EMI_RATE_WINDOW (0 = no limit)"},
	{"EMI_RATE_WINDOW", "1m", "rate-limit window (Go duration)"},
	{"EMI_API_MAX_INFLIGHT", "40", "partner API requests worked on at once per process (0 = the database pool's size, 40)"},
	{"EMI_API_QUEUE_WAIT", "10s", "how long a request beyond EMI_API_MAX_INFLIGHT waits before 503 / 10503 with Retry-After"},
	{"EMI_AUTH_WINDOW", "15s", "allowed distance of x-timestamp from the server clock"},
	{"EMI_SECRET_OVERLAP", "24h", "how long a rotated API secret stays valid"},
	{"EMI_REVEAL_QUOTA", "10", "card-number reveals and full-PAN searches per staff member per hour"},
	{"EMI_SHUTDOWN_TIMEOUT", "20s", "how long emi serve drains requests and jobs on SIGTERM"},
	{"EMI_WORKERS", "4", "concurrent background jobs per emi serve process"},
	{"EMI_JOB_LEASE", "30s", "how long a job stays claimed without a heartbeat (a crashed process's jobs wait this long)"},
	{"EMI_WEBHOOK_ENDPOINTS", "10", "enabled webhook endpoints one partner may have (15005 beyond)"},
	{"EMI_WEBHOOK_ENDPOINTS_PER_HOST", "3", "enabled webhook endpoints of one partner on one host name, any port (15006 beyond)"},
	{"EMI_WEBHOOK_PARTNER_CONCURRENCY", "half of EMI_WORKERS, at least 1", "webhook deliveries of one partner a process runs at once; the rest wait their turn"},
	{"EMI_SANDBOX_WEBHOOK_PORTS", "EMI_ADDR's port + 1, and 9999", "loopback ports sandbox webhooks may go to (8081,9000-9010; none); emi's own and the database's ports never"},
}

// Load parses the environment. need lists what the calling subcommand
// requires ("db", "key"); everything else is optional with defaults. The error
// names every missing or malformed variable, never its value.
func Load(getenv func(string) string, need ...string) (Config, error) {
	c := Config{
		Mode:            ModeProduction,
		Addr:            ":8080",
		PublicURL:       "http://localhost:8080",
		SanctionsDir:    "../shared/data/sanctions",
		LogLevel:        slog.LevelInfo,
		LogFormat:       "json",
		RateLimit:       600,
		RateWindow:      time.Minute,
		QueueWait:       10 * time.Second,
		AuthWindow:      15 * time.Second,
		SecretOverlap:   24 * time.Hour,
		RevealQuota:     10,
		ShutdownTimeout: 20 * time.Second,
		Workers:         4,
		JobLease:        30 * time.Second,
	}
	var errs []error
	bad := func(name, why string) { errs = append(errs, fmt.Errorf("%s %s", name, why)) }
	needs := func(what string) bool {
		for _, n := range need {
			if n == what {
				return true
			}
		}
		return false
	}

	c.DatabaseURL = strings.TrimSpace(getenv("DATABASE_URL"))
	if c.DatabaseURL == "" && needs("db") {
		bad("DATABASE_URL", "is required (a PostgreSQL URL)")
	} else if c.DatabaseURL != "" && !isPostgresURL(c.DatabaseURL) {
		bad("DATABASE_URL", "must be a postgres:// URL")
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("EMI_DB_POOLER"))); v {
	case "", "transaction":
		c.DBPooler = "transaction"
	case "none", "session", "direct":
		c.DBPooler = "none"
	case "transaction-prepared":
		c.DBPooler = v
	default:
		bad("EMI_DB_POOLER", "must be transaction, none (or session, direct) or transaction-prepared")
	}
	c.ListenDatabaseURL = strings.TrimSpace(getenv("EMI_LISTEN_DATABASE_URL"))
	if c.ListenDatabaseURL != "" && !isPostgresURL(c.ListenDatabaseURL) {
		bad("EMI_LISTEN_DATABASE_URL", "must be a postgres:// URL")
	}
	if c.ListenDatabaseURL == "" {
		c.ListenDatabaseURL = c.DatabaseURL
	}

	if v := strings.TrimSpace(getenv("EMI_MASTER_KEY")); v != "" {
		k, err := ParseKey(v)
		if err != nil {
			bad("EMI_MASTER_KEY", err.Error())
		}
		c.MasterKey = k
	} else if needs("key") {
		bad("EMI_MASTER_KEY", "is required (base64 of 32 random bytes, e.g. `head -c 32 /dev/urandom | base64`)")
	}
	if v := strings.TrimSpace(getenv("EMI_PREVIOUS_MASTER_KEYS")); v != "" {
		for i, part := range strings.Split(v, ",") {
			k, err := ParseKey(strings.TrimSpace(part))
			if err != nil {
				bad("EMI_PREVIOUS_MASTER_KEYS", fmt.Sprintf("entry %d: %v", i+1, err))
				continue
			}
			c.PreviousKeys = append(c.PreviousKeys, k)
		}
	}

	switch v := strings.TrimSpace(getenv("EMI_MODE")); v {
	case "":
	case string(ModeSandbox), string(ModeProduction):
		c.Mode = Mode(v)
	default:
		bad("EMI_MODE", "must be sandbox or production")
	}
	if v := strings.TrimSpace(getenv("EMI_ADDR")); v != "" {
		c.Addr = v
	}
	if v := strings.TrimSpace(getenv("EMI_PUBLIC_URL")); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("EMI_PUBLIC_URL", "must be an absolute http(s) URL")
		} else {
			c.PublicURL = strings.TrimRight(v, "/")
		}
	}
	if v := strings.TrimSpace(getenv("EMI_SANCTIONS_DIR")); v != "" {
		c.SanctionsDir = v
	}
	c.SanctionsURLs = [5]string{"https://www.treasury.gov/ofac/downloads/sdn.csv",
		"https://www.treasury.gov/ofac/downloads/alt.csv",
		"https://scsanctions.un.org/resources/xml/en/consolidated.xml",
		"https://webgate.ec.europa.eu/fsd/fsf/public/files/xmlFullSanctionsList_1_1/content?token=dG9rZW4tMjAxNw",
		"https://ofsistorage.blob.core.windows.net/publishlive/2022format/ConList.csv"}
	for i, name := range []string{"EMI_SANCTIONS_SDN_URL", "EMI_SANCTIONS_ALT_URL", "EMI_SANCTIONS_UN_URL", "EMI_SANCTIONS_EU_URL", "EMI_SANCTIONS_UK_URL"} {
		v := strings.TrimSpace(getenv(name))
		if i >= 3 && strings.EqualFold(v, "none") {
			c.SanctionsURLs[i] = ""
			continue
		}
		if v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(name, "must be an absolute http(s) URL")
			} else {
				c.SanctionsURLs[i] = v
			}
		}
	}
	c.Reporting = Reporting{Branch: strings.TrimSpace(getenv("EMI_GOAML_BRANCH")), Name: strings.TrimSpace(getenv("EMI_INSTITUTION_NAME")),
		BIC: strings.TrimSpace(getenv("EMI_INSTITUTION_BIC")), City: strings.TrimSpace(getenv("EMI_INSTITUTION_CITY")),
		Country: strings.TrimSpace(getenv("EMI_INSTITUTION_COUNTRY"))}
	if v := strings.TrimSpace(getenv("EMI_GOAML_RENTITY_ID")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad("EMI_GOAML_RENTITY_ID", "must be the FIU's number of the institution (1 or more)")
		}
		c.Reporting.RentityID = n
	}
	c.CompaniesHouseKey = strings.TrimSpace(getenv("EMI_COMPANIES_HOUSE_KEY"))
	c.CompaniesHouseURL = "https://api.company-information.service.gov.uk"
	if v := strings.TrimSpace(getenv("EMI_COMPANIES_HOUSE_URL")); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("EMI_COMPANIES_HOUSE_URL", "must be an absolute http(s) URL")
		} else {
			c.CompaniesHouseURL = v
		}
	}
	if v := strings.TrimSpace(getenv("EMI_SMS_URL")); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("EMI_SMS_URL", "must be an absolute http(s) URL")
		} else {
			c.SMSURL = v
		}
	}
	c.SMSToken = strings.TrimSpace(getenv("EMI_SMS_TOKEN"))
	c.DebugAddr = strings.TrimSpace(getenv("EMI_DEBUG_ADDR"))
	if v := strings.TrimSpace(getenv("EMI_LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad("EMI_LOG_LEVEL", "must be debug, info, warn or error")
		}
	}
	switch v := strings.TrimSpace(getenv("EMI_LOG_FORMAT")); v {
	case "":
	case "json", "text":
		c.LogFormat = v
	default:
		bad("EMI_LOG_FORMAT", "must be json or text")
	}
	intVar := func(name string, dst *int, min int) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				bad(name, fmt.Sprintf("must be a whole number >= %d", min))
				return
			}
			*dst = n
		}
	}
	durVar := func(name string, dst *time.Duration, min time.Duration) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < min {
				bad(name, fmt.Sprintf("must be a Go duration of at least %s (e.g. 30s)", min))
				return
			}
			*dst = d
		}
	}
	intVar("EMI_RATE_LIMIT", &c.RateLimit, 0)
	durVar("EMI_RATE_WINDOW", &c.RateWindow, time.Second)
	intVar("EMI_API_MAX_INFLIGHT", &c.MaxInFlight, 0)
	durVar("EMI_API_QUEUE_WAIT", &c.QueueWait, 0)
	for _, u := range strings.Fields(getenv("EMI_READ_DATABASE_URL")) {
		if !isPostgresURL(u) {
			bad("EMI_READ_DATABASE_URL", "must be postgres:// URLs separated by spaces")
			break
		}
		c.ReadDatabaseURLs = append(c.ReadDatabaseURLs, u)
	}
	c.ReadMaxLag = 5 * time.Second
	durVar("EMI_READ_MAX_LAG", &c.ReadMaxLag, 100*time.Millisecond)
	durVar("EMI_AUTH_WINDOW", &c.AuthWindow, time.Second)
	durVar("EMI_SECRET_OVERLAP", &c.SecretOverlap, 0)
	intVar("EMI_REVEAL_QUOTA", &c.RevealQuota, 1)
	durVar("EMI_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout, time.Second)
	intVar("EMI_WORKERS", &c.Workers, 1)
	durVar("EMI_JOB_LEASE", &c.JobLease, time.Second)
	c.WebhookEndpoints, c.WebhookEndpointsPerHost = 10, 3
	intVar("EMI_WEBHOOK_ENDPOINTS", &c.WebhookEndpoints, 1)
	intVar("EMI_WEBHOOK_ENDPOINTS_PER_HOST", &c.WebhookEndpointsPerHost, 1)
	c.WebhookPartnerConcurrency = max(1, c.Workers/2)
	intVar("EMI_WEBHOOK_PARTNER_CONCURRENCY", &c.WebhookPartnerConcurrency, 1)
	// The sandbox's loopback receivers: the one `make run` gives the demo
	// partner (EMI_ADDR's port + 1, where `emi webhooks listen` is told to
	// listen) and `emi webhooks listen`'s own default, 9999.
	c.SandboxWebhookPorts = []PortRange{{9999, 9999}}
	if _, port, err := net.SplitHostPort(c.Addr); err == nil {
		if n, err := strconv.ParseUint(port, 10, 16); err == nil && n > 0 && n+1 != 9999 {
			// ParsePorts refuses 65536, so EMI_ADDR's port 65535 adds none.
			if next, err := ParsePorts(strconv.FormatUint(n+1, 10)); err == nil {
				c.SandboxWebhookPorts = append(next, c.SandboxWebhookPorts...)
			}
		}
	}
	if v := strings.TrimSpace(getenv("EMI_SANDBOX_WEBHOOK_PORTS")); v != "" {
		if ports, err := ParsePorts(v); err != nil {
			bad("EMI_SANDBOX_WEBHOOK_PORTS", err.Error())
		} else {
			c.SandboxWebhookPorts = ports
		}
	}
	if c.Mode == ModeProduction {
		c.SanctionsRefresh = 6 * time.Hour
	}
	durVar("EMI_SANCTIONS_REFRESH", &c.SanctionsRefresh, 0)
	c.DecisionSettle = 3 * time.Second
	if c.Mode == ModeProduction {
		c.DecisionSettle = 2 * time.Minute
	}
	durVar("EMI_DECISION_SETTLE", &c.DecisionSettle, 0)
	if c.SanctionsRefresh > 0 && c.SanctionsRefresh < time.Minute {
		bad("EMI_SANCTIONS_REFRESH", "must be 0 or at least 1m")
	}

	return c, errors.Join(errs...)
}

// ParseKey decodes a base64 master key of exactly 32 bytes. The error says
// what is wrong without repeating the value.
func ParseKey(v string) ([]byte, error) {
	var k []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err = enc.DecodeString(v); err == nil {
			break
		}
	}
	if err != nil {
		return nil, errors.New("is not valid base64")
	}
	if len(k) != 32 {
		return nil, fmt.Errorf("must decode to 32 bytes, not %d", len(k))
	}
	return k, nil
}

// isPostgresURL reports whether v is a postgres:// or postgresql:// URL.
// Several hosts in the authority ("h1:5432,h2:5433", libpq's form) are
// allowed: postgres.NormalizeURL rewrites them for lib/pq.
func isPostgresURL(v string) bool {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok || (scheme != "postgres" && scheme != "postgresql") {
		return false
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	if strings.Contains(hosts, ",") {
		// Check the rest of the URL with the first host alone.
		first, _, _ := strings.Cut(hosts, ",")
		v = scheme + "://" + userinfo + first + rest[len(authority):]
	}
	_, err := url.Parse(v)
	return err == nil
}

// databasePorts are the ports a postgres:// URL connects to: each host of
// the authority ("h1:5432,h2:5433"), the port parameter (one or a list),
// 5432 when none is named.
func databasePorts(v string) []string {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok || (scheme != "postgres" && scheme != "postgresql") {
		return nil
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	var out []string
	for _, h := range strings.Split(authority, ",") {
		if _, port, err := net.SplitHostPort(h); err == nil {
			out = append(out, port)
		}
	}
	if u, err := url.Parse("x://h" + tail); err == nil {
		for _, p := range strings.Split(u.Query().Get("port"), ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "5432")
	}
	return out
}

// Reporting is the institution as a goAML report names it.
type Reporting struct {
	RentityID int
	Branch    string
	Name      string
	BIC       string
	City      string
	Country   string
}

// Sandbox returns r with a placeholder for every field not set: a sandbox
// report is for trying the format, never for an FIU.
func (r Reporting) Sandbox() Reporting {
	if r.RentityID == 0 {
		r.RentityID = 1
	}
	for _, f := range []struct {
		v   *string
		def string
	}{{&r.Branch, "Head office"}, {&r.Name, "emi sandbox"}, {&r.BIC, "EMISBGS1"}, {&r.City, "Sofia"}, {&r.Country, "BG"}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	return r
}

// Missing names the variables a production report needs and lacks.
func (r Reporting) Missing() []string {
	var out []string
	for _, f := range []struct {
		ok   bool
		name string
	}{{r.RentityID > 0, "EMI_GOAML_RENTITY_ID"}, {r.Branch != "", "EMI_GOAML_BRANCH"}, {r.Name != "", "EMI_INSTITUTION_NAME"},
		{r.BIC != "", "EMI_INSTITUTION_BIC"}, {r.City != "", "EMI_INSTITUTION_CITY"}, {r.Country != "", "EMI_INSTITUTION_COUNTRY"}} {
		if !f.ok {
			out = append(out, f.name)
		}
	}
	return out
}
