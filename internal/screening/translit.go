package screening

import (
	"strings"
	"unicode"
)

// Transliteration of Cyrillic and Greek to Latin.
//
// Cyrillic follows the BGN/PCGN romanizations, which are what OFAC's
// spellings are closest to (Лукашенко → lukashenko, Щ → shch, Ж → zh,
// Х → kh, Ц → ts, Ч → ch, Ш → sh, Ю → yu, Я → ya, Й → y, Ь and Ъ dropped):
//
//   - Russian (BGN/PCGN 1947): Е and Ё are "ye" at the start of a word and
//     after a vowel, Й, Ъ or Ь, otherwise "e"; Ы → y; Э → e; И → i.
//   - Ukrainian (BGN/PCGN 1965): Г → h, Ґ → g, И → y, І → i, Ї → yi, Є → ye.
//   - Belarusian (BGN/PCGN 1979): Г → h, І → i, Ў → w, Ы → y, Е as Russian.
//   - Bulgarian (Streamlined System, BGN/PCGN 2013): Х → h, Щ → sht,
//     Ъ → a, Ь → y.
//   - Serbian and Macedonian follow their official Latin alphabets with
//     the diacritics removed: Ђ dj, Ј j, Љ lj, Њ nj, Ћ c, Џ dz, Ч c, Ш s,
//     Ж z, Ц c, Х h, Ѓ gj, Ќ kj, Ѕ dz.
//   - Kazakh/Kyrgyz/Tatar extras (Ә a, Ғ g, Қ k, Ң ng, Ө o, Ұ u, Ү u, Һ h)
//     have a single reading and are always mapped.
//
// The language is taken from a hint (Screen derives it from the query's
// nationality: UA, BY, BG, RS/ME/BA/MK, RU) or detected from the text:
// Ђ/Ј/Љ/Њ/Ћ/Џ/Ѓ/Ќ/Ѕ mean Serbian/Macedonian, Ў Belarusian, І/Ї/Є/Ґ
// Ukrainian (Belarusian when there is no И), anything else is Russian. The remaining
// differences between systems (г as g or h, и as i or y) are further
// absorbed by the phonetic folding and the fuzzy comparison.
//
// Greek follows ELOT 743 (the system used in Greek passports): Β v, Γ g,
// Η i, Θ th, Υ y, Φ f, Χ ch, Ψ ps, Ω o, ΟΥ ou, ΑΥ/ΕΥ/ΗΥ av/ev/iv (af/ef/if
// before a voiceless consonant or at the end), ΜΠ b at the start of a word
// and mp inside, ΝΤ d at the start and nt inside, ΓΓ ng, ΓΞ nx, ΓΧ nch.
// Accents (tonos) are ignored; a diaeresis prevents the digraph readings.

type translitLang int

const (
	langAuto translitLang = iota
	langRussian
	langUkrainian
	langBelarusian
	langBulgarian
	langSerbian
)

// langForCountry maps an ISO alpha-2 nationality to the Cyrillic
// transliteration system used for that country's names.
func langForCountry(cc string) translitLang {
	switch strings.ToUpper(cc) {
	case "UA":
		return langUkrainian
	case "BY":
		return langBelarusian
	case "BG":
		return langBulgarian
	case "RU":
		return langRussian
	case "RS", "ME", "BA", "MK":
		return langSerbian
	}
	return langAuto
}

// cyrCommon holds the letters read the same way in every supported system
// (lower case; the input is lower-cased first).
var cyrCommon = map[rune]string{
	'а': "a", 'б': "b", 'в': "v", 'д': "d", 'ж': "zh", 'з': "z",
	'й': "y", 'к': "k", 'л': "l", 'м': "m", 'н': "n", 'о': "o",
	'п': "p", 'р': "r", 'с': "s", 'т': "t", 'у': "u", 'ф': "f",
	'х': "kh", 'ц': "ts", 'ч': "ch", 'ш': "sh", 'щ': "shch",
	'ъ': "", 'ы': "y", 'ь': "", 'э': "e", 'ю': "yu", 'я': "ya",
	'г': "g", 'и': "i", 'і': "i", 'ї': "yi", 'є': "ye", 'ґ': "g",
	'ў': "w",
	// Serbian, Macedonian
	'ђ': "dj", 'ј': "j", 'љ': "lj", 'њ': "nj", 'ћ': "c", 'џ': "dz",
	'ѓ': "gj", 'ќ': "kj", 'ѕ': "dz",
	// Kazakh, Kyrgyz, Tatar, Bashkir
	'ә': "a", 'ғ': "g", 'қ': "k", 'ң': "ng", 'ө': "o", 'ұ': "u",
	'ү': "u", 'һ': "h",
}

// per-language overrides of cyrCommon.
var (
	cyrUkrainian  = map[rune]string{'г': "h", 'и': "y", 'е': "e"}
	cyrBelarusian = map[rune]string{'г': "h"}
	cyrBulgarian  = map[rune]string{'х': "h", 'щ': "sht", 'ъ': "a", 'ь': "y", 'е': "e", 'ё': "yo"}
	// Serbian and Macedonian: the official Latin alphabets (gajica), with
	// their diacritics removed as for any Latin name (č, ć → c; š → s; ž → z).
	cyrSerbian = map[rune]string{'ж': "z", 'ч': "c", 'ш': "s", 'ц': "c", 'х': "h", 'е': "e", 'и': "i", 'г': "g"}
)

