package postgres_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layoutAreas are the service areas (internal/service/<area>) a file of
// this package is named after: <area>.go or <area>_<topic>.go.
var layoutAreas = []string{"kernel", "staff", "partners", "people", "onboarding", "accounts", "transfers", "cards", "monitoring", "ops"}

// layoutInfra are the files that belong to no area (the package doc says
// what each holds).
var layoutInfra = []string{"db.go", "listen.go", "migrate.go", "pooler.go", "replicas.go", "sort.go"}

// infra is the "area" of the infrastructure files in messages.
const infra = "infrastructure"

// fileArea returns the area a file name says (infra for an infrastructure
// file), or "" when the name says none.
func fileArea(name string) string {
	if slices.Contains(layoutInfra, name) {
		return infra
	}
	for _, a := range layoutAreas {
		if name == a+".go" || strings.HasPrefix(name, a+"_") {
			return a
		}
	}
	return ""
}

// receiverType is the name of a method's receiver type (without pointer or
// type parameters).
func receiverType(fn *ast.FuncDecl) string {
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// checkLayout returns one message per file of the package (name → Go
// source, test files excluded by the caller) that is not named after an
// area or infrastructure, and per method declared in a file of another
// area than its receiver type's.
func checkLayout(files map[string]string) ([]string, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	typeFile := map[string]string{}
	var out []string
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, files[n], parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed[n] = f
		if fileArea(n) == "" {
			out = append(out, fmt.Sprintf("%s: the file is not named after a service area: rename it <area>.go or "+
				"<area>_<topic>.go after the area whose store it holds (one of %s), or move its code into such a file; "+
				"infrastructure that belongs to no area goes into %s (see the package doc)",
				n, strings.Join(layoutAreas, ", "), strings.Join(layoutInfra, ", ")))
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				typeFile[s.(*ast.TypeSpec).Name.Name] = n
			}
		}
	}
	for _, n := range names {
		for _, d := range parsed[n].Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			recv := receiverType(fn)
			decl, ok := typeFile[recv]
			if !ok {
				continue // not this package's type: the compiler says so
			}
			have, want := fileArea(n), fileArea(decl)
			if have == "" || want == "" || have == want {
				continue // a misnamed file is reported once, above
			}
			where := "a file of the " + want + " area (" + want + ".go or " + want + "_<topic>.go)"
			if want == infra {
				where = "an infrastructure file (" + strings.Join(layoutInfra, ", ") + ")"
			}
			out = append(out, fmt.Sprintf("%s: method (%s).%s belongs to the %s area (type %s is declared in %s) "+
				"but sits in a file of the %s area: move it into %s, or, when it serves the other area's interface, "+
				"keep it with the store of the area that owns its table and say so in the package doc",
				n, recv, fn.Name.Name, want, recv, decl, have, where))
		}
	}
	return out, nil
}

// TestLayoutByArea keeps internal/postgres organised by the service areas
// (package doc, Layout): every file that is not a test is named after an
// area or is one of the infrastructure files, and every method sits in a
// file of its receiver type's area. The package before its split by area
// failed it (jobs.go, review.go, compliance.go and eleven more files named
// after no area), and so did the files merely renamed (people_merchants.go
// held an OnboardingStore method).
//
// It checks placement only: which area's interface a method serves is
// for the compile-time assertions beside each constructor and for review
// (a store type belongs to one area, package doc).
func TestLayoutByArea(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n) // #nosec G304 -- the package's own files
		if err != nil {
			t.Fatal(err)
		}
		files[n] = string(b)
	}
	if len(files) < len(layoutAreas) {
		t.Fatalf("read %d files of the package: is the test running in internal/postgres?", len(files))
	}
	problems, err := checkLayout(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestLayoutAreasAreTheServiceAreas keeps layoutAreas in step with the
// packages under internal/service: a new area gets its files here too.
func TestLayoutAreasAreTheServiceAreas(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(filepath.Join("..", "service"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		// servicetest holds the areas' shared test helpers, not an area.
		if e.IsDir() && e.Name() != "servicetest" {
			dirs = append(dirs, e.Name())
		}
	}
	want := slices.Clone(layoutAreas)
	sort.Strings(want)
	if !slices.Equal(dirs, want) {
		t.Errorf("internal/service has the areas %v but layoutAreas lists %v: add the new area (or drop the old one) "+
			"in layout_test.go and in the package doc's Layout", dirs, want)
	}
}

// TestLayoutCheckFires is the test of the test: on a made-up package,
// checkLayout reports a file named after no area (also one that only
// starts like an area), a method in another area's file and a method of an
// area's store in an infrastructure file, and nothing else.
func TestLayoutCheckFires(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"db.go":       "package postgres\ntype DB struct{}\nfunc (db *DB) InTx() {}\n",
		"migrate.go":  "package postgres\nfunc (db *DB) Migrate() {}\n",
		"cards.go":    "package postgres\ntype CardStore struct{}\ntype cardRow struct{}\nfunc (s *CardStore) Card() {}\n",
		"cards_x.go":  "package postgres\nfunc (s *CardStore) Cards() {}\nfunc (r cardRow) card() {}\n",
		"accounts.go": "package postgres\ntype AccountStore struct{}\nfunc (s *AccountStore) Account() {}\nfunc (s *CardStore) OpenCardOfAccount() {}\n",
		"sort.go":     "package postgres\ntype sortable struct{}\nfunc (s sortable) expr() {}\nfunc (s AccountStore) Accounts() {}\n",
		"helpers.go":  "package postgres\nfunc itoa() {}\n",
		"cardsx.go":   "package postgres\nfunc (s *CardStore) SearchCards() {}\n",
		"ops_list.go": "package postgres\ntype list[T any] struct{}\nfunc (l *list[T]) add() {}\n",
	}
	got, err := checkLayout(files)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"accounts.go: method (CardStore).OpenCardOfAccount belongs to the cards area (type CardStore is declared in cards.go) but sits in a file of the accounts area: move it into a file of the cards area (cards.go or cards_<topic>.go)",
		"cardsx.go: the file is not named after a service area",
		"helpers.go: the file is not named after a service area",
		"sort.go: method (AccountStore).Accounts belongs to the accounts area (type AccountStore is declared in accounts.go) but sits in a file of the infrastructure area: move it into a file of the accounts area (accounts.go or accounts_<topic>.go)",
	}
	if len(got) != len(want) {
		t.Fatalf("checkLayout found %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	sort.Strings(got)
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
	// A method of an infrastructure type in an area's file is reported
	// with the infrastructure files as its home.
	got, err = checkLayout(map[string]string{
		"db.go":    "package postgres\ntype DB struct{}\n",
		"cards.go": "package postgres\nfunc (db *DB) Cards() {}\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0], "move it into an infrastructure file (db.go, listen.go, migrate.go, pooler.go, replicas.go, sort.go)") {
		t.Errorf("checkLayout = %q, want the DB method in cards.go sent to the infrastructure files", got)
	}
}
