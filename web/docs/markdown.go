package docs

import (
	"strings"

	view "emi/views/docs"
)

// markdown turns the CommonMark subset openapi.yaml's descriptions use
// (ATX headings, paragraphs, "- " lists, pipe tables, fenced code, inline
// `code` and **bold**) into view blocks. templ escapes every text, so a
// description can never inject markup; anything else is shown as text.
func markdown(src string) []view.Block {
	var out []view.Block
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, view.Block{Kind: "p", Spans: inline(strings.Join(para, " "))})
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " ")
		t := strings.TrimSpace(l)
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
		case strings.HasPrefix(t, "#"):
			flush()
			level := len(t) - len(strings.TrimLeft(t, "#"))
			out = append(out, view.Block{Kind: "h", Level: level, Spans: inline(strings.TrimSpace(t[level:]))})
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
		case strings.HasPrefix(t, "- "):
			flush()
			b := view.Block{Kind: "ul"}
			var item []string
			for ; i < len(lines); i++ {
				u := strings.TrimSpace(lines[i])
				if strings.HasPrefix(u, "- ") {
					if item != nil {
						b.Items = append(b.Items, inline(strings.Join(item, " ")))
					}
					item = []string{u[2:]}
					continue
				}
				if u == "" || strings.HasPrefix(u, "#") || strings.HasPrefix(u, "|") {
					break
				}
				item = append(item, u)
			}
			if item != nil {
				b.Items = append(b.Items, inline(strings.Join(item, " ")))
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

// tableCells splits a pipe-table row; "\|" and pipes inside `code` stay.
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

// inline splits text into plain, `code` and **bold** spans.
func inline(s string) []view.Span {
	var out []view.Span
	for s != "" {
		i := strings.IndexAny(s, "`*")
		if i < 0 {
			out = append(out, view.Span{Text: s})
			break
		}
		if s[i] == '*' && !strings.HasPrefix(s[i:], "**") {
			out = append(out, view.Span{Text: s[:i+1]})
			s = s[i+1:]
			continue
		}
		if i > 0 {
			out = append(out, view.Span{Text: s[:i]})
		}
		delim := s[i : i+1]
		if delim == "*" {
			delim = "**"
		}
		rest := s[i+len(delim):]
		j := strings.Index(rest, delim)
		if j < 0 {
			out = append(out, view.Span{Text: s[i:]})
			break
		}
		out = append(out, view.Span{Text: rest[:j], Code: delim == "`", Bold: delim == "**"})
		s = rest[j+len(delim):]
	}
	return out
}
