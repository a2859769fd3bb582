package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"emi/internal/app/apptest"
	"emi/internal/service/staff"
)

// actionTimeout bounds one browser step (a navigation, a click, a query,
// a wait for a condition). Quiet, a step takes well under a second; with
// the race detector on two cores shared with other work it can take many
// times that. The bound only ends a step that hangs, so it is generous:
// nothing waits for it to pass.
const actionTimeout = 60 * time.Second

// pollInterval is the pause between two checks of a condition in the
// page. (A wait for something outside the browser, a job or a delivery,
// is testwait.Until.)
const pollInterval = 50 * time.Millisecond

// The browser is one chromium process for the whole package: each test
// opens its own browser context (a separate cookie jar, like an incognito
// window) in it.
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserErr    error
	browserSkip   string
	browserCancel = func() {}
	browserDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	browserCancel()
	if browserDir != "" {
		_ = os.RemoveAll(browserDir)
	}
	os.Exit(code)
}

// findChromium returns the path of a chromium-like browser, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// sharedBrowser starts the browser at the first call. Without a browser the
// test is skipped, except in CI (CI set), where it fails: CI must install
// chromium.
func sharedBrowser(t *testing.T) context.Context {
	t.Helper()
	browserOnce.Do(func() {
		path := findChromium()
		if path == "" {
			browserSkip = "no chromium, chromium-browser or google-chrome on PATH: apt-get install chromium"
			return
		}
		dir, err := os.MkdirTemp("", "emi-browsertest-")
		if err != nil {
			browserErr = err
			return
		}
		browserDir = dir
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.UserDataDir(dir),
			chromedp.Headless,
			chromedp.NoSandbox, // we run as root
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-quic", true),
			chromedp.WindowSize(1280, 900),
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(allocCtx)
		browserCancel = func() { cancelCtx(); cancelAlloc() }
		// The first run starts the browser; its context has no timeout, as
		// the browser lives as long as it.
		if err := chromedp.Do(ctx); err != nil {
			browserErr = fmt.Errorf("starting %s: %w", path, err)
			return
		}
		browserCtx = ctx
	})
	if browserSkip != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s", browserSkip)
		}
		t.Skip(browserSkip)
	}
	if browserErr != nil {
		t.Fatalf("browser: %v", browserErr)
	}
	return browserCtx
}

// tab is one browser tab on the app of one test.
type tab struct {
	t     *testing.T
	ctx   context.Context
	base  string
	label string // artifact suffix ("" for the first tab of a test)

	// scriptOff is set by disableScript: the page runs no callback then.
	scriptOff bool

	mu      sync.Mutex
	console []consoleLine
	dialogs []string
}

// consoleLine is a console message, an uncaught exception or a browser log
// entry of a tab.
type consoleLine struct {
	Kind, Text, URL string
}

func (c consoleLine) String() string { return c.Kind + ": " + c.Text + " (" + c.URL + ")" }

// newTab opens a tab in a fresh browser context for env. On failure the
// test's screenshot and HTML go to test-artifacts/browser/.
func newTab(t *testing.T, env *apptest.Env) *tab {
	t.Helper()
	parent := sharedBrowser(t)
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	return openTab(t, env.Server.URL, ctx, cancel, "")
}

// sibling opens another tab in the same browser context as b (same
// cookies).
func (b *tab) sibling(label string) *tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	return openTab(b.t, b.base, ctx, cancel, label)
}

func openTab(t *testing.T, base string, ctx context.Context, cancel context.CancelFunc, label string) *tab {
	t.Helper()
	b := &tab{t: t, ctx: ctx, base: base, label: label}
	if err := chromedp.Listen(ctx, b.record); err != nil {
		cancel()
		t.Fatalf("browser tab: %v", err)
	}
	t.Cleanup(cancel)
	// Registered after cancel, so it runs before the tab closes.
	t.Cleanup(func() {
		if t.Failed() {
			b.saveArtifacts()
		}
	})
	return b
}

// record runs in the tab's event loop: it must return fast and send no
// command.
func (b *tab) record(ev any) {
	var line *consoleLine
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var parts []string
		for _, a := range ev.Args {
			if len(a.Value) > 0 {
				parts = append(parts, strings.Trim(string(a.Value), `"`))
			} else {
				parts = append(parts, a.Description)
			}
		}
		u := ""
		if ev.StackTrace != nil && len(ev.StackTrace.CallFrames) > 0 {
			u = ev.StackTrace.CallFrames[0].URL
		}
		line = &consoleLine{Kind: "console." + string(ev.Type), Text: strings.Join(parts, " "), URL: u}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		line = &consoleLine{Kind: "exception", Text: text, URL: d.URL}
	case *log.EventEntryAdded:
		if ev.Entry != nil {
			line = &consoleLine{Kind: "log." + string(ev.Entry.Source) + "." + string(ev.Entry.Level), Text: ev.Entry.Text, URL: ev.Entry.URL}
		}
	case *page.EventJavascriptDialogOpening:
		b.mu.Lock()
		b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
		b.mu.Unlock()
		// A dialog blocks the page: dismiss it from another goroutine (no
		// command may run in the event loop).
		go func() {
			_, _ = chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	}
	if line != nil {
		b.mu.Lock()
		b.console = append(b.console, *line)
		b.mu.Unlock()
	}
}

