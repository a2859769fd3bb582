package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/iban"
	"emi/internal/postgres/pgtest"
	"emi/internal/testwait"
)

// env returns a getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func newKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of serve.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func runCmd(t *testing.T, vars map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut syncBuffer
	err := run(context.Background(), args, env(vars), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestStartupRefusesABadMasterKey(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	cases := map[string]string{
		"missing":         "",
		"not base64":      "this is not base64!",
		"16 bytes":        base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"33 bytes":        base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"whitespace only": "   ",
	}
	for name, key := range cases {
		for _, cmd := range []string{"serve", "seed", "partner"} {
			args := []string{cmd}
			if cmd == "partner" {
				args = []string{"partner", "create", "--name", "x"}
			}
			_, _, err := runCmd(t, map[string]string{"DATABASE_URL": db, "EMI_MASTER_KEY": key, "EMI_MODE": "sandbox"}, args...)
			if err == nil || !strings.Contains(err.Error(), "EMI_MASTER_KEY") {
				t.Errorf("%s with a %s key: want an error naming EMI_MASTER_KEY, got %v", cmd, name, err)
			}
			if err != nil && key != "" && len(strings.TrimSpace(key)) > 3 && strings.Contains(err.Error(), strings.TrimSpace(key)) {
				t.Errorf("%s: the error repeats the key value", cmd)
			}
		}
	}
	_, _, err := runCmd(t, map[string]string{"EMI_MASTER_KEY": newKey(), "EMI_MODE": "bogus"}, "serve")
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || !strings.Contains(err.Error(), "EMI_MODE") {
		t.Errorf("serve without DATABASE_URL and with a bad EMI_MODE: want both named, got %v", err)
	}
}

func TestMigrateSeedAndPartnerCreate(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox"}

	out, _, err := runCmd(t, vars, "migrate")
	if err != nil || !strings.Contains(out, "schema at version") {
		t.Fatalf("migrate: %v %q", err, out)
	}
	out, _, err = runCmd(t, vars, "migrate")
	if err != nil || !strings.Contains(out, "applied 0 migration") {
		t.Fatalf("second migrate: %v %q", err, out)
	}
	if _, _, err := runCmd(t, vars, "seed"); err != nil {
		t.Fatalf("seed: %v", err)
	}
	prod := map[string]string{"DATABASE_URL": vars["DATABASE_URL"], "EMI_MASTER_KEY": vars["EMI_MASTER_KEY"]}
	if _, _, err := runCmd(t, prod, "seed"); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("seed in production mode: want a refusal, got %v", err)
	}

	// The sandbox delivers to loopback on the ports the operator allows, by
	// default EMI_ADDR's + 1 (where make run's demo partner points) and
	// 9999; never emi's own or the database's, even listed.
	all := map[string]string{"EMI_SANDBOX_WEBHOOK_PORTS": "1-65535"}
	for k, v := range vars {
		all[k] = v
	}
	for _, c := range []struct {
		env       map[string]string
		url, want string
	}{
		{vars, "http://127.0.0.1:9/hooks", "EMI_SANDBOX_WEBHOOK_PORTS: 8081, 9999"},
		{vars, "http://127.0.0.1:8080/hooks", "it is emi's own port (EMI_ADDR)"},
		{all, "http://127.0.0.1:8080/hooks", "it is emi's own port (EMI_ADDR)"},
		{all, "http://localhost:5432/", "it is the PostgreSQL port"},
	} {
		_, _, err := runCmd(t, c.env, "partner", "create", "--name", "Scanner", "--webhook-url", c.url, "--json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("partner create --webhook-url %s: %v, want refused: %s", c.url, err, c.want)
		}
	}
	out, _, err = runCmd(t, vars, "partner", "create", "--name", "Acme Pay", "--webhook-url", "http://127.0.0.1:8081/hooks", "--json")
	if err != nil {
		t.Fatalf("partner create: %v", err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("partner create --json printed %q: %v", out, err)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "api_key,api_secret,merchant,webhook_secret" {
		t.Fatalf("partner create --json keys %v", keys)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(got["merchant"]) || !strings.HasPrefix(got["webhook_secret"], "whsec_") || got["api_key"] == "" || got["api_secret"] == "" {
		t.Fatalf("partner create --json values: %v", got)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(got["webhook_secret"], "whsec_"))
	if err != nil || len(raw) != 32 {
		t.Fatalf("webhook secret is not whsec_ + base64 of 32 bytes: %v", err)
	}

	out, _, err = runCmd(t, vars, "partner", "create", "--name", "No Hooks", "--json")
	if err != nil || !strings.Contains(out, `"webhook_secret":""`) {
		t.Fatalf("partner create without a webhook: %v %q", err, out)
	}
	// Partner names are unique ignoring case (staff tell partners apart by
	// name): a clear message.
	_, _, err = runCmd(t, vars, "partner", "create", "--name", "  no HOOKS ", "--json")
	if ue := (usageError{}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "name is already the name of another partner") {
		t.Fatalf("a second partner named no HOOKS: want a usage error naming the name, got %v", err)
	}
	// --signature-version 2: the first key refuses version 1 (contract §2).
	db, err := sql.Open("postgres", vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out, _, err = runCmd(t, vars, "partner", "create", "--name", "Strict", "--signature-version", "2", "--json")
	if err != nil {
		t.Fatalf("partner create --signature-version 2: %v", err)
	}
	var strict map[string]string
	_ = json.Unmarshal([]byte(out), &strict)
	var minVersion int
	if err := db.QueryRow(`SELECT min_signature_version FROM partner_keys WHERE api_key = $1`, strict["api_key"]).Scan(&minVersion); err != nil || minVersion != 2 {
		t.Fatalf("--signature-version 2 stored %d (%v)", minVersion, err)
	}
	if err := db.QueryRow(`SELECT min_signature_version FROM partner_keys k JOIN partners p ON p.id = k.partner_id WHERE p.name = 'No Hooks'`).Scan(&minVersion); err != nil || minVersion != 1 {
		t.Fatalf("the default stored %d (%v)", minVersion, err)
	}
	for _, v := range []string{"3", "0", "two"} {
		_, _, err = runCmd(t, vars, "partner", "create", "--name", "Bad "+v, "--signature-version", v)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Fatalf("--signature-version %s: want a usage error, got %v", v, err)
		}
	}
	_, _, err = runCmd(t, vars, "partner", "create", "--json")
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "name") {
		t.Fatalf("partner create without --name: want a usage error naming name, got %v", err)
	}
	_, _, err = runCmd(t, prod, "partner", "create", "--name", "Prod", "--webhook-url", "http://example.com/h")
	if err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("plain-http webhook in production: want refusal, got %v", err)
	}
	// The SSRF guard: internal targets are refused in production, also
	// over https.
	for _, u := range []string{"https://127.0.0.1/h", "https://10.0.0.8/h", "https://169.254.169.254/latest"} {
		if _, _, err = runCmd(t, prod, "partner", "create", "--name", "Prod", "--webhook-url", u); err == nil {
			t.Fatalf("webhook %s in production: want refusal", u)
		}
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "env"}, {"migrate", "--help"}, {"serve", "-h"}, {"seed", "--help"}, {"partner", "create", "--help"}, {"help", "partner"}} {
		out, errOut, err := runCmd(t, nil, args...)
		if err != nil || (out == "" && errOut == "") {
			t.Errorf("emi %v: err %v, no help printed", args, err)
		}
	}
	if _, _, err := runCmd(t, nil, "frobnicate"); err == nil {
		t.Error("unknown command: want an error")
	}
}

