package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	"emi/internal/webhook"
	"emi/web/api"
	"emi/web/docs"
	sdk "emi/web/docs/sdk/go/emi"
)

// signedDelivery is a webhook delivery as emi's deliverer signs it
// (internal/webhook.Sign), during a rotation (two secrets): each SDK must
// verify it with either secret, and refuse it once a byte changes.
type signedDelivery struct {
	OldSecret, NewSecret string
	ID, Signature, Body  string
	Timestamp            int64
}

func newSignedDelivery(t *testing.T) signedDelivery {
	t.Helper()
	oldText, oldKey := webhook.NewSecret()
	newText, newKey := webhook.NewSecret()
	d := signedDelivery{OldSecret: oldText, NewSecret: newText, ID: "0190a0b0-0000-7000-8000-000000000001",
		Timestamp: time.Now().Unix(),
		Body:      `{"id":"0190a0b0-0000-7000-8000-000000000001","type":"card.status_changed","created_at":"2025-01-02T03:04:05Z","data":{"card":"0190a0b0-0000-7000-8000-0000000000c1","status":"inactive"}}`}
	d.Signature = webhook.Sign(emi.WebhookMessage{ID: d.ID, Timestamp: time.Unix(d.Timestamp, 0), Body: []byte(d.Body),
		Secrets: [][]byte{oldKey, newKey}})
	if strings.Count(d.Signature, "v1,") != 2 {
		t.Fatalf("webhook.Sign gave %q", d.Signature)
	}
	return d
}

// env is what the Python and Node journeys read.
func (d signedDelivery) env() []string {
	return []string{"EMI_WEBHOOK_SECRET_OLD=" + d.OldSecret, "EMI_WEBHOOK_SECRET_NEW=" + d.NewSecret,
		"EMI_WEBHOOK_ID=" + d.ID, "EMI_WEBHOOK_TIMESTAMP=" + strconv.FormatInt(d.Timestamp, 10),
		"EMI_WEBHOOK_SIGNATURE=" + d.Signature, "EMI_WEBHOOK_BODY=" + d.Body}
}

// TestSDKsRunTheGettingStartedJourneyAgainstALiveServer runs the
// getting-started journey with each SDK of /docs/sdk against a live server
// (a real listener), each with a partner of its own: the Go SDK here, the
// Python and Node SDKs through their journey scripts, which assert every
// step themselves and exit non-zero on the first failure; then the
// example of each language on /docs/sdk. A missing
// interpreter skips its SDK, except under CI (CI=true), where .ci/run
// installs python3 and nodejs.
func TestSDKsRunTheGettingStartedJourneyAgainstALiveServer(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	root := pgtest.RepoRoot(t)
	delivery := newSignedDelivery(t)

	t.Run("go", func(t *testing.T) {
		p := env.NewPartner(t, emi.PartnerCreate{Name: "SDK go"})
		goJourney(t, sdk.New(env.Server.URL, p.APIKey, p.APISecret), p.Merchant, delivery)
	})
	for _, s := range []struct{ name, tool, script string }{
		{"python", "python3", "web/docs/sdk/python/test_journey.py"},
		{"node", "node", "web/docs/sdk/node/test_journey.js"},
	} {
		t.Run(s.name, func(t *testing.T) {
			if _, err := exec.LookPath(s.tool); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is missing (.ci/run installs it)", s.tool)
				}
				t.Skipf("%s is missing", s.tool)
			}
			p := env.NewPartner(t, emi.PartnerCreate{Name: "SDK " + s.name})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, s.tool, filepath.Join(root, s.script)) // #nosec G204 -- the repository's own script
			cmd.Env = append(append(os.Environ(), "EMI_URL="+env.Server.URL, "EMI_API_KEY="+p.APIKey,
				"EMI_API_SECRET="+p.APISecret), delivery.env()...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", s.tool, s.script, err, out)
			}
			if !strings.Contains(string(out), "journey: ok") {
				t.Fatalf("%s %s did not finish:\n%s", s.tool, s.script, out)
			}
			t.Logf("%s", out)
		})
	}
	// The example of each language on /docs/sdk, as a partner would save
	// it beside the downloaded SDK.
	for _, lang := range []string{"go", "python", "js"} {
		t.Run("page-"+lang, func(t *testing.T) { runSDKPageExample(t, env, lang) })
	}
}

