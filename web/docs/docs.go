// Package docs serves the partner reference at /docs: openapi.yaml
// rendered on the server with templ (no script, no CDN), the error
// catalogue every error's doc_url points into, the getting-started page
// whose signing programs are the files under examples/, which a test runs
// against a live server, the guides (guides/*.md) at /docs/guides, the
// SDKs (sdk/) at /docs/sdk with the page that lists them, the changelog and
// the versioning policy (pages/*.md). "{base_url}" in a guide, a page or an
// example reads as the server's public address (EMI_PUBLIC_URL).
package docs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"emi/internal/emi"
	view "emi/views/docs"
	"emi/web/httpx"
)

// Examples are the getting-started programs, shown as they are run.
//
//go:embed examples/go/main.go examples/python/sign.py examples/node/sign.mjs examples/curl/sign.sh
var Examples embed.FS

// SDKs are the clients partners download from /docs/sdk/{lang}/{file}:
// one file each, with no dependency. Their tests (the Go package's own, and
// TestSDKsRunTheGettingStartedJourneyAgainstALiveServer for all three) are
// not served.
//
//go:embed sdk/go/emi/emi.go sdk/python/emi.py sdk/node/emi.js
var SDKs embed.FS

// SDKFiles are the served SDK files: the path under /docs/ and the file
// in SDKs.
var SDKFiles = map[string]string{
	"sdk/go/emi.go":     "sdk/go/emi/emi.go",
	"sdk/python/emi.py": "sdk/python/emi.py",
	"sdk/node/emi.js":   "sdk/node/emi.js",
}

// BasePlaceholder in a guide, a page or an example is replaced by the
// server's public address when it is shown.
const BasePlaceholder = "{base_url}"

// Samples lists the getting-started programs: file, language, title and
// how to run it from its directory.
var Samples = []struct{ File, Lang, Title, Run string }{
	{"examples/go/main.go", "go", "Go", "go run main.go"},
	{"examples/python/sign.py", "python", "Python (standard library only)", "python3 sign.py"},
	{"examples/node/sign.mjs", "javascript", "Node.js (18 or later)", "node sign.mjs"},
	{"examples/curl/sign.sh", "bash", "curl and openssl", "bash sign.sh"},
}

// Deps are what the reference needs.
type Deps struct {
	// OpenAPI is the document as /openapi.yaml serves it.
	OpenAPI []byte
	// PublicURL is EMI_PUBLIC_URL.
	PublicURL string
}

