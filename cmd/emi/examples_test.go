package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/postgres/pgtest"
)

// The examples people paste work: TestReadmeAndMakeRunExamples runs every
// command example of README.md, of the guides (web/docs/guides/*.md, which
// /docs/guides serves) and of the text `make run` prints against a live
// `emi serve`, finding them in the text, so that a new example, or a new
// guide, is tested without editing the test.
//
// Where the examples are:
//   - README.md and each guide: every fenced block marked sh, bash or
//     shell that calls curl (the Markdown texts together must hold at
//     least one; a text without any is left out);
//   - `make run`: the text .ci/dev-banner.sh prints (dev-run.sh runs that
//     script, so the test reads exactly what a user sees), run with the live
//     server's URL; an example is a paragraph whose every line is indented by
//     two spaces, set off by blank lines (or the text's start or end).
//
// How they run, as a user would after `make run`: the examples of one text,
// in order, in one bash session (a later one may use an earlier one's
// variables), from a directory holding .dev/partner.json (the demo
// partner, as `emi partner create --json` prints it), with make run's
// default address 127.0.0.1:8080 replaced by the live server's. Each starts
// in a second of its own, as a person pasting does (two identical version 1
// requests in one second are one request sent twice: contract §2).
//
// What they must answer: every answer envelope an example prints carries
// code 0 except the last, which carries the expected code: the N of a
// comment `# {"code":N,...}` in the example, else of "answers N" in the
// paragraph just before it, else 0. The example must also write nothing to
// stderr and end with status 0.
//
// The examples need curl, jq and openssl (those they name): the test skips
// when one is missing, and fails instead under CI (CI=true), where .ci/run
// installs them.
func TestReadmeAndMakeRunExamples(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	guides, err := filepath.Glob(filepath.Join(root, "web", "docs", "guides", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	type text struct{ name, body string }
	var markdown []text
	for _, f := range append([]string{filepath.Join(root, "README.md")}, guides...) {
		b, err := os.ReadFile(f) // #nosec G304 -- the repository's own README and guides
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		markdown = append(markdown, text{filepath.ToSlash(name), string(b)})
	}

	vars := map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox",
		"EMI_ADDR": "127.0.0.1:0", "EMI_LOG_LEVEL": "warn", "EMI_SANCTIONS_DIR": apptest.SanctionsDir()}
	for _, args := range [][]string{{"migrate"}, {"seed"}} {
		if _, stderr, err := runCmd(t, vars, args...); err != nil {
			t.Fatalf("emi %v: %v\n%s", args, err, stderr)
		}
	}
	// The demo partner as dev-run.sh creates it, kept where it keeps it.
	partner, stderr, err := runCmd(t, vars, "partner", "create", "--name", "Demo Partner",
		"--webhook-url", "http://127.0.0.1:9999/webhooks", "--json")
	if err != nil {
		t.Fatalf("emi partner create: %v\n%s", err, stderr)
	}
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".dev"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".dev", "partner.json"), []byte(partner), 0o600); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "emi")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	_, base := startServe(t, bin, vars, nil)

	// The banner, by the script make run prints it with.
	cmd := exec.Command("bash", filepath.Join(root, ".ci", "dev-banner.sh"), base, base, vars["DATABASE_URL"]) // #nosec G204 -- the repository's script, the test's own server and database
	cmd.Dir = home
	var bannerErr bytes.Buffer
	cmd.Stderr = &bannerErr
	banner, err := cmd.Output()
	if err != nil {
		t.Fatalf(".ci/dev-banner.sh: %v\n%s", err, bannerErr.String())
	}

	type source struct {
		name     string
		examples []example
	}
	var sources []source
	for _, m := range markdown {
		if ex := markdownExamples(m.body); len(ex) > 0 {
			sources = append(sources, source{m.name, ex})
		}
	}
	if len(sources) == 0 {
		t.Fatal("no command example found in README.md or web/docs/guides/*.md: the rules that find them (see the top of examples_test.go) no longer match their text")
	}
	sources = append(sources, source{"make run", indentedExamples(string(banner))})
	var all strings.Builder
	for _, s := range sources {
		if len(s.examples) == 0 {
			t.Fatalf("no command example found in %s: the rules that find them (see the top of examples_test.go) no longer match its text", s.name)
		}
		for _, ex := range s.examples {
			all.WriteString(ex.script)
		}
	}
	requireTools(t, all.String())

	for _, s := range sources {
		results := runSession(t, home, base, s.examples)
		t.Logf("%s: %d examples found and run", s.name, len(s.examples))
		for i, ex := range s.examples {
			res := results[i]
			t.Run(fmt.Sprintf("%s line %d", s.name, ex.line), func(t *testing.T) {
				checkExample(t, ex, res)
			})
		}
	}
}

