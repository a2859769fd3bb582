package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Where the time of a request goes, and how close emi gets to the
// database's own limit. For the operations below, `make bench` takes a CPU
// profile of emi serve (its EMI_DEBUG_ADDR endpoint) and the statements the
// run executed (pg_stat_statements), then runs pgbench on the same
// database, and writes the ratios first in the report.

// target is one ratio of emi to pgbench that emi aims for.
type target struct {
	op      string // emi scenario
	clients int
	script  string // pgbench script in cmd/emi-load
	what    string // what the script runs
	goal    float64
	// mode is pgbench's query protocol (-M): the one emi uses for these
	// statements. The reads and the replay guard run as prepared
	// statements (postgres.DB.getPrepared), so their scripts do too;
	// account_create and card_create send unnamed statements, which cost
	// the server what simple ones do.
	mode string
}

var targets = []target{
	{"account_details", 16, "account_read.pgbench.sql", "one account read by token", 0.35, "prepared"},
	{"card_details", 16, "card_read.pgbench.sql", "one card read by token", 0.35, "prepared"},
	{"account_details", 16, "account_details.pgbench.sql", "the statements account_details executes", 0.8, "prepared"},
	{"card_details", 16, "card_details.pgbench.sql", "the statements card_details executes", 0.8, "prepared"},
	{"account_create", 32, "account_create.pgbench.sql", "the statements account_create executes", 0.8, "simple"},
	{"card_create", 32, "card_create.pgbench.sql", "the statements card_create executes", 0.8, "simple"},
}

// profiled reports whether a scenario run gets a CPU profile and its
// statements recorded.
func profiled(op string, clients int) bool {
	for _, t := range targets {
		if t.op == op && t.clients == clients {
			return true
		}
	}
	return false
}

// pgbenchResult is one pgbench run with its latency percentiles (from its
// per-transaction log).
type pgbenchResult struct {
	Script        string
	Clients       int
	TPS           float64
	P50, P99      time.Duration
	Command       string
	Transactions  int
	FailedMessage string
	CPU           cpuUse // where the cores went during the run
}

// statement is one line of pg_stat_statements.
type statement struct {
	Calls          int64
	PerRequest     float64
	MeanMs, TotalS float64
	Query          string
}

// profile is what one profiled scenario shows.
type profile struct {
	Scenario   string
	Shape      string
	Flows      int
	Statements []statement
	Top        string // go tool pprof -top
	CPU        cpuUse // where the cores went during the run
	Err        string
}

