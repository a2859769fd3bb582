package config

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"
)

func vars(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

var goodKey = base64.StdEncoding.EncodeToString(make([]byte, 32))

func TestLoadDefaults(t *testing.T) {
	c, err := Load(vars(map[string]string{"DATABASE_URL": "postgres://x@localhost/emi", "EMI_MASTER_KEY": goodKey}), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeProduction || c.Addr != ":8080" || c.AuthWindow != 15*time.Second || c.RateLimit != 600 ||
		c.SecretOverlap != 24*time.Hour || len(c.MasterKey) != 32 || c.PublicURL != "http://localhost:8080" {
		t.Fatalf("defaults: %+v", c)
	}
	if c.TestFixturePasswords {
		t.Fatal("Load set TestFixturePasswords: only test fixtures may, in code")
	}
	if c.BenchMonitoringOff {
		t.Fatal("Load set BenchMonitoringOff: only test fixtures may, in code")
	}
}

func TestLoadReportsEveryBadVariableWithoutItsValue(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":             "mysql://secret-password@db/emi",
		"EMI_MASTER_KEY":           "c2hvcnQ=", // "short"
		"EMI_PREVIOUS_MASTER_KEYS": goodKey + ",not!base64",
		"EMI_MODE":                 "staging",
		"EMI_PUBLIC_URL":           "ftp://example.com",
		"EMI_LOG_LEVEL":            "loud",
		"EMI_LOG_FORMAT":           "xml",
		"EMI_RATE_LIMIT":           "-1",
		"EMI_RATE_WINDOW":          "10",
		"EMI_AUTH_WINDOW":          "0s",
		"EMI_WORKERS":              "0",
		"EMI_SHUTDOWN_TIMEOUT":     "soon",
	}
	_, err := Load(vars(env), "db", "key")
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for name := range env {
		if !strings.Contains(msg, name) {
			t.Errorf("error does not name %s:\n%s", name, msg)
		}
	}
	for _, secret := range []string{"secret-password", "c2hvcnQ=", "not!base64"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error repeats the value %q", secret)
		}
	}
}

func TestLoadRequiresOnlyWhatTheCommandNeeds(t *testing.T) {
	if _, err := Load(vars(nil)); err != nil {
		t.Fatalf("nothing needed: %v", err)
	}
	_, err := Load(vars(nil), "db")
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || strings.Contains(err.Error(), "EMI_MASTER_KEY") {
		t.Fatalf("db needed: %v", err)
	}
}

func TestParseKeyAcceptsTheUsualBase64Forms(t *testing.T) {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(250 + i) // bytes that differ between the alphabets
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k, err := ParseKey(enc.EncodeToString(raw))
		if err != nil || string(k) != string(raw) {
			t.Errorf("%v: %v", enc, err)
		}
	}
}

