package docs

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	view "emi/views/docs"
)

// render is the HTML a guide made of src shows.
func render(t *testing.T, src string) string {
	t.Helper()
	var b bytes.Buffer
	if err := view.GuidePage(view.Frame{}, view.Guide{Body: markdown(src)}).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	i := strings.Index(html, `<article class="docs-guide">`)
	if i < 0 {
		t.Fatalf("no guide in %s", html)
	}
	return html[i:]
}

func TestInlineLinks(t *testing.T) {
	t.Parallel()
	got := inline("see [the guide](operators.md#faults), [`/docs`](/docs) and [**x**](https://example.org/a?b=1).")
	want := []view.Span{
		{Text: "see "},
		{Text: "the guide", Href: "operators.md#faults"},
		{Text: ", "},
		{Text: "/docs", Code: true, Href: "/docs"},
		{Text: " and "},
		{Text: "x", Bold: true, Href: "https://example.org/a?b=1"},
		{Text: "."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inline links:\n got %+v\nwant %+v", got, want)
	}
	html := render(t, "Read [the faults](#faults) first.")
	if !strings.Contains(html, `<p>Read <a href="#faults">the faults</a> first.</p>`) {
		t.Errorf("link rendered as %s", html)
	}
	// Not links: shown as written.
	for _, s := range []string{"a [b] c", "a [b](c", "a [b] (c)", "list[0].iban"} {
		for _, sp := range inline(s) {
			if sp.Href != "" {
				t.Errorf("%q made a link to %q", s, sp.Href)
			}
		}
	}
	if got := plain(inline("a [b] c")); got != "a [b] c" {
		t.Errorf("a [b] c reads %q", got)
	}
}

// TestHostileLinksNeverBecomeHrefs: a link whose address the allow-list
// refuses is shown as the text it was written as, and nothing in a guide's
// text becomes markup.
func TestHostileLinksNeverBecomeHrefs(t *testing.T) {
	t.Parallel()
	for _, href := range []string{
		"javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)",
		"vbscript:msgbox(1)", "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "file:///etc/passwd",
		"//evil.example", "/\\evil.example", "\\\\evil.example", "https://user:pw@evil.example/", "http:evil", "https://",
		"mailto:a@b.example", "%6Aavascript:alert(1)", `/ok"onmouseover="alert(1)`, "/a<b",
	} {
		if allowedHref(href) {
			t.Errorf("allowedHref(%q) = true", href)
		}
	}
	for _, href := range []string{"#faults", "/docs/errors#services.auth.invalid", "operators.md#faults", "../x/y.md",
		"https://docs.example/a?b=c#d", "http://127.0.0.1:8080/docs"} {
		if !allowedHref(href) {
			t.Errorf("allowedHref(%q) = false", href)
		}
	}

	src := "Click [here](javascript:alert%281%29) or [there](data:text/html,x) or [me](JAVASCRIPT:void%280%29).\n\n" +
		"<script>alert(1)</script> **<img src=x onerror=alert(1)>** [<b>x</b>](/ok) `<i>`\n\n" +
		"- [a\"onmouseover=\"alert(1)](/ok\"onmouseover=\"alert(1))\n"
	html := render(t, src)
	lower := strings.ToLower(html)
	for _, bad := range []string{`href="javascript`, `href="data`, "<script", "<img", "<b>", "<i>", `"onmouseover`} {
		if strings.Contains(lower, bad) {
			t.Errorf("%q reached the page: %s", bad, html)
		}
	}
	if !strings.Contains(html, "Click [here](javascript:alert%281%29) or") {
		t.Errorf("a refused link is not shown as written: %s", html)
	}
	if got := strings.Count(html, "<a "); got != 1 || !strings.Contains(html, `<a href="/ok">&lt;b&gt;x&lt;/b&gt;</a>`) {
		t.Errorf("%d links, want 1 (the allowed one, its text escaped): %s", got, html)
	}
}

func TestOrderedLists(t *testing.T) {
	t.Parallel()
	got := markdown("Steps:\n\n1. one\n2. two, over\n   two lines\n3. three\n\nAfter.")
	want := []view.Block{
		{Kind: "p", Spans: []view.Span{{Text: "Steps:"}}},
		{Kind: "ol", Start: 1, Items: []view.Item{
			{Spans: []view.Span{{Text: "one"}}},
			{Spans: []view.Span{{Text: "two, over two lines"}}},
			{Spans: []view.Span{{Text: "three"}}},
		}},
		{Kind: "p", Spans: []view.Span{{Text: "After."}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ordered list:\n got %+v\nwant %+v", got, want)
	}
	if html := render(t, "3. c\n4. d"); !strings.Contains(html, `<ol start="3"><li>c</li><li>d</li></ol>`) {
		t.Errorf("a list from 3 renders %s", html)
	}
	if html := render(t, "1. a\n2. b"); !strings.Contains(html, `<ol><li>a</li><li>b</li></ol>`) {
		t.Errorf("a list from 1 renders %s", html)
	}
	// A wrapped line that starts with a number is the paragraph's, as in
	// CommonMark (only "1." interrupts a paragraph), in a list item too.
	for _, src := range []string{"the call answers\n12005. Then", "- the call answers\n  12005. Then"} {
		if html := render(t, src); strings.Contains(html, "<ol") || !strings.Contains(html, "answers 12005. Then") {
			t.Errorf("%q renders %s", src, html)
		}
	}
}

func TestNestedLists(t *testing.T) {
	t.Parallel()
	src := "- **a**: the first\n  item, wrapped\n  - a1\n  - a2, wrapped\n    here\n" +
		"  1. n1\n  2. n2\n" +
		"- b\n  lazy continuation of b\n- c\n\n  c's second paragraph\n- d\n\nAfter the list."
	got := markdown(src)
	want := []view.Block{
		{Kind: "ul", Items: []view.Item{
			{Spans: []view.Span{{Text: "a", Bold: true}, {Text: ": the first item, wrapped"}}, Blocks: []view.Block{
				{Kind: "ul", Items: []view.Item{{Spans: []view.Span{{Text: "a1"}}}, {Spans: []view.Span{{Text: "a2, wrapped here"}}}}},
				{Kind: "ol", Start: 1, Items: []view.Item{{Spans: []view.Span{{Text: "n1"}}}, {Spans: []view.Span{{Text: "n2"}}}}},
			}},
			{Spans: []view.Span{{Text: "b lazy continuation of b"}}},
			{Spans: []view.Span{{Text: "c"}}, Blocks: []view.Block{{Kind: "p", Spans: []view.Span{{Text: "c's second paragraph"}}}}},
			{Spans: []view.Span{{Text: "d"}}},
		}},
		{Kind: "p", Spans: []view.Span{{Text: "After the list."}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nested lists:\n got %+v\nwant %+v", got, want)
	}
	html := render(t, src)
	if !strings.Contains(html, "<li><strong>a</strong>: the first item, wrapped<ul><li>a1</li><li>a2, wrapped here</li></ul><ol><li>n1</li>") {
		t.Errorf("nested lists render %s", html)
	}
	// A heading or a table right after a list ends it.
	got = markdown("- a\n## H\n- b\n| x |\n|---|\n| 1 |")
	var kinds []string
	for _, b := range got {
		kinds = append(kinds, b.Kind)
	}
	if strings.Join(kinds, " ") != "ul h ul table" {
		t.Errorf("blocks %v, want ul h ul table", kinds)
	}
}

func TestBlockquotes(t *testing.T) {
	t.Parallel()
	got := markdown("Before.\n> quoted\n> on two lines\n>\n> - and a list\n\nAfter.")
	want := []view.Block{
		{Kind: "p", Spans: []view.Span{{Text: "Before."}}},
		{Kind: "quote", Blocks: []view.Block{
			{Kind: "p", Spans: []view.Span{{Text: "quoted on two lines"}}},
			{Kind: "ul", Items: []view.Item{{Spans: []view.Span{{Text: "and a list"}}}}},
		}},
		{Kind: "p", Spans: []view.Span{{Text: "After."}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blockquote:\n got %+v\nwant %+v", got, want)
	}
	if html := render(t, "> <b>x</b>"); !strings.Contains(html, "<blockquote><p>&lt;b&gt;x&lt;/b&gt;</p></blockquote>") {
		t.Errorf("blockquote renders %s", html)
	}
}

func TestInlineEmphasisAndCode(t *testing.T) {
	t.Parallel()
	cases := map[string][]view.Span{
		"an *emphasis* here":         {{Text: "an "}, {Text: "emphasis", Em: true}, {Text: " here"}},
		"*`code` at 0.8* (x)":        {{Text: "code", Code: true, Em: true}, {Text: " at 0.8", Em: true}, {Text: " (x)"}},
		"2 * 3 and a * alone":        {{Text: "2 * 3 and a * alone"}},
		"`x * y` and `*_templ.go`":   {{Text: "x * y", Code: true}, {Text: " and "}, {Text: "*_templ.go", Code: true}},
		"**bold `code`** after":      {{Text: "bold ", Bold: true}, {Text: "code", Code: true, Bold: true}, {Text: " after"}},
		"an unclosed ` and ** stays": {{Text: "an unclosed ` and ** stays"}},
	}
	for src, want := range cases {
		if got := inline(src); !reflect.DeepEqual(got, want) {
			t.Errorf("inline(%q):\n got %+v\nwant %+v", src, got, want)
		}
	}
	if html := render(t, "*a* **b**"); !strings.Contains(html, "<p><em>a</em> <strong>b</strong></p>") {
		t.Errorf("emphasis renders %s", html)
	}
}

func TestHeadings(t *testing.T) {
	t.Parallel()
	got := markdown("# Title\n#5 is no heading\n### Three `x`")
	if len(got) != 3 || got[0].Kind != "h" || got[0].Level != 1 || got[1].Kind != "p" || got[2].Level != 3 {
		t.Errorf("headings: %+v", got)
	}
	g := parseGuide("x", "# The title\n\nWhat it is.\n\n## One: a, b (c)\n\n## One: a, b (c)\n\n### Underwriters' review\n")
	if g.title != "The title" || plain(g.summary) != "What it is." {
		t.Errorf("title %q, summary %q", g.title, plain(g.summary))
	}
	var ids []string
	for _, b := range g.page.Body {
		if b.Kind == "h" {
			ids = append(ids, b.ID)
		}
	}
	if want := []string{"one-a-b-c", "one-a-b-c-1", "underwriters-review"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("anchors %v, want %v (GitHub's)", ids, want)
	}
	if len(g.page.Sections) != 2 || g.page.Sections[1].Href != "#one-a-b-c-1" {
		t.Errorf("sections %+v", g.page.Sections)
	}
}