// makeRunAddr is make run's default address (dev-run.sh's EMI_ADDR), which
// the README's and the guides' examples call.
const makeRunAddr = "127.0.0.1:8080"

// example is one command example found in a text.
type example struct {
	line   int    // the line of the text it starts on (1-based)
	script string // its lines, as a user pastes them
	want   int    // the code of the last answer it prints
}

var (
	// wantComment is a comment in an example showing the answer:
	// # {"code":0,"data":...}.
	wantComment = regexp.MustCompile(`(?m)^\s*#\s*\{\s*"code"\s*:\s*(\d+)`)
	// wantProse is the paragraph before an example telling its answer:
	// "answers 18001".
	wantProse  = regexp.MustCompile("\\banswers\\s+(?:code\\s+|`?\\{\\s*\"code\"\\s*:\\s*)?(\\d+)\\b")
	shellFence = regexp.MustCompile("^```(sh|bash|shell)\\s*$")
	callsCurl  = regexp.MustCompile(`(^|[\s;|&(])curl\s`)
)

// markdownExamples finds the fenced sh/bash/shell blocks of a Markdown
// text that call curl.
func markdownExamples(text string) []example {
	var out []example
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !shellFence.MatchString(lines[i]) {
			continue
		}
		start := i + 1
		end := start
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		script := strings.Join(lines[start:end], "\n") + "\n"
		if callsCurl.MatchString(script) {
			out = append(out, example{line: start + 1, script: script, want: wantFrom(script, paragraphBefore(lines, i))})
		}
		i = end
	}
	return out
}

// indentedExamples finds the paragraphs of a text whose every line is
// indented by two spaces.
func indentedExamples(text string) []example {
	var out []example
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		end := i
		indented := true
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			indented = indented && strings.HasPrefix(lines[end], "  ")
			end++
		}
		if indented {
			var b strings.Builder
			for _, l := range lines[i:end] {
				b.WriteString(strings.TrimPrefix(l, "  ") + "\n")
			}
			out = append(out, example{line: i + 1, script: b.String(), want: wantFrom(b.String(), paragraphBefore(lines, i))})
		}
		i = end
	}
	return out
}

// wantFrom is the code an example's last answer carries: the N of a
// comment `# {"code":N` in the example, else of "answers N" in the
// paragraph before it, else 0. When both are there and disagree it is -2,
// which checkExample reports.
func wantFrom(script, before string) int {
	c, p := wantComment.FindStringSubmatch(script), wantProse.FindStringSubmatch(before)
	switch {
	case c != nil && p != nil && c[1] != p[1]:
		return -2
	case c != nil:
		n, _ := strconv.Atoi(c[1])
		return n
	case p != nil:
		n, _ := strconv.Atoi(p[1])
		return n
	}
	return 0
}

// paragraphBefore is the paragraph that ends just before line i (blank
// lines between it and line i skipped).
func paragraphBefore(lines []string, i int) string {
	end := i
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	start := end
	for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
		start--
	}
	return strings.Join(lines[start:end], "\n")
}

// requireTools skips the test when a tool the examples name is missing, or
// fails it under CI.
func requireTools(t *testing.T, scripts string) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"bash", "curl", "jq", "openssl"} {
		if tool != "bash" && !regexp.MustCompile(`\b`+tool+`\b`).MatchString(scripts) {
			continue
		}
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("the README's, the guides' and make run's examples need %s, missing here: apt-get install %s", strings.Join(missing, ", "), strings.Join(missing, " "))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI: .ci/run installs them)")
	}
	t.Skip(msg)
}

