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

// The back office's packages: web/portal/frame (what every screen
// shares) and one package of screens per area, web/portal/<area>ui, over
// the shared views (views/components, layout, fragments, hosted, auth,
// docs) and one package of views per area, views/<area>view.
const (
	portalRoot = "emi/web/portal/"
	viewsRoot  = "emi/views/"
	portalComp = "emi/web/portal" // the composition: New, the route and navigation order
)

// backOfficeArrows is the back office's map, as areaArrows is the service
// layer's: each area and the areas whose screens and views its screens and
// views may use. The arrows are those of pages that show another area's
// things: a person's and a company's page list their accounts and cards,
// an account's page its cards, the money pages lay out adjustments as the
// account page does, an application's page shows the people area's
// documents and the partner's webhook deliveries. ops (dashboard, search,
// alerts, audit, jobs) works across the areas. Every area's screens use the
// frame and every view the shared views; the frame and the shared views
// use no area; only the composition root (cmd, internal/app) imports the
// composition package web/portal.
var backOfficeArrows = map[string][]string{
	"staff":      {},
	"partners":   {},
	"cards":      {},
	"people":     {"staff", "accounts", "cards"},
	"onboarding": {"staff", "partners", "people", "accounts", "cards"},
	"accounts":   {"staff", "cards"},
	"transfers":  {"staff", "accounts"},
	"ops":        {"staff", "partners", "people", "onboarding", "accounts", "cards", "transfers"},
}

// portalShared and viewsShared are the packages that belong to no area.
var (
	portalShared = map[string]bool{"frame": true}
	portalTests  = map[string]bool{"browsertest": true} // tests only: may use anything
	viewsShared  = map[string]bool{"components": true, "layout": true, "fragments": true, "hosted": true, "auth": true, "docs": true}
)

// backOfficePackage classifies an import path: its area ("" for a shared
// or unknown package), whether it is under web/portal or views at all, and
// whether it is a known shared package.
func backOfficePackage(path string) (area string, under, shared bool) {
	if rest, ok := strings.CutPrefix(path, portalRoot); ok {
		name, _, _ := strings.Cut(rest, "/")
		if portalShared[name] || portalTests[name] {
			return "", true, true
		}
		area, _ = strings.CutSuffix(name, "ui")
		return area, true, false
	}
	if rest, ok := strings.CutPrefix(path, viewsRoot); ok {
		name, _, _ := strings.Cut(rest, "/")
		if viewsShared[name] {
			return "", true, true
		}
		area, _ = strings.CutSuffix(name, "view")
		return area, true, false
	}
	return "", false, false
}

// checkPortal returns one message per back-office package (screens or
// views) that is neither shared nor an area's, per import of an area the
// table does not allow, per import of an area by a shared package, and per
// import of the composition package by a package other than the
// composition root (cmd, internal/app).
func checkPortal(arrows map[string][]string, g graph) []string {
	var out []string
	for name, p := range g {
		if !g.inModule(name) || match("emi/cmd/...", name) || match("emi/internal/app/...", name) {
			continue
		}
		for _, imp := range p.Imports {
			if imp == portalComp {
				out = append(out, fmt.Sprintf("%s imports the composition package %s: only cmd and internal/app wire it", name, imp))
			}
		}
		from, under, shared := backOfficePackage(name)
		if !under || name == portalComp || strings.HasPrefix(name, portalRoot+"browsertest") {
			continue
		}
		allowed, known := arrows[from]
		if !shared && !known {
			out = append(out, fmt.Sprintf("%s is neither an area's package (<area>ui, <area>view of backOfficeArrows) nor a shared one: add the area or move it", name))
			continue
		}
		for _, imp := range p.Imports {
			to, under, _ := backOfficePackage(imp)
			if !under || to == "" || to == from {
				continue
			}
			switch {
			case shared:
				out = append(out, fmt.Sprintf("shared package %s must not import area %s (%s)", name, to, imp))
			case !contains(allowed, to):
				out = append(out, fmt.Sprintf("area %s must not import area %s (%s imports %s): allowed are %v", from, to, name, imp, allowed))
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
	for area := range backOfficeArrows {
		for _, pkg := range []string{portalRoot + area + "ui", viewsRoot + area + "view"} {
			if !g.inModule(pkg) {
				t.Errorf("area %s of backOfficeArrows has no package %s", area, pkg)
			}
		}
	}
	for _, msg := range checkPortal(backOfficeArrows, g) {
		t.Error(msg)
	}
}

// TestPortalTableIsAcyclic: the areas' screens and views use each other
// without cycles.
func TestPortalTableIsAcyclic(t *testing.T) {
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
		for _, b := range backOfficeArrows[a] {
			if _, ok := backOfficeArrows[b]; !ok {
				t.Errorf("%s may use %s, which is not an area", a, b)
				continue
			}
			visit(b, append(path, a))
		}
		state[a] = 2
	}
	for a := range backOfficeArrows {
		visit(a, nil)
	}
}

// TestPortalArrowsFireOnSyntheticGraph is the test of the test: each
// kind of violation is reported, allowed arrows are not.
func TestPortalArrowsFireOnSyntheticGraph(t *testing.T) {
	mod := &struct{ Main bool }{Main: true}
	own := func(path string, imports ...string) pkg { return pkg{ImportPath: path, Imports: imports, Module: mod} }
	g := graph{}
	for _, p := range []pkg{
		own(portalRoot+"frame", portalRoot+"cardsui", viewsRoot+"layout"),            // the frame uses no area
		own(portalRoot+"cardsui", portalRoot+"frame", viewsRoot+"cardsview"),         // allowed
		own(portalRoot+"accountsui", portalRoot+"cardsui", viewsRoot+"cardsview"),    // allowed
		own(portalRoot+"peopleui", portalRoot+"onboardingui"),                        // people -> onboarding is not
		own(portalRoot+"transfersui", viewsRoot+"cardsview"),                         // transfers -> cards views is not
		own(viewsRoot+"cardsview", viewsRoot+"components", viewsRoot+"accountsview"), // cards -> accounts is not
		own(viewsRoot+"fragments", viewsRoot+"peopleview"),                           // shared views use no area
		own(portalRoot+"billingui", portalRoot+"frame"),                              // not an area
		own(portalRoot+"browsertest", portalComp),                                    // imports the composition
		own(portalComp, portalRoot+"frame", portalRoot+"peopleui"),                   // the composition may import all
		own("emi/internal/app", portalComp),                                          // the composition root may wire it
	} {
		g[p.ImportPath] = p
	}
	got := checkPortal(backOfficeArrows, g)
	want := []string{
		"area cards must not import area accounts",
		"area people must not import area onboarding",
		"area transfers must not import area cards",
		portalRoot + "billingui is neither an area's package",
		portalRoot + "browsertest imports the composition package",
		"shared package " + viewsRoot + "fragments must not import area people",
		"shared package " + portalRoot + "frame must not import area cards",
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
