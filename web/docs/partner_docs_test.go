package docs_test

import (
	"bytes"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	yaml "github.com/pb33f/go-yaml"

	"emi/web/api"
	"emi/web/docs"
)

// internalReference is what a partner must never read in the docs: where a
// rule is written inside the project (the specification files, contract
// sections, test names, Go identifiers, migrations, repository paths), the
// history of the document ("(added)", "added operation") and a hard-coded
// address (the served address is EMI_PUBLIC_URL).
var internalReference = regexp.MustCompile(`contract §|§\s*\d|contract\.md|shared/spec|seed-api|(?i:\bseed\b)|\(added\)|(?i:added operation)|(?i:added by emi)|:8080\b|localhost|\binternal/|\bkernel\.|\bpostgres\.|\bTest[A-Z]\w*|migrations/|\bweb/(?:api|docs)/|\.templ\b`)

// partnerPages are the pages a partner reads under /docs; the staff guides
// (operators, contributors, backoffice) are listed at /docs/guides, after
// the partners' guide, but not checked here.
var partnerPages = []string{"/docs", "/docs/getting-started", "/docs/errors", "/docs/sdk", "/docs/changelog",
	"/docs/versioning", "/docs/guides", "/docs/guides/partners"}

// TestPartnerDocsHaveNoInternalReferences renders every partner page of
// /docs, and the document /openapi.yaml serves, for an installation whose
// public address is not the default, and fails on any internal reference
// (internalReference): a partner learns the API from these pages alone.
func TestPartnerDocsHaveNoInternalReferences(t *testing.T) {
	t.Parallel()
	const public = "https://sandbox.emi.example"
	served := api.ServedOpenAPI(api.OpenAPI, public)
	h, err := docs.Handler(docs.Deps{OpenAPI: served, PublicURL: public})
	if err != nil {
		t.Fatal(err)
	}
	tag := regexp.MustCompile(`<[^>]*>`)
	check := func(name, text string) {
		t.Helper()
		n := 0
		for _, m := range internalReference.FindAllStringIndex(text, -1) {
			n++
			if n <= 40 {
				from, to := max(0, m[0]-60), min(len(text), m[1]+60)
				for from > 0 && !utf8.RuneStart(text[from]) {
					from--
				}
				for to < len(text) && !utf8.RuneStart(text[to]) {
					to++
				}
				t.Errorf("%s: %q in …%s…", name, text[m[0]:m[1]], strings.Join(strings.Fields(text[from:to]), " "))
			}
		}
		if n > 40 {
			t.Errorf("%s: %d internal references in all", name, n)
		}
	}
	for _, p := range partnerPages {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, public+p, nil))
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: HTTP %d", p, res.StatusCode)
			continue
		}
		check(p, html.UnescapeString(tag.ReplaceAllString(string(body), "")))
		// The staff guides are listed too, after the partners' guide.
		if p == "/docs/guides" {
			first := regexp.MustCompile(`data-testid="guide">\s*<a href="([^"]+)"`).FindStringSubmatch(string(body))
			if first == nil || first[1] != "/docs/guides/partners" {
				t.Errorf("/docs/guides lists %v first, want the partners' guide", first)
			}
		}
	}
	check("/openapi.yaml", string(served))
	// The file itself names no real host: its servers entry is a template
	// with server variables (defaults under the reserved .example), which
	// ServedOpenAPI replaces with the address.
	check("openapi.yaml", string(api.OpenAPI))
	if bytes.Contains(served, []byte("{scheme}")) || bytes.Contains(served, []byte("{host}")) ||
		!bytes.Contains(served, []byte(`url: "`+public+`"`)) {
		t.Errorf("/openapi.yaml does not name %s in place of the servers template", public)
	}
}

// TestOpenAPIExamplesAreTitledAndSignedNamesShownOnce: every example of
// openapi.yaml (request, response, component) has a summary, the title the
// reference shows above it; and no operation's description repeats its
// signed name, which the reference prints from x-emi-operation.
func TestOpenAPIExamplesAreTitledAndSignedNamesShownOnce(t *testing.T) {
	t.Parallel()
	var root yaml.Node
	if err := yaml.Unmarshal(api.OpenAPI, &root); err != nil {
		t.Fatal(err)
	}
	get := func(n *yaml.Node, key string) *yaml.Node {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
		return nil
	}
	examples, untitled := 0, 0
	var walk func(n *yaml.Node, at string)
	walk = func(n *yaml.Node, at string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, at)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i].Value, n.Content[i+1]
				if k == "examples" && v.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(v.Content); j += 2 {
						examples++
						ex := v.Content[j+1]
						if s := get(ex, "summary"); (s == nil || strings.TrimSpace(s.Value) == "") && get(ex, "$ref") == nil {
							untitled++
							t.Errorf("example %q at %s (line %d) has no summary", v.Content[j].Value, at, v.Content[j].Line)
						}
					}
				}
				walk(v, at+"/"+k)
			}
		}
	}
	walk(&root, "")
	if examples < 100 {
		t.Fatalf("only %d examples found in openapi.yaml", examples)
	}
	if untitled > 0 {
		t.Logf("%d of %d examples have no summary", untitled, examples)
	}

	for _, section := range []string{"paths", "webhooks"} {
		items := get(root.Content[0], section)
		if items == nil {
			continue
		}
		for i := 0; i+1 < len(items.Content); i += 2 {
			item := items.Content[i+1]
			for j := 0; j+1 < len(item.Content); j += 2 {
				if d := get(item.Content[j+1], "description"); d != nil && strings.Contains(d.Value, "Signed operation name") {
					t.Errorf("%s %s: the description repeats \"Signed operation name\", which the reference already shows",
						strings.ToUpper(item.Content[j].Value), items.Content[i].Value)
				}
			}
		}
	}
}
