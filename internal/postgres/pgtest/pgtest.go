// Package pgtest gives each test its own PostgreSQL database, cloned from a
// template database that is migrated once per set of migrations. Tests that
// use it can run in parallel.
//
// The server is the one named by EMI_TEST_ADMIN_URL (a role that may CREATE
// DATABASE); without it, pgtest runs the repository's .ci/postgres.sh, which
// starts (and if needed installs) a local server and prints its URL.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	_ "github.com/lib/pq" // driver

	"emi/internal/postgres"
	"emi/migrations"
)

var (
	adminOnce sync.Once
	adminURL  string
	adminErr  error

	tplOnce sync.Once
	tplName string
	tplErr  error
)

// AdminURL returns the URL of a role that may create databases, starting a
// local server when none is configured. It fails the test when there is none.
func AdminURL(t testing.TB) string {
	t.Helper()
	adminOnce.Do(func() {
		if u := os.Getenv("EMI_TEST_ADMIN_URL"); u != "" {
			adminURL = u
			return
		}
		root, err := repoRoot()
		if err != nil {
			adminErr = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, ".ci", "postgres.sh")) // #nosec G204 -- the repository's own script (tests only)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			adminErr = fmt.Errorf(".ci/postgres.sh: %w", err)
			return
		}
		adminURL = strings.TrimSpace(string(out))
	})
	if adminErr != nil {
		t.Fatalf("pgtest: no PostgreSQL server: %v", adminErr)
	}
	return adminURL
}

// RepoRoot returns the module's root (the directory of go.mod, found
// upward from the test's working directory), for tests that read the
// repository's own files.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// WithDatabase returns u with its database name replaced by name.
func WithDatabase(u, name string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Path = "/" + name
	return p.String()
}

// migrationsHash names the template after the migrations' contents, so a
// changed migration gets a new template instead of a stale one.
func migrationsHash() (string, error) {
	h := sha256.New()
	var names []string
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := migrations.FS.ReadFile(n)
		if err != nil {
			return "", err
		}
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func template(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	tplOnce.Do(func() { tplName, tplErr = buildTemplate(admin) })
	if tplErr != nil {
		t.Fatalf("pgtest: template database: %v", tplErr)
	}
	return tplName
}

// buildTemplate creates and migrates the template database once, under an
// advisory lock, so test binaries of several packages running at once share it.
func buildTemplate(admin string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "emi_tpl_" + sum
	ctx := context.Background()
	db, err := sql.Open("postgres", admin)
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(727274)`); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock(727274)`) //nolint:errcheck
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+building+` WITH (FORCE)`); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+building); err != nil {
		return "", err
	}
	pdb, err := postgres.Open(ctx, WithDatabase(admin, building))
	if err != nil {
		return "", err
	}
	_, merr := pdb.Migrate(ctx)
	_ = pdb.Close()
	if merr != nil {
		return "", merr
	}
	// The rename makes the finished template visible in one step.
	if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+building+` RENAME TO `+name); err != nil {
		return "", err
	}
	return name, nil
}

// URL creates a fresh, migrated database for the test and returns its URL.
// The database is dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	tpl := template(t)
	admin := AdminURL(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "emi_t_" + hex.EncodeToString(b)
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE DATABASE ` + name + ` TEMPLATE ` + tpl); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("postgres", admin)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
	})
	return WithDatabase(admin, name)
}

// DB returns an open *postgres.DB on a fresh database for the test.
func DB(t testing.TB) *postgres.DB {
	t.Helper()
	u := URL(t)
	db, err := postgres.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