func TestWebhookLimitsAndSandboxPorts(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x@localhost/emi", "EMI_MASTER_KEY": goodKey}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	c, err := Load(vars(base), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	if c.WebhookEndpoints != 10 || c.WebhookEndpointsPerHost != 3 || c.WebhookPartnerConcurrency != 2 {
		t.Fatalf("webhook limits %d, %d, %d; want 10, 3, 2", c.WebhookEndpoints, c.WebhookEndpointsPerHost, c.WebhookPartnerConcurrency)
	}
	if got := fmt.Sprint(c.SandboxWebhookPorts); got != "[8081 9999]" {
		t.Fatalf("default sandbox ports %s, want EMI_ADDR's + 1 and 9999", got)
	}
	c, _ = Load(vars(with("EMI_ADDR", "127.0.0.1:9000", "EMI_WORKERS", "9")), "db", "key")
	if got := fmt.Sprint(c.SandboxWebhookPorts); got != "[9001 9999]" || c.WebhookPartnerConcurrency != 4 {
		t.Fatalf("EMI_ADDR 127.0.0.1:9000, 9 workers: ports %s, concurrency %d", got, c.WebhookPartnerConcurrency)
	}
	c, _ = Load(vars(with("EMI_ADDR", "127.0.0.1:0", "EMI_WORKERS", "1")), "db", "key")
	if got := fmt.Sprint(c.SandboxWebhookPorts); got != "[9999]" || c.WebhookPartnerConcurrency != 1 {
		t.Fatalf("EMI_ADDR port 0, 1 worker: ports %s, concurrency %d", got, c.WebhookPartnerConcurrency)
	}
	c, err = Load(vars(with("EMI_SANDBOX_WEBHOOK_PORTS", " 8081, 9000-9010 ,65535", "EMI_WEBHOOK_ENDPOINTS", "25",
		"EMI_WEBHOOK_ENDPOINTS_PER_HOST", "5", "EMI_WEBHOOK_PARTNER_CONCURRENCY", "3")), "db", "key")
	if err != nil || fmt.Sprint(c.SandboxWebhookPorts) != "[8081 9000-9010 65535]" || c.WebhookEndpoints != 25 ||
		c.WebhookEndpointsPerHost != 5 || c.WebhookPartnerConcurrency != 3 {
		t.Fatalf("set: %v %+v", err, c)
	}
	if c, err = Load(vars(with("EMI_SANDBOX_WEBHOOK_PORTS", "none")), "db", "key"); err != nil || len(c.SandboxWebhookPorts) != 0 {
		t.Fatalf("none: %v %v", c.SandboxWebhookPorts, err)
	}
	for _, bad := range []string{"0", "9010-9000", "http", "70000", "80,", "1-2-3"} {
		if _, err := Load(vars(with("EMI_SANDBOX_WEBHOOK_PORTS", bad)), "db", "key"); err == nil || !strings.Contains(err.Error(), "EMI_SANDBOX_WEBHOOK_PORTS") {
			t.Errorf("EMI_SANDBOX_WEBHOOK_PORTS=%q: %v", bad, err)
		}
	}
	for _, name := range []string{"EMI_WEBHOOK_ENDPOINTS", "EMI_WEBHOOK_ENDPOINTS_PER_HOST", "EMI_WEBHOOK_PARTNER_CONCURRENCY"} {
		if _, err := Load(vars(with(name, "0")), "db", "key"); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=0: %v", name, err)
		}
	}
}

func TestReservedPortsAreEmisOwnAndTheDatabases(t *testing.T) {
	ports := func(c Config) string {
		var out []string
		for _, r := range c.ReservedPorts() {
			out = append(out, fmt.Sprint(r.Port))
		}
		return strings.Join(out, " ")
	}
	c := Config{Addr: ":8080", PublicURL: "http://localhost:8080", DatabaseURL: "postgres://emi@db/emi"}
	if got := ports(c); got != "8080 8080 5432 5432" {
		t.Fatalf("defaults: %s", got)
	}
	c = Config{Addr: "127.0.0.1:0", PublicURL: "https://sandbox.example.com", DebugAddr: "127.0.0.1:6060",
		DatabaseURL: "postgres://emi@127.0.0.1:54329,127.0.0.2:54330/emi?sslmode=disable"}
	if got := ports(c); got != "443 6060 5432 54329 54330" {
		t.Fatalf("port 0, https, pprof, two database hosts: %s", got)
	}
	c = Config{Addr: ":9000", PublicURL: "http://127.0.0.1:9000", DatabaseURL: "postgres:///emi?host=/run/postgresql&port=5433"}
	if got := ports(c); got != "9000 9000 5432 5433" {
		t.Fatalf("port parameter: %s", got)
	}
}