// Handler returns the /docs pages. The reference is built from the document
// on the first request for it (about 0.2 s of CPU, once per document and
// process) rather than here: every App.Handler makes these pages, and the
// tests' environments, each with its own public URL in the document, paid a
// build each though few of them read /docs. The document is embedded and
// tested, so it parses; should it not, /docs answers 500 with the error and
// the rest of the server is unaffected.
func Handler(d Deps) (http.Handler, error) {
	var rows []view.ErrorRow
	for _, e := range emi.Catalogue() {
		rows = append(rows, view.ErrorRow{Code: e.Code, Key: e.Key, Status: httpx.Status(e.Kind), Description: e.Description()})
	}
	base := strings.TrimRight(d.PublicURL, "/")
	gs := view.GettingStarted{Base: base}
	for _, s := range Samples {
		b, err := Examples.ReadFile(s.File)
		if err != nil {
			return nil, err
		}
		gs.Samples = append(gs.Samples, view.Sample{ID: s.Lang, Lang: s.Lang, Title: s.Title, Run: s.Run,
			Code: strings.ReplaceAll(string(b), BasePlaceholder, base)})
	}
	nav := func(active string) view.Frame {
		f := view.Frame{Title: "emi partner API"}
		for _, l := range []view.Link{{Href: "/docs", Label: "Reference"}, {Href: "/docs/getting-started", Label: "Getting started"},
			{Href: "/docs/sdk", Label: "SDKs"}, {Href: "/docs/errors", Label: "Errors"}, {Href: "/docs/guides", Label: "Guides"},
			{Href: "/docs/changelog", Label: "Changelog"}, {Href: "/docs/versioning", Label: "Versioning"},
			{Href: "/openapi.yaml", Label: "openapi.yaml"}} {
			l.Active = l.Href == active
			if l.Active {
				f.Title = l.Label + " · emi partner API"
			}
			f.Nav = append(f.Nav, l)
		}
		return f
	}
	mux := http.NewServeMux()
	mux.Handle("GET /docs", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref, err := reference(d.OpenAPI)
		if err != nil {
			http.Error(w, "the API reference cannot be rendered: "+err.Error(), http.StatusInternalServerError)
			return
		}
		page(view.ReferencePage(nav("/docs"), ref)).ServeHTTP(w, r)
	}))
	mux.Handle("GET /docs/errors", page(view.ErrorsPage(nav("/docs/errors"), rows)))
	mux.Handle("GET /docs/getting-started", page(view.GettingStartedPage(nav("/docs/getting-started"), gs)))
	mux.Handle("GET /docs/guides", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var links []view.GuideLink
		for _, g := range guides() {
			links = append(links, view.GuideLink{Href: "/docs/guides/" + g.name, Title: g.title, Summary: g.summary})
		}
		page(view.GuidesPage(nav("/docs/guides"), links)).ServeHTTP(w, r)
	}))
	mux.Handle("GET /docs/guides/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		// A link between guides is written "operators.md#…" so that it
		// works both in the repository and here: send it to the page.
		if base, ok := strings.CutSuffix(name, ".md"); ok && guideNamed(base) != nil {
			http.Redirect(w, r, "/docs/guides/"+base, http.StatusMovedPermanently)
			return
		}
		g := guideNamed(name)
		if g == nil {
			http.NotFound(w, r)
			return
		}
		f := nav("/docs/guides")
		f.Title = g.title + " · emi"
		page(view.GuidePage(f, withBase(g.page, base))).ServeHTTP(w, r)
	}))
	for _, name := range pageNames {
		mux.Handle("GET /docs/"+name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g := pageNamed(name)
			f := nav("/docs/" + name)
			f.Title = g.title + " · emi partner API"
			page(view.GuidePage(f, withBase(g.page, base))).ServeHTTP(w, r)
		}))
	}
	for served, file := range SDKFiles {
		b, err := SDKs.ReadFile(file)
		if err != nil {
			return nil, err
		}
		mux.Handle("GET /docs/"+served, sdkFile(path.Base(served), b))
	}
	return mux, nil
}

// sdkFile serves an SDK as text, shown in the browser and saved by curl
// -O under its name.
func sdkFile(name string, b []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Type", "text/plain; charset=utf-8")
		hd.Set("Content-Disposition", `inline; filename="`+name+`"`)
		hd.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Cache-Control", "public, max-age=300")
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	})
}

// page serves a component with the headers of a public page: no script
// and no inline style are needed, so the policy allows neither.
func page(c templ.Component) http.Handler {
	h := templ.Handler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(w, r)
	})
}

// reference builds the view model of the whole document.
//
// The result depends on doc alone and is only read, so it is built once per
// document and process (concurrent first requests wait for the one build):
// libopenapi's model of openapi.yaml costs about a CPU-second under -race.
func reference(doc []byte) (view.Reference, error) {
	v, _ := references.LoadOrStore(sha256.Sum256(doc), &builtReference{})
	b := v.(*builtReference)
	b.once.Do(func() { b.ref, b.err = buildReference(doc) })
	return b.ref, b.err
}

// builtReference is one document's reference, built once.
type builtReference struct {
	once sync.Once
	ref  view.Reference
	err  error
}

// references are the *builtReference by the SHA-256 of their document.
var references sync.Map

