package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the admin connection that creates and drops the bench database
)

func newFlags() *flag.FlagSet { return flag.NewFlagSet("emi-load", flag.ContinueOnError) }

// benchScenario is one row of `make bench`: a scenario, its load shape
// and the issue that asked for it.
type benchScenario struct {
	op     string
	sh     shape
	source string
	// halfMixed: the open-loop rate is half the closed-loop mixed
	// throughput measured just before.
	halfMixed bool
}

func benchScenarios(d time.Duration) []benchScenario {
	c := func(op string, n int, src string) benchScenario {
		return benchScenario{op: op, sh: shape{clients: n, d: d}, source: src}
	}
	return []benchScenario{
		c("partner_details", 32, "issue 2: authenticated no-op"),
		c("partner_details", 4, "issue 2: authenticated no-op"),
		c("account_details", 16, "issue 18: one key, against pgbench"),
		c("card_details", 16, "issue 18: one key, against pgbench"),
		c("account_details", 50, "issue 8"),
		c("accounts_list", 50, "issue 8"),
		c("account_create", 32, "issue 8"),
		c("card_details", 50, "issue 9"),
		c("card_create", 32, "issue 9"),
		c("transfer", 32, "issue 10: random pairs among 50 accounts"),
		c("transfer_hot_out", 32, "issue 10: one hot account → 200"),
		c("transfer_hot_in", 32, "issue 10: 200 → one hot account"),
		c("onboarding", 4, "issue 11: application to approval"),
		c("people", 8, "issue 11: user + AML + KYC"),
		c("issue", 16, "issue 11: account + card"),
		c("card_ops", 16, "issue 11: card reads and status changes"),
		c("mixed", 32, "issue 11: mixed ratio, closed loop"),
		{op: "mixed", sh: shape{inflight: 256, d: d}, source: "issue 11: mixed ratio, open loop at half the closed-loop throughput", halfMixed: true},
	}
}

// goBenchCmd is one `go test -bench` invocation: the sets and bench times
// the earlier issues used.
type goBenchCmd struct{ pkg, bench, benchtime string }

var goBenchCmds = []goBenchCmd{
	{"./web/api/", "AuthMiddleware|PartnerDetails|Authenticate|VerifySignature", ""},
	{"./web/api/", "AMLCheckAPI|UserCreate", "500x"},
	{"./web/api/", "ApplicationToApproval|ApplicationCreate1MiB", "20x"},
	{"./web/portal/", ".", ""},
	{"./internal/app/", "WebhookDeliveryThroughput", "2000x"},
	{"./internal/app/", "WebhookDeliveryDelay", "1x"},
	{"./internal/service/", "Rekey", ""},
	// Issue 32 item 7: transaction monitoring on against off, in one run.
	{"./internal/service/servicetest/", "MonitoringOverhead", "1x"},
	{"./internal/screening/", "Screen", "20000x"},
	{"./internal/screening/", "Load", "3x"},
	{"./internal/seal/", ".", ""},
	{"./internal/webhook/", ".", ""},
}

func (g goBenchCmd) args() []string {
	a := []string{"test", "-count=1", "-run", "^$", "-bench", g.bench, "-benchmem"}
	if g.benchtime != "" {
		a = append(a, "-benchtime", g.benchtime)
	}
	return append(a, g.pkg)
}

