package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// nonStd as a forbidden pattern means "any package outside Go's standard
// library" (module packages included).
const nonStd = "<outside the standard library>"

// rule forbids the packages matching pkg, except those matching one of
// except, to depend on a package matching forbid. Patterns are import paths;
// a trailing "/..." also matches the path itself and everything below it.
//
// Only non-test code counts: _test.go files may import anything. A package
// also breaks a rule when it reaches the forbidden package through other
// packages of this module (service -> some helper -> postgres); third-party
// and standard packages are not followed (the validator library may well
// import net/http without service doing so).
type rule struct {
	pkg    string
	except []string
	forbid string
	reason string
}

const (
	whyServiceHTTP  = "the service layer is shared by the API and the back office and knows nothing of HTTP: take plain inputs, return *emi.Error values"
	whyServiceWeb   = "the dependency direction is web -> service, never back"
	whyServiceStore = "the service declares the store interfaces it needs; internal/postgres implements them and only the composition root (internal/app) wires it in"
	whyDomain       = "internal/emi is the centre that everything imports: it may use only the standard library"
	whyConfig       = "internal/config reads an injected getenv and may use only the standard library"
	whySDK          = "the Go SDK is one file partners copy into their own module: it may use only the standard library"
	whyViews        = "templ views render view models shaped like the screen: the portal handler calls the service and hands the result over"
	whyAPIViews     = "the partner API answers JSON only; HTML belongs to web/portal and views"
	whyNoStore      = "handlers reach data only through the service layer, where validation and partner scoping live"
	whyStoreWeb     = "the store is below the service layer and must not know the HTTP delivery layer"
	whyRootOnly     = "only the composition root (cmd/emi, internal/app) and test helpers may wire in the whole application or the database"
	whyWorker       = "background workers call service methods, as handlers do"
	whyMigrations   = "migrations only embed SQL files"
	whyServiceTest  = "internal/service/servicetest holds helpers for tests: only _test.go files import it"
	whyTestWait     = "internal/testwait is the tests' wait helper: only _test.go files (and apptest, the tests' application) import it"
)

var rules = []rule{
	{pkg: "emi/internal/service/...", forbid: "net/http/...", reason: whyServiceHTTP},
	{pkg: "emi/internal/service/...", forbid: "emi/web/...", reason: whyServiceWeb},
	{pkg: "emi/internal/service/...", forbid: "emi/views/...", reason: whyServiceWeb},
	{pkg: "emi/internal/service/...", forbid: "emi/internal/postgres/...", reason: whyServiceStore},
	{pkg: "emi/internal/service/...", forbid: "github.com/jmoiron/sqlx/...", reason: whyServiceStore},
	{pkg: "emi/internal/service/...", forbid: "github.com/lib/pq/...", reason: whyServiceStore},

	{pkg: "emi/internal/emi/...", forbid: nonStd, reason: whyDomain},
	{pkg: "emi/internal/config/...", forbid: nonStd, reason: whyConfig},
	{pkg: "emi/web/docs/sdk/...", forbid: nonStd, reason: whySDK},
	{pkg: "emi/migrations/...", forbid: nonStd, reason: whyMigrations},

	{pkg: "emi/views/...", forbid: "emi/internal/service/...", reason: whyViews},
	{pkg: "emi/views/...", forbid: "emi/internal/postgres/...", reason: whyViews},
	{pkg: "emi/views/...", forbid: "emi/web/...", reason: whyViews},

	{pkg: "emi/web/api/...", forbid: "emi/views/...", reason: whyAPIViews},
	{pkg: "emi/web/api/...", forbid: "emi/internal/postgres/...", reason: whyNoStore},
	{pkg: "emi/web/portal/...", forbid: "emi/internal/postgres/...", reason: whyNoStore},

	{pkg: "emi/internal/postgres/...", forbid: "emi/web/...", reason: whyStoreWeb},
	{pkg: "emi/internal/postgres/...", forbid: "emi/views/...", reason: whyStoreWeb},

	{pkg: "emi/internal/worker/...", forbid: "emi/web/...", reason: whyWorker},
	{pkg: "emi/internal/worker/...", forbid: "emi/internal/postgres/...", reason: whyWorker},

	{pkg: "emi/...", except: []string{"emi/cmd/...", "emi/internal/app/..."},
		forbid: "emi/internal/app/...", reason: whyRootOnly},
	{pkg: "emi/...", except: []string{"emi/cmd/...", "emi/internal/app/...", "emi/internal/postgres/..."},
		forbid: "emi/internal/postgres/...", reason: whyRootOnly},

	{pkg: "emi/...", except: []string{"emi/internal/service/servicetest"},
		forbid: "emi/internal/service/servicetest", reason: whyServiceTest},
	{pkg: "emi/...", except: []string{"emi/internal/testwait", "emi/internal/app/apptest"},
		forbid: "emi/internal/testwait", reason: whyTestWait},
}

