package screening

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Normalize returns the canonical matching form of a name: lower case,
// Cyrillic and Greek transliterated to Latin (see translit.go), diacritics
// removed (NFD, combining marks dropped), a few Latin letters without a
// decomposition folded (ß→ss, æ→ae, ø→o, ł→l, đ→d, þ→th, œ→oe, ı→i),
// apostrophes dropped (O'Brien → obrien), every other non-letter, non-digit
// (hyphens, dots, commas, brackets) turned into a separator, and single
// spaces between tokens.
//
// A comma is read as the list convention "SURNAME, Given Names" (used by
// OFAC for individuals): the part before the first comma is moved to the end,
// so Normalize("LUKASHENKA, Alyaksandr Ryhorovich") and
// Normalize("Alyaksandr Ryhorovich Lukashenka") are equal. Matching itself is
// independent of token order; the reordering only makes the normalized string
// read like the name a customer would type.
//
// Callers use it to compare two names, for example the customer's name with
// the person named in an AML check: compare Normalize(a) == Normalize(b), or
// use NameSimilarity for a tolerant, order-independent comparison.
func Normalize(s string) string {
	return strings.Join(nameTokens(s, langAuto), " ")
}

// nameTokens normalizes s and splits it into tokens, applying the
// "SURNAME, Given" reordering.
func nameTokens(s string, lang translitLang) []string {
	if i := strings.IndexByte(s, ','); i >= 0 {
		given := normTokens(s[i+1:], lang)
		sur := normTokens(s[:i], lang)
		return append(given, sur...)
	}
	return normTokens(s, lang)
}

// normTokens normalizes s (no comma reordering: commas are separators) and
// returns its tokens.
func normTokens(s string, lang translitLang) []string {
	n := normString(s, lang)
	if n == "" {
		return nil
	}
	return strings.Fields(n)
}

// foldDigraph maps the Latin letters with a caron, cedilla, acute or dot
// that transliterate Slavic and Turkish sibilants (and the German umlauts)
// to the digraph other romanizations use for the same sound: Serbian,
// Croatian, Czech, Slovak and Lithuanian write Ж Ч Ш as ž č š, Russian and
// English romanizations as zh ch sh, German as sch/tsch; a person listed as
// ZHAKYPOVICH may write Žakypovič. Stripping the diacritic (č → c, the
// primary form) loses the h; the digraph form is kept as an alternative
// spelling of the token (see normTokensAlt).
var foldDigraph = map[rune]string{
	'č': "ch", 'ć': "ch", 'ç': "ch",
	'š': "sh", 'ś': "sh", 'ş': "sh", 'ș': "sh",
	'ž': "zh", 'ź': "zh", 'ż': "zh",
	'ä': "ae", 'ö': "oe", 'ü': "ue",
}

// normTokensAlt is normTokens that also returns, per token, the spelling
// with foldDigraph applied when it differs ("" otherwise). alts is nil when
// no token has one.
func normTokensAlt(s string, lang translitLang) (toks, alts []string) {
	toks = normTokens(s, lang)
	has := false
	for _, r := range s {
		if r >= utf8.RuneSelf {
			if _, ok := foldDigraph[unicode.ToLower(r)]; ok {
				has = true
				break
			}
		}
	}
	if !has {
		return toks, nil
	}
	var b strings.Builder
	for _, r := range norm.NFC.String(s) {
		if f, ok := foldDigraph[unicode.ToLower(r)]; ok {
			b.WriteString(f)
			continue
		}
		b.WriteRune(r)
	}
	at := normTokens(b.String(), lang)
	if len(at) != len(toks) {
		return toks, nil
	}
	alts = make([]string, len(toks))
	any := false
	for i := range toks {
		if at[i] != toks[i] {
			alts[i] = at[i]
			any = true
		}
	}
	if !any {
		return toks, nil
	}
	return toks, alts
}

var stripMarks = runes.Remove(runes.In(unicode.Mn))

