package portal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// portalArrows is the portal's map: each business area of the back office
// and the other areas whose screen files its screen files may use. The
// areas are the service layer's (internal/archtest, areaArrows); the
// kernel's part here is played by the frame and shared files, which every
// screen may use. The screens follow the services' arrows where they use
// another area's helpers (an application's page shows the people area's
// documents), and add the arrows of pages that list another area's things:
// a person's and a company's page list their accounts and cards, an
// account's page its cards (ownerAccounts, ownerCards, cardRows). So that
// the map stays acyclic (TestPortalArrowsAreAcyclic), the card screens use
// no other area: the service's arrows from cards to people and accounts
// are rules the card screens never see. ops (dashboard, search, audit log,
// alert queue, jobs) works across the areas and may use them all; no area
// uses ops.
var portalArrows = map[string][]string{
	"staff":      {},
	"partners":   {},
	"cards":      {},
	"people":     {"staff", "accounts", "cards"},
	"onboarding": {"staff", "partners", "people", "accounts", "cards"},
	"accounts":   {"staff", "cards"},
	"transfers":  {"staff", "accounts"},
	"ops":        {"staff", "partners", "people", "onboarding", "accounts", "cards", "transfers"},
}

// frameFiles are the portal's files that belong to no area: the type and
// its construction, the routes, the page frame, and the shared helpers,
// each in a named home. They may use each other, never a screen file.
var frameFiles = map[string]string{
	"doc.go":      "the package's doc comment: this layout",
	"portal.go":   "the Portal type, Deps, New, the handler and its middleware chain",
	"routes.go":   "every route; the composition point, the one frame file that may name every area's handlers",
	"render.go":   "the page frame: layout, flashes, error pages, the hosted pages' frame, security headers",
	"nav.go":      "the navigation: its links and their badges (the queue counts)",
	"access.go":   "who is signed in and what they may do: the session and permission middleware",
	"errors.go":   "turning a service error into a flash or an error page",
	"messages.go": "the error catalogue's staff-facing messages",
	"request.go":  "reading a request: path parameters, queries, date ranges",
	"sorting.go":  "table sorting and paging",
	"tones.go":    "status badge colours",
	"format.go":   "formatting several areas' screens share: times, scores, CSV",
	"names.go":    "naming who did something: staff, partners, the signed-in user",
	"links.go":    "the pages' addresses: an account's, a card's, an owner's",
	"history.go":  "an entity's audit history as the pages show it",
}

// compositionFile may reference every area: it is where the routes
// register each area's handlers.
const compositionFile = "routes.go"

// areaOfFile returns the area of a screen file ("cards" for cards.go and
// cards_authorizations.go), or "" when the name starts with no area.
func areaOfFile(name string, arrows map[string][]string) string {
	base := strings.TrimSuffix(name, ".go")
	area, _, _ := strings.Cut(base, "_")
	if _, ok := arrows[area]; ok {
		return area
	}
	return ""
}

// layoutRef is one reference from a file to a package-level identifier
// (or a method or field) declared in another file of the package.
type layoutRef struct {
	from, to, name string
	pos            token.Position
}

// crossFileRefs type-checks the files and returns each file's references
// to identifiers declared in another of the files, one per (from file,
// identifier).
func crossFileRefs(fset *token.FileSet, files []*ast.File, imp types.Importer) ([]layoutRef, error) {
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check("emi/web/portal", fset, files, info)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []layoutRef
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		// Package-level objects, and methods and fields (whose parent
		// scope is none); local variables stay in their file anyway.
		if obj.Parent() != nil && obj.Parent() != pkg.Scope() {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to {
			continue
		}
		name := obj.Name()
		if fn, ok := obj.(*types.Func); ok {
			if recv := fn.Signature().Recv(); recv != nil {
				name = types.TypeString(recv.Type(), func(*types.Package) string { return "" }) + "." + name
			}
		}
		key := from + "\x00" + to + "\x00" + name
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, layoutRef{from: from, to: to, name: name, pos: fset.Position(id.Pos())})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].from != out[j].from {
			return out[i].from < out[j].from
		}
		if out[i].to != out[j].to {
			return out[i].to < out[j].to
		}
		return out[i].name < out[j].name
	})
	return out, nil
}

// checkLayout returns one message per file whose name is neither a frame
// file nor an area's screen file, per reference from a frame file to a
// screen file (except from the composition file), and per reference from
// a screen file of one area to a screen file of another area the arrows do
// not allow.
func checkLayout(names []string, refs []layoutRef, frame map[string]string, arrows map[string][]string) []string {
	var out []string
	for _, n := range names {
		if _, ok := frame[n]; !ok && areaOfFile(n, arrows) == "" {
			out = append(out, fmt.Sprintf("%s is neither a frame or shared file (%s) nor named after an area (%s.go or %s_*.go): name it after the area its screens belong to, or add it to frameFiles with what it holds",
				n, strings.Join(sortedNames(frame), ", "), "<area>", "<area>"))
		}
	}
	for _, r := range refs {
		toArea := areaOfFile(r.to, arrows)
		if toArea == "" {
			continue // frame and shared files are everyone's
		}
		if _, isFrame := frame[r.from]; isFrame {
			if r.from == compositionFile {
				continue
			}
			out = append(out, fmt.Sprintf("%s: frame file %s uses %s, declared in %s (area %s): the frame depends on no screen; move %s to a shared file",
				r.pos, r.from, r.name, r.to, toArea, r.name))
			continue
		}
		fromArea := areaOfFile(r.from, arrows)
		if fromArea == "" || fromArea == toArea {
			continue
		}
		if !allows(arrows[fromArea], toArea) {
			out = append(out, fmt.Sprintf("%s: %s (area %s) uses %s, declared in %s (area %s): %s screens may use %v; move %s to a shared file or to the area that uses it",
				r.pos, r.from, fromArea, r.name, r.to, toArea, fromArea, arrows[fromArea], r.name))
		}
	}
	return out
}