// statsCluster returns the admin URL of a cluster that preloads
// pg_stat_statements: admin's when it does, otherwise a cluster of the
// benchmark's own (.ci/postgres.sh on EMI_BENCH_PG_PORT, default 54339,
// with shared_preload_libraries set and restarted once), which stop
// stops. The shared development cluster is never restarted: other
// people's tests run on it.
func statsCluster(ctx context.Context, root, admin string, getenv func(string) string, logf func(string, ...any)) (url string, stop func(), err error) {
	if preloads(ctx, admin) {
		return admin, func() {}, nil
	}
	port := getenv("EMI_BENCH_PG_PORT")
	if port == "" {
		port = "54339"
	}
	env := []string{"EMI_PG_PORT=" + port}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PG_ADMIN_URL=") && !strings.HasPrefix(e, "EMI_PG_PORT=") && !strings.HasPrefix(e, "EMI_PG_DATA=") {
			env = append(env, e)
		}
	}
	script := filepath.Join(root, ".ci/postgres.sh")
	pg := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...) // #nosec G204 -- the repository's own script
		cmd.Env = env
		cmd.Stderr = io.Discard
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	stop = func() { _, _ = pg("stop") }
	logf("the cluster at %s does not preload pg_stat_statements: starting the benchmark's own on port %s", redact(admin), port)
	if url, err = pg(); err != nil {
		return "", nil, fmt.Errorf(".ci/postgres.sh (port %s): %w", port, err)
	}
	if !preloads(ctx, url) {
		db, err := sql.Open("postgres", url)
		if err != nil {
			return "", nil, err
		}
		_, err = db.ExecContext(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`)
		_ = db.Close()
		if err != nil {
			return "", nil, fmt.Errorf("enable pg_stat_statements: %w", err)
		}
		stop()
		if url, err = pg(); err != nil {
			return "", nil, fmt.Errorf(".ci/postgres.sh restart (port %s): %w", port, err)
		}
		if !preloads(ctx, url) {
			return "", nil, fmt.Errorf("the cluster on port %s does not preload pg_stat_statements after a restart", port)
		}
	}
	return url, stop, nil
}

func preloads(ctx context.Context, url string) bool {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return false
	}
	defer func() { _ = db.Close() }()
	var libs string
	return db.QueryRowContext(ctx, `SHOW shared_preload_libraries`).Scan(&libs) == nil && strings.Contains(libs, "pg_stat_statements")
}

func redact(u string) string {
	if i := strings.Index(u, "?"); i > 0 {
		return u[:i]
	}
	return u
}

// startProfile asks emi serve's pprof endpoint for a CPU profile of d and
// returns a function that waits for it and renders its top functions.
func startProfile(ctx context.Context, debugBase, bin, dir, name string, d time.Duration) func() (string, error) {
	type result struct {
		path string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		secs := max(1, int(d.Seconds()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", debugBase, secs), nil)
		if err != nil {
			ch <- result{err: err}
			return
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer func() { _ = res.Body.Close() }()
		if res.StatusCode != http.StatusOK {
			ch <- result{err: fmt.Errorf("pprof: HTTP %d", res.StatusCode)}
			return
		}
		path := filepath.Join(dir, name+".pprof")
		f, err := os.Create(path) // #nosec G304 -- our temporary directory
		if err != nil {
			ch <- result{err: err}
			return
		}
		_, err = io.Copy(f, res.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		ch <- result{path: path, err: err}
	}()
	return func() (string, error) {
		r := <-ch
		if r.err != nil {
			return "", r.err
		}
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=35", bin, r.path).CombinedOutput() // #nosec G204 -- our binary and profile
		if err != nil {
			return "", fmt.Errorf("go tool pprof: %w: %s", err, out)
		}
		return string(out), nil
	}
}

// statements reads pg_stat_statements for the database, most called first.
func statements(ctx context.Context, db *sql.DB, flows int) ([]statement, error) {
	rows, err := db.QueryContext(ctx, `SELECT calls, mean_exec_time, total_exec_time / 1000, regexp_replace(query, '\s+', ' ', 'g')
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND query NOT ILIKE '%pg_stat_statements%' ORDER BY calls DESC, total_exec_time DESC LIMIT 14`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []statement
	for rows.Next() {
		var s statement
		if err := rows.Scan(&s.Calls, &s.MeanMs, &s.TotalS, &s.Query); err != nil {
			return nil, err
		}
		if flows > 0 {
			s.PerRequest = float64(s.Calls) / float64(flows)
		}
		if len(s.Query) > 220 {
			s.Query = s.Query[:220] + "…"
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// runPGBenchScript runs one script for d with n clients and computes the
// latency percentiles from pgbench's per-transaction log.
func runPGBenchScript(ctx context.Context, root, dbURL, dir, script, mode string, n int, d time.Duration, defs []string, redactor *strings.Replacer, postmaster int) pgbenchResult {
	secs := max(1, int(d.Seconds()))
	prefix := filepath.Join(dir, strings.TrimSuffix(script, ".pgbench.sql")+"-"+strconv.Itoa(n))
	args := []string{"-n", "-M", mode, "-c", strconv.Itoa(n), "-j", "2", "-T", strconv.Itoa(secs), "-l", "--log-prefix", prefix}
	for _, def := range defs {
		args = append(args, "-D", def)
	}
	args = append(args, "-f", filepath.Join("cmd", "emi-load", script))
	res := pgbenchResult{Script: script, Clients: n,
		Command: redactor.Replace("pgbench " + strings.Join(args, " ") + ` "$DATABASE_URL"`)}
	res.Command = strings.ReplaceAll(res.Command, prefix, "$TMP/"+filepath.Base(prefix))
	cmd := exec.CommandContext(ctx, "pgbench", append(args, dbURL)...) // #nosec G204 -- fixed arguments and our database
	cmd.Dir = root
	var meter *cpuMeter
	if postmaster > 0 {
		meter, _ = startCPU(0, 0, postmaster) // nil when /proc cannot say: the report then leaves the CPU columns out
	}
	out, err := cmd.CombinedOutput()
	if meter != nil && cmd.ProcessState != nil {
		res.CPU, _ = meter.stop(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
	}
	if err != nil {
		o := strings.TrimSpace(string(out))
		res.FailedMessage = fmt.Sprintf("%v: %s", err, o[max(0, len(o)-300):])
		return res
	}
	if m := tpsLine.FindSubmatch(out); m != nil {
		res.TPS, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	lat, err := pgbenchLatencies(prefix)
	if err != nil {
		res.FailedMessage = err.Error()
		return res
	}
	slices.Sort(lat)
	res.Transactions = len(lat)
	res.P50, res.P99 = percentile(lat, .50), percentile(lat, .99)
	return res
}

// pgbenchLatencies reads the per-transaction logs (prefix.PID[.thread]):
// the third field of each line is the latency in microseconds.
func pgbenchLatencies(prefix string) ([]time.Duration, error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no pgbench log at %s.*", prefix)
	}
	var lat []time.Duration
	for _, f := range files {
		fh, err := os.Open(f) // #nosec G304 -- our temporary directory
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fs[2], 10, 64)
			if err != nil {
				continue
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
		_ = fh.Close()
		_ = os.Remove(f)
	}
	return lat, nil
}

// ratioRow is one line of the report's first table.
type ratioRow struct {
	t      target
	emi    Stats
	emiCPU cpuUse // of the emi run, from its profile
	pg     pgbenchResult
}

// serverRatio is the ratio of the server sides alone (an estimate, see
// serverSideCapacity): emi serve and PostgreSQL against PostgreSQL under
// pgbench, each per request, without either load generator's CPU.
func (r ratioRow) serverRatio() float64 {
	e := serverSideCapacity(r.emiCPU, r.emi.Count)
	p := serverSideCapacity(r.pg.CPU, r.pg.Transactions)
	if e <= 0 || p <= 0 {
		return 0
	}
	return e / p
}

func (r ratioRow) ratio() float64 {
	if r.pg.TPS <= 0 {
		return 0
	}
	return r.emi.Rate / r.pg.TPS
}

// renderTargets writes the ratio table and, per profiled scenario, its
// statements and CPU profile.
func renderTargets(w io.Writer, rows []ratioRow, profiles []profile) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	if len(rows) > 0 {
		p("## Issue 18 targets: emi against pgbench, one API key, same run\n\n")
		p("| operation | clients | emi | emi p50 / p99 | pgbench runs | pgbench | pgbench p50 / p99 | ratio | target | met |\n|---|---:|---:|---:|---|---:|---:|---:|---:|---|\n")
		for _, r := range rows {
			met := "no"
			if r.pg.FailedMessage != "" || r.pg.TPS == 0 {
				met = "not measured: " + r.pg.FailedMessage
			} else if r.ratio() >= r.t.goal {
				met = "**yes**"
			}
			p("| %s | %d | %s | %s / %s | %s (`%s`) | %.0f tps | %s / %s | %.2f | ≥ %.2f | %s |\n",
				r.t.op, r.t.clients, rate(r.emi), ms(r.emi.P50), ms(r.emi.P99), r.t.what, r.t.script, r.pg.TPS, ms(r.pg.P50), ms(r.pg.P99), r.ratio(), r.t.goal, met)
		}
		renderCPU(w, rows)
		p("\nThe pgbench runs:\n\n```sh\n")
		for _, r := range rows {
			p("%s\n", r.pg.Command)
		}
		p("```\n\n")
	}
	if len(profiles) == 0 {
		return
	}
	p("## Where a request's time goes\n\nFor each operation of the table, during its emi run: the statements PostgreSQL executed (pg_stat_statements, reset before the run; per request = calls / requests answered) and a CPU profile of `emi serve` (`EMI_DEBUG_ADDR`, net/http/pprof, loopback only) over the run. emi-load and PostgreSQL share the same 2 cores, so the profile's share of the machine is what `emi serve` got, not what it would use alone.\n\n")
	for _, pr := range profiles {
		p("### %s, %s (%d requests)\n\n", pr.Scenario, pr.Shape, pr.Flows)
		if pr.Err != "" {
			p("Not measured: %s.\n\n", pr.Err)
		}
		if len(pr.Statements) > 0 {
			p("| calls | per request | mean | total | statement |\n|---:|---:|---:|---:|---|\n")
			for _, s := range pr.Statements {
				p("| %d | %.3f | %.3f ms | %.2f s | `%s` |\n", s.Calls, s.PerRequest, s.MeanMs, s.TotalS, strings.ReplaceAll(s.Query, "|", "\\|"))
			}
			p("\n")
		}
		if pr.Top != "" {
			p("<details><summary>CPU profile of emi serve (go tool pprof -top)</summary>\n\n```\n%s```\n\n</details>\n\n", pr.Top)
		}
	}
}