func TestDatabasePoolerAndListenerConnection(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://emi@pgbouncer:6432/emi", "EMI_MASTER_KEY": goodKey}
	load := func(extra map[string]string) (Config, error) {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return Load(vars(m), "db", "key")
	}
	c, err := load(nil)
	if err != nil || c.DBPooler != "transaction" || c.ListenDatabaseURL != base["DATABASE_URL"] {
		t.Fatalf("defaults: pooler %q, listener %q (%v); want transaction and DATABASE_URL", c.DBPooler, c.ListenDatabaseURL, err)
	}
	for in, want := range map[string]string{"none": "none", "Session": "none", "direct": "none", "transaction-prepared": "transaction-prepared"} {
		if c, err := load(map[string]string{"EMI_DB_POOLER": in}); err != nil || c.DBPooler != want {
			t.Errorf("EMI_DB_POOLER=%s: %q (%v), want %q", in, c.DBPooler, err, want)
		}
	}
	if _, err := load(map[string]string{"EMI_DB_POOLER": "statement"}); err == nil || !strings.Contains(err.Error(), "EMI_DB_POOLER") {
		t.Errorf("EMI_DB_POOLER=statement: %v", err)
	}
	direct := "postgres://emi@db1:5432/emi"
	c, err = load(map[string]string{"EMI_LISTEN_DATABASE_URL": direct})
	if err != nil || c.ListenDatabaseURL != direct {
		t.Fatalf("EMI_LISTEN_DATABASE_URL: %q (%v)", c.ListenDatabaseURL, err)
	}
	if _, err := load(map[string]string{"EMI_LISTEN_DATABASE_URL": "mysql://db1/emi"}); err == nil || !strings.Contains(err.Error(), "EMI_LISTEN_DATABASE_URL") {
		t.Errorf("a listener URL that is not postgres://: %v", err)
	}
	// Both host-list forms start (h1:p1,h2:p2 used to stop emi).
	for _, u := range []string{"postgres://emi@db1:5432,db2:5433/emi?target_session_attrs=read-write",
		"postgres://emi@/emi?host=db1,db2&port=5432,5433&target_session_attrs=read-write"} {
		if _, err := load(map[string]string{"DATABASE_URL": u}); err != nil {
			t.Errorf("DATABASE_URL=%s: %v", u, err)
		}
	}
	// The listener's ports are the database's too: no webhook reaches them.
	c = Config{Addr: ":8080", PublicURL: "http://localhost:8080", DatabaseURL: "postgres://emi@pgbouncer:6432/emi",
		ListenDatabaseURL: "postgres://emi@db1:5432,db2:5433/emi"}
	var got []string
	for _, r := range c.ReservedPorts() {
		got = append(got, fmt.Sprint(r.Port))
	}
	if strings.Join(got, " ") != "8080 8080 5432 6432 5432 5433" {
		t.Fatalf("reserved ports with a listener connection: %v", got)
	}
}

func TestReadReplicas(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://emi@db1/emi", "EMI_MASTER_KEY": goodKey}
	c, err := Load(vars(env), "db", "key")
	if err != nil || len(c.ReadDatabaseURLs) != 0 || c.ReadMaxLag != 5*time.Second {
		t.Fatalf("defaults: %v %v (%v)", c.ReadDatabaseURLs, c.ReadMaxLag, err)
	}
	env["EMI_READ_DATABASE_URL"] = " postgres://emi@r1:5433/emi  postgres://emi@r2,r3/emi?sslmode=disable "
	env["EMI_READ_MAX_LAG"] = "2s"
	c, err = Load(vars(env), "db", "key")
	if err != nil || len(c.ReadDatabaseURLs) != 2 || c.ReadMaxLag != 2*time.Second {
		t.Fatalf("two replicas: %q %v (%v)", c.ReadDatabaseURLs, c.ReadMaxLag, err)
	}
	ports := ""
	for _, r := range c.ReservedPorts() {
		ports += fmt.Sprint(r.Port) + " "
	}
	if !strings.Contains(ports, "5433") {
		t.Fatalf("a replica's port is not reserved: %s", ports)
	}
	env["EMI_READ_DATABASE_URL"] = "postgres://emi@r1/emi mysql://r2/emi"
	env["EMI_READ_MAX_LAG"] = "1ms"
	_, err = Load(vars(env), "db", "key")
	if err == nil || !strings.Contains(err.Error(), "EMI_READ_DATABASE_URL") || !strings.Contains(err.Error(), "EMI_READ_MAX_LAG") {
		t.Fatalf("bad replica URL and lag: %v", err)
	}
}
