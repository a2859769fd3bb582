package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// portalRoot is the parent of the back office's packages.
const portalRoot = "emi/web/portal/"

// portalArrows is the back office's map, as areaArrows is the service
// layer's: each package under web/portal and the others it may import.
// frame (the session, the guards, the page frame, errors, paging, tones)
// imports none; each area's screens import the frame and the areas whose
// fragments their pages show (a person's and a company's page list their
// accounts and cards, an account's page its cards, the money pages lay out
// adjustments as the account page does, an application's page shows the
// people area's documents). opsui (dashboard, search, alerts, audit, jobs)
// works across the areas. The composition package web/portal itself may
// import them all, and no package imports it.
var portalArrows = map[string][]string{
	"frame":        {},
	"staffui":      {"frame"},
	"partnersui":   {"frame"},
	"cardsui":      {"frame"},
	"accountsui":   {"frame", "cardsui"},
	"peopleui":     {"frame", "accountsui", "cardsui"},
	"transfersui":  {"frame", "accountsui"},
	"onboardingui": {"frame", "peopleui", "accountsui", "cardsui"},
	"opsui":        {"frame", "staffui", "accountsui", "cardsui", "onboardingui"},
}

// portalTestOnly are packages under web/portal that hold tests only.
var portalTestOnly = map[string]bool{"browsertest": true}