// notYetBuilt lists rule patterns that may match no package yet. Any other
// pattern that matches nothing is a typo, which would make its rule vacuous.
var notYetBuilt = map[string]bool{}

// match reports whether an import path matches a pattern.
func match(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// pkg is what the test needs of `go list -json`.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Module     *struct{ Main bool }
}

// graph maps import paths to packages: the module's own and everything they
// depend on.
type graph map[string]pkg

func (g graph) inModule(path string) bool {
	p, ok := g[path]
	return ok && p.Module != nil && p.Module.Main
}

// standard reports whether path is a standard-library package. A path the
// graph does not know is not.
func (g graph) standard(path string) bool { return g[path].Standard }

func (r rule) forbids(g graph, path string) bool {
	if r.forbid == nonStd {
		return !g.standard(path)
	}
	return match(r.forbid, path)
}

type violation struct {
	pkg, target string
	chain       []string // pkg ... target
	reasons     []string
}

func (v violation) String() string {
	return fmt.Sprintf("%s must not depend on %s: %s\n\t(import chain: %s)",
		v.pkg, v.target, strings.Join(v.reasons, "; "), strings.Join(v.chain, " -> "))
}

// check applies the rules to every module package of g and returns the
// violations, one per (package, forbidden import), sorted.
func check(rules []rule, g graph) []violation {
	found := map[[2]string]*violation{}
	var names []string
	for name := range g {
		if g.inModule(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		for _, r := range rules {
			if !match(r.pkg, name) || matchAny(r.except, name) {
				continue
			}
			for target, chain := range reach(g, name, r) {
				k := [2]string{name, target}
				if v := found[k]; v != nil {
					if !contains(v.reasons, r.reason) {
						v.reasons = append(v.reasons, r.reason)
					}
					continue
				}
				found[k] = &violation{pkg: name, target: target, chain: chain, reasons: []string{r.reason}}
			}
		}
	}
	out := make([]violation, 0, len(found))
	for _, v := range found {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pkg != out[j].pkg {
			return out[i].pkg < out[j].pkg
		}
		return out[i].target < out[j].target
	})
	return out
}

// reach walks the imports of from breadth first, following only module
// packages, and returns each package the rule forbids with the shortest
// import chain that leads to it.
func reach(g graph, from string, r rule) map[string][]string {
	hits := map[string][]string{}
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range g[cur].Imports {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = cur
			if r.forbids(g, imp) {
				var chain []string
				for p := imp; p != ""; p = prev[p] {
					chain = append([]string{p}, chain...)
				}
				hits[imp] = chain
				continue
			}
			if g.inModule(imp) {
				queue = append(queue, imp)
			}
		}
	}
	return hits
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// moduleRoot walks up from the working directory to the directory of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// loadGraph runs `go list -deps -json ./...` in the module root.
func loadGraph(t *testing.T) graph {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		t.Fatalf("the go command is needed to list the packages: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-json=ImportPath,Standard,Imports,Module", "./...")
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		g[p.ImportPath] = p
	}
	return g
}

// TestDependencyDirection checks the real packages of the module.
func TestDependencyDirection(t *testing.T) {
	g := loadGraph(t)
	var mine int
	for name := range g {
		if g.inModule(name) {
			mine++
		}
	}
	if mine < 5 || !g.inModule("emi/internal/emi") {
		t.Fatalf("go list found %d packages of the module, without emi/internal/emi: the graph is wrong", mine)
	}
	for _, v := range check(rules, g) {
		t.Error(v)
	}
}