func TestServeRefusesAnOldSchemaThenServesAndStops(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(), "EMI_ADDR": "127.0.0.1:0", "EMI_SHUTDOWN_TIMEOUT": "5s"}

	// A database whose schema is behind the binary: the newest migration
	// rolled back with its Down section.
	if err := downOne(vars["DATABASE_URL"]); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCmd(t, vars, "serve")
	if err == nil || !strings.Contains(err.Error(), "emi migrate") {
		t.Fatalf("serve on an old schema: want a refusal telling to run emi migrate, got %v", err)
	}
	if _, _, err := runCmd(t, vars, "migrate"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, env(vars), strings.NewReader(""), &out, &errOut) }()
	addr := testwait.For(t, "the address in serve's output", func() (string, bool) {
		m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(out.String())
		if m == nil {
			return "", false
		}
		return m[1], true
	})
	res, err := http.Get(addr + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", err, res)
	}
	res.Body.Close()
	res, err = http.Get(addr + "/openapi.yaml")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/openapi.yaml: %v", err)
	}
	res.Body.Close()
	res, err = http.Get(addr + "/metrics")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/metrics: %v", err)
	}
	var metrics bytes.Buffer
	_, _ = metrics.ReadFrom(res.Body)
	res.Body.Close()
	for _, want := range []string{`emi_http_requests_total{code="",operation="/healthz",status="200"}`, `emi_jobs{state="available"}`, `emi_http_request_duration_seconds_bucket`} {
		if !strings.Contains(metrics.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	cancel() // as SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after shutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of the signal")
	}
	if !strings.Contains(errOut.String(), `"msg":"stopped"`) {
		t.Fatalf("no clean stop in the log:\n%s", errOut.String())
	}
}