// goBench is one parsed benchmark line.
type goBench struct {
	Pkg, Name, N string
	Metrics      [][2]string // value, unit
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.*)$`)

// parseGoBench reads `go test -bench` output.
func parseGoBench(out string) []goBench {
	var res []goBench
	pkg := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		b := goBench{Pkg: pkg, Name: m[1], N: m[2]}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			b.Metrics = append(b.Metrics, [2]string{f[i], f[i+1]})
		}
		res = append(res, b)
	}
	return res
}

// machine describes where the figures come from.
type machine struct {
	CPU, Cores, Memory, OS, Go, Postgres string
}

func describeMachine(ctx context.Context, db *sql.DB) machine {
	m := machine{Cores: fmt.Sprint(runtime.NumCPU()), CPU: "unknown", Memory: "unknown", OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for l := range strings.SplitSeq(string(b), "\n") {
			if _, err := fmt.Sscanf(l, "MemTotal: %d kB", &kb); err == nil {
				m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				break
			}
		}
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.OS += ", Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	if db != nil {
		_ = db.QueryRowContext(ctx, `SELECT version()`).Scan(&m.Postgres)
		if i := strings.Index(m.Postgres, " on "); i > 0 {
			m.Postgres = m.Postgres[:i]
		}
	}
	return m
}

// report is everything `make bench` writes.
type report struct {
	Date     time.Time
	Machine  machine
	Setup    []string // commands, in order
	Duration time.Duration
	Partner  string
	Results  []Result
	Sources  []string // per result: the issue that asked for it
	Commands []string // per result: the standalone emi-load command
	GoCmds   []string
	GoBench  []goBench
	GoFailed []string
	Notes    []string
	// ServerErrors are the error lines of the server's log.
	ServerErrors []string
	// PGBench compares emi with pgbench running the same SQL.
	PGBench   []pgbenchRun
	PGCmds    []string
	PGSkipped string
	// Targets are the ratios to pgbench emi aims for; Profiles where the
	// time goes.
	Targets  []ratioRow
	Profiles []profile
	// Data is what the scenarios run on; Took the whole run.
	Data string
	Took time.Duration
}

func rate(s Stats) string {
	if s.Rate >= 100 {
		return fmt.Sprintf("%.0f/s", s.Rate)
	}
	return fmt.Sprintf("%.1f/s", s.Rate)
}

// renderReport writes the markdown report.
func renderReport(w io.Writer, r report) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# emi benchmark report\n\n")
	p("Written by `make bench` (`go run ./cmd/emi-load bench`) on %s. Every figure below comes from this one run.\n\n", r.Date.UTC().Format("2006-01-02 15:04 MST"))
	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s |\n| cores | %s |\n| memory | %s |\n| OS | %s |\n| Go | %s |\n| PostgreSQL | %s |\n\n",
		r.Machine.CPU, r.Machine.Cores, r.Machine.Memory, r.Machine.OS, r.Machine.Go, r.Machine.Postgres)
	renderTargets(w, r.Targets, nil)
	p("The load generator, `emi serve` and PostgreSQL share these cores")
	for _, n := range r.Notes {
		p("; %s", n)
	}
	p(".\n\n## Setup\n\n```sh\n")
	for _, c := range r.Setup {
		p("%s\n", c)
	}
	p("```\n\n")
	p("## Scenarios\n\n")
	if r.Data != "" {
		p("Data: %s.\n\n", r.Data)
	}
	p("Each scenario runs for %s against the server above. A flow is what one client does once: one request for the single operations, several for onboarding, people, issue and card_ops. Latency is per flow, from its start (open loop: from its intended start, so a queue in the server is not hidden) to its last answer. Errors are transport errors, 5xx answers and answers the flow did not expect. `underwriter_approve` is not an HTTP request: approving an application is a back-office decision with no partner API, so the onboarding flow claims and approves through the service layer as an underwriter (a staff principal) and times that in-process.\n\n", r.Duration)
	p("| scenario | load | flows | throughput | p50 | p95 | p99 | max | errors | answers |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, res := range r.Results {
		t := res.Total()
		load := res.Shape
		if res.Late > 0 || strings.Contains(res.Shape, "open loop") {
			load += fmt.Sprintf(", %d late starts", res.Late)
		}
		if res.Repeats > 0 {
			load += fmt.Sprintf(", %d repeats signed v2 with a nonce", res.Repeats)
		}
		answers := requestCodes(res)
		p("| %s | %s | %d | %s | %s | %s | %s | %s | %d | %s |\n", res.Scenario, load, t.Count, rate(t), ms(t.P50), ms(t.P95), ms(t.P99), ms(t.Max), t.Errors, answers)
	}
	p("\n")
	for i, res := range r.Results {
		if res.Scenario != "mixed" && len(res.Requests) < 2 {
			continue
		}
		p("### %s, %s: per flow and per request\n\n", res.Scenario, res.Shape)
		p("| | name | count | throughput | p50 | p95 | p99 | max | errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range res.Flows {
			p("| flow | %s | %d | %s | %s | %s | %s | %s | %d |\n", s.Name, s.Count, rate(s), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max), s.Errors)
		}
		for _, s := range res.Requests {
			p("| request | %s | %d | %s | %s | %s | %s | %s | %d |\n", s.Name, s.Count, rate(s), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max), s.Errors)
		}
		if res.Scenario == "mixed" && i >= 0 {
			p("\nMix (percent of flow starts): ")
			var parts []string
			for _, m := range mixedRatio {
				parts = append(parts, fmt.Sprintf("%s %d", m.Flow, m.Weight))
			}
			p("%s.\n", strings.Join(parts, ", "))
		}
		p("\n")
	}
	p("### Where each scenario comes from, and the command that runs it alone\n\n| scenario | load | asked for by | command |\n|---|---|---|---|\n")
	for i, res := range r.Results {
		p("| %s | %s | %s | `%s` |\n", res.Scenario, res.Shape, r.Sources[i], r.Commands[i])
	}
	if len(r.PGBench) > 0 || r.PGSkipped != "" {
		p("\n## emi against pgbench running the same SQL (issues 8 and 9: goal ≥ 0.6)\n\n")
		if r.PGSkipped != "" {
			p("Not run: %s.\n", r.PGSkipped)
		} else {
			p("The scripts run, per transaction, the statements the request runs (key lookup, replay guard, the transaction), so the ratio is what emi's HTTP, JSON, HMAC, AES and Go add.\n\n```sh\n")
			for _, c := range r.PGCmds {
				p("%s\n", c)
			}
			p("```\n\n| operation | emi, 32 clients | pgbench, 32 clients | emi / pgbench |\n|---|---:|---:|---:|\n")
			for _, x := range r.PGBench {
				ratio := "—"
				if x.TPS > 0 && x.Emi > 0 {
					ratio = fmt.Sprintf("%.2f", x.Emi/x.TPS)
				}
				p("| %s | %.0f req/s | %.0f tps (latency average %s) | %s |\n", x.Op, x.Emi, x.TPS, x.Latency, ratio)
			}
		}
	}
	p("\n")
	renderTargets(w, nil, r.Profiles)
	p("\n## Go benchmarks\n\n```sh\n")
	for _, c := range r.GoCmds {
		p("%s\n", c)
	}
	p("```\n\n| package | benchmark | iterations | time/op | B/op | allocs/op | other |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, b := range r.GoBench {
		var t, bop, allocs string
		var other []string
		for _, m := range b.Metrics {
			switch m[1] {
			case "ns/op":
				t = nsText(m[0])
			case "B/op":
				bop = m[0]
			case "allocs/op":
				allocs = m[0]
			default:
				other = append(other, m[0]+" "+m[1])
			}
		}
		p("| %s | %s | %s | %s | %s | %s | %s |\n", strings.TrimPrefix(b.Pkg, "emi/"), b.Name, b.N, t, bop, allocs, strings.Join(other, ", "))
	}
	if r.Took > 0 {
		p("\nThe whole `make bench` took %s.\n", r.Took.Round(time.Second))
	}
	for _, f := range r.GoFailed {
		p("\n**Failed:** %s\n", f)
	}
	if len(r.ServerErrors) > 0 {
		p("\n## Errors the server logged\n\n```\n")
		for _, e := range r.ServerErrors {
			p("%s\n", e)
		}
		p("```\n")
	}
}