// goJourney is the journey of test_journey.py and test_journey.js, with
// the Go SDK.
func goJourney(t *testing.T, c *sdk.Client, merchant string, d signedDelivery) {
	ctx := context.Background()
	must := func(o sdk.Object, err error) sdk.Object {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	// Who am I, with signature version 2 (the default) and version 1.
	if got := must(c.Partner(ctx)).String("merchant"); got != merchant {
		t.Fatalf("partner_details: merchant %q, want %q", got, merchant)
	}
	v1 := *c
	v1.SignatureVersion = 1
	if got := must(v1.Partner(ctx)).String("merchant"); got != merchant {
		t.Fatalf("partner_details with version 1: merchant %q", got)
	}

	// A user.
	email := fmt.Sprintf("mara.%d@example.com", time.Now().UnixNano())
	user := must(c.CreateUser(ctx, sdk.Object{"merchant": merchant, "email": email, "first_name": "Mara",
		"last_name": "Velikova", "birthday": "1990-04-12", "nationality": "BG", "country": "BG"}))
	if len(user.Token()) != 36 {
		t.Fatalf("user_create: %v", user)
	}

	// AML: a clean name, then the listed name of the sandbox table.
	clear := must(c.AMLCheck(ctx, sdk.Object{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE"}))
	if clear.String("status") != "clear" {
		t.Fatalf("aml_check of a clean name: %v", clear)
	}
	_, err := c.AMLCheck(ctx, sdk.Object{"first_name": "Kim", "last_name": "Jong Un", "nationality": "KP", "birthday": "1984-01-08"})
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.Code != 18001 || apiErr.Status != http.StatusConflict ||
		apiErr.Message != "service.aml.match.found" || !sdk.IsCode(err, 18001) {
		t.Fatalf("aml_check of a listed name: %v, want *Error 409 / 18001", err)
	}
	check := apiErr.Object()
	if len(check.Token()) != 36 || check.String("status") != "match" {
		t.Fatalf("aml_check 18001 carries %s, want the check with its token", apiErr.Data)
	}

	// Two accounts (for two pages of one), a card on the first.
	acc1 := must(c.CreateAccount(ctx, sdk.Object{"program": "account_eur", "user": user.Token()}))
	acc2 := must(c.CreateAccount(ctx, sdk.Object{"program": "account_eur", "user": user.Token(), "alias": "savings"}))
	if balances, _ := acc1["balances"].([]any); len(balances) != 1 {
		t.Fatalf("account_create: %v", acc1)
	}
	card := must(c.CreateCard(ctx, sdk.Object{"account": acc1.Token(), "type": "virtual"}))
	if card.String("status") != "active" || card.String("account") != acc1.Token() {
		t.Fatalf("card_create: %v", card)
	}
	// A second card on the same account is a typed 4xx, not retried.
	_, err = c.CreateCard(ctx, sdk.Object{"account": acc1.Token(), "type": "virtual"})
	if !errors.As(err, &apiErr) || apiErr.Code != 12004 || apiErr.Status != http.StatusConflict {
		t.Fatalf("a second card: %v, want 409 / 12004", err)
	}

	// The user's accounts, one per page: two pages.
	var listed []string
	for a, err := range c.List(ctx, "/v2/accounts", sdk.ListOptions{Limit: 1, Query: map[string][]string{"user": {user.Token()}}}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, a.Token())
	}
	slices.Sort(listed)
	want := []string{acc1.Token(), acc2.Token()}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("accounts_list over pages of 1: %v, want %v", listed, want)
	}

	// The same POST sent twice with one Idempotency-Key: the same user.
	key := fmt.Sprintf("journey-%d", time.Now().UnixNano())
	body := sdk.Object{"merchant": merchant, "email": "twice." + email, "first_name": "Elin", "last_name": "Sandqvist"}
	first, err := c.Do(ctx, http.MethodPost, "/v2/users", body, &sdk.Options{IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Do(ctx, http.MethodPost, "/v2/users", body, &sdk.Options{IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Data, again.Data) || first.Replayed || !again.Replayed || again.IdempotencyKey != key {
		t.Fatalf("idempotent retry: %s (replayed %v) then %s (replayed %v)", first.Data, first.Replayed, again.Data, again.Replayed)
	}

	// Events through the cursor: block and unblock the card, then read
	// what came after the first of the partner's events, one at a time.
	must(c.SetCardStatus(ctx, card.Token(), "inactive"))
	must(c.SetCardStatus(ctx, card.Token(), "active"))
	var all []sdk.Object
	for e, err := range c.List(ctx, "/v2/events", sdk.ListOptions{Limit: 100}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	if len(all) < 2 {
		t.Fatalf("events_list: %d events, want at least the card's two", len(all))
	}
	oldest := all[len(all)-1] // newest first without a cursor
	var after []string
	for e, err := range c.List(ctx, "/v2/events", sdk.ListOptions{Limit: 1, After: oldest.String("id")}) {
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, e.String("id"))
	}
	var wantAfter []string
	for i := len(all) - 2; i >= 0; i-- {
		wantAfter = append(wantAfter, all[i].String("id"))
	}
	if !slices.Equal(after, wantAfter) {
		t.Fatalf("events after %s, one per page: %v, want %v", oldest.String("id"), after, wantAfter)
	}

	// A delivery signed by emi's deliverer: verified with either secret of
	// the rotation, refused once tampered with or too old.
	h := http.Header{}
	h.Set("webhook-id", d.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(d.Timestamp, 10))
	h.Set("webhook-signature", d.Signature)
	now := time.Unix(d.Timestamp, 0).Add(10 * time.Second)
	for _, secret := range []string{d.OldSecret, d.NewSecret} {
		ev, err := sdk.VerifyWebhook(secret, h, []byte(d.Body), 0, now)
		if err != nil || ev.String("type") != "card.status_changed" {
			t.Fatalf("VerifyWebhook: %v %v", ev, err)
		}
	}
	tampered := strings.Replace(d.Body, "inactive", "active", 1)
	if _, err := sdk.VerifyWebhook(d.NewSecret, h, []byte(tampered), 0, now); !errors.Is(err, sdk.ErrWebhookSignature) {
		t.Fatalf("VerifyWebhook of a tampered body: %v", err)
	}
	if _, err := sdk.VerifyWebhook(d.NewSecret, h, []byte(d.Body), 0, now.Add(6*time.Minute)); !errors.Is(err, sdk.ErrWebhookSignature) {
		t.Fatalf("VerifyWebhook 6 minutes late: %v", err)
	}
	other, _ := webhook.NewSecret()
	if _, err := sdk.VerifyWebhook(other, h, []byte(d.Body), 0, now); !errors.Is(err, sdk.ErrWebhookSignature) {
		t.Fatalf("VerifyWebhook with another secret: %v", err)
	}
}

// TestSDKRouteTablesMatchOpenAPI: each SDK finds the signed operation name
// of a request in a table of its own; every operation of openapi.yaml must
// be in each table with its method and path, and nothing else.
func TestSDKRouteTablesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	want := openAPIRoutes(t)
	var goRoutes []string
	for _, r := range sdk.Routes {
		goRoutes = append(goRoutes, r.Method+" "+r.Path+" "+r.Operation)
	}
	compareRoutes(t, "Go (sdk.Routes)", goRoutes, want)
	for _, s := range []struct{ name, tool, dir, code string }{
		{"Python", "python3", "web/docs/sdk/python", "import json, emi; print(json.dumps([' '.join(r) for r in emi.ROUTES]))"},
		{"Node", "node", "web/docs/sdk/node", "console.log(JSON.stringify(require('./emi.js').ROUTES.map((r) => r.join(' '))))"},
	} {
		if _, err := exec.LookPath(s.tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing (.ci/run installs it)", s.tool)
			}
			t.Logf("%s is missing: the %s table is not checked", s.tool, s.name)
			continue
		}
		flag := "-c"
		if s.tool == "node" {
			flag = "-e"
		}
		cmd := exec.Command(s.tool, flag, s.code) // #nosec G204 -- fixed programs
		cmd.Dir = filepath.Join(pgtest.RepoRoot(t), s.dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", s.name, err, out)
		}
		var got []string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v\n%s", s.name, err, out)
		}
		compareRoutes(t, s.name+" (ROUTES)", got, want)
	}
	// The lookup prefers literal segments, as the router does.
	for _, c := range []struct{ method, path, op string }{
		{"GET", "/v2/cards/0190a0b0-0000-7000-8000-000000000001/pin", "card_retrieve_pin"},
		{"GET", "/v2/cards/2/10?user=x", "cards_list"},
		{"GET", "/v2/cards/0190a0b0-0000-7000-8000-000000000001/first-half", "card_number"},
		{"POST", "/v2/transfers/external", "transfer_external_create"},
		{"GET", "/v2/nothing", ""},
	} {
		if got := sdk.Operation(c.method, c.path); got != c.op {
			t.Errorf("Operation(%s %s) = %q, want %q", c.method, c.path, got, c.op)
		}
	}
}

// openAPIRoutes are "METHOD path operation" of every operation of
// openapi.yaml.
func openAPIRoutes(t *testing.T) []string {
	t.Helper()
	var out []string
	var path, method string
	pathLine := regexp.MustCompile(`^  (/[^:]*):\s*$`)
	methodLine := regexp.MustCompile(`^    (get|post|put|delete|patch):\s*$`)
	opLine := regexp.MustCompile(`^      x-emi-operation: (\S+)\s*$`)
	inPaths := false
	for _, line := range strings.Split(string(api.OpenAPI), "\n") {
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && len(line) > 0 && line[0] != ' ' && line[0] != '#':
			inPaths = false
		case !inPaths:
		case pathLine.MatchString(line):
			path = pathLine.FindStringSubmatch(line)[1]
		case methodLine.MatchString(line):
			method = strings.ToUpper(methodLine.FindStringSubmatch(line)[1])
		case opLine.MatchString(line):
			out = append(out, method+" "+path+" "+opLine.FindStringSubmatch(line)[1])
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d operations found in openapi.yaml", len(out))
	}
	return out
}

func compareRoutes(t *testing.T, name string, got, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s lacks %q (openapi.yaml has it)", name, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s has %q, which openapi.yaml does not", name, g)
		}
	}
}

