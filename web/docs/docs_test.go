package docs_test

import (
	"bytes"
	"context"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	"emi/web/api"
	"emi/web/docs"
)

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// TestReferenceIsServedAtDocs: /docs renders every operation of
// openapi.yaml with its signed name, on the server, with no script and
// nothing loaded from another host; /docs/errors has the anchor of every
// error's doc_url; /docs/getting-started shows the four programs that
// TestGettingStartedProgramsRunAgainstALiveServer runs.
func TestReferenceIsServedAtDocs(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	base := env.Server.URL

	status, h, ref := get(t, base+"/docs")
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("/docs: HTTP %d %s", status, h.Get("Content-Type"))
	}
	signed := regexp.MustCompile(`(?m)^      x-emi-operation: (\S+)$`).FindAllStringSubmatch(string(api.OpenAPI), -1)
	if len(signed) < 40 {
		t.Fatalf("only %d operations in openapi.yaml", len(signed))
	}
	if got := strings.Count(ref, `data-testid="operation"`); got != len(signed) {
		t.Errorf("/docs shows %d operations, openapi.yaml has %d", got, len(signed))
	}
	for _, s := range signed {
		if !strings.Contains(ref, `data-operation="`+s[1]+`"`) {
			t.Errorf("/docs lacks %s", s[1])
		}
	}
	for _, want := range []string{`data-testid="server">` + env.Config.PublicURL + `<`, "Sandbox test values", "100000099",
		"Signed operation name: <code>card_number</code>", "card_number_first_half"} {
		if !strings.Contains(ref, want) {
			t.Errorf("/docs lacks %q", want)
		}
	}

	status, _, errs := get(t, base+"/docs/errors")
	if status != http.StatusOK {
		t.Fatalf("/docs/errors: HTTP %d", status)
	}
	for _, e := range emi.Catalogue() {
		if !strings.Contains(errs, `<tr id="`+e.Key+`" data-testid="error">`) {
			t.Errorf("/docs/errors has no anchor for %s, which doc_url points to", e.Key)
		}
	}

	status, _, gs := get(t, base+"/docs/getting-started")
	if status != http.StatusOK || strings.Count(gs, `data-testid="sample"`) != len(docs.Samples) {
		t.Fatalf("/docs/getting-started: HTTP %d, %d samples", status, strings.Count(gs, `data-testid="sample"`))
	}
	for _, page := range []string{ref, errs, gs} {
		if strings.Contains(page, "<script") || strings.Contains(page, "style=") {
			t.Error("a docs page has a script or an inline style")
		}
		for _, m := range regexp.MustCompile(`(?:src|href)="(https?://[^"]+)"`).FindAllStringSubmatch(page, -1) {
			if !strings.HasPrefix(m[1], env.Config.PublicURL) {
				t.Errorf("a docs page loads or links %s (no CDN)", m[1])
			}
		}
	}
	if status, _, css := get(t, base+"/static/css/docs.css"); status != http.StatusOK || !strings.Contains(css, ".docs-op") {
		t.Errorf("docs.css: HTTP %d", status)
	}
}

// TestGettingStartedProgramsRunAgainstALiveServer runs each program of
// the getting-started page, exactly as the page shows it, against a live
// server with a partner of its own: both calls must answer code 0. A
// missing interpreter skips its program, except under CI (CI=true), where
// .ci/run installs them.
func TestGettingStartedProgramsRunAgainstALiveServer(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	for _, s := range docs.Samples {
		t.Run(s.Lang, func(t *testing.T) {
			tool := map[string]string{"go": "go", "python": "python3", "javascript": "node", "bash": "curl"}[s.Lang]
			if _, err := exec.LookPath(tool); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is missing", tool)
				}
				t.Skipf("%s is missing", tool)
			}
			p := env.NewPartner(t, emi.PartnerCreate{Name: "Docs " + s.Lang})
			src, err := docs.Examples.ReadFile(s.File)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			name := filepath.Base(s.File)
			if err := os.WriteFile(filepath.Join(dir, name), src, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := strings.Fields(s.Run)
			cmd := exec.CommandContext(ctx, args[0], args[1:]...) // #nosec G204 -- the page's own run line
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "EMI_URL="+env.Server.URL, "EMI_API_KEY="+p.APIKey, "EMI_API_SECRET="+p.APISecret,
				"GOFLAGS=-mod=mod", "GO111MODULE=off")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s\n%s", s.Run, err, out, stderr.String())
			}
			answers := regexp.MustCompile(`(GET|POST) (\S+): (?:HTTP (\d+) )?(\{.*?\})\n`).FindAllStringSubmatch(string(out), -1)
			if len(answers) != 2 {
				t.Fatalf("%s printed %q", s.Run, out)
			}
			for _, a := range answers {
				if !strings.HasPrefix(a[4], `{"code":0,`) {
					t.Errorf("%s: %s %s answered HTTP %s %s", s.Run, a[1], a[2], a[3], a[4])
				}
			}
			if !strings.Contains(answers[0][4], p.Merchant) || !strings.Contains(answers[1][4], `"status":"clear"`) {
				t.Errorf("%s: unexpected answers %q", s.Run, out)
			}
		})
	}
}