func TestGenerateApplicationsAndNoValidatorConfig(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	vars := map[string]string{"DATABASE_URL": url, "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox"}
	if _, _, err := runCmd(t, vars, "migrate"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, vars, "generate", "applications", "--count", "330")
	if err != nil || !strings.Contains(out, "330 applications and 3300 check results") {
		t.Fatalf("generate: %v %q", err, out)
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var apps, checks, review int
	_ = db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE status = 'in_review') FROM applications`).Scan(&apps, &review)
	_ = db.QueryRow(`SELECT (SELECT count(*) FROM application_checks) + (SELECT count(*) FROM application_check_history)`).Scan(&checks)
	if apps != 330 || checks != 3300 || review != 40 {
		t.Fatalf("%d applications (%d in review), %d check results", apps, review, checks)
	}
	prod := map[string]string{"DATABASE_URL": url, "EMI_MASTER_KEY": vars["EMI_MASTER_KEY"]}
	if _, _, err := runCmd(t, prod, "generate", "applications", "--count", "1"); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("generate in production: %v", err)
	}
	if _, _, err := runCmd(t, vars, "generate", "applications", "--count", "0"); err == nil {
		t.Fatal("generate --count 0 accepted")
	}
	out, _, err = runCmd(t, vars, "partner", "create", "--name", "Bare", "--no-validator-config", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	_ = json.Unmarshal([]byte(out), &got)
	var cfg sql.NullString
	_ = db.QueryRow(`SELECT validator_config::text FROM partners p WHERE p.master_merchant = $1`, got["merchant"]).Scan(&cfg)
	if cfg.Valid {
		t.Fatalf("--no-validator-config left a configuration: %s", cfg.String)
	}
}

func TestGenerateAccounts(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	vars := map[string]string{"DATABASE_URL": url, "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox"}
	if _, _, err := runCmd(t, vars, "migrate"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, vars, "generate", "accounts", "--count", "250")
	if err != nil || !strings.Contains(out, "250 accounts of 25 users") {
		t.Fatalf("generate accounts: %v %q", err, out)
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT b.iban FROM balances b JOIN ibans i ON i.iban = b.iban`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		if err := iban.Validate(s); err != nil {
			t.Fatalf("generated IBAN %s: %v", s, err)
		}
		n++
	}
	var next int64
	_ = db.QueryRow(`SELECT last_value FROM bg_account_serial`).Scan(&next)
	if n != 250 || next < 250 {
		t.Fatalf("%d IBANs, serial at %d", n, next)
	}
}
