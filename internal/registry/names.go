package registry

import (
	"strings"
	"unicode"
)

// NormalizeCompanyName returns the canonical form of a company name: the words
// of the name, lower case, without diacritics (Bulgarian, Russian and
// Ukrainian Cyrillic transliterated to Latin letters), joined by single
// spaces, and its legal form, if any, in one canonical spelling at the end.
//
// In detail:
//   - letters are lower-cased and folded: é -> e, ł -> l, ß -> ss, æ -> ae,
//     д -> d, ж -> zh; combining marks are dropped. German umlauts fold to the
//     bare vowel, so "Müller" is "muller", not "mueller";
//   - "." and apostrophes are dropped inside words ("S.A.R.L." is "sarl",
//     "O'Neil" is "oneil"); any other punctuation or symbol separates words,
//     except "&", which is the word "and";
//   - a leading "the" is dropped; "company" is written "co" and "corporation"
//     "corp" (except as the legal form);
//   - the last words, when they spell a legal form (Ltd or Limited, PLC or
//     Public Limited Company, LLP, LLC, Inc, GmbH, AG, SA, SAS, SARL, BV, NV,
//     EOOD or ЕООД, OOD or ООД, AD or АД, EAD, Sp. z o.o., S.r.l., S.p.A.,
//     AB, AS or A/S, Oy, ...), become that form's canonical name ("ltd",
//     "plc", "gmbh", "eood", "spzoo", ...).
//
// So "SANDBOX TRADING LIMITED" and "Sandbox Trading Ltd." are both "sandbox
// trading ltd", and "Sandbox Bulgaria ЕООД" is "sandbox bulgaria eood".
func NormalizeCompanyName(s string) string {
	n := parseName(s)
	if n.suffix == "" {
		return strings.Join(n.body, " ")
	}
	return strings.Join(n.body, " ") + " " + n.suffix
}

// NamesMatch reports whether the company name an applicant submitted is the
// name on the register. Both are compared in their canonical form (see
// NormalizeCompanyName), ignoring the spaces between words ("Sand Box" is
// "Sandbox"). The rules on legal forms:
//
//   - the same legal form in any spelling matches: "Sandbox Trading Limited"
//     is "SANDBOX TRADING LTD";
//   - a missing legal form is tolerated, on either side: "Sandbox Trading"
//     matches "Sandbox Trading Ltd";
//   - a different legal form does not match: "Sandbox Trading GmbH" is not
//     "Sandbox Trading Ltd".
//
// A last word that only looks like a legal form ("Kids Spa", where "spa"
// reads as S.p.A.) still matches the full name without a legal form ("Kids
// Spa Ltd"). Empty names never match. The relation is symmetric.
func NamesMatch(submitted, registered string) bool {
	a, b := parseName(submitted), parseName(registered)
	if len(a.body) == 0 || len(b.body) == 0 {
		return false
	}
	if a.compactBody() == b.compactBody() &&
		(a.suffix == "" || b.suffix == "" || a.suffix == b.suffix) {
		return true
	}
	// What was read as a legal form may be the end of the name.
	if a.suffix != "" && a.compactAll() == b.compactBody() {
		return true
	}
	if b.suffix != "" && b.compactAll() == a.compactBody() {
		return true
	}
	return false
}

// name is a company name split into its words and its legal form.
type name struct {
	body   []string // words before the legal form, abbreviations applied
	suffix string   // canonical legal form, or ""
	words  []string // all words, the legal form's as written
}

func (n name) compactBody() string { return strings.Join(n.body, "") }

// compactAll is the whole name, as if it had no legal form.
func (n name) compactAll() string {
	all := make([]string, len(n.words))
	for i, w := range n.words {
		all[i] = abbreviate(w)
	}
	return strings.Join(all, "")
}

// maxSuffixWords is the most words a legal form spans ("Gesellschaft mit
// beschränkter Haftung", "GmbH & Co. KG").
const maxSuffixWords = 4

func parseName(s string) name {
	words := tokenize(s)
	if len(words) > 1 && words[0] == "the" {
		words = words[1:]
	}
	n := name{words: words}
	body := words
	for k := min(maxSuffixWords, len(words)-1); k >= 1; k-- {
		if canon, ok := legalForms[strings.Join(words[len(words)-k:], "")]; ok {
			body, n.suffix = words[:len(words)-k], canon
			break
		}
	}
	n.body = make([]string, len(body))
	for i, w := range body {
		n.body[i] = abbreviate(w)
	}
	return n
}

