package pgtest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Cluster is a private PostgreSQL cluster of one test, run by
// .ci/postgres.sh on its own port and data directory, so that the test may
// stop, crash, replicate and promote it without disturbing the shared
// cluster the other tests use. The fault, failover and replica tests
// (cmd/emi, internal/postgres) all take theirs from here.
type Cluster struct {
	Port  string
	Data  string
	Admin string // the admin URL .ci/postgres.sh printed
}

// NewCluster initialises and starts a private cluster, stopped and removed
// when the test ends. It skips the test when bash is missing.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to run .ci/postgres.sh")
	}
	// As root the cluster belongs to the postgres user, which must reach
	// the data directory: t.TempDir's parents are private to root.
	dir, err := os.MkdirTemp("", "emi-pg-")
	if err != nil {
		t.Fatal(err)
	}
	// #nosec G302 -- a directory (0o755: traversable), for the postgres user
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Port: FreePort(t), Data: filepath.Join(dir, "primary")}
	t.Cleanup(func() { c.Stop(t); _ = os.RemoveAll(dir) })
	start := time.Now()
	c.Start(t)
	t.Logf("private PostgreSQL cluster on port %s: initdb and start took %s", c.Port, time.Since(start).Round(time.Millisecond))
	return c
}

// Standby starts a streaming standby of c on a port of its own
// (.ci/postgres.sh standby: pg_basebackup -R), stopped when the test ends.
func (c *Cluster) Standby(t testing.TB) *Cluster {
	t.Helper()
	s := &Cluster{Port: FreePort(t), Data: filepath.Join(filepath.Dir(c.Data), "standby-"+c.Port)}
	t.Cleanup(func() { s.Stop(t) })
	s.Admin = s.Do(t, "standby", c.Port)
	return s
}

// Script is the command running .ci/postgres.sh with args on c.
func (c *Cluster) Script(args ...string) *exec.Cmd {
	root, err := repoRoot()
	if err != nil {
		root = "."
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(root, ".ci", "postgres.sh")}, args...)...) // #nosec G204 -- the repository's own script
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG_ADMIN_URL=") && !strings.HasPrefix(kv, "EMI_PG_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "EMI_PG_PORT="+c.Port, "EMI_PG_DATA="+c.Data)
	return cmd
}

// Do runs .ci/postgres.sh with args on c (crash, sync, promote, standby
// PORT, stop) and returns what it printed; the test fails when it fails.
func (c *Cluster) Do(t testing.TB, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := c.Script(args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("postgres.sh %v on port %s: %v\n%s", args, c.Port, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Start starts c (initialising it the first time) and records its admin
// URL.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	c.Admin = c.Do(t)
}

// Stop stops c; a failure is reported, not fatal (it runs in cleanups).
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if out, err := c.Script("stop").CombinedOutput(); err != nil {
		t.Errorf("stop the cluster on port %s: %v\n%s", c.Port, err, out)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}