// consoleLines returns what the tab's pages logged so far.
func (b *tab) consoleLines() []consoleLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]consoleLine(nil), b.console...)
}

// dialogsOpened returns the JavaScript dialogs that opened so far.
func (b *tab) dialogsOpened() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// step returns a context for one browser step.
func (b *tab) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, actionTimeout)
}

// do runs actions and fails the test on an error.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// run runs one action with a value and fails the test on an error.
func run[T any](b *tab, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// eval evaluates a JavaScript expression in the page, once the page's
// document has loaded (see loaded), and decodes its value into T. A
// promise is awaited and its value used. A value that is not a T fails the
// test with what the value was (type, class, JSON), not only a decoding
// error: Chromium 150 made window.scrollTo and the other scroll methods
// return a promise, and `window.scrollTo(0, 0) || true` then evaluated to
// that promise ("json: cannot unmarshal object into Go value of type
// bool"). For a statement whose value does not matter, use b.script.
func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	return run(b, "evaluate "+expr, evaluate[T](expr))
}

// script runs JavaScript in the page for its effect (a scroll, a click
// handler to install) once the document has loaded, awaiting the promise
// it may return (a smooth scroll's end), and ignores its value.
func (b *tab) script(what, js string) {
	b.t.Helper()
	b.do(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if err := loaded(ctx, t); err != nil {
			return err
		}
		_, err := chromedp.Evaluate[chromedp.Void](js, chromedp.EvalAwaitPromise)(ctx, t)
		return err
	}))
}

// evaluate is the action of eval: it waits until the document has loaded,
// evaluates expr (awaiting a promise) and decodes the value defensively.
func evaluate[T any](expr string) chromedp.Action[T] {
	return func(ctx context.Context, t *chromedp.Target) (T, error) {
		var zero T
		if err := loaded(ctx, t); err != nil {
			return zero, err
		}
		obj, err := chromedp.Evaluate[*runtime.RemoteObject](expr, chromedp.EvalAsValue, chromedp.EvalAwaitPromise)(ctx, t)
		if err != nil {
			return zero, err
		}
		return decodeValue[T](obj)
	}
}

// decodeValue decodes the value of an evaluation (returned by value) into
// a T. When it is not a T, the error says what it was.
func decodeValue[T any](obj *runtime.RemoteObject) (T, error) {
	var v T
	if obj == nil {
		return v, errors.New("the evaluation returned no value")
	}
	raw := obj.Value
	if len(raw) == 0 || string(raw) == "null" {
		switch reflect.TypeFor[T]().Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			return v, nil // a JavaScript null or undefined is Go's nil
		}
		return v, fmt.Errorf("the value is %s, not a %T", describe(obj), v)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("the value is %s, not a %T (%v)", describe(obj), v, err)
	}
	return v, nil
}

// describe names a JavaScript value for an error message.
func describe(obj *runtime.RemoteObject) string {
	parts := []string{string(obj.Type)}
	if obj.Subtype != "" {
		parts = append(parts, string(obj.Subtype))
	}
	if obj.ClassName != "" {
		parts = append(parts, obj.ClassName)
	}
	if len(obj.Value) > 0 {
		v := string(obj.Value)
		if len(v) > 200 {
			v = v[:200] + "…"
		}
		parts = append(parts, v)
	} else if obj.Description != "" {
		parts = append(parts, obj.Description)
	} else if obj.UnserializableValue != "" {
		parts = append(parts, string(obj.UnserializableValue))
	}
	return "a JavaScript " + strings.Join(parts, " ")
}

