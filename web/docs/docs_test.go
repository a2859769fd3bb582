package docs_test

import (
	"bytes"
	"context"
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