// TestGuidesAreServedAndTheReadmeIsAMap: README.md stays a short map (at
// most 200 lines) and everything else lives in the guides, so every guide
// must be reachable: listed at /docs/guides with its title and served at
// /docs/guides/{name} with its first heading, through the real router.
// Every guide path, served guide link and anchor README.md mentions
// exists, and so does every link between guides ("file.md#anchor", which
// works in the repository and here, and "#anchor").
func TestGuidesAreServedAndTheReadmeIsAMap(t *testing.T) {
	t.Parallel()
	root := pgtest.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md")) // #nosec G304 -- the repository's own README
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 200 {
		t.Errorf("README.md has %d lines: keep it a map of at most 200 and move the rest to a guide (web/docs/guides/)", n)
	}
	files, err := filepath.Glob(filepath.Join(root, "web", "docs", "guides", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no guide in web/docs/guides (%v)", err)
	}

	env := apptest.New(t, apptest.Options{NoSanctions: true})
	base := env.Server.URL
	status, _, index := get(t, base+"/docs/guides")
	if status != http.StatusOK || !strings.Contains(index, `<a href="/docs/guides" aria-current="page">Guides</a>`) {
		t.Fatalf("/docs/guides: HTTP %d, or Guides is not in the navigation:\n%s", status, index)
	}
	if got := strings.Count(index, `data-testid="guide"`); got != len(files) {
		t.Errorf("/docs/guides lists %d guides, web/docs/guides has %d files", got, len(files))
	}
	ids := map[string]map[string]bool{} // guide name → anchors of its page
	pages := map[string]string{}
	idAttr := regexp.MustCompile(`\sid="([^"]+)"`)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		src, err := os.ReadFile(f) // #nosec G304 -- the repository's own guides
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^# (.+)$`).FindStringSubmatch(string(src))
		if m == nil {
			t.Errorf("%s has no \"# \" heading, its title", f)
			continue
		}
		title := html.EscapeString(strings.TrimSpace(m[1]))
		if !strings.Contains(index, `<a href="/docs/guides/`+name+`"><strong>`+title+`</strong></a>`) {
			t.Errorf("/docs/guides does not list %s as %q", name, title)
		}
		status, h, page := get(t, base+"/docs/guides/"+name)
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("/docs/guides/%s: HTTP %d %s", name, status, h.Get("Content-Type"))
			continue
		}
		if !strings.Contains(page, "<h1>"+title+"</h1>") {
			t.Errorf("/docs/guides/%s does not show its first heading %q", name, title)
		}
		if strings.Contains(page, "<script") || strings.Contains(page, "style=") {
			t.Errorf("/docs/guides/%s has a script or an inline style", name)
		}
		for _, m := range regexp.MustCompile(`(?:src|href)="(https?://[^"]+)"`).FindAllStringSubmatch(page, -1) {
			if !strings.HasPrefix(m[1], env.Config.PublicURL) {
				t.Errorf("/docs/guides/%s loads or links %s", name, m[1])
			}
		}
		ids[name] = map[string]bool{}
		for _, m := range idAttr.FindAllStringSubmatch(page, -1) {
			ids[name][m[1]] = true
		}
		pages[name] = page
	}
	if status, _, _ := get(t, base+"/docs/guides/no-such-guide"); status != http.StatusNotFound {
		t.Errorf("/docs/guides/no-such-guide: HTTP %d, want 404", status)
	}
	// anchorExists reports whether guide name has the anchor (none: the
	// page itself).
	anchorExists := func(name, anchor string) bool {
		return ids[name] != nil && (anchor == "" || ids[name][anchor])
	}

	// Links between guides, as rendered.
	href := regexp.MustCompile(`href="([^"]*)"`)
	guideLink := regexp.MustCompile(`^(?:([a-z0-9_-]+)\.md)?(?:#(.*))?$`)
	for name, page := range pages {
		for _, m := range href.FindAllStringSubmatch(page, -1) {
			u := html.UnescapeString(m[1])
			if strings.HasPrefix(u, "/") {
				if status, _, _ := get(t, base+strings.SplitN(u, "#", 2)[0]); status != http.StatusOK {
					t.Errorf("/docs/guides/%s links %s, which answers HTTP %d", name, u, status)
				}
				continue
			}
			g := guideLink.FindStringSubmatch(u)
			if g == nil {
				t.Errorf("/docs/guides/%s links %q: link another guide as name.md#anchor, or a page of the server as /path", name, u)
				continue
			}
			target := g[1]
			if target == "" {
				target = name
			}
			if !anchorExists(target, g[2]) {
				t.Errorf("/docs/guides/%s links %q, which does not exist", name, u)
			}
		}
	}

	// What README.md points to.
	for _, m := range regexp.MustCompile(`web/docs/guides/([A-Za-z0-9_.-]+?)(?:\.md)?(?:#([A-Za-z0-9_-]+))?(?:[^A-Za-z0-9_.#-]|$)`).FindAllStringSubmatch(string(readme), -1) {
		if !anchorExists(m[1], m[2]) {
			t.Errorf("README.md mentions web/docs/guides/%s.md#%s, which does not exist", m[1], m[2])
		}
	}
	served := regexp.MustCompile("(?:^|[\\s(`\\[])(/docs/guides(?:/[A-Za-z0-9_.-]+)?)(?:#([A-Za-z0-9_-]+))?")
	found := 0
	for _, m := range served.FindAllStringSubmatch(string(readme), -1) {
		found++
		status, _, _ := get(t, base+m[1])
		name := strings.TrimPrefix(strings.TrimPrefix(m[1], "/docs/guides"), "/")
		switch {
		case status != http.StatusOK:
			t.Errorf("README.md mentions %s, which answers HTTP %d", m[1], status)
		case name != "" && !anchorExists(name, m[2]):
			t.Errorf("README.md mentions %s#%s, which does not exist", m[1], m[2])
		}
	}
	if found == 0 {
		t.Error("README.md names no guide: it is the map of them")
	}
}