func allows(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// exportImporter imports the package's dependencies from the compiler's
// export data, which `go list -export` builds (or finds in the build cache).
func exportImporter(t *testing.T, fset *token.FileSet, dir string) types.Importer {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		t.Fatalf("the go command is needed to find the dependencies' export data: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-export", "-deps", "-json=ImportPath,Export", ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file) // #nosec G304 -- a path go list gave
	})
}

// TestPortalLayout: the portal's files follow the business areas, the page
// frame and the shared helpers depend on no screen, and a screen uses
// another area's screen only where portalArrows allows it. A helper two
// areas need lives in a shared file, one named home each. The old layout
// (files named aml.go, review.go, screens.go, money.go; the frame's
// render.go calling cards.go's maskedQuery, aml.go's queueCounts and
// hosted.go's 500 page): this test failed there.
func TestPortalLayout(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		names = append(names, n)
	}
	if len(files) < 20 {
		t.Fatalf("found %d files of the portal: the test is not reading the package", len(files))
	}
	refs, err := crossFileRefs(fset, files, exportImporter(t, fset, "."))
	if err != nil {
		t.Fatalf("type-checking the portal: %v", err)
	}
	if len(refs) < 50 {
		t.Fatalf("found %d references between the portal's files: the checker is not seeing them", len(refs))
	}
	for _, msg := range checkLayout(names, refs, frameFiles, portalArrows) {
		t.Error(msg)
	}
	for n := range frameFiles {
		if _, err := os.Stat(n); err != nil {
			t.Errorf("frame file %s of frameFiles does not exist: remove it from the table", n)
		}
	}
}

// TestPortalLayoutCheckerCatchesForbiddenArrows is the test of the test: a
// made-up package whose frame uses a screen's function (render.go) and a
// screen's method (nav.go), whose cards screen uses an onboarding helper
// (not allowed) and a people one (allowed), whose routes name a handler of
// every area (allowed), and with a file named after nothing. Each
// forbidden reference is reported naming both files; nothing else is.
func TestPortalLayoutCheckerCatchesForbiddenArrows(t *testing.T) {
	src := map[string]string{
		"portal.go": `package portal
type Portal struct{ n int }
`,
		"render.go": `package portal
func (p *Portal) render(q string) string { return maskedQuery(q) + shared() }
`,
		"nav.go": `package portal
func (p *Portal) counts() int { return p.reviewCount() + p.n }
`,
		"format.go": `package portal
func shared() string { return "" }
`,
		"routes.go": `package portal
func (p *Portal) Routes() []func() { return []func(){p.cardList, p.applicationList} }
`,
		"cards.go": `package portal
func maskedQuery(q string) string { return q }
func (p *Portal) cardList() { _ = riskTone("") + personName() + shared() }
`,
		"onboarding.go": `package portal
func riskTone(s string) string { return s }
func (p *Portal) reviewCount() int { return 0 }
func (p *Portal) applicationList() { _ = personName() }
`,
		"people.go": `package portal
func personName() string { return "" }
`,
		"screens.go": `package portal
func (p *Portal) dashboard() { p.cardList() }
`,
	}
	fset := token.NewFileSet()
	var files []*ast.File
	names := sortedNames(src)
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, src[n], parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	refs, err := crossFileRefs(fset, files, importer.Default())
	if err != nil {
		t.Fatal(err)
	}
	frame := map[string]string{"portal.go": "", "render.go": "", "nav.go": "", "routes.go": "", "format.go": ""}
	arrows := map[string][]string{"people": {}, "onboarding": {"people"}, "cards": {"people"}}
	got := checkLayout(names, refs, frame, arrows)
	wants := []string{
		"screens.go is neither a frame or shared file",
		"frame file render.go uses maskedQuery, declared in cards.go (area cards)",
		"frame file nav.go uses *Portal.reviewCount, declared in onboarding.go (area onboarding)",
		"cards.go (area cards) uses riskTone, declared in onboarding.go (area onboarding)",
	}
	if len(got) != len(wants) {
		t.Errorf("got %d messages, want %d:\n%s", len(got), len(wants), strings.Join(got, "\n"))
	}
	for _, want := range wants {
		found := false
		for _, msg := range got {
			found = found || strings.Contains(msg, want)
		}
		if !found {
			t.Errorf("no message contains %q; got:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// TestPortalArrowsAreAcyclic: the areas' screens use each other without
// cycles, and every area they name is one of the table's.
func TestPortalArrowsAreAcyclic(t *testing.T) {
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(a string, path []string)
	visit = func(a string, path []string) {
		switch state[a] {
		case 1:
			t.Errorf("cycle between the portal's areas: %s", strings.Join(append(path, a), " -> "))
			return
		case 2:
			return
		}
		state[a] = 1
		for _, b := range portalArrows[a] {
			if _, ok := portalArrows[b]; !ok {
				t.Errorf("area %s may use %s, which is not an area", a, b)
				continue
			}
			visit(b, append(path, a))
		}
		state[a] = 2
	}
	for _, a := range sortedNames(portalArrows) {
		visit(a, nil)
	}
}
