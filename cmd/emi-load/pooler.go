package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// poolerPhase is the part of `make bench` behind a transaction-mode pooler
// (production may run behind one): Debian's PgBouncer (.ci/pgbouncer.sh, 10
// server connections) in front of the benchmark's database, three more `emi
// serve` with DATABASE_URL through it and their listeners direct
// (EMI_LISTEN_DATABASE_URL), all in their default configuration
// (EMI_DB_POOLER=transaction), as the direct server. It measures, in this
// order and each for the scenario duration:
//
//   - account_details and card_details with 16 clients against the direct
//     server and then through PgBouncer (one instance), back to back, so
//     the ratio compares the same minute of the machine;
//   - account_details, account_create and card_create with the flows
//     shared round-robin by the three pooled instances.
//
// The rows join the report's table with the path in their shape, and a
// note gives the ratios.
type poolerPhase struct {
	root, bin, dbURL, tmp string
	envList               []string
	logf                  func(string, ...any)
	out                   io.Writer
}

// run returns the results (with their sources and commands), a note, or
// why the phase could not run (nil results, no error: the rest of the
// report stands).
func (p poolerPhase) run(ctx context.Context, h *harness, c *caller, d time.Duration) (res []Result, sources, cmds []string, note string, err error) {
	u, err := url.Parse(p.dbURL)
	if err != nil {
		return nil, nil, nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, "", err
	}
	bouncerPort := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	_ = ln.Close()
	script := filepath.Join(p.root, ".ci/pgbouncer.sh")
	bouncerEnv := append(os.Environ(), "EMI_PGBOUNCER_PORT="+bouncerPort, "EMI_PG_PORT="+u.Port(), "EMI_PG_HOST="+u.Hostname())
	start := exec.CommandContext(ctx, "bash", script) // #nosec G204 -- the repository's own script
	start.Env = bouncerEnv
	if out, err := start.CombinedOutput(); err != nil {
		return nil, nil, nil, fmt.Sprintf("the PgBouncer rows are missing: .ci/pgbouncer.sh failed (%v): %s", err, strings.TrimSpace(string(out))), nil
	}
	defer func() {
		stop := exec.Command("bash", script, "stop") // #nosec G204 -- the repository's own script
		stop.Env = bouncerEnv
		_ = stop.Run()
	}()
	pooled := *u
	pooled.Host = net.JoinHostPort("127.0.0.1", bouncerPort)

	var bases, logs []string
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, nil, "", err
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		logPath := filepath.Join(p.tmp, fmt.Sprintf("serve-pooled-%d.log", i))
		logs = append(logs, logPath)
		lf, err := os.Create(logPath) // #nosec G304 -- our own temporary directory
		if err != nil {
			return nil, nil, nil, "", err
		}
		srv := exec.Command(p.bin, "serve") // #nosec G204 -- the binary the bench built
		srv.Dir, srv.Stdout, srv.Stderr = p.root, lf, lf
		srv.Env = append(append([]string{}, p.envList...), "DATABASE_URL="+pooled.String(), "EMI_LISTEN_DATABASE_URL="+p.dbURL,
			"EMI_ADDR="+addr, "EMI_PUBLIC_URL=http://"+addr, "EMI_DEBUG_ADDR=")
		if err := srv.Start(); err != nil {
			_ = lf.Close()
			return nil, nil, nil, "", err
		}
		defer func() { stopServe(srv, 30*time.Second); _ = lf.Close() }()
		base := "http://" + addr
		if err := waitHealthy(ctx, base+"/healthz", 90*time.Second); err != nil {
			b, _ := os.ReadFile(logPath) // #nosec G304 -- our own temporary directory
			return nil, nil, nil, "", fmt.Errorf("emi serve through PgBouncer: %w\n%s", err, b)
		}
		bases = append(bases, base)
	}
	p.logf("PgBouncer on port %s in front of the benchmark database; 3 emi serve through it", bouncerPort)

	one := func(op string, clients int, to []string, path, cmd string) (Result, error) {
		cc := *c
		cc.base, cc.bases = to[0], to
		r, err := h.scenario(ctx, &cc, op, shape{clients: clients, d: d})
		if err != nil {
			return r, err
		}
		r.Shape += ", " + path
		writeText(p.out, r)
		res = append(res, r)
		sources = append(sources, "issue 30: behind a transaction-mode pooler")
		cmds = append(cmds, cmd)
		return r, nil
	}
	var ratios []string
	for _, op := range []string{"account_details", "card_details"} {
		direct, err := one(op, 16, []string{c.base}, "direct (beside the next row)", fmt.Sprintf("emi-load -op %s -c 16 -d %s -partner P", op, d))
		if err != nil {
			return nil, nil, nil, "", err
		}
		through, err := one(op, 16, bases[:1], "through PgBouncer", fmt.Sprintf("emi-load -op %s -c 16 -d %s -partner P -url <instance through PgBouncer>", op, d))
		if err != nil {
			return nil, nil, nil, "", err
		}
		if dr := direct.Total().Rate; dr > 0 {
			ratios = append(ratios, fmt.Sprintf("%s %.2f ×", op, through.Total().Rate/dr))
		}
	}
	for _, s := range []struct {
		op      string
		clients int
	}{{"account_details", 48}, {"account_create", 32}, {"card_create", 32}} {
		if _, err := one(s.op, s.clients, bases, "3 instances through one PgBouncer",
			fmt.Sprintf("emi-load -op %s -c %d -d %s -partner P -url <3 instances, comma-separated>", s.op, s.clients, d)); err != nil {
			return nil, nil, nil, "", err
		}
	}
	note = "through PgBouncer (transaction mode, 10 server connections) against the direct server in the same minute: " + strings.Join(ratios, ", ")
	var errs []string
	for _, l := range logs {
		b, _ := os.ReadFile(l) // #nosec G304 -- our own temporary directory
		errs = append(errs, serverErrors(b)...)
	}
	if len(errs) > 0 {
		note += fmt.Sprintf("; the instances through PgBouncer logged %d errors, the first: %s", len(errs), errs[0])
	} else {
		note += "; the instances through PgBouncer logged no error"
	}
	return res, sources, cmds, note, nil
}