// normString performs all character-level normalization and returns tokens
// separated by single spaces.
func normString(s string, lang translitLang) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		// Compose first so that letters like й, ё, ї, ў stay single runes for
		// the transliteration table, then transliterate, then decompose and
		// drop combining marks (diacritics) from whatever Latin remains.
		s = norm.NFC.String(s)
		s = strings.ToLower(s)
		s = transliterate(s, lang)
		t := transform.Chain(norm.NFD, stripMarks, norm.NFC)
		if out, _, err := transform.String(t, s); err == nil {
			s = out
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	space := true // suppress leading separators
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			space = false
		case r >= 'A' && r <= 'Z':
			b.WriteByte(byte(r) + 'a' - 'A')
			space = false
		case isApostrophe(r):
			// dropped: O'Brien -> obrien, KY'ONG -> kyong
		case r < utf8.RuneSelf:
			if !space {
				b.WriteByte(' ')
				space = true
			}
		default:
			if f, ok := latinFold[r]; ok {
				b.WriteString(f)
				space = false
				continue
			}
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(unicode.ToLower(r))
				space = false
				continue
			}
			if unicode.Is(unicode.Mn, r) {
				continue
			}
			if !space {
				b.WriteByte(' ')
				space = true
			}
		}
	}
	out := b.String()
	return strings.TrimRight(out, " ")
}

func isApostrophe(r rune) bool {
	switch r {
	case '\'', '`', '\u2018', '\u2019', '\u02bc', '\u02bb', '\u02b9', '\u00b4', '\u02bf', '\u02be':
		return true
	}
	return false
}

// latinFold maps Latin letters that have no canonical decomposition.
var latinFold = map[rune]string{
	'ß': "ss", 'ẞ': "ss",
	'æ': "ae", 'Æ': "ae",
	'œ': "oe", 'Œ': "oe",
	'ø': "o", 'Ø': "o",
	'ł': "l", 'Ł': "l",
	'đ': "d", 'Đ': "d",
	'ð': "d", 'Ð': "d",
	'þ': "th", 'Þ': "th",
	'ı': "i",
	'ħ': "h", 'Ħ': "h",
	'ŧ': "t", 'Ŧ': "t",
	'ŋ': "ng", 'Ŋ': "ng",
	'ĸ': "k",
	'ſ': "s",
	'ƒ': "f",
	'ɨ': "i",
}

// particles are name parts that carry little identifying information:
// Arabic articles and kinship words, European nobiliary particles,
// generational suffixes and titles. They are kept in names but weigh less
// in the score, do not count as "extra" unmatched entry tokens, and do not
// count towards the minimum number of matched tokens.
var particles = map[string]bool{
	"al": true, "el": true, "ul": true, "ad": true, "as": true, "ash": true,
	"at": true, "az": true, "ar": true, "an": true, "bin": true, "ibn": true,
	"bint": true, "ben": true, "bn": true, "b": true, "ould": true, "wuld": true,
	"de": true, "da": true, "di": true, "del": true, "della": true, "dos": true,
	"das": true, "do": true, "du": true, "la": true, "le": true, "van": true,
	"von": true, "der": true, "den": true, "y": true, "e": true, "d": true,
	"jr": true, "sr": true, "ii": true, "iii": true, "iv": true,
	"mr": true, "mrs": true, "ms": true, "dr": true, "haji": true, "hajji": true,
	"mullah": true, "mulla": true, "sheikh": true, "shaykh": true, "sheik": true,
	"general": true, "colonel": true, "commandant": true, "commander": true,
	"professor": true, "prof": true, "captain": true, "major": true,
	"maulvi": true, "mawlawi": true, "maulavi": true, "maulawi": true, "qari": true,
}

var particlePhon = func() map[string]bool {
	m := make(map[string]bool, len(particles))
	for p := range particles {
		m[phonetic(p)] = true
	}
	return m
}()

// isParticle reports whether t is a particle, in any spelling with the same
// phonetic form (mawlawi, maulavi).
func isParticle(t string) bool { return particles[t] || particlePhon[phonetic(t)] }