// TestSDKPagesAndFilesAreServed: /docs/sdk, /docs/changelog and
// /docs/versioning are pages of the navigation, with the server's own
// address where they show one and links that answer; each SDK is served
// byte for byte as the repository has it (the file TestSDKsRun… tests),
// as text; their tests are not served.
func TestSDKPagesAndFilesAreServed(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	base := env.Server.URL
	root := pgtest.RepoRoot(t)
	for _, name := range []string{"sdk", "changelog", "versioning"} {
		status, h, page := get(t, base+"/docs/"+name)
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Fatalf("/docs/%s: HTTP %d %s", name, status, h.Get("Content-Type"))
		}
		if !strings.Contains(page, `<a href="/docs/`+name+`" aria-current="page">`) {
			t.Errorf("/docs/%s is not the current page of the navigation", name)
		}
		if strings.Contains(page, docs.BasePlaceholder) || strings.Contains(page, "<script") || strings.Contains(page, "style=") {
			t.Errorf("/docs/%s shows %s, a script or an inline style", name, docs.BasePlaceholder)
		}
		if strings.Contains(page, ":8080") {
			t.Errorf("/docs/%s names port 8080 rather than the server's address", name)
		}
		for _, m := range regexp.MustCompile(`href="(/[^"#]*)`).FindAllStringSubmatch(page, -1) {
			if status, _, _ := get(t, base+m[1]); status != http.StatusOK {
				t.Errorf("/docs/%s links %s, which answers HTTP %d", name, m[1], status)
			}
		}
		if name == "sdk" && !strings.Contains(page, "curl -O "+env.Config.PublicURL+"/docs/sdk/python/emi.py") {
			t.Errorf("/docs/sdk does not download from this server (%s)", env.Config.PublicURL)
		}
	}
	// The getting-started programs show this server's address, and link
	// the SDKs.
	if _, _, gs := get(t, base+"/docs/getting-started"); strings.Contains(gs, docs.BasePlaceholder) || strings.Contains(gs, ":8080") ||
		!strings.Contains(gs, "EMI_URL="+env.Config.PublicURL+" ") || !strings.Contains(gs, `<a href="/docs/sdk">`) {
		t.Errorf("/docs/getting-started does not show EMI_URL=%s or the SDKs' link", env.Config.PublicURL)
	}
	for served, file := range docs.SDKFiles {
		want, err := os.ReadFile(filepath.Join(root, "web", "docs", file)) // #nosec G304 -- the repository's own files
		if err != nil {
			t.Fatal(err)
		}
		status, h, got := get(t, base+"/docs/"+served)
		if status != http.StatusOK || got != string(want) || h.Get("Content-Type") != "text/plain; charset=utf-8" ||
			h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("/docs/%s: HTTP %d %s, %d bytes (want %d)", served, status, h.Get("Content-Type"), len(got), len(want))
		}
	}
	for _, p := range []string{"/docs/sdk/go/emi_test.go", "/docs/sdk/python/test_journey.py", "/docs/sdk/node/test_journey.js", "/docs/sdk/go/emi/emi.go"} {
		if status, _, _ := get(t, base+p); status != http.StatusNotFound {
			t.Errorf("%s: HTTP %d, want 404", p, status)
		}
	}
}

