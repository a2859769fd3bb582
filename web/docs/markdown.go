package docs

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"

	view "emi/views/docs"
)

// markdown turns the CommonMark subset that openapi.yaml's descriptions
// and the guides use into view blocks: ATX headings, paragraphs, "- " and
// "1. " lists (nested by indentation), "> " quotes, pipe tables, fenced
// code, and inline `code`, **bold**, *emphasis* and [links](href). templ
// escapes every text, so a text can never inject markup; a link keeps its
// address only when allowedHref accepts it, and anything else is shown as
// text.
func markdown(src string) []view.Block {
	return parseBlocks(strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n"))
}

func parseBlocks(lines []string) []view.Block {
	var out []view.Block
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, view.Block{Kind: "p", Spans: inline(strings.Join(para, " "))})
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t")
		t := strings.TrimSpace(l)
		if m, ok := listMarker(l); ok && (len(para) == 0 || m.interrupts()) {
			flush()
			var b view.Block
			b, i = parseList(lines, i)
			i--
			out = append(out, b)
			continue
		}
		switch {
		case t == "":
			flush()
		case strings.HasPrefix(t, "```"):
			flush()
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, lines[i])
			}
			out = append(out, view.Block{Kind: "pre", Text: strings.Join(code, "\n")})
		case isHeading(t):
			flush()
			level := len(t) - len(strings.TrimLeft(t, "#"))
			out = append(out, view.Block{Kind: "h", Level: level, Spans: inline(strings.TrimSpace(t[level:]))})
		case strings.HasPrefix(t, ">"):
			flush()
			var quoted []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), ">"); i++ {
				q := strings.TrimPrefix(strings.TrimSpace(lines[i]), ">")
				quoted = append(quoted, strings.TrimPrefix(q, " "))
			}
			i--
			out = append(out, view.Block{Kind: "quote", Blocks: parseBlocks(quoted)})
		case strings.HasPrefix(t, "|"):
			flush()
			b := view.Block{Kind: "table"}
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				cells := tableCells(strings.TrimSpace(lines[i]))
				switch {
				case b.Header == nil:
					for _, c := range cells {
						b.Header = append(b.Header, inline(c))
					}
				case isRule(cells):
				default:
					var row [][]view.Span
					for _, c := range cells {
						row = append(row, inline(c))
					}
					b.Rows = append(b.Rows, row)
				}
			}
			i--
			out = append(out, b)
		default:
			para = append(para, t)
		}
	}
	flush()
	return out
}

// isHeading: one to six # and a space (or nothing) after them, so "#5"
// or "#hashtag" stays text.
func isHeading(t string) bool {
	n := len(t) - len(strings.TrimLeft(t, "#"))
	return n >= 1 && n <= 6 && (len(t) == n || t[n] == ' ')
}

// marker is a list item's marker: where it stands, where the item's text
// starts, and for "N. " its number.
type marker struct {
	indent, content int
	ordered         bool
	num             int
}

// interrupts says whether the marker starts a list even in the middle of
// a paragraph: a bullet does, a number only when it is 1, as in
// CommonMark, so that a wrapped line starting "12005. " stays text.
func (m marker) interrupts() bool { return !m.ordered || m.num == 1 }

// sibling says whether m starts another item of the list that first
// started.
func (m marker) sibling(first marker) bool {
	return m.ordered == first.ordered && m.indent < first.content
}

func listMarker(l string) (marker, bool) {
	indent := len(l) - len(strings.TrimLeft(l, " "))
	s := l[indent:]
	if strings.HasPrefix(s, "- ") {
		return marker{indent: indent, content: indent + 2}, true
	}
	n := 0
	for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(s) && (s[n] == '.' || s[n] == ')') && s[n+1] == ' ' {
		num, _ := strconv.Atoi(s[:n])
		return marker{indent: indent, content: indent + n + 2, ordered: true, num: num}, true
	}
	return marker{}, false
}

// parseList reads the list that starts at lines[i] and returns it with
// the index of the first line after it. An item is its marker's line and
// the lines after it up to the next item of the same list; those are
// parsed again, without the item's indentation, so a list indented under
// an item becomes a list inside it. A line indented less is a lazy
// continuation, as in CommonMark. A blank line ends the list unless the
// next line is another item, or is indented as far as the item's text
// (a further paragraph of the item).
func parseList(lines []string, i int) (view.Block, int) {
	first, _ := listMarker(lines[i])
	b := view.Block{Kind: "ul"}
	if first.ordered {
		b.Kind, b.Start = "ol", first.num
	}
	for i < len(lines) {
		m, ok := listMarker(lines[i])
		if !ok || !m.sibling(first) {
			break
		}
		body := []string{strings.TrimRight(lines[i][m.content:], " \t")}
		for i++; i < len(lines); i++ {
			l := strings.TrimRight(lines[i], " \t")
			if strings.TrimSpace(l) == "" {
				j := i
				for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
					j++
				}
				if j == len(lines) {
					break
				}
				if next, ok := listMarker(lines[j]); ok && next.sibling(first) {
					i = j
					break
				}
				if indentOf(lines[j]) < m.content {
					break
				}
				body = append(body, "")
				i = j - 1
				continue
			}
			if next, ok := listMarker(l); ok && next.indent < m.content && (next.sibling(first) || next.interrupts()) {
				break // another item of this list, or another list
			}
			if indentOf(l) < m.content && endsItem(strings.TrimSpace(l)) {
				break
			}
			body = append(body, dedent(l, m.content))
		}
		blocks := parseBlocks(body)
		var it view.Item
		if len(blocks) > 0 && blocks[0].Kind == "p" {
			it.Spans, blocks = blocks[0].Spans, blocks[1:]
		}
		if len(blocks) > 0 {
			it.Blocks = blocks
		}
		b.Items = append(b.Items, it)
		if i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			break
		}
	}
	return b, i
}