// TestRulePatternsMatchPackages keeps the table honest: a misspelt package
// pattern would match nothing and silently check nothing.
func TestRulePatternsMatchPackages(t *testing.T) {
	g := loadGraph(t)
	for _, r := range rules {
		patterns := append([]string{r.pkg}, r.except...)
		if r.forbid != nonStd && strings.HasPrefix(r.forbid, "emi/") {
			patterns = append(patterns, r.forbid)
		}
		for _, p := range patterns {
			if notYetBuilt[p] {
				continue
			}
			hit := false
			for name := range g {
				if g.inModule(name) && match(p, name) {
					hit = true
					break
				}
			}
			if !hit {
				t.Errorf("rule pattern %q matches no package of the module: a typo, or add it to notYetBuilt", p)
			}
		}
		if r.reason == "" {
			t.Errorf("rule %s -> %s has no reason", r.pkg, r.forbid)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"emi/web/...", "emi/web", true},
		{"emi/web/...", "emi/web/api", true},
		{"emi/web/...", "emi/webhooks", false},
		{"emi/internal/service", "emi/internal/service", true},
		{"emi/internal/service", "emi/internal/service/x", false},
		{"net/http/...", "net/http/httptest", true},
		{"net/http/...", "net/netip", false},
	} {
		if got := match(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

// TestRulesFireOnSyntheticGraph proves that the checker can fail: forbidden
// imports in a made-up module are reported with the rule's reason, and the
// allowed ones are not.
func TestRulesFireOnSyntheticGraph(t *testing.T) {
	mod := &struct{ Main bool }{Main: true}
	std := func(path string) pkg { return pkg{ImportPath: path, Standard: true} }
	own := func(path string, imports ...string) pkg { return pkg{ImportPath: path, Imports: imports, Module: mod} }
	g := graph{}
	for _, p := range []pkg{
		std("net/http"), std("context"), std("time"),
		{ImportPath: "github.com/google/uuid", Module: &struct{ Main bool }{}},
		{ImportPath: "github.com/jmoiron/sqlx", Module: &struct{ Main bool }{}},
		own("emi/internal/emi", "time", "github.com/google/uuid"),
		own("emi/internal/service", "context", "net/http", "emi/internal/emi", "emi/internal/helper"),
		own("emi/internal/helper", "emi/internal/postgres"),
		own("emi/internal/postgres", "emi/internal/emi", "github.com/jmoiron/sqlx"),
		own("emi/internal/postgres/pgtest", "emi/internal/postgres"),
		own("emi/internal/app", "emi/internal/postgres", "emi/web/api"),
		own("emi/internal/app/apptest", "emi/internal/app", "emi/internal/postgres/pgtest"),
		own("emi/web/api", "net/http", "emi/internal/service"),
		own("emi/cmd/emi", "emi/internal/app"),
	} {
		g[p.ImportPath] = p
	}

	got := map[string]violation{}
	for _, v := range check(rules, g) {
		got[v.pkg+" -> "+v.target] = v
	}
	want := map[string]string{
		"emi/internal/service -> net/http":              whyServiceHTTP,
		"emi/internal/service -> emi/internal/postgres": whyServiceStore,
		"emi/internal/emi -> github.com/google/uuid":    whyDomain,
		"emi/internal/helper -> emi/internal/postgres":  whyRootOnly,
		// through helper and postgres, which service must not reach either
		"emi/internal/service -> github.com/jmoiron/sqlx": whyServiceStore,
		"emi/web/api -> emi/internal/postgres":            whyNoStore,
	}
	for k, reason := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("no violation reported for %s", k)
			continue
		}
		if !contains(v.reasons, reason) {
			t.Errorf("%s: reasons %q, want one to be %q", k, v.reasons, reason)
		}
	}
	if v, ok := got["emi/internal/service -> emi/internal/postgres"]; ok {
		if c := strings.Join(v.chain, " -> "); c != "emi/internal/service -> emi/internal/helper -> emi/internal/postgres" {
			t.Errorf("chain = %s", c)
		}
		if !strings.Contains(v.String(), whyServiceStore) {
			t.Errorf("message %q lacks the reason", v.String())
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected violation %s: %s", k, got[k])
		}
	}
}