// serverErrors are the error-level lines of a JSON server log.
func serverErrors(log []byte) []string {
	var out []string
	for l := range strings.SplitSeq(string(log), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			out = append(out, l)
		}
	}
	return out
}

// requestCodes lists a scenario's answers by HTTP status and envelope code,
// over all its requests.
func requestCodes(res Result) string {
	all := map[string]int{}
	for _, s := range res.Requests {
		for k, v := range s.Codes {
			all[k] += v
		}
	}
	return codesText(all)
}

func nsText(v string) string {
	var ns float64
	if _, err := fmt.Sscanf(v, "%g", &ns); err != nil {
		return v
	}
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// moduleRoot is the directory of go.mod at or above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no go.mod at or above " + dir)
		}
	}
}

// benchMain is `make bench`: a fresh database, a built server on a free
// port, every scenario, the Go benchmarks and one markdown report.
func benchMain(ctx context.Context, args []string, getenv func(string) string, out io.Writer) (err error) {
	fs := newFlags()
	dur := fs.Duration("d", 6*time.Second, "duration of each scenario")
	reportPath := fs.String("report", "cmd/emi-load/REPORT.md", "where the markdown report goes")
	nAccounts := fs.Int("accounts", 20000, "accounts `emi generate cards` creates (half of them get a card, half stay free for card_create)")
	nkeys := fs.Int("keys", 1, "API keys of the Bench Partner the load signs with (1: as a partner does)")
	goBenches := fs.Bool("go", true, "run the Go benchmarks too")
	only := fs.String("only", "", "run only the scenarios whose name contains this (for trying the harness; \"pgbouncer\": only the rows through PgBouncer)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(out, "bench: "+format+"\n", a...) }
	admin := getenv("EMI_TEST_ADMIN_URL")
	if admin == "" {
		o, err := exec.CommandContext(ctx, "bash", filepath.Join(root, ".ci/postgres.sh")).Output() // #nosec G204 -- the repository's own script
		if err != nil {
			return fmt.Errorf(".ci/postgres.sh: %w", err)
		}
		admin = strings.TrimSpace(string(o))
	}
	goAdmin := admin
	admin, stopPG, err := statsCluster(ctx, root, admin, getenv, logf)
	if err != nil {
		return err
	}
	defer stopPG()
	sanctions := getenv("EMI_SANCTIONS_DIR")
	if sanctions == "" {
		sanctions = filepath.Join(root, "..", "shared", "data", "sanctions")
		if _, err := os.Stat(sanctions); err != nil {
			return fmt.Errorf("sanctions lists: set EMI_SANCTIONS_DIR (no %s)", sanctions)
		}
	}
	if sanctions, err = filepath.Abs(sanctions); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "emi-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	r := report{Date: time.Now(), Duration: *dur,
		Data: fmt.Sprintf("%d generated accounts of %d users, %d of them with a virtual card (the earlier issues measured the reads with 1,000,000; "+
			"an indexed read by token barely depends on the table size, a list a little more)", *nAccounts, (*nAccounts+9)/10, *nAccounts-*nAccounts/2)}
	r.Notes = append(r.Notes, "other people's tests may share the machine during a run, so take the figures as lower bounds that vary from run to run")

	// A fresh database on the cluster.
	adminDB, err := sql.Open("postgres", admin)
	if err != nil {
		return err
	}
	defer func() { _ = adminDB.Close() }()
	dbName := fmt.Sprintf("emi_bench_%d_%d", time.Now().Unix(), os.Getpid())
	if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	logf("database %s", dbName)
	defer func() {
		if _, derr := adminDB.ExecContext(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)"); derr != nil && err == nil {
			err = fmt.Errorf("drop database: %w", derr)
		}
	}()
	u, err := url.Parse(admin)
	if err != nil {
		return err
	}
	u.Path = "/" + dbName
	dbURL := u.String()
	r.Machine = describeMachine(ctx, adminDB)

	mk := make([]byte, 32)
	_, _ = rand.Read(mk)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	base := "http://" + addr
	dln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	debugAddr := dln.Addr().String()
	_ = dln.Close()
	env := map[string]string{
		"DATABASE_URL": dbURL, "EMI_MASTER_KEY": base64.StdEncoding.EncodeToString(mk), "EMI_MODE": "sandbox",
		"EMI_ADDR": addr, "EMI_PUBLIC_URL": base, "EMI_SANCTIONS_DIR": sanctions,
		"EMI_RATE_LIMIT": "0", "EMI_LOG_LEVEL": "warn", "EMI_DEBUG_ADDR": debugAddr,
	}
	envList := os.Environ()
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	getenvBench := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return getenv(k)
	}
	bin := filepath.Join(tmp, "emi")
	sh := func(name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = root, envList
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		logf("%s %s", filepath.Base(name), strings.Join(args, " "))
		err := cmd.Run()
		if err != nil {
			return buf.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, buf.String())
		}
		return buf.String(), nil
	}
	r.Setup = append(r.Setup,
		"# a fresh database on the local cluster (bash .ci/postgres.sh prints the admin URL)",
		"psql \"$ADMIN_URL\" -c 'CREATE DATABASE "+dbName+"'",
		"export DATABASE_URL=…/"+dbName+" EMI_MASTER_KEY=(32 random bytes, base64) EMI_MODE=sandbox EMI_ADDR="+addr+" EMI_RATE_LIMIT=0 EMI_LOG_LEVEL=warn EMI_DEBUG_ADDR=127.0.0.1:… EMI_SANCTIONS_DIR=…/shared/data/sanctions",
		"go build -o $TMP/emi ./cmd/emi")
	if _, err := sh("go", "build", "-o", bin, "./cmd/emi"); err != nil {
		return err
	}
	gen := []string{"generate", "cards", "--count", fmt.Sprint(*nAccounts), "--free", fmt.Sprint(*nAccounts / 2)}
	var genOut string
	for _, step := range [][]string{{"migrate"}, {"seed"}, gen} {
		o, err := sh(bin, step...)
		if err != nil {
			return err
		}
		r.Setup = append(r.Setup, "$TMP/emi "+strings.Join(step, " "))
		genOut = o
	}
	benchDB, err := sql.Open("postgres", dbURL)
	if err != nil {
		return err
	}
	defer func() { _ = benchDB.Close() }()
	if _, err := benchDB.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	r.Setup = append(r.Setup, "psql \"$DATABASE_URL\" -c 'CREATE EXTENSION pg_stat_statements'   # the cluster preloads it (see statsCluster)")
	m := regexp.MustCompile(`for partner (\S+)`).FindStringSubmatch(genOut)
	if m == nil {
		return fmt.Errorf("no partner in the output of emi generate: %s", genOut)
	}
	r.Partner = m[1]
	logf("%s", strings.TrimSpace(genOut))
	// The cluster's postmaster, whose processes' CPU time the report
	// splits from emi's and the load generator's (cpu.go).
	postmaster := 0
	var backend int
	if err := benchDB.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err == nil {
		if _, _, ppid, err := procStat(backend); err == nil {
			postmaster = ppid
		} else {
			logf("CPU accounting off: %v", err)
		}
	}

	// The server, built to the temporary directory.
	srvLog, err := os.Create(filepath.Join(tmp, "serve.log")) // #nosec G304 -- our own temporary directory
	if err != nil {
		return err
	}
	defer func() { _ = srvLog.Close() }()
	srv := exec.Command(bin, "serve") // #nosec G204 -- the binary we just built
	srv.Dir, srv.Env, srv.Stdout, srv.Stderr = root, envList, srvLog, srvLog
	if err := srv.Start(); err != nil {
		return err
	}
	r.Setup = append(r.Setup, "$TMP/emi serve &")
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		stopServe(srv, 40*time.Second)
	}
	defer stop()
	if err := waitHealthy(ctx, base+"/healthz", 90*time.Second); err != nil {
		b, _ := os.ReadFile(srvLog.Name())
		return fmt.Errorf("%w\n%s", err, b)
	}
	logf("emi serve is up on %s", addr)

	h, c, err := prepare(ctx, getenvBench, base, prepareOpts{keys: *nkeys, partner: r.Partner, pairs: 50, cold: 200, fund: true})
	if err != nil {
		return err
	}
	defer h.app.Close()
	r.Setup = append(r.Setup, fmt.Sprintf("# emi-load mints %d API key(s) of the Bench Partner and an underwriter, and funds 201 balances (service layer)", *nkeys))
	var mixedRate float64
	for _, s := range benchScenarios(*dur) {
		if *only != "" && !strings.Contains(s.op, *only) {
			continue
		}
		if s.halfMixed {
			if mixedRate <= 0 {
				continue
			}
			s.sh.rate = math.Max(1, math.Round(mixedRate/2))
		}
		logf("scenario %s, %s", s.op, s.sh)
		var finish func() (string, error)
		var meter *cpuMeter
		prof := s.sh.rate == 0 && profiled(s.op, s.sh.clients)
		if prof {
			if _, err := benchDB.ExecContext(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
				return err
			}
			finish = startProfile(ctx, "http://"+debugAddr, bin, tmp, fmt.Sprintf("%s-%d", s.op, s.sh.clients), s.sh.d-500*time.Millisecond)
			if postmaster > 0 {
				if meter, err = startCPU(srv.Process.Pid, os.Getpid(), postmaster); err != nil {
					logf("CPU accounting: %v", err)
				}
			}
		}
		res, err := h.scenario(ctx, c, s.op, s.sh)
		if err != nil {
			return err
		}
		if prof {
			pr := profile{Scenario: s.op, Shape: s.sh.String(), Flows: res.Total().Count}
			var errs []string
			if meter != nil {
				if pr.CPU, err = meter.stop(0); err != nil {
					errs = append(errs, "CPU accounting: "+err.Error())
				}
			}
			top, err := finish()
			if err != nil {
				errs = append(errs, "CPU profile: "+err.Error())
			}
			pr.Top = top
			if pr.Statements, err = statements(ctx, benchDB, pr.Flows); err != nil {
				errs = append(errs, "pg_stat_statements: "+err.Error())
			}
			pr.Err = strings.Join(errs, "; ")
			r.Profiles = append(r.Profiles, pr)
		}
		writeText(out, res)
		if s.op == "mixed" && s.sh.rate == 0 {
			mixedRate = res.Total().Rate
		}
		r.Results = append(r.Results, res)
		r.Sources = append(r.Sources, s.source)
		load := fmt.Sprintf("-c %d", s.sh.clients)
		if s.sh.rate > 0 {
			load = fmt.Sprintf("-rate %g -inflight %d", s.sh.rate, s.sh.inflight)
		}
		extra := ""
		switch s.op {
		case "transfer":
			extra = " -accounts 50"
		case "transfer_hot_out", "transfer_hot_in":
			extra = " -accounts 200"
		}
		r.Commands = append(r.Commands, fmt.Sprintf("emi-load -keys %d -op %s %s -d %s -partner P%s", *nkeys, s.op, load, *dur, extra))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if *only == "" || strings.Contains("pgbouncer", *only) {
		pp := poolerPhase{root: root, bin: bin, dbURL: dbURL, tmp: tmp, envList: envList, logf: logf, out: out}
		res, sources, cmds, note, err := pp.run(ctx, h, c, *dur)
		if err != nil {
			return err
		}
		r.Results, r.Sources, r.Commands = append(r.Results, res...), append(r.Sources, sources...), append(r.Commands, cmds...)
		if note != "" {
			r.Notes = append(r.Notes, note)
		}
	}
	stop()
	b, _ := os.ReadFile(srvLog.Name())
	if errs := serverErrors(b); len(errs) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("the server logged %d errors during the run (listed at the end)", len(errs)))
		r.ServerErrors = errs
		for _, e := range errs {
			logf("server error: %s", e)
		}
	}

	if _, err := exec.LookPath("pgbench"); err != nil {
		r.PGSkipped = "pgbench is not installed"
	} else if err := runPGBench(ctx, &r, dbURL, root, tmp, *dur, postmaster, logf); err != nil {
		return err
	}

	if *goBenches {
		for _, g := range goBenchCmds {
			cmd := exec.CommandContext(ctx, "go", g.args()...) // #nosec G204 -- fixed arguments
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "EMI_TEST_ADMIN_URL="+goAdmin, "EMI_SANCTIONS_DIR="+sanctions)
			line := "go " + strings.Join(quoteArgs(g.args()), " ")
			logf("%s", line)
			o, err := cmd.CombinedOutput()
			r.GoCmds = append(r.GoCmds, line)
			r.GoBench = append(r.GoBench, parseGoBench(string(o))...)
			if err != nil {
				r.GoFailed = append(r.GoFailed, fmt.Sprintf("`%s`: %v", line, err))
				fmt.Fprintf(out, "%s\n", o)
			}
		}
	}
	r.Took = time.Since(r.Date)
	var buf bytes.Buffer
	renderReport(&buf, r)
	path := *reportPath
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return err
	}
	logf("report written to %s", path)
	return nil
}