// endsItem: a line, not indented under the item, that starts a block of
// its own rather than continuing the item's text.
func endsItem(t string) bool {
	return isHeading(t) || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "```") || strings.HasPrefix(t, ">")
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// dedent removes up to n leading spaces.
func dedent(l string, n int) string {
	return l[min(n, indentOf(l)):]
}

// tableCells splits a pipe-table row; pipes inside `code` stay.
func tableCells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	var cur strings.Builder
	inCode := false
	for _, r := range row {
		switch {
		case r == '`':
			inCode = !inCode
			cur.WriteRune(r)
		case r == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func isRule(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

// inline splits text into plain, `code`, **bold**, *emphasis* and linked
// spans. Bold, emphasis and link texts may hold the others; code holds
// only text.
func inline(s string) []view.Span {
	var out []view.Span
	text := func(t string) {
		if t == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1] == (view.Span{Text: out[n-1].Text}) {
			out[n-1].Text += t
			return
		}
		out = append(out, view.Span{Text: t})
	}
	mark := func(inner string, set func(*view.Span)) {
		for _, sp := range inline(inner) {
			set(&sp)
			out = append(out, sp)
		}
	}
	for s != "" {
		i := strings.IndexAny(s, "`*[")
		if i < 0 {
			text(s)
			break
		}
		text(s[:i])
		s = s[i:]
		switch {
		case s[0] == '`':
			j := strings.IndexByte(s[1:], '`')
			if j < 0 {
				text("`")
				s = s[1:]
				continue
			}
			out = append(out, view.Span{Text: s[1 : 1+j], Code: true})
			s = s[j+2:]
		case strings.HasPrefix(s, "**"):
			j := strings.Index(s[2:], "**")
			if j < 0 {
				text("**")
				s = s[2:]
				continue
			}
			mark(s[2:2+j], func(sp *view.Span) { sp.Bold = true })
			s = s[j+4:]
		case s[0] == '*':
			j := closingStar(s)
			if j < 0 {
				text("*")
				s = s[1:]
				continue
			}
			mark(s[1:j], func(sp *view.Span) { sp.Em = true })
			s = s[j+1:]
		default: // '['
			label, href, n := link(s)
			switch {
			case n == 0:
				text("[")
				s = s[1:]
				continue
			case allowedHref(href):
				mark(label, func(sp *view.Span) { sp.Href = href })
			default:
				text(s[:n]) // shown as written, never as a link
			}
			s = s[n:]
		}
	}
	return out
}

// closingStar is the index of the * that closes the emphasis s opens, or
// -1: the opening one is followed by a non-space, the closing one follows
// a non-space, and stars inside `code` do not count.
func closingStar(s string) int {
	if len(s) < 3 || s[1] == ' ' || s[1] == '*' {
		return -1
	}
	for k := 1; k < len(s); k++ {
		switch s[k] {
		case '`':
			j := strings.IndexByte(s[k+1:], '`')
			if j < 0 {
				return -1
			}
			k += j + 1
		case '*':
			if s[k-1] != ' ' {
				return k
			}
		}
	}
	return -1
}

// link reads "[label](href)" at the start of s: the label, the address
// and the length of the whole, or n 0 when s does not start with one.
func link(s string) (label, href string, n int) {
	end := -1
	for k := 1; k < len(s) && end < 0; k++ {
		switch s[k] {
		case '`':
			j := strings.IndexByte(s[k+1:], '`')
			if j < 0 {
				return "", "", 0
			}
			k += j + 1
		case '[':
			return "", "", 0
		case ']':
			end = k
		}
	}
	if end < 0 || !strings.HasPrefix(s[end+1:], "(") {
		return "", "", 0
	}
	paren := strings.IndexByte(s[end+2:], ')')
	if paren < 0 {
		return "", "", 0
	}
	return s[1:end], s[end+2 : end+2+paren], end + 3 + paren
}

// allowedHref is the allow-list of link addresses: relative ones (a path,
// "#anchor", "/path") and absolute http(s) URLs with a host. Every other
// scheme (javascript:, data:, vbscript:, file:...), a scheme-relative
// "//host", credentials, a backslash (which browsers read as a slash),
// quotes, angle brackets and any space or control character are refused, so the page never holds a
// link that runs script or leaves for a host the text does not name.
func allowedHref(h string) bool {
	if h == "" {
		return false
	}
	if strings.ContainsAny(h, "\\\"'<>`") {
		return false
	}
	for _, r := range h {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	u, err := url.Parse(h)
	if err != nil || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "http", "https":
		return u.Host != ""
	case "":
		return u.Host == "" && !strings.HasPrefix(h, "//")
	}
	return false
}