// phonetic returns a spelling-variant-tolerant form of an ASCII token, used
// to compare transliterations of the same name: dzh/j, zh/j, kh/h, gh/g, dh/d, th/t, ph/f,
// ck/c/q/k, x/ks, w/v, y/i, ie/ye/e, ou/oo/u, ee/i and doubled letters are
// folded.
// Tokens containing non-ASCII letters (scripts without a transliteration
// table) are returned unchanged.
func phonetic(t string) string {
	for i := 0; i < len(t); i++ {
		if t[i] >= utf8.RuneSelf {
			return t
		}
	}
	b := make([]byte, 0, len(t)+2)
	start := 0
	// Arabic theophoric names "servant of ...": abd al-rahman, abdul rahman,
	// abdel rahman, abdurrahman (the article assimilated) and abdulrahman
	// all read abd + rahman; abdel and abdul alone read abd.
	if strings.HasPrefix(t, "abd") && len(t) > 4 && isVowelByte(t[3]) {
		switch {
		case t[4] == 'l':
			b, start = append(b, "abd"...), 5
		case len(t) > 5 && t[4] == t[5] && !isVowelByte(t[4]):
			b, start = append(b, "abd"...), 5
		}
	}
	for i := start; i < len(t); i++ {
		c := t[i]
		rest := t[i:]
		switch {
		case strings.HasPrefix(rest, "dzh"):
			b = append(b, 'j')
			i += 2
			continue
		case strings.HasPrefix(rest, "tch"):
			b = append(b, 'c', 'h')
			i += 2
			continue
		case strings.HasPrefix(rest, "sch"):
			b = append(b, 's', 'h')
			i += 2
			continue
		case strings.HasPrefix(rest, "zh"):
			b = append(b, 'j')
			i++
			continue
		case strings.HasPrefix(rest, "kh"):
			b = append(b, 'h')
			i++
			continue
		case strings.HasPrefix(rest, "gh"):
			b = append(b, 'g')
			i++
			continue
		case strings.HasPrefix(rest, "dh"):
			b = append(b, 'd')
			i++
			continue
		case strings.HasPrefix(rest, "th"):
			b = append(b, 't')
			i++
			continue
		case strings.HasPrefix(rest, "ph"):
			b = append(b, 'f')
			i++
			continue
		case strings.HasPrefix(rest, "ck"):
			b = append(b, 'k')
			i++
			continue
		case strings.HasPrefix(rest, "ch"):
			b = append(b, 'c', 'h')
			i++
			continue
		case strings.HasPrefix(rest, "ou"), strings.HasPrefix(rest, "oo"):
			b = append(b, 'u')
			i++
			continue
		case strings.HasPrefix(rest, "ee"):
			b = append(b, 'i')
			i++
			continue
		}
		switch c {
		case 'c', 'q':
			c = 'k'
		case 'w':
			c = 'v'
		case 'y':
			c = 'i'
		case 'x':
			b = appendDedup(b, 'k')
			c = 's'
		}
		// "ie" (from ie, ye, iye, yi...) reads as e: Grigoriev, Grigoryev and
		// Grigorev, Yevgeniy and Evgeniy, Pae and Paye (Russian е after a
		// vowel) compare equal.
		if c == 'e' && len(b) > 0 && b[len(b)-1] == 'i' {
			b[len(b)-1] = 'e'
			if n := len(b); n > 1 && b[n-2] == 'e' {
				b = b[:n-1]
			}
			continue
		}
		b = appendDedup(b, c)
	}
	return string(b)
}

func isVowelByte(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}

func appendDedup(b []byte, c byte) []byte {
	if n := len(b); n > 0 && b[n-1] == c {
		return b
	}
	return append(b, c)
}

// skeleton reduces a phonetic form to its first letter followed by its
// consonants (vowels dropped, repeats collapsed): mohammed, muhammad and
// mohamad all become "mhmd". It is only used to find candidates; the
// similarity itself is always Jaro-Winkler.
func skeleton(p string) string {
	if p == "" {
		return p
	}
	b := make([]byte, 0, len(p))
	b = append(b, p[0])
	for i := 1; i < len(p); i++ {
		switch p[i] {
		case 'a', 'e', 'i', 'o', 'u':
			continue
		}
		b = appendDedup(b, p[i])
	}
	return string(b)
}