// renderCPU writes where the cores went in each compared run: CPU time per
// request of emi serve, of the load generator and of PostgreSQL (cpu.go),
// and the ratio of the server sides alone.
func renderCPU(w io.Writer, rows []ratioRow) {
	measured := false
	for _, r := range rows {
		measured = measured || (r.emiCPU.Wall > 0 && r.pg.CPU.Wall > 0)
	}
	if !measured {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\n### Where the cores went in each compared run\n\n")
	p("CPU time per request (emi) or per transaction (pgbench), from /proc: of `emi serve`, of the load generator (emi-load, or pgbench's own C client) and of the PostgreSQL cluster's processes; \"cores busy\" is the whole machine's, other programs included. ")
	p("\"Server side\" divides the cores by emi serve's and PostgreSQL's CPU per request, leaving the load generator out: an estimate of what the cores would serve with the client on another machine, assuming CPU is the bound. ")
	p("Its ratio compares emi with pgbench on that footing.\n\n")
	p("| operation | clients | run | per second | emi serve | load generator | PostgreSQL | cores busy | server side (estimate) | server-side ratio |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	seen := map[string]bool{}
	for _, r := range rows {
		if r.emiCPU.Wall <= 0 || r.pg.CPU.Wall <= 0 {
			continue
		}
		key := fmt.Sprintf("%s-%d", r.t.op, r.t.clients)
		if !seen[key] {
			seen[key] = true
			u, n := r.emiCPU, r.emi.Count
			p("| %s | %d | emi | %.0f | %.0f µs | %.0f µs | %.0f µs | %.2f of %d | %.0f/s | |\n", r.t.op, r.t.clients, r.emi.Rate,
				per(u.Server, n), per(u.Client, n), per(u.Database, n), u.Busy.Seconds()/u.Wall.Seconds(), u.Cores, serverSideCapacity(u, n))
		}
		u, n := r.pg.CPU, r.pg.Transactions
		ratio := "–"
		if v := r.serverRatio(); v > 0 {
			ratio = fmt.Sprintf("%.2f (target %.2f)", v, r.t.goal)
		}
		p("| %s | %d | pgbench `%s` | %.0f | – | %.0f µs | %.0f µs | %.2f of %d | %.0f/s | %s |\n", r.t.op, r.t.clients, r.t.script, r.pg.TPS,
			per(u.Client, n), per(u.Database, n), u.Busy.Seconds()/u.Wall.Seconds(), u.Cores, serverSideCapacity(u, n), ratio)
	}
}