func buildReference(doc []byte) (view.Reference, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return view.Reference{}, fmt.Errorf("docs: %w", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return view.Reference{}, fmt.Errorf("docs: %w", err)
	}
	model := m.Model
	ref := view.Reference{Title: model.Info.Title, Version: model.Info.Version, Summary: model.Info.Summary,
		Intro: markdown(model.Info.Description)}
	if len(model.Servers) > 0 {
		ref.Server = model.Servers[0].URL
	}
	groups := map[string]*view.Group{}
	var order []string
	for _, t := range model.Tags {
		groups[t.Name] = &view.Group{Name: t.Name, Description: markdown(t.Description)}
		order = append(order, t.Name)
	}
	for path, item := range model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			o := operation(strings.ToUpper(method), path, op)
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			if groups[tag] == nil {
				groups[tag] = &view.Group{Name: tag}
				order = append(order, tag)
			}
			groups[tag].Ops = append(groups[tag].Ops, o)
		}
	}
	for _, name := range order {
		if g := groups[name]; len(g.Ops) > 0 {
			ref.Groups = append(ref.Groups, *g)
		}
	}
	return ref, nil
}

func operation(method, path string, op *v3.Operation) view.Operation {
	signed := op.OperationId
	if x := op.Extensions.GetOrZero("x-emi-operation"); x != nil {
		signed = x.Value
	}
	o := view.Operation{Anchor: op.OperationId, Method: method, Path: path, Summary: op.Summary, Signed: signed,
		OperationID: op.OperationId, Description: markdown(op.Description)}
	for _, p := range op.Parameters {
		f := view.Field{Name: p.Name, In: p.In, Required: p.Required != nil && *p.Required, Description: inline(oneLine(p.Description))}
		if p.Schema != nil {
			f.Type = typeOf(p.Schema.Schema())
		}
		o.Params = append(o.Params, f)
	}
	if op.RequestBody != nil {
		if mt := op.RequestBody.Content.GetOrZero("application/json"); mt != nil {
			if mt.Schema != nil {
				o.Body = bodyFields(mt.Schema.Schema())
			}
			if mt.Examples != nil {
				for name, ex := range mt.Examples.FromOldest() {
					o.Examples = append(o.Examples, view.Example{Name: name, Summary: ex.Summary, JSON: exampleJSON(ex.Value)})
				}
			}
		}
	}
	if op.Responses != nil {
		for status, r := range op.Responses.Codes.FromOldest() {
			o.Responses = append(o.Responses, view.Response{Status: status, Description: oneLine(r.Description)})
		}
	}
	return o
}

// bodyFields lists the top-level fields of a request schema (allOf
// merged), required ones first.
func bodyFields(s *base.Schema) []view.Field {
	var out []view.Field
	var walk func(s *base.Schema)
	walk = func(s *base.Schema) {
		if s == nil {
			return
		}
		for _, sub := range s.AllOf {
			walk(sub.Schema())
		}
		if s.Properties == nil {
			return
		}
		for name, p := range s.Properties.FromOldest() {
			ps := p.Schema()
			f := view.Field{Name: name, Required: slices.Contains(s.Required, name), Type: typeOf(ps)}
			if ps != nil {
				f.Description = inline(oneLine(ps.Description))
			}
			out = append(out, f)
		}
	}
	walk(s)
	slices.SortStableFunc(out, func(a, b view.Field) int {
		switch {
		case a.Required == b.Required:
			return 0
		case a.Required:
			return -1
		}
		return 1
	})
	return out
}

// typeOf describes a schema in a few words: its type(s), format, enum,
// bounds, or the name of the schema it refers to.
func typeOf(s *base.Schema) string {
	if s == nil {
		return ""
	}
	var parts []string
	if len(s.Type) > 0 {
		parts = append(parts, strings.Join(s.Type, " or "))
	} else if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		parts = append(parts, "one of several shapes")
	} else {
		parts = append(parts, "object")
	}
	if s.Format != "" {
		parts = append(parts, s.Format)
	}
	if len(s.Enum) > 0 {
		var vs []string
		for _, e := range s.Enum {
			vs = append(vs, e.Value)
		}
		parts = append(parts, "one of "+strings.Join(vs, ", "))
	}
	if s.MaxLength != nil {
		parts = append(parts, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.Items != nil && s.Items.IsA() {
		if it := s.Items.A.Schema(); it != nil && len(it.Type) > 0 {
			parts = append(parts, "of "+strings.Join(it.Type, " or "))
		}
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func exampleJSON(n interface{ Decode(any) error }) string {
	if n == nil {
		return ""
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}
