package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// noRaceNeeded are top-level tests of the HTTP-level packages that start
// goroutines but do not race requests against each other, so make test's
// -race pass over those packages (RACE_HTTP_TESTS) may leave them out; each
// with the reason.
var noRaceNeeded = map[string]string{
	"TestLoadsWithTheCPUSaturated": "a load under a CPU hog, for answers outside the documented set; the flows it runs are raced under -race by the tests above",
}

// TestHTTPConcurrencyTestsRunUnderRace keeps make test's split honest
// (Makefile, "Where -race runs"): the HTTP-level packages run without
// -race, and only the tests RACE_HTTP_TESTS names run again with it. A test
// there that starts goroutines (go statements, sync.WaitGroup, errgroup)
// must match that pattern or be listed in noRaceNeeded with a reason, so a
// new concurrency test cannot silently lose the race detector.
func TestHTTPConcurrencyTestsRunUnderRace(t *testing.T) {
	root := moduleRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile")) // #nosec G304 -- the repository's own Makefile
	if err != nil {
		t.Fatal(err)
	}
	var pattern, pkgs string
	for _, line := range strings.Split(string(mk), "\n") {
		if v, ok := strings.CutPrefix(line, "RACE_HTTP_TESTS = "); ok {
			pattern = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "HTTP_PKGS := "); ok {
			pkgs = strings.TrimSpace(v)
		}
	}
	if pattern == "" || pkgs == "" {
		t.Fatal("the Makefile defines no RACE_HTTP_TESTS or HTTP_PKGS")
	}
	race := regexp.MustCompile(pattern)
	concurrent := regexp.MustCompile(`\bgo func\b|\bgo [a-zA-Z_.]+\(|sync\.WaitGroup|\.Go\(func|errgroup\.`)
	checked := 0
	for _, pkg := range strings.Fields(pkgs) {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			src, err := os.ReadFile(file) // #nosec G304 -- a test file of this module
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, file, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
					continue
				}
				checked++
				body := string(src[fset.Position(fn.Body.Pos()).Offset:fset.Position(fn.Body.End()).Offset])
				if !concurrent.MatchString(body) || race.MatchString(fn.Name.Name) {
					continue
				}
				if _, ok := noRaceNeeded[fn.Name.Name]; !ok {
					t.Errorf("%s (%s) starts goroutines but make test runs it without -race: name it after the race it "+
						"tests (RACE_HTTP_TESTS: %s) or, if it races nothing, add it to noRaceNeeded with the reason",
						fn.Name.Name, filepath.Base(file), pattern)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d tests found in %s: the walk is broken", checked, pkgs)
	}
	for name := range noRaceNeeded {
		if race.MatchString(name) {
			t.Errorf("%s is in noRaceNeeded but RACE_HTTP_TESTS runs it anyway", name)
		}
	}
}