// greekPlain strips tonos; diaeresis letters map to themselves so that
// they break digraphs.
var greekPlain = map[rune]rune{
	'ά': 'α', 'έ': 'ε', 'ή': 'η', 'ί': 'ι', 'ό': 'ο', 'ύ': 'υ', 'ώ': 'ω',
	'ΐ': 'ϊ', 'ΰ': 'ϋ',
}

var greekSingle = map[rune]string{
	'α': "a", 'β': "v", 'γ': "g", 'δ': "d", 'ε': "e", 'ζ': "z", 'η': "i",
	'θ': "th", 'ι': "i", 'κ': "k", 'λ': "l", 'μ': "m", 'ν': "n", 'ξ': "x",
	'ο': "o", 'π': "p", 'ρ': "r", 'σ': "s", 'ς': "s", 'τ': "t", 'υ': "y",
	'φ': "f", 'χ': "ch", 'ψ': "ps", 'ω': "o", 'ϊ': "i", 'ϋ': "y",
}

// greekVoiceless: after αυ/ευ/ηυ these give af/ef/if.
func greekVoiceless(r rune) bool {
	switch r {
	case 'θ', 'κ', 'ξ', 'π', 'σ', 'ς', 'τ', 'φ', 'χ', 'ψ':
		return true
	}
	return false
}

func isCyrillic(r rune) bool { return r >= 0x0400 && r <= 0x04FF }
func isGreek(r rune) bool    { return (r >= 0x0370 && r <= 0x03FF) || (r >= 0x1F00 && r <= 0x1FFF) }

func isCyrVowel(r rune) bool {
	switch r {
	case 'а', 'е', 'ё', 'и', 'о', 'у', 'ы', 'э', 'ю', 'я', 'і', 'ї', 'є', 'й', 'ъ', 'ь', 'ў':
		return true
	}
	return false
}

// transliterate converts Cyrillic and Greek letters of a lower-case NFC
// string to Latin; other characters are kept.
func transliterate(s string, lang translitLang) string {
	has := false
	for _, r := range s {
		if isCyrillic(r) || isGreek(r) {
			has = true
			break
		}
	}
	if !has {
		return s
	}
	rs := []rune(s)
	if lang == langAuto {
		lang = detectCyrillic(rs)
	}
	var over map[rune]string
	switch lang {
	case langUkrainian:
		over = cyrUkrainian
	case langBelarusian:
		over = cyrBelarusian
	case langBulgarian:
		over = cyrBulgarian
	case langSerbian:
		over = cyrSerbian
	}
	for i, r := range rs {
		if p, ok := greekPlain[r]; ok {
			rs[i] = p
		}
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		var prev, next rune
		if i > 0 {
			prev = rs[i-1]
		}
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		wordStart := prev == 0 || !unicode.IsLetter(prev)
		switch {
		case isCyrillic(r):
			if o, ok := over[r]; ok {
				b.WriteString(o)
				continue
			}
			switch r {
			case 'е', 'ё':
				if wordStart || isCyrVowel(prev) {
					b.WriteString("ye")
				} else {
					b.WriteString("e")
				}
				continue
			}
			if o, ok := cyrCommon[r]; ok {
				b.WriteString(o)
			} else {
				b.WriteRune(r)
			}
		case isGreek(r):
			switch {
			case (r == 'α' || r == 'ε' || r == 'η') && next == 'υ':
				b.WriteString(greekSingle[r])
				var after rune
				if i+2 < len(rs) {
					after = rs[i+2]
				}
				if after == 0 || !unicode.IsLetter(after) || greekVoiceless(after) {
					b.WriteString("f")
				} else {
					b.WriteString("v")
				}
				i++
			case r == 'ο' && next == 'υ':
				b.WriteString("ou")
				i++
			case r == 'μ' && next == 'π':
				if wordStart {
					b.WriteString("b")
				} else {
					b.WriteString("mp")
				}
				i++
			case r == 'ν' && next == 'τ':
				if wordStart {
					b.WriteString("d")
				} else {
					b.WriteString("nt")
				}
				i++
			case r == 'γ' && next == 'γ':
				b.WriteString("ng")
				i++
			case r == 'γ' && next == 'ξ':
				b.WriteString("nx")
				i++
			case r == 'γ' && next == 'χ':
				b.WriteString("nch")
				i++
			default:
				if o, ok := greekSingle[r]; ok {
					b.WriteString(o)
				} else {
					b.WriteRune(r)
				}
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func detectCyrillic(rs []rune) translitLang {
	uk := false
	for _, r := range rs {
		switch r {
		case 'ђ', 'ј', 'љ', 'њ', 'ћ', 'џ', 'ѓ', 'ќ', 'ѕ':
			return langSerbian
		case 'ў':
			return langBelarusian
		case 'ї', 'є', 'ґ':
			uk = true
		case 'і':
			uk = true
		}
	}
	if uk {
		// Belarusian also uses і but never и.
		for _, r := range rs {
			if r == 'и' || r == 'ї' || r == 'є' || r == 'ґ' {
				return langUkrainian
			}
		}
		return langBelarusian
	}
	return langRussian
}
