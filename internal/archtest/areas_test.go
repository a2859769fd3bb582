package archtest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// serviceRoot is the parent of the service areas.
const serviceRoot = "emi/internal/service/"

// areaArrows is the service layer's map: each business area under
// internal/service and the other areas it may import. kernel imports no
// area; ops, which works across areas (the alert queue, maintenance,
// re-keying, the sandbox outcomes), may import them all. An import between
// two areas that is not listed here fails TestAreaArrows: either the code
// belongs in the other area (or the kernel), or the arrow is a design
// decision to add here with the contributors' guide's Layout section.
var areaArrows = map[string][]string{
	"kernel":     {},
	"staff":      {"kernel"},
	"partners":   {"kernel"},
	"people":     {"kernel", "staff"},
	"onboarding": {"kernel", "staff", "partners", "people"},
	"accounts":   {"kernel", "staff"},
	"monitoring": {"kernel", "staff"},
	"cards":      {"kernel", "people", "accounts", "monitoring"},
	"transfers":  {"kernel", "staff", "accounts", "monitoring"},
	"ops":        {"kernel", "staff", "partners", "people", "onboarding", "accounts", "cards", "transfers", "monitoring"},
}

// serviceTestHelpers is the package of helpers the areas' tests share; it
// is not an area and imports none.
const serviceTestHelpers = "servicetest"

// areaOf returns the area of a package under internal/service ("" for a
// path outside it). A sub-package belongs to its area.
func areaOf(path string) string {
	rest, ok := strings.CutPrefix(path, serviceRoot)
	if !ok {
		return ""
	}
	area, _, _ := strings.Cut(rest, "/")
	return area
}

// checkAreas returns one message per module package under internal/service
// that is not a known area, and per import between areas that areaArrows
// does not allow. Only direct imports count: the table is acyclic
// (TestAreaTableIsAcyclic), so allowed arrows never add up to a forbidden
// one.
func checkAreas(arrows map[string][]string, g graph) []string {
	var out []string
	for name, p := range g {
		from := areaOf(name)
		if from == "" || !g.inModule(name) {
			continue
		}
		allowed, known := arrows[from]
		if !known && from != serviceTestHelpers {
			out = append(out, fmt.Sprintf("%s is under internal/service but is not an area of areaArrows: add the area (and its arrows) or move the package", name))
			continue
		}
		for _, imp := range p.Imports {
			to := areaOf(imp)
			if to == "" || to == from {
				continue
			}
			if !contains(allowed, to) {
				out = append(out, fmt.Sprintf("area %s must not import area %s (%s imports %s): allowed are %v", from, to, name, imp, allowed))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestAreaArrows checks the real service areas against the table.
func TestAreaArrows(t *testing.T) {
	g := loadGraph(t)
	for area := range areaArrows {
		if !g.inModule(serviceRoot + area) {
			t.Errorf("area %s of areaArrows has no package %s%s", area, serviceRoot, area)
		}
	}
	for _, msg := range checkAreas(areaArrows, g) {
		t.Error(msg)
	}
}

// TestAreaTableIsAcyclic: areas import each other without cycles, and the
// kernel imports none.
func TestAreaTableIsAcyclic(t *testing.T) {
	if len(areaArrows["kernel"]) != 0 {
		t.Errorf("kernel imports %v: it must import no area", areaArrows["kernel"])
	}
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(a string, path []string)
	visit = func(a string, path []string) {
		switch state[a] {
		case 1:
			t.Errorf("cycle between areas: %s", strings.Join(append(path, a), " -> "))
			return
		case 2:
			return
		}
		state[a] = 1
		for _, b := range areaArrows[a] {
			if _, ok := areaArrows[b]; !ok {
				t.Errorf("area %s may import %s, which is not an area", a, b)
				continue
			}
			visit(b, append(path, a))
		}
		state[a] = 2
	}
	for a := range areaArrows {
		visit(a, nil)
	}
}

// TestAreaArrowsFireOnSyntheticGraph is the test of the test: an import
// the table does not allow, one against the kernel's rule, and an unknown
// package under internal/service are each reported; allowed arrows are not.
func TestAreaArrowsFireOnSyntheticGraph(t *testing.T) {
	mod := &struct{ Main bool }{Main: true}
	own := func(path string, imports ...string) pkg { return pkg{ImportPath: path, Imports: imports, Module: mod} }
	g := graph{}
	for _, p := range []pkg{
		own("emi/internal/emi"),
		own(serviceRoot+"kernel", "emi/internal/emi", serviceRoot+"staff"),        // kernel imports no area
		own(serviceRoot+"staff", serviceRoot+"kernel"),                            // allowed
		own(serviceRoot+"accounts", serviceRoot+"kernel", serviceRoot+"staff"),    // allowed
		own(serviceRoot+"cards", serviceRoot+"accounts", serviceRoot+"transfers"), // cards -> transfers is not
		own(serviceRoot+"transfers", serviceRoot+"accounts"),
		own(serviceRoot+"billing", serviceRoot+"kernel"), // not an area
		own(serviceRoot+"servicetest", "emi/internal/emi"),
		{ImportPath: serviceRoot + "elsewhere", Imports: []string{serviceRoot + "ops"}}, // not the module's
	} {
		g[p.ImportPath] = p
	}
	got := checkAreas(areaArrows, g)
	want := []string{
		"area cards must not import area transfers",
		"area kernel must not import area staff",
		serviceRoot + "billing is under internal/service but is not an area",
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