// sdkPageExamples are the fenced programs of pages/sdk.md by language.
func sdkPageExamples(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(pgtest.RepoRoot(t), "web", "docs", "pages", "sdk.md")) // #nosec G304 -- the repository's own page
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```(go|python|js)\n(.*?)```").FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = m[2]
	}
	if len(out) != 3 {
		t.Fatalf("pages/sdk.md has %d of the 3 examples", len(out))
	}
	return out
}

// runSDKPageExample runs the /docs/sdk example of lang, as the page tells
// a partner to lay it out, against env's server.
func runSDKPageExample(t *testing.T, env *apptest.Env, lang string) {
	t.Helper()
	tool := map[string]string{"go": "go", "python": "python3", "js": "node"}[lang]
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (.ci/run installs it)", tool)
		}
		t.Skipf("%s is missing", tool)
	}
	root := pgtest.RepoRoot(t)
	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sdkFile := map[string]string{"go": "sdk/go/emi/emi.go", "python": "sdk/python/emi.py", "js": "sdk/node/emi.js"}[lang]
	b, err := os.ReadFile(filepath.Join(root, "web", "docs", sdkFile)) // #nosec G304 -- the repository's own SDK
	if err != nil {
		t.Fatal(err)
	}
	program := sdkPageExamples(t)[lang]
	var args []string
	switch lang {
	case "go":
		write("go.mod", []byte("module example.com/yourapp\n\ngo 1.23\n"))
		write("emi/emi.go", b)
		write("main.go", []byte(program))
		args = []string{"go", "run", "."}
	case "python":
		write("emi.py", b)
		write("main.py", []byte(program))
		args = []string{"python3", "main.py"}
	case "js":
		write("emi.js", b)
		write("main.js", []byte(program))
		args = []string{"node", "main.js"}
	}
	p := env.NewPartner(t, emi.PartnerCreate{Name: "SDK page " + lang})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...) // #nosec G204 -- the page's own programs
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EMI_URL="+env.Server.URL, "EMI_API_KEY="+p.APIKey, "EMI_API_SECRET="+p.APISecret,
		"GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !regexp.MustCompile(`(?m)^AML match, check [0-9a-f-]{36}$`).Match(out) ||
		!regexp.MustCompile(`(?m)^card [0-9a-f-]{36} \d{6}\*+\d{4}$`).Match(out) {
		t.Errorf("%s printed:\n%s", strings.Join(args, " "), out)
	}
}
