package pgtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	poolerOnce sync.Once
	poolerHost string // host:port of the PgBouncer
	poolerErr  error
)

// ThroughPooler returns u, a database URL on the test server (URL), routed
// through a PgBouncer in transaction mode in front of that server, started
// by the repository's .ci/pgbouncer.sh (Debian's package). The pooler has
// far fewer server connections than a test opens clients, so client
// connections share server connections as they do in production.
//
// Without PgBouncer the test is skipped, except under CI (CI set), where
// it fails: .ci/run installs it.
func ThroughPooler(t testing.TB, u string) string {
	t.Helper()
	poolerOnce.Do(func() {
		admin, err := url.Parse(AdminURL(t))
		if err != nil {
			poolerErr = err
			return
		}
		root, err := repoRoot()
		if err != nil {
			poolerErr = err
			return
		}
		port := admin.Port()
		if port == "" {
			port = "5432"
		}
		cmd := exec.Command("bash", filepath.Join(root, ".ci", "pgbouncer.sh")) // #nosec G204 -- the repository's own script (tests only)
		cmd.Env = append(os.Environ(), "EMI_PG_PORT="+port, "EMI_PG_HOST="+admin.Hostname())
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			poolerErr = fmt.Errorf(".ci/pgbouncer.sh: %w", err)
			return
		}
		p, err := url.Parse(strings.TrimSpace(string(out)))
		if err != nil {
			poolerErr = err
			return
		}
		poolerHost = p.Host
	})
	if poolerErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("pgtest: no PgBouncer: %v", poolerErr)
		}
		t.Skipf("pgtest: no PgBouncer (apt-get install pgbouncer): %v", poolerErr)
	}
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := net.SplitHostPort(poolerHost); err != nil {
		t.Fatal(err)
	}
	p.Host = poolerHost
	return p.String()
}