// result is what one example did.
type result struct {
	stdout, stderr string
	status         int // -1 when the session ended before it did
}

const exampleMark = "@@emi-example-end"

// runSession runs examples in order in one bash session in dir, with
// makeRunAddr replaced by base's address and the guides' placeholder for
// the server's address, {base_url} (which /docs shows as EMI_PUBLIC_URL),
// by base, and splits what each did.
func runSession(t *testing.T, dir, base string, examples []example) []result {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	var b strings.Builder
	for i, ex := range examples {
		// A second of its own.
		b.WriteString("__emi_s=$(date +%s); while [ \"$(date +%s)\" = \"$__emi_s\" ]; do sleep 0.05; done\n")
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(ex.script, makeRunAddr, addr), "{base_url}", base))
		fmt.Fprintf(&b, "__emi_rc=$?; printf '\\n%s %d %%d\\n' \"$__emi_rc\"; printf '\\n%s %d\\n' >&2\n", exampleMark, i, exampleMark, i)
	}
	script := filepath.Join(t.TempDir(), "session.sh")
	if err := os.WriteFile(script, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", script) // #nosec G204 -- the test's own script of the repository's examples
	cmd.Dir = dir
	// A user's shell, without their curl or shell start-up files.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C.UTF-8"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Logf("the examples' bash session ended with %v", err)
	}
	out := splitMarks(stdout.String(), len(examples), true)
	errs := splitMarks(stderr.String(), len(examples), false)
	res := make([]result, len(examples))
	for i := range res {
		res[i] = result{stdout: out[i].text, stderr: errs[i].text, status: out[i].status}
	}
	return res
}

type part struct {
	text   string
	status int
}

// splitMarks cuts a session's output at the marks printed after each
// example (with the example's exit status on stdout).
func splitMarks(s string, n int, withStatus bool) []part {
	parts := make([]part, n)
	for i := range parts {
		parts[i].status = -1
	}
	for i := 0; i < n; i++ {
		mark := fmt.Sprintf("\n%s %d", exampleMark, i)
		j := strings.Index(s, mark)
		if j < 0 {
			parts[i].text = s // the session stopped in this example
			return parts
		}
		parts[i].text = s[:j]
		rest := s[j+len(mark):]
		k := strings.IndexByte(rest, '\n')
		if k < 0 {
			k = len(rest)
		}
		if withStatus {
			parts[i].status, _ = strconv.Atoi(strings.TrimSpace(rest[:k]))
		} else {
			parts[i].status = 0
		}
		s = strings.TrimPrefix(rest[k:], "\n")
	}
	return parts
}

// envelopes finds the answer envelopes ({"code":N,...}) in an example's
// output, compact or pretty-printed.
func envelopes(s string) []int {
	var codes []int
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var v struct {
			Code *int `json:"code"`
		}
		if err := dec.Decode(&v); err != nil {
			continue
		}
		if v.Code != nil {
			codes = append(codes, *v.Code)
		}
		i += int(dec.InputOffset()) - 1
	}
	return codes
}

func checkExample(t *testing.T, ex example, res result) {
	t.Helper()
	show := func() string {
		return fmt.Sprintf("\n--- example\n%s--- stdout\n%s\n--- stderr\n%s", ex.script, res.stdout, res.stderr)
	}
	if ex.want == -2 {
		t.Fatalf("the example's comment and the paragraph before it name different codes:%s", show())
	}
	codes := envelopes(res.stdout)
	switch {
	case res.status != 0:
		t.Fatalf("the example ended with status %d (-1: it never ended):%s", res.status, show())
	case strings.TrimSpace(res.stderr) != "":
		t.Fatalf("the example wrote to stderr:%s", show())
	case len(codes) == 0:
		t.Fatalf("the example printed no answer envelope:%s", show())
	}
	for i, c := range codes[:len(codes)-1] {
		if c != 0 {
			t.Errorf("answer %d of %d carries code %d, want 0:%s", i+1, len(codes), c, show())
		}
	}
	if got := codes[len(codes)-1]; got != ex.want {
		t.Fatalf("the last answer carries code %d, want %d (from the text):%s", got, ex.want, show())
	}
}
