package portal_test

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// relativeLuminance is WCAG 2's relative luminance of a #rrggbb colour.
func relativeLuminance(t *testing.T, hex string) float64 {
	t.Helper()
	hex = strings.TrimPrefix(hex, "#")
	if len(hex) == 3 {
		hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
	}
	var c [3]float64
	for i := range c {
		v, err := strconv.ParseUint(hex[2*i:2*i+2], 16, 8)
		if err != nil {
			t.Fatalf("colour #%s: %v", hex, err)
		}
		s := float64(v) / 255
		if s <= 0.03928 {
			c[i] = s / 12.92
		} else {
			c[i] = math.Pow((s+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}

func contrastRatio(t *testing.T, a, b string) float64 {
	la, lb := relativeLuminance(t, a), relativeLuminance(t, b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

// TestBadgeColoursContrast is axe's color-contrast rule for the status
// badges, read from the stylesheet: 12 px bold text is not "large", so
// every tone needs 4.5:1 against its background (WCAG 1.4.3). The amber
// badge was #9a6500 on #fdf0d8, 4.4:1: this test failed there.
func TestBadgeColoursContrast(t *testing.T) {
	css, err := os.ReadFile("../../static/css/app.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(--[a-z-]+):\s*(#[0-9a-fA-F]{3,6})\b`).FindAllStringSubmatch(string(css), -1) {
		vars[m[1]] = m[2]
	}
	colour := func(v string) string {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "var(") {
			return vars[strings.TrimSuffix(strings.TrimPrefix(v, "var("), ")")]
		}
		return v
	}
	rule := regexp.MustCompile(`(\.badge(?:\.[a-z]+)?)\s*\{([^}]*)\}`)
	decl := func(body, prop string) string {
		m := regexp.MustCompile(`(?:^|[;\s])` + prop + `:\s*([^;]+)`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return colour(m[1])
	}
	base := ""
	checked := 0
	for _, m := range rule.FindAllStringSubmatch(string(css), -1) {
		sel, body := m[1], m[2]
		bg, fg := decl(body, "background"), decl(body, "color")
		if sel == ".badge" {
			base = fg
		}
		if fg == "" {
			fg = base
		}
		if bg == "" || fg == "" {
			continue
		}
		checked++
		if r := contrastRatio(t, fg, bg); r < 4.5 {
			t.Errorf("%s: %s on %s is %.2f:1, below 4.5:1", sel, fg, bg, r)
		} else {
			t.Logf("%s: %s on %s is %.2f:1", sel, fg, bg, r)
		}
	}
	if checked < 4 {
		t.Fatalf("only %d badge rules found in app.css", checked)
	}
}

// TestTextOnColouredBackgroundsContrast extends the badge check to every
// rule of app.css that paints a background under text: flash messages,
// banners, notices, buttons (primary, secondary, danger), the navigation
// and its queue counts, highlighted rows, mentions. The text colour is the
// rule's own, else what it inherits: the button's white for button rules,
// the sidebar's text in the sidebar, the ink elsewhere. Where running text
// with links and hints sits on the background (flash, banner, notice,
// secret, consent, note, confirm), links (accent) and hints (muted) are
// checked too. 4.5:1 everywhere (WCAG 1.4.3, normal text); chart bars
// (fill, no text) are left out.
func TestTextOnColouredBackgroundsContrast(t *testing.T) {
	raw, err := os.ReadFile("../../static/css/app.css")
	if err != nil {
		t.Fatal(err)
	}
	css := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(raw), "")
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(--[a-z-]+):\s*(#[0-9a-fA-F]{3,6})\b`).FindAllStringSubmatch(css, -1) {
		vars[m[1]] = m[2]
	}
	colour := func(v string) string {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "var(") {
			return vars[strings.TrimSuffix(strings.TrimPrefix(v, "var("), ")")]
		}
		if regexp.MustCompile(`^#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?$`).MatchString(v) {
			return v
		}
		return ""
	}
	decl := func(body, prop string) string {
		m := regexp.MustCompile(`(?:^|[;{\s])` + prop + `:\s*([^;}]+)`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return colour(m[1])
	}
	text := regexp.MustCompile(`\.(flash|banner|notice|secret|consent|note|confirm)\b`)
	checked := 0
	for _, m := range regexp.MustCompile(`([^{}]+)\{([^}]*)\}`).FindAllStringSubmatch(css, -1) {
		sel, body := strings.TrimSpace(m[1]), m[2]
		if strings.HasPrefix(sel, ":root") || strings.HasPrefix(sel, "@") || strings.Contains(sel, ".bar-") || strings.Contains(sel, "::backdrop") {
			continue
		}
		bg := decl(body, "background")
		if bg == "" {
			bg = decl(body, "background-color")
		}
		if bg == "" {
			continue
		}
		fg := decl(body, "color")
		switch {
		case fg != "":
		case strings.HasPrefix(sel, "button") || strings.HasPrefix(sel, ".button"):
			fg = vars["--accent-ink"]
		case strings.HasPrefix(sel, ".side"):
			fg = "#dfe6ef"
		default:
			fg = vars["--ink"]
		}
		pairs := map[string]string{"text": fg}
		// Links and hints sit in the message box itself, so the class must
		// be on the element the rule paints (the selector's last part):
		// ".confirm[open] > summary" paints a button-like summary, which
		// holds a label only.
		last := sel[strings.LastIndexAny(sel, " >+~")+1:]
		if text.MatchString(last) {
			pairs["link"], pairs["hint"] = vars["--accent"], vars["--muted"]
		}
		for what, c := range pairs {
			checked++
			if r := contrastRatio(t, c, bg); r < 4.5 {
				t.Errorf("%s: %s %s on %s is %.2f:1, below 4.5:1", sel, what, c, bg, r)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d colour pairs found in app.css", checked)
	}
}