// portalPackageOf returns the package name under web/portal of path ("" for
// web/portal itself or a path outside it).
func portalPackageOf(path string) string {
	rest, ok := strings.CutPrefix(path, portalRoot)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// checkPortal returns one message per package under web/portal that is
// not in the table, per import between them that the table does not allow,
// and per import of the composition package by a package other than the
// composition root (cmd, internal/app).
func checkPortal(arrows map[string][]string, g graph) []string {
	var out []string
	for name, p := range g {
		if !g.inModule(name) || match("emi/cmd/...", name) || match("emi/internal/app/...", name) {
			continue
		}
		for _, imp := range p.Imports {
			if imp == strings.TrimSuffix(portalRoot, "/") {
				out = append(out, fmt.Sprintf("%s imports the composition package %s: only cmd and internal/app wire it", name, imp))
			}
		}
		from := portalPackageOf(name)
		if from == "" || portalTestOnly[from] {
			continue
		}
		allowed, known := arrows[from]
		if !known {
			out = append(out, fmt.Sprintf("%s is under web/portal but is not in portalArrows: add it (and its arrows) or move it", name))
			continue
		}
		for _, imp := range p.Imports {
			to := portalPackageOf(imp)
			if to == "" || to == from {
				continue
			}
			if !contains(allowed, to) {
				out = append(out, fmt.Sprintf("%s must not import %s (%s imports %s): allowed are %v", from, to, name, imp, allowed))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestPortalArrows checks the back office's real packages against the
// table.
func TestPortalArrows(t *testing.T) {
	g := loadGraph(t)
	for name := range portalArrows {
		if !g.inModule(portalRoot + name) {
			t.Errorf("package %s of portalArrows does not exist (%s%s)", name, portalRoot, name)
		}
	}
	for _, msg := range checkPortal(portalArrows, g) {
		t.Error(msg)
	}
}

// TestPortalTableIsAcyclic: the back office's packages import each other
// without cycles (the compiler would refuse a cycle; the table must not
// allow one either), and the frame imports none of them.
func TestPortalTableIsAcyclic(t *testing.T) {
	if len(portalArrows["frame"]) != 0 {
		t.Errorf("frame imports %v: it must import no area", portalArrows["frame"])
	}
	state := map[string]int{}
	var visit func(a string, path []string)
	visit = func(a string, path []string) {
		switch state[a] {
		case 1:
			t.Errorf("cycle: %s", strings.Join(append(path, a), " -> "))
			return
		case 2:
			return
		}
		state[a] = 1
		for _, b := range portalArrows[a] {
			if _, ok := portalArrows[b]; !ok {
				t.Errorf("%s may import %s, which is not in the table", a, b)
				continue
			}
			visit(b, append(path, a))
		}
		state[a] = 2
	}
	for a := range portalArrows {
		visit(a, nil)
	}
}

// TestPortalArrowsFireOnSyntheticGraph is the test of the test.
func TestPortalArrowsFireOnSyntheticGraph(t *testing.T) {
	mod := &struct{ Main bool }{Main: true}
	own := func(path string, imports ...string) pkg { return pkg{ImportPath: path, Imports: imports, Module: mod} }
	g := graph{}
	for _, p := range []pkg{
		own(portalRoot+"frame", portalRoot+"cardsui"),                          // frame imports no area
		own(portalRoot+"cardsui", portalRoot+"frame"),                          // allowed
		own(portalRoot+"accountsui", portalRoot+"frame", portalRoot+"cardsui"), // allowed
		own(portalRoot+"peopleui", portalRoot+"onboardingui"),                  // people -> onboarding is not
		own(portalRoot+"billingui", portalRoot+"frame"),                        // not in the table
		own(portalRoot+"browsertest", "emi/web/portal"),                        // test-only, but imports the composition
		own("emi/web/portal", portalRoot+"frame", portalRoot+"peopleui"),       // the composition may import all
	} {
		g[p.ImportPath] = p
	}
	got := checkPortal(portalArrows, g)
	want := []string{
		portalRoot + "billingui is under web/portal but is not in portalArrows",
		portalRoot + "browsertest imports the composition package",
		"frame must not import cardsui",
		"peopleui must not import onboardingui",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("violation %d = %q, want it to start with %q", i, got[i], w)
		}
	}
}

// Bounds of a back-office type: a type with more methods than this holds
// more than one area's screens, and one with more fields than this reads
// more services than one area needs.
const (
	maxPortalMethods = 60
	maxPortalFields  = 10
)

// typeSize is a named type's method count and, for a struct, field count.
type typeSize struct {
	name            string
	methods, fields int
}

// isDependency reports whether a field of this type is a collaborator (a
// service, another package's type, a page set, a function) rather than
// plain data: a basic type, a slice, a map or an array is data.
func isDependency(typ ast.Expr) bool {
	switch t := typ.(type) {
	case *ast.Ident:
		switch t.Name {
		case "bool", "string", "int", "int64", "float64", "byte", "rune", "any", "error":
			return false
		}
		return true
	case *ast.ArrayType, *ast.MapType:
		return false
	}
	return true
}

// portalTypeSizes parses the non-test Go files of dir and returns the size
// of each named type declared there.
func portalTypeSizes(dir string) ([]typeSize, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sizes := map[string]*typeSize{}
	get := func(n string) *typeSize {
		if sizes[n] == nil {
			sizes[n] = &typeSize{name: n}
		}
		return sizes[n]
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					continue
				}
				typ := d.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					get(id.Name).methods++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						n := 0
						for _, f := range st.Fields.List {
							if isDependency(f.Type) {
								n += max(len(f.Names), 1)
							}
						}
						get(ts.Name.Name).fields = n
					}
				}
			}
		}
	}
	var out []typeSize
	for _, s := range sizes {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// TestPortalTypesStaySmall: no back-office type has more than
// maxPortalMethods methods, and no type with methods more than
// maxPortalFields dependencies (fields that are not plain data). Deps
// structs, which list what a constructor takes, have no methods.
func TestPortalTypesStaySmall(t *testing.T) {
	root := filepath.Join(moduleRoot(t), "web", "portal")
	dirs := []string{root}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	checked := 0
	for _, dir := range dirs {
		sizes, err := portalTypeSizes(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sizes {
			checked++
			where := filepath.Base(dir) + "." + s.name
			if s.methods > maxPortalMethods {
				t.Errorf("%s has %d methods (at most %d): split it by screen", where, s.methods, maxPortalMethods)
			}
			if s.fields > maxPortalFields && s.methods > 0 {
				t.Errorf("%s has %d fields (at most %d): it reads more than one area's services", where, s.fields, maxPortalFields)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d types under web/portal: the test is not reading the packages", checked)
	}
}

// TestPortalTypeSizesCountsMethodsAndFields is the test of the test.
func TestPortalTypeSizesCountsMethodsAndFields(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\ntype Big struct{ a, b *y.Svc; c string; D; f func(); m map[string]int }\ntype D struct{}\n\nfunc (b *Big) One() {}\nfunc (b Big) two() {}\nfunc (D) Three() {}\nfunc free() {}\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	sizes, err := portalTypeSizes(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(sizes)
	if want := "[{Big 2 4} {D 1 0}]"; got != want {
		t.Errorf("sizes = %s, want %s", got, want)
	}
}