// loaded waits until the tab's current document has finished loading
// (document.readyState is "complete"): a navigation that a click or a
// form started may still be under way, and an expression evaluated then
// would run in a document that is about to go, or fail because its
// execution context was destroyed. Errors of a document being replaced
// are retried; ctx bounds the wait. It works with the page's JavaScript
// off: DevTools evaluation does not need it.
func loaded(ctx context.Context, t *chromedp.Target) error {
	var last error
	for {
		state, err := chromedp.Evaluate[string](`document.readyState`)(ctx, t)
		if err == nil && state == "complete" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("document.readyState is %q", state)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the document to load: %w (last: %v)", ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// open navigates to path (relative to the app) and returns the HTTP status
// of the document.
func (b *tab) open(path string) int64 {
	b.t.Helper()
	return b.openResponse(path).Status
}

// openResponse navigates to path and returns the response of the document.
func (b *tab) openResponse(path string) *network.Response {
	b.t.Helper()
	resp := run(b, "open "+path, chromedp.NavigateResponse(b.url(path)))
	if resp == nil {
		b.t.Fatalf("open %s: no response", path)
	}
	return resp
}

// header returns a response header, whatever the case of its name.
func header(resp *network.Response, name string) string {
	for k, v := range resp.Headers {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// uniqueLines groups equal console lines: "text (url) ×n".
func uniqueLines(lines []consoleLine) []string {
	counts := map[consoleLine]int{}
	var order []consoleLine
	for _, c := range lines {
		if counts[c] == 0 {
			order = append(order, c)
		}
		counts[c]++
	}
	out := make([]string, len(order))
	for i, c := range order {
		out[i] = c.String()
		if n := counts[c]; n > 1 {
			out[i] += fmt.Sprintf(" ×%d", n)
		}
	}
	return out
}

func (b *tab) url(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return b.base + path
}

// clickNav clicks sel, waits for the page it loads and returns its status.
func (b *tab) clickNav(sel string) int64 {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
	if resp == nil {
		b.t.Fatalf("click %s: no page loaded", sel)
	}
	return resp.Status
}

// sendKeys focuses the first visible element sel and types text into it,
// key by key: chromedp.SendKeys without its read of the node's attributes,
// which chromedp v0.23.0 does without the node's lock (query.go:1293) and
// which the race detector catches against the DOM event handler under load
// (CI failures of browser tests). Not for file inputs.
func sendKeys(sel, text string) chromedp.Action[chromedp.Void] {
	focus := chromedp.Focus(chromedp.CSS(sel), chromedp.NodeVisible)
	keys := chromedp.KeyEvent(text)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := focus(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		return keys(ctx, t)
	}
}

// typeInto clears the input sel and types text into it, key by key.
func (b *tab) typeInto(sel, text string) {
	b.t.Helper()
	b.do("type into "+sel, chromedp.Clear(chromedp.CSS(sel)), sendKeys(sel, text))
}

// location returns the URL of the page (from the navigation history, so it
// works with JavaScript off too).
func (b *tab) location() string {
	b.t.Helper()
	h := run(b, "navigation history", chromedp.NavigationEntries())
	if h.CurrentIndex < 0 || int(h.CurrentIndex) >= len(h.Entries) {
		b.t.Fatalf("navigation history has no current entry")
	}
	return h.Entries[h.CurrentIndex].URL
}

// path returns the path and query of the page.
func (b *tab) path() string {
	b.t.Helper()
	u, err := url.Parse(b.location())
	if err != nil {
		b.t.Fatalf("location: %v", err)
	}
	if u.RawQuery != "" {
		return u.Path + "?" + u.RawQuery
	}
	return u.Path
}

// html returns the whole document (document.documentElement.outerHTML).
// DevTools evaluation works with the page's JavaScript off too. It reads
// it by evaluation, not through a DOM node id: a test that re-opens a page in a loop could hold the
// previous document's node id, and DevTools then answered "No node with
// given id found" (TestReplayFromTheDeliveryLog, once under a full make
// test).
func (b *tab) html() string {
	b.t.Helper()
	return eval[string](b, `document.documentElement.outerHTML`)
}

// text returns the text of the first element matching sel.
func (b *tab) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(run(b, "text of "+sel, chromedp.TextContent(chromedp.CSS(sel))))
}

// texts returns the text of every element matching sel (none is fine),
// with white space collapsed. DevTools evaluation works with the page's
// JavaScript off too.
func (b *tab) texts(sel string) []string {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	return eval[[]string](b, `Array.from(document.querySelectorAll(`+string(q)+`), e => e.textContent.replace(/\s+/g, " ").trim())`)
}

// count returns how many elements match sel.
func (b *tab) count(sel string) int {
	b.t.Helper()
	return len(b.texts(sel))
}

// waitVisible waits until sel is visible.
func (b *tab) waitVisible(sel string) {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// disableScript turns JavaScript off in the tab.
func (b *tab) disableScript() {
	b.t.Helper()
	b.do("disable JavaScript", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	b.scriptOff = true
}

// signIn signs in through the sign-in form and the TOTP form and fails the
// test unless the dashboard opens.
func (b *tab) signIn(env *apptest.Env, email string) {
	b.t.Helper()
	b.open("/backoffice/signin")
	b.typeInto(`[data-testid="signin-form"] input[name="email"]`, email)
	b.typeInto(`[data-testid="signin-form"] input[name="password"]`, staff.SandboxStaffPassword)
	b.clickNav(`[data-testid="signin-form"] button[type="submit"]`)
	if p := b.path(); p != "/backoffice/signin/totp" {
		b.t.Fatalf("after the password of %s the browser is at %s, want /backoffice/signin/totp", email, p)
	}
	b.typeInto(`[data-testid="totp-form"] input[name="code"]`, env.TOTP(b.t, email))
	b.clickNav(`[data-testid="totp-form"] button[type="submit"]`)
	if p := b.path(); p != "/backoffice/" {
		b.t.Fatalf("after the TOTP code of %s the browser is at %s, want /backoffice/", email, p)
	}
}

// navLinks returns the labels of the main navigation.
func (b *tab) navLinks() []string {
	b.t.Helper()
	return b.texts(`nav[aria-label="Main"] a`)
}

// saveArtifacts writes a full-page PNG and the HTML of the tab into
// test-artifacts/browser/ under the repository root.
func (b *tab) saveArtifacts() {
	t := b.t
	dir, err := artifactDir()
	if err != nil {
		t.Logf("browser artifacts: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if b.label != "" {
		name += "-" + b.label
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		t.Logf("browser screenshot: %v", err)
	} else {
		p := filepath.Join(dir, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Logf("browser screenshot: %v", err)
		} else {
			t.Logf("browser screenshot: %s", p)
		}
	}
	if h, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html"))); err != nil {
		t.Logf("browser HTML: %v", err)
	} else {
		p := filepath.Join(dir, name+".html")
		if err := os.WriteFile(p, []byte(h), 0o644); err != nil {
			t.Logf("browser HTML: %v", err)
		} else {
			t.Logf("browser HTML: %s", p)
		}
	}
	if h, err := chromedp.Run(ctx, chromedp.NavigationEntries()); err == nil && int(h.CurrentIndex) < len(h.Entries) && h.CurrentIndex >= 0 {
		t.Logf("browser was at %s", h.Entries[h.CurrentIndex].URL)
	}
	lines := uniqueLines(b.consoleLines())
	for i, c := range lines {
		if i == 30 {
			t.Logf("browser console: … %d more", len(lines)-i)
			break
		}
		t.Logf("browser console: %s", c)
	}
}

func artifactDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
	out := filepath.Join(dir, "test-artifacts", "browser")
	return out, os.MkdirAll(out, 0o755)
}

// documentStatuses records the HTTP status of every document the tab loads
// from now on, by URL.
func (b *tab) documentStatuses() func() map[string]int64 {
	var mu sync.Mutex
	seen := map[string]int64{}
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if ev, ok := ev.(*network.EventResponseReceived); ok && ev.Type == network.ResourceTypeDocument {
			mu.Lock()
			seen[ev.Response.URL] = ev.Response.Status
			mu.Unlock()
		}
	}); err != nil {
		b.t.Fatalf("listen: %v", err)
	}
	return func() map[string]int64 {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int64{}
		for k, v := range seen {
			out[k] = v
		}
		return out
	}
}

// pollTrue waits until the JavaScript expression is true, evaluating it
// every pollInterval from Go (with eval's readiness check and decoding)
// until the step's deadline. An error (an element not there yet, a
// document being replaced by a navigation) counts as "not yet": the
// failure, when the deadline comes, says what the last attempt got. Unlike
// chromedp.Poll, whose polling function lives in the page, it survives a
// navigation and works with the page's JavaScript off.
func pollTrue(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var last error
		for {
			ok, err := evaluate[bool](expr)(ctx, t)
			if err == nil && ok {
				return nil
			}
			if err == nil {
				err = errors.New("it is false")
			}
			last = err
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s: %w (last: %v)", expr, ctx.Err(), last)
			case <-time.After(pollInterval):
			}
		}
	})
}

// settle waits until the page has run what it had queued (timers,
// animation frames, the error and violation reports of its loads): it
// awaits in the page two animation frames and then a timer task. DevTools
// sends a page's events in order with the replies, so every console line
// the page logged before is recorded when settle returns. With the page's
// JavaScript off nothing is queued, and settle only checks the document
// has loaded.
func (b *tab) settle() {
	b.t.Helper()
	b.do("settle", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if err := loaded(ctx, t); err != nil || b.scriptOff {
			return err
		}
		_, err := chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))`, chromedp.EvalAwaitPromise)(ctx, t)
		return err
	}))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