// abbreviate writes common words of company names one way.
func abbreviate(w string) string {
	switch w {
	case "company":
		return "co"
	case "corporation":
		return "corp"
	}
	return w
}

// tokenize lower-cases and folds s and splits it into words.
func tokenize(s string) []string {
	var words []string
	var w strings.Builder
	flush := func() {
		if w.Len() > 0 {
			words = append(words, w.String())
			w.Reset()
		}
	}
	for _, r := range s {
		r = unicode.ToLower(r)
		if f, ok := fold[r]; ok {
			w.WriteString(f)
			continue
		}
		switch {
		case r < unicode.MaxASCII && ('a' <= r && r <= 'z' || '0' <= r && r <= '9'):
			w.WriteRune(r)
		case r == '.' || r == '\'' || r == '`' || r == '\u2019' || r == '\u2018' || r == '\u02bc':
			// joins: "S.A." is "sa", "O'Neil" is "oneil"
		case unicode.Is(unicode.Mn, r):
			// combining mark of a decomposed letter: "e\u0301" is "e"
		case r == '&':
			flush()
			words = append(words, "and")
		case r >= unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			// a letter of another script: kept, compared as is
			w.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return words
}

// fold maps lower-case letters with diacritics, ligatures and Cyrillic letters
// to ASCII.
var fold = func() map[rune]string {
	m := map[rune]string{}
	for _, f := range [][2]string{
		{"a", "àáâãäåāăąǎạảấầẩẫậắằẳẵặ"},
		{"ae", "æǽ"},
		{"c", "çćĉċč"},
		{"d", "ďđð"},
		{"e", "èéêëēĕėęěẹẻẽếềểễệ"},
		{"f", "ƒ"},
		{"g", "ĝğġģǧ"},
		{"h", "ĥħ"},
		{"i", "ìíîïĩīĭįıǐỉị"},
		{"ij", "ĳ"},
		{"j", "ĵ"},
		{"k", "ķĸǩ"},
		{"l", "ĺļľŀł"},
		{"n", "ñńņňŉŋ"},
		{"o", "òóôõöøōŏőǒơọỏốồổỗộớờởỡợ"},
		{"oe", "œ"},
		{"r", "ŕŗř"},
		{"s", "śŝşšșſ"},
		{"ss", "ß"},
		{"t", "ţťŧț"},
		{"th", "þ"},
		{"u", "ùúûüũūŭůűųǔưụủứừửữự"},
		{"w", "ŵ"},
		{"y", "ýÿŷỳỵỷỹ"},
		{"z", "źżž"},
		// Cyrillic, Bulgarian streamlined transliteration (ъ is a, ь is y,
		// щ is sht), with the Russian and Ukrainian letters Bulgarian lacks.
		{"a", "аъ"}, {"b", "б"}, {"v", "в"}, {"g", "гґ"}, {"d", "д"}, {"e", "еёэ"},
		{"zh", "ж"}, {"z", "з"}, {"i", "иі"}, {"y", "йьы"}, {"k", "к"}, {"l", "л"},
		{"m", "м"}, {"n", "н"}, {"o", "о"}, {"p", "п"}, {"r", "р"}, {"s", "с"}, {"t", "т"},
		{"u", "у"}, {"f", "ф"}, {"h", "х"}, {"ts", "ц"}, {"ch", "ч"}, {"sh", "ш"},
		{"sht", "щ"}, {"yu", "ю"}, {"ya", "я"}, {"yi", "ї"}, {"ye", "є"},
	} {
		for _, r := range f[1] {
			m[r] = f[0]
		}
	}
	return m
}()

// legalForms maps each spelling of a legal form (its words after tokenize,
// joined without spaces) to the form's canonical name.
var legalForms = func() map[string]string {
	m := map[string]string{}
	for canon, spellings := range legalFormSpellings {
		for _, s := range spellings {
			m[s] = canon
		}
	}
	return m
}()

// legalFormSpellings lists the spellings of each legal form by canonical
// name. A spelling belongs to one form only (a test checks).
var legalFormSpellings = map[string][]string{
	// United Kingdom and Ireland (with the Welsh forms)
	"ltd":  {"ltd", "limited", "cyf", "cyfyngedig", "teoranta", "teo"},
	"plc":  {"plc", "publiclimitedcompany", "ccc", "cwmnicyfyngedigcyhoeddus"},
	"llp":  {"llp", "limitedliabilitypartnership"},
	"lp":   {"lp", "limitedpartnership"},
	"cic":  {"cic", "communityinterestcompany"},
	"dac":  {"dac", "designatedactivitycompany"},
	"uc":   {"uc", "unlimitedcompany"},
	"clg":  {"clg", "companylimitedbyguarantee"},
	"llc":  {"llc", "limitedliabilitycompany"},
	"inc":  {"inc", "incorporated"},
	"corp": {"corp", "corporation"},
	// Australia, Singapore
	"pty ltd": {"ptyltd", "proprietarylimited"},
	"pte ltd": {"pteltd"},
	// German-speaking countries
	"gmbh":         {"gmbh", "gesellschaftmitbeschrankterhaftung", "gesellschaftmitbeschraenkterhaftung"},
	"gmbh co kg":   {"gmbhandcokg", "gmbhcokg", "gmbhundcokg"},
	"ug":           {"ug", "ughaftungsbeschrankt", "ughaftungsbeschraenkt"},
	"ag":           {"ag", "aktiengesellschaft"},
	"kg":           {"kg", "kommanditgesellschaft"},
	"ohg":          {"ohg", "offenehandelsgesellschaft"},
	"ev":           {"ev", "eingetragenerverein"},
	"se":           {"se", "societaseuropaea"},
	"kgaa":         {"kgaa", "kommanditgesellschaftaufaktien"},
	"gmbh co kgaa": {"gmbhandcokgaa", "gmbhcokgaa"},
	// French, Belgian, Luxembourgish, Swiss, Spanish, Portuguese
	"sa":   {"sa", "societeanonyme", "sociedadanonima", "spolkaakcyjna"},
	"sas":  {"sas", "societeparactionssimplifiee"},
	"sasu": {"sasu", "societeparactionssimplifieeunipersonnelle"},
	"sarl": {"sarl", "societearesponsabilitelimitee"},
	"eurl": {"eurl", "entrepriseunipersonnellearesponsabilitelimitee"},
	"sprl": {"sprl", "bvba"},
	"sl":   {"sl", "sociedadlimitada"},
	"slu":  {"slu"},
	"lda":  {"lda", "limitada"},
	// Italy, Romania
	"srl": {"srl", "societaaresponsabilitalimitata", "societatecuraspunderelimitata"},
	"spa": {"spa", "societaperazioni"},
	// Netherlands, Belgium
	"bv": {"bv", "beslotenvennootschap"},
	"nv": {"nv", "naamlozevennootschap"},
	// Bulgaria (ЕООД, ООД, АД, ЕАД, ЕТ transliterated)
	"eood": {"eood", "ednolichnodruzhestvosogranichenaotgovornost"},
	"ood":  {"ood", "druzhestvosogranichenaotgovornost"},
	"ad":   {"ad", "aktsionernodruzhestvo"},
	"ead":  {"ead", "ednolichnoaktsionernodruzhestvo"},
	"et":   {"et", "ednolichentargovets"},
	// Poland (S.A. is with "sa"), Czechia, Slovakia, the former Yugoslavia,
	// Hungary
	"spzoo": {"spzoo", "spolkazograniczonaodpowiedzialnoscia"},
	"sro":   {"sro", "spolecnostsrucenimomezenym", "spolocnostsrucenimobmedzenym"},
	"doo":   {"doo"},
	"kft":   {"kft"},
	"zrt":   {"zrt"},
	"nyrt":  {"nyrt"},
	// Nordic and Baltic countries
	"ab":  {"ab", "abpubl", "aktiebolag", "aktiebolaget"},
	"as":  {"as", "aksjeselskap", "aktieselskab", "akciovaspolecnost"},
	"asa": {"asa", "allmennaksjeselskap"},
	"aps": {"aps", "anpartsselskab"},
	"oy":  {"oy", "osakeyhtio"},
	"oyj": {"oyj", "julkinenosakeyhtio"},
	"ou":  {"ou", "osauhing"},
	"uab": {"uab"},
	"sia": {"sia"},
}