func quoteArgs(a []string) []string {
	out := make([]string, len(a))
	for i, s := range a {
		if strings.ContainsAny(s, "|^$ *") {
			s = "'" + s + "'"
		}
		out[i] = s
	}
	return out
}

func waitHealthy(ctx context.Context, u string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("%s did not answer 200 within %s", u, limit)
}

// pgbenchRun is one comparison.
type pgbenchRun struct {
	Op      string
	Emi     float64 // req/s of the emi scenario of the same name
	TPS     float64
	Latency string
}

var (
	tpsLine  = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	uuidLike = regexp.MustCompile(`^[0-9a-f-]{36}$`)
)

// runPGBench prepares the tables the pgbench scripts read (the Bench
// Partner's users, accounts, cards, and its accounts still without a card)
// and runs every script of the targets (targets.go), with the clients of
// the emi scenario it is compared with, for d each.
func runPGBench(ctx context.Context, r *report, dbURL, root, tmp string, d time.Duration, postmaster int, logf func(string, ...any)) error {
	if !uuidLike.MatchString(r.Partner) {
		return fmt.Errorf("partner id %q", r.Partner)
	}
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	p := r.Partner
	for _, q := range []string{
		`CREATE TABLE bench_users AS SELECT row_number() OVER () AS i, token FROM users WHERE partner_id = '` + p + `' AND status = 'active'`,
		`CREATE UNIQUE INDEX ON bench_users (i)`,
		`CREATE TABLE bench_accounts AS SELECT row_number() OVER () AS i, token FROM accounts WHERE partner_id = '` + p + `'`,
		`CREATE UNIQUE INDEX ON bench_accounts (i)`,
		`CREATE TABLE bench_cards AS SELECT row_number() OVER () AS i, token FROM cards WHERE partner_id = '` + p + `' AND status = 'active'`,
		`CREATE UNIQUE INDEX ON bench_cards (i)`,
		`CREATE TABLE bench_free AS SELECT row_number() OVER () AS i, a.token FROM accounts a WHERE a.partner_id = '` + p + `'
			AND a.status = 'active' AND NOT a.virtual AND a.program = 'account_eur' AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.account = a.token)`,
		`CREATE UNIQUE INDEX ON bench_free (i)`,
		`CREATE SEQUENCE bench_free_seq`,
		`ANALYZE`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("pgbench setup: %w", err)
		}
	}
	var nusers, naccounts, ncards, nfree int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM bench_users), (SELECT count(*) FROM bench_accounts),
		(SELECT count(*) FROM bench_cards), (SELECT count(*) FROM bench_free)`).Scan(&nusers, &naccounts, &ncards, &nfree); err != nil {
		return fmt.Errorf("pgbench setup: %w", err)
	}
	r.PGCmds = append(r.PGCmds, "# bench_users, bench_accounts, bench_cards: the Bench Partner's users, accounts and cards (i = 1..n); bench_free: its accounts without a card (+ bench_free_seq); see each script's header")
	defs := []string{"partner=" + p, fmt.Sprintf("nusers=%d", nusers), fmt.Sprintf("naccounts=%d", naccounts), fmt.Sprintf("ncards=%d", ncards)}
	red := strings.NewReplacer(p, "P")
	emiStats := func(op string, clients int) Stats {
		for _, res := range r.Results {
			if res.Scenario == op && res.Shape == fmt.Sprintf("%d clients", clients) {
				return res.Total()
			}
		}
		return Stats{}
	}
	for _, t := range targets {
		if emiStats(t.op, t.clients).Count == 0 {
			continue // the scenario did not run (-only)
		}
		logf("pgbench %s, %d clients", t.script, t.clients)
		res := runPGBenchScript(ctx, root, dbURL, tmp, t.script, t.mode, t.clients, d, defs, red, postmaster)
		if res.FailedMessage != "" {
			r.GoFailed = append(r.GoFailed, fmt.Sprintf("`%s`: %s", res.Command, res.FailedMessage))
		}
		row := ratioRow{t: t, emi: emiStats(t.op, t.clients), pg: res}
		for _, pr := range r.Profiles {
			if pr.Scenario == t.op && pr.Shape == fmt.Sprintf("%d clients", t.clients) {
				row.emiCPU = pr.CPU
			}
		}
		r.Targets = append(r.Targets, row)
	}
	if nfree < 1000*max(1, int(d.Seconds())) {
		r.Notes = append(r.Notes, fmt.Sprintf("card_create's pgbench had %d accounts without a card for %s", nfree, d))
	}
	return nil
}

// stopServe sends SIGTERM to a started `emi serve` and waits for it,
// killing it after within.
func stopServe(srv *exec.Cmd, within time.Duration) {
	_ = srv.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		_ = srv.Process.Kill()
		<-done
	}
}
