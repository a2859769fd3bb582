package docs

import (
	"embed"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	view "emi/views/docs"
)

// guideFiles are the guides, one Markdown file per audience. They live in
// the repository, where they read as Markdown, and are embedded so that
// every running server shows the guides of its own version.
//
//go:embed guides/*.md
var guideFiles embed.FS

// guide is one guide as /docs/guides serves it.
type guide struct {
	// name is the file's name without ".md": the page is
	// /docs/guides/{name}.
	name string
	// title is the text of the file's first "# " heading.
	title   string
	summary []view.Span
	page    view.Guide
}

// guides are the embedded guides, by name. They are parsed once per
// process, on first use: every App.Handler builds the docs handler, and
// most (the tests') never show a guide.
var guides = sync.OnceValue(func() []*guide {
	entries, _ := guideFiles.ReadDir("guides") // embedded: cannot fail
	var out []*guide
	for _, e := range entries {
		b, err := guideFiles.ReadFile(path.Join("guides", e.Name()))
		if err != nil {
			continue
		}
		out = append(out, parseGuide(strings.TrimSuffix(e.Name(), ".md"), string(b)))
	}
	// The partners' guide comes first: /docs is for partners, and the
	// others (back office, contributors, operators) are for staff.
	slices.SortFunc(out, func(a, b *guide) int {
		if (a.name == partnerGuide) != (b.name == partnerGuide) {
			if a.name == partnerGuide {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return out
})

// partnerGuide is the guide written for partners, listed first.
const partnerGuide = "partners"

func guideNamed(name string) *guide {
	for _, g := range guides() {
		if g.name == name {
			return g
		}
	}
	return nil
}

// parseGuide renders a guide: its first "# " heading is the page's title
// (the file's name when it has none), the paragraph after it the summary
// on the index, and every heading gets the anchor GitHub would give it,
// so that "file.md#anchor" links work both in the repository and here.
func parseGuide(name, src string) *guide {
	g := &guide{name: name, title: name}
	blocks := markdown(src)
	used := map[string]int{}
	var setIDs func(bs []view.Block)
	setIDs = func(bs []view.Block) {
		for i := range bs {
			if bs[i].Kind == "h" {
				id := slug(plain(bs[i].Spans))
				if n := used[id]; n > 0 {
					used[id]++
					id += "-" + strconv.Itoa(n)
				} else {
					used[id] = 1
				}
				bs[i].ID = id
			}
			setIDs(bs[i].Blocks)
		}
	}
	setIDs(blocks)
	for i, b := range blocks {
		if b.Kind == "h" && b.Level == 1 {
			g.title = plain(b.Spans)
			blocks = slices.Delete(blocks, i, i+1)
			if i < len(blocks) && blocks[i].Kind == "p" {
				g.summary = blocks[i].Spans
			}
			break
		}
	}
	g.page = view.Guide{Title: g.title, Body: blocks}
	for _, b := range blocks {
		if b.Kind == "h" && b.Level == 2 {
			g.page.Sections = append(g.page.Sections, view.Link{Href: "#" + b.ID, Label: plain(b.Spans)})
		}
	}
	return g
}

// plain is the text of spans without their markup.
func plain(ss []view.Span) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.Text)
	}
	return b.String()
}

// slug is GitHub's anchor for a heading: lower case, letters, digits, "-"
// and "_" kept, each space a "-", everything else left out.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// pageFiles are the pages of /docs that are not guides: the SDKs, the
// changelog and the versioning and deprecation policy, written in Markdown
// like the guides and served at /docs/{name}.
//
//go:embed pages/*.md
var pageFiles embed.FS

// pageNames are the pages of pageFiles, in the navigation's order.
var pageNames = []string{"sdk", "changelog", "versioning"}

// pages are the parsed pageFiles, by name, parsed once on first use.
var pages = sync.OnceValue(func() map[string]*guide {
	out := map[string]*guide{}
	for _, name := range pageNames {
		b, err := pageFiles.ReadFile("pages/" + name + ".md")
		if err != nil {
			panic("docs: pages/" + name + ".md is not embedded") // a build mistake, caught by the tests
		}
		out[name] = parseGuide(name, string(b))
	}
	return out
})

func pageNamed(name string) *guide { return pages()[name] }

// withBase returns g with BasePlaceholder replaced by base in every text
// and code block (g itself, shared by every request, is unchanged). Links
// are left alone: a page links to this server with a path ("/docs/sdk").
func withBase(g view.Guide, base string) view.Guide {
	g.Body = blocksWithBase(g.Body, base)
	return g
}

func blocksWithBase(bs []view.Block, base string) []view.Block {
	if bs == nil {
		return nil
	}
	out := make([]view.Block, len(bs))
	for i, b := range bs {
		b.Text = strings.ReplaceAll(b.Text, BasePlaceholder, base)
		b.Spans = spansWithBase(b.Spans, base)
		b.Blocks = blocksWithBase(b.Blocks, base)
		if b.Items != nil {
			items := make([]view.Item, len(b.Items))
			for j, it := range b.Items {
				items[j] = view.Item{Spans: spansWithBase(it.Spans, base), Blocks: blocksWithBase(it.Blocks, base)}
			}
			b.Items = items
		}
		if b.Header != nil {
			h := make([][]view.Span, len(b.Header))
			for j, c := range b.Header {
				h[j] = spansWithBase(c, base)
			}
			b.Header = h
		}
		if b.Rows != nil {
			rows := make([][][]view.Span, len(b.Rows))
			for j, row := range b.Rows {
				rows[j] = make([][]view.Span, len(row))
				for k, c := range row {
					rows[j][k] = spansWithBase(c, base)
				}
			}
			b.Rows = rows
		}
		out[i] = b
	}
	return out
}

func spansWithBase(ss []view.Span, base string) []view.Span {
	if ss == nil {
		return nil
	}
	out := make([]view.Span, len(ss))
	for i, s := range ss {
		s.Text = strings.ReplaceAll(s.Text, BasePlaceholder, base)
		out[i] = s
	}
	return out
}
