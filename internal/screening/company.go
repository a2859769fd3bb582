package screening

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// CompanyQuery is a company (or any legal entity: a corporate member of
// an application) to screen. Only Name is required.
type CompanyQuery struct {
	// Name is the legal or trade name as the customer writes it, legal
	// form included or not, in Latin or Cyrillic script.
	Name string
	// Countries are ISO 3166-1 alpha-2 codes (case-insensitive) of the
	// company's registration country and, where known, its address
	// country; empty when unknown.
	Countries []string
}

// Company scoring parameters. See ScreenCompany for the formula.
const (
	weightCore       = 1.0
	weightDescriptor = 0.15 // Trading, Group, Holding, International...
	weightLegalForm  = 0.1  // LLC, OOO, GmbH... when both names have one

	// A query word the listed name lacks costs 0.25: a name with a word
	// of its own is another company ("Beirut Bay Trading" is not BEIRUT
	// TRADE), so it never reaches MinNameScore; a descriptor or legal form
	// the list lacks costs 0.03 or nothing ("X Trading FZE" for a listed
	// X).
	companyExtraCore = 0.25
	companyExtraDesc = 0.03 // per query descriptor the listed name lacks
	companyMaxExtra  = 0.30
	// approxPartial multiplies the name score of a listed name found
	// inside a longer query name when one of its words is matched only
	// approximately (a partial and approximate name: "Kaida Logistics"
	// is not AL QA'IDA).
	approxPartial = 0.90
	// companyNoAnchor multiplies the name score when no core word agrees
	// exactly or phonetically.
	companyNoAnchor = 0.85

	// A listed name whose only matching words have three letters or
	// fewer (a published acronym such as MYC, HUM, or a short word such as
	// BIO) matches only a query that is that word alone (with a legal
	// form), and at most at shortNameScore: short words collide a lot, so
	// the company's country must agree to reach the threshold (and a
	// different country vetoes it).
	shortNameScore = 0.82
	// shortAcronymScore: a listed alias, weak a.k.a. or bracketed acronym
	// of exactly three letters that the query gives exactly (the list
	// says the entity is known by it) reaches the threshold without the
	// country, and a different country still vetoes it.
	shortAcronymScore = 0.88
	// An acronym the engine generated from the initials of a listed name
	// (ISLAMIC REVOLUTIONARY GUARD CORPS -> IRGC) scores acronymScore4 for
	// four letters or more and acronymScore3 for three: a three-letter one
	// reaches the (default) threshold exactly, for review, when no country
	// can decide (the company's or the entity's unknown), is raised when
	// they agree and vetoed when they differ; for an entity the lists give
	// no country, the countries its programmes or names point to decide
	// (impliedCountries). Two-letter acronyms are never generated.
	acronymScore4 = 0.88
	acronymScore3 = 0.85
	minAcronym    = 3
	maxAcronym    = 8

	adjCountryMatch = 0.05  // a company country among the listed countries
	adjCountryMiss  = -0.10 // none of them, for a strong full-name match
	adjCountryVeto  = -0.35 // none of them, for anything weaker: a namesake
)

// Kinds of company token pairs, as reported in TokenMatch.Kind (beside
// KindExact, KindPhonetic, KindFuzzy, KindUnmatched).
const (
	KindLegalForm  = "legal_form" // a legal form (LLC, ООО, GmbH...)
	KindDescriptor = "descriptor" // a descriptor word (Trading, Group...)
	KindStop       = "stop"       // a stop word (and, of, de, al...), weight 0
	KindAcronym    = "acronym"    // a one-word acronym and the initials of the listed name
)

// sources of company names
const (
	srcName    uint8 = iota // the primary name
	srcAlias                // a published alias
	srcWeak                 // an OFAC weak a.k.a. (remarks)
	srcBracket              // an acronym in brackets or after " / " in a name
)

// compTok is one token of a listed company name.
type compTok struct {
	id    int32   // token id (ix.toks); -1 for a legal form
	lf    string  // legal form: the phrase as published (normalized)
	class uint8   // clsCore, clsDescriptor, clsLegalForm, clsStop
	form  int16   // legal-form or descriptor row
	w     float32 // weight in this name
}

// compName is one screened name of a listed entity in company screening.
type compName struct {
	entry   int32
	src     uint8
	text    string
	toks    []compTok
	ncore   uint8  // tokens at full weight
	acronym string // initials of its words (generated), "" none
}

// buildCompanies indexes the names of the listed entities for company
// screening: primary names, aliases, OFAC weak a.k.a.s, acronyms in
// brackets or after " / " in a name ("SOUTH SHIPPING LINE IRAN (SSL)",
// "HARAKAT UL-MUJAHIDIN / HUM"), each classified into core words,
// descriptors, legal forms and stop words; and the initials of every name
// of two or more words (three letters or more) as a generated acronym.
// It must run before the posting lists are sized (it adds tokens).
func (ix *Index) buildCompanies() {
	ix.cacro = make(map[string][]int32, 1<<13)
	ix.cimplied = make(map[int32][]string, 1<<11)
	var cpost = make(map[int32][]int32, 1<<14)
	for i := range ix.entries {
		e := &ix.entries[i]
		if e.Type != TypeEntity {
			continue
		}
		seen := make(map[string]bool, 4+len(e.Aliases))
		add := func(text string, src uint8) {
			main, extra := splitEntityName(text)
			ix.addCompanyName(int32(i), main, text, src, seen, cpost) // #nosec G115 -- an entry index
			if main != text {
				// the words in brackets may be part of the name
				// (NOOR ENERGY (MALAYSIA) LTD.)
				ix.addCompanyName(int32(i), text, text, src, seen, cpost) // #nosec G115 -- an entry index
			}
			for _, x := range extra {
				ix.addCompanyName(int32(i), x, text, srcBracket, seen, cpost) // #nosec G115 -- an entry index
			}
		}
		add(e.Name, srcName)
		for _, a := range e.Aliases {
			add(a, srcAlias)
		}
		for _, a := range e.WeakAliases {
			add(a, srcWeak)
		}
		if len(e.Countries)+len(e.Nationalities) == 0 {
			if cs := impliedCountries(e); len(cs) > 0 {
				ix.cimplied[int32(i)] = cs // #nosec G115 -- an entry index
			}
		}
	}
	ix.cpost = cpost
}

// programCountries: sanctions programmes (OFAC program codes and UN list
// types, compared case-insensitively by prefix) aimed at one country's
// government, economy or conflict, and that country. Programmes aimed at
// conduct anywhere (SDGT, NPWMD, SDNTK, CYBER, GLOMAG, TCO, Al-Qaida...)
// point to no country.
var programCountries = []struct {
	prefix string
	cc     []string
}{
	{"IRAN", []string{"IR"}}, {"IFSR", []string{"IR"}}, {"IRGC", []string{"IR"}}, {"IFCA", []string{"IR"}},
	{"ISA", []string{"IR"}}, {"HRIT-IR", []string{"IR"}}, {"CAATSA - IRAN", []string{"IR"}},
	{"SYRIA", []string{"SY"}}, {"HRIT-SY", []string{"SY"}},
	{"DPRK", []string{"KP"}}, {"CUBA", []string{"CU"}},
	{"RUSSIA", []string{"RU"}}, {"CAATSA - RUSSIA", []string{"RU"}}, {"MAGNIT", []string{"RU"}},
	{"UKRAINE-", []string{"RU", "UA"}}, {"BELARUS", []string{"BY"}},
	{"VENEZUELA", []string{"VE"}}, {"NICARAGUA", []string{"NI"}}, {"BURMA", []string{"MM"}},
	{"IRAQ", []string{"IQ"}}, {"LIBYA", []string{"LY"}}, {"LEBANON", []string{"LB"}}, {"YEMEN", []string{"YE"}},
	{"SOUTH SUDAN", []string{"SS"}}, {"SUDAN", []string{"SD"}}, {"DARFUR", []string{"SD"}},
	{"DRC", []string{"CD"}}, {"DRCONGO", []string{"CD"}}, {"CAR", []string{"CF"}}, {"SOMALIA", []string{"SO"}}, {"ETHIOPIA", []string{"ET", "ER"}},
	{"ZIMBABWE", []string{"ZW"}}, {"MALI", []string{"ML"}}, {"HAITI", []string{"HT"}}, {"TALIBAN", []string{"AF"}},
	{"GUINEA-BISSAU", []string{"GW"}}, {"WEST-BANK", []string{"PS", "IL"}},
	{"BALKANS", []string{"RS", "BA", "ME", "MK", "XK", "HR", "AL"}},
}

// impliedCountries are the countries an entity without a listed country
// is tied to by its sanctions programmes (programCountries) or by a
// country named in its names (MINISTRY OF DEFENSE OF BURMA).
func impliedCountries(e *Entry) []string {
	var out []string
	for _, p := range e.Programs {
		p = strings.ToUpper(p)
		for _, pc := range programCountries {
			if strings.HasPrefix(p, pc.prefix) && (p == pc.prefix || strings.HasSuffix(pc.prefix, "-") || !isLetter(p[len(pc.prefix)])) {
				out = append(out, pc.cc...)
				break
			}
		}
	}
	for _, n := range append([]string{e.Name}, e.Aliases...) {
		w := strings.Fields(Normalize(n))
		for i := range w {
			for k := i + 1; k <= min(i+3, len(w)); k++ {
				if cc, ok := CountryCode(strings.Join(w[i:k], " ")); ok {
					out = append(out, cc)
				}
			}
		}
	}
	return uniqueStrings(out)
}

func isLetter(b byte) bool { return b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' }

// splitEntityName removes bracketed parts and a " / " alternative from a
// listed entity name; the removed parts that are one word (an acronym:
// "(SSL)", "/ HUM") are returned as names of their own.
func splitEntityName(s string) (string, []string) {
	var extra []string
	var b strings.Builder
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case r == '(' || r == '[':
			if depth == 0 {
				start = i + 1
			}
			depth++
		case (r == ')' || r == ']') && depth > 0:
			depth--
			if depth == 0 {
				if in := strings.TrimSpace(s[start:i]); len(strings.Fields(in)) == 1 {
					extra = append(extra, in)
				}
			}
		case depth == 0:
			b.WriteRune(r)
		}
	}
	main := b.String()
	if a, alt, ok := strings.Cut(main, " / "); ok {
		main = a
		if len(strings.Fields(alt)) == 1 {
			extra = append(extra, strings.TrimSpace(alt))
		}
	}
	return strings.TrimSpace(main), extra
}

func (ix *Index) addCompanyName(entry int32, text, published string, src uint8, seen map[string]bool, cpost map[int32][]int32) {
	ct := companyTokens(text, langAuto)
	if len(ct) > maxNameTokens {
		ct = ct[:maxNameTokens]
	}
	var key strings.Builder
	for _, t := range ct {
		if t.class != clsStop {
			key.WriteString(t.text)
			key.WriteByte(' ')
		}
	}
	if key.Len() == 0 || seen[key.String()] {
		return
	}
	seen[key.String()] = true
	core := 0
	for _, t := range ct {
		if t.class == clsCore {
			core++
		}
	}
	rec := compName{entry: entry, src: src, text: published}
	if src == srcBracket {
		rec.text = text
	}
	rec.toks = make([]compTok, len(ct))
	var initials []byte
	words := 0
	for j, t := range ct {
		c := compTok{id: -1, class: t.class, form: t.form}
		switch t.class {
		case clsLegalForm:
			c.lf = t.text
			c.w = weightLegalForm
		case clsStop:
			c.id = ix.token(t.text, "")
		default:
			c.id = ix.token(t.text, "")
			c.w = weightCore
			if t.class == clsDescriptor && core > 0 {
				c.w = weightDescriptor
			}
			if c.w == weightCore {
				rec.ncore++
			}
			words++
			if t.text[0] >= 'a' && t.text[0] <= 'z' {
				initials = append(initials, t.text[0])
			} else {
				initials = append(initials, 0)
			}
		}
		rec.toks[j] = c
	}
	if rec.ncore == 0 {
		return
	}
	if words >= 2 && len(initials) >= minAcronym && len(initials) <= maxAcronym && !slices.Contains(initials, 0) {
		rec.acronym = string(initials)
	}
	id := int32(len(ix.cnames)) // #nosec G115 -- company names, far below 2^31
	ix.cnames = append(ix.cnames, rec)
	for j, c := range rec.toks {
		if c.w != weightCore || c.id < 0 {
			continue
		}
		if slices.ContainsFunc(rec.toks[:j], func(x compTok) bool { return x.id == c.id }) {
			continue
		}
		cpost[c.id] = append(cpost[c.id], id)
	}
	if rec.acronym != "" && !seen["\x00"+rec.acronym] {
		seen["\x00"+rec.acronym] = true
		ix.cacro[rec.acronym] = append(ix.cacro[rec.acronym], id)
	}
}

// cq is one prepared company query.
type cq struct {
	toks  []ctoken
	qt    []qtok // core and descriptor tokens, as engine columns
	col   []int  // per qt column: its index in toks
	w     []float64
	forms []int // indexes in toks of legal forms
	ncore int
}

func prepareCompany(q CompanyQuery) cq {
	lang := langAuto
	for _, c := range q.Countries {
		if l := langForCountry(c); l != langAuto {
			lang = l
			break
		}
	}
	var p cq
	p.toks = companyTokens(q.Name, lang)
	if len(p.toks) == 1 && isLegalFormWord(p.toks[0].text) {
		p.toks = nil // a legal form alone ("LLC") names no company
	}
	if !slices.ContainsFunc(p.toks, func(t ctoken) bool { return t.class == clsCore || t.class == clsDescriptor }) {
		// nothing but stop words (and legal forms): a stop word written
		// as an acronym is the name ("FOR LLC", "A.N.D. Ltd")
		for k := range p.toks {
			if t := &p.toks[k]; t.class == clsStop && len(t.text) >= minAcronym && !writtenAsWord(q.Name, t.text) {
				t.class = clsCore
			}
		}
	}
	core := 0
	for _, t := range p.toks {
		if t.class == clsCore {
			core++
		}
	}
	for k, t := range p.toks {
		switch t.class {
		case clsLegalForm:
			p.forms = append(p.forms, k)
			continue
		case clsStop:
			continue
		}
		if len(p.qt) == maxQueryTokens {
			continue
		}
		w := weightCore
		if t.class == clsDescriptor && core > 0 {
			w = weightDescriptor
		} else {
			p.ncore++
		}
		p.qt = append(p.qt, qtok{text: t.text, phon: phonetic(t.text), ascii: isASCII(t.text), eq: -1,
			field: fieldLast, role: roleLast})
		p.col = append(p.col, k)
		p.w = append(p.w, w)
	}
	return p
}

// calign is the alignment of a company query with one listed name.
type calign struct {
	qe        [maxQueryTokens]int8 // per query column: the listed token, -1 none
	qs        [maxQueryTokens]float32
	lfQ, lfE  int // legal forms paired (query token index, listed token index), -1 none
	lfSim     float64
	nameScore float64
	acronym   bool    // matched as a generated acronym
	short     bool    // only short words (≤ 3 letters) matched
	shortCap  float64 // then the cap of the name score
	noAnchor  bool
	// approxPartial: the listed name inside a longer query name, with a
	// word matched only approximately
	approxPartial bool
	// otherDesc: descriptors on both sides that do not match
	otherDesc bool
	// complete: every listed word found, exactly or phonetically
	complete  bool
	extraCore int // query words the listed name lacks
	extraDesc int // query descriptors the listed name lacks
	missing   int // listed words (full weight) the query lacks
}

// alignCompany aligns the query columns with the listed name's core and
// descriptor tokens greedily by decreasing similarity and scores it:
//
//	S         = Σ w·s over matched listed tokens / Σ w over listed tokens
//	            (w: 1 core word, 0.15 descriptor, 0 stop word; legal forms
//	            add 0.1·legalFormSim when both names have one)
//	nameScore = S · (1 − min(0.25·extra query words + 0.03·extra query
//	            descriptors, 0.30)); · 0.9 when there are extra words and a
//	            listed word is matched only approximately; · 0.85 without
//	            an exact or phonetic core pair (and no hit at all when the
//	            listed name has one word).
//
// A weak a.k.a. matches only without extra words. When the matched listed
// words are one word of three letters or fewer, the query may have no
// other word and the score is capped (shortNameScore, shortAcronymScore).
func (ix *Index) alignCompany(sc *scratch, p *cq, rec *compName) calign {
	var a calign
	for i := range a.qe {
		a.qe[i] = -1
	}
	a.lfQ, a.lfE = -1, -1
	ps := sc.pairs[:0]
	for j, t := range rec.toks {
		if t.class == clsStop || t.class == clsLegalForm {
			continue
		}
		for i := range p.qt {
			var s float32
			qc := p.toks[p.col[i]]
			switch {
			case qc.class == clsDescriptor && t.class == clsDescriptor && qc.form == t.form:
				s = 1
			case len(qc.text) <= shortWord || len(ix.toks[t.id].text) <= shortWord:
				// short words (acronyms) agree when equal or, both
				// short, phonetically equal (new / nev): the letters of an
				// acronym are not sounds (ACB is not AQKB); a short name
				// alone must be equal (see below)
				if ti := &ix.toks[t.id]; qc.text == ti.text {
					s = 1
				} else if p.qt[i].phon == ti.phon && p.qt[i].ascii && ti.ascii && len(qc.text) <= shortWord && len(ti.text) <= shortWord {
					s = phoneticSim
				}
			default:
				s = ix.cell(sc, p.qt, t.id, i)
			}
			if s > 0 {
				ps = append(ps, pair{q: i, e: j, ne: 1, kind: kSingle, s: s})
			}
		}
	}
	slices.SortFunc(ps, func(x, y pair) int {
		if x.s != y.s {
			if x.s > y.s {
				return -1
			}
			return 1
		}
		if x.e != y.e {
			return x.e - y.e
		}
		return x.q - y.q
	})
	var usedE uint64
	var usedQ uint16
	for _, pr := range ps {
		if usedQ&(1<<pr.q) != 0 || usedE&(1<<pr.e) != 0 {
			continue
		}
		usedQ |= 1 << pr.q
		usedE |= 1 << pr.e
		a.qe[pr.q] = int8(pr.e) // #nosec G115 -- a token position, below maxNameTokens
		a.qs[pr.q] = pr.s
	}
	sc.pairs = ps

	var w, m float64
	a.noAnchor = true
	longMatch, matched, approx, missingDesc := false, 0, false, 0
	for j, t := range rec.toks {
		if t.class == clsStop || t.class == clsLegalForm {
			continue
		}
		w += float64(t.w)
		if usedE&(1<<j) == 0 {
			if t.w == weightCore {
				a.missing++
			} else {
				missingDesc++
			}
		}
	}
	for i := range p.qt {
		j := int(a.qe[i])
		if j < 0 {
			if p.w[i] == weightCore {
				a.extraCore++
			} else {
				a.extraDesc++
			}
			continue
		}
		t := &rec.toks[j]
		ti := &ix.toks[t.id]
		m += float64(t.w) * float64(a.qs[i])
		matched++
		if len(ti.text) > shortWord {
			longMatch = true
		}
		if p.qt[i].text != ti.text && (t.class != clsDescriptor || p.toks[p.col[i]].form != t.form) {
			approx = true
		}
		if t.w == weightCore && p.w[i] == weightCore && a.qs[i] >= anchorSim && sameForm(&p.qt[i], ti) {
			a.noAnchor = false
		}
	}
	// legal forms: compared only when both names have one
	for _, k := range p.forms {
		for j, t := range rec.toks {
			if t.class != clsLegalForm {
				continue
			}
			if s := legalFormSim(p.toks[k].form, t.form); s > a.lfSim || a.lfQ < 0 {
				a.lfQ, a.lfE, a.lfSim = k, j, s
			}
		}
	}
	if a.lfQ >= 0 {
		w += weightLegalForm
		m += weightLegalForm * a.lfSim
	}
	if w > 0 {
		a.nameScore = m / w
	}
	extra := a.extraCore > 0 || a.extraDesc > 0
	a.nameScore *= 1 - min(companyExtraCore*float64(a.extraCore)+companyExtraDesc*float64(a.extraDesc), companyMaxExtra)
	if extra && approx {
		a.approxPartial = true
		a.nameScore *= approxPartial
	}
	if a.extraDesc > 0 && missingDesc > 0 {
		// other descriptors on each side (ATLAS TRADING / ATLAS
		// SHIPPING): only the distinctive word is shared
		a.otherDesc = true
		a.nameScore *= approxPartial
	}
	a.complete = a.missing == 0 && !approx
	if a.noAnchor {
		a.nameScore *= companyNoAnchor
		if rec.ncore == 1 {
			// one listed word, and not even it agrees exactly or
			// phonetically: too little to go on
			a.nameScore = min(a.nameScore, MinNameScore-0.01)
		}
	}
	if extra && rec.src == srcWeak {
		// OFAC's weak a.k.a.s are broad or generic: only the alias
		// itself (with a legal form) matches
		a.nameScore = 0
	}
	if !longMatch && matched < 2 && usedE != 0 {
		a.short = true
		if extra || approx {
			a.nameScore = 0 // no longer name around a short word, and the word itself
		}
		cap := shortNameScore
		if rec.src != srcName && rec.ncore == 1 && len(rec.toks) == 1 && len(ix.toks[rec.toks[0].id].text) == shortWord {
			cap = shortAcronymScore
		}
		a.nameScore = min(a.nameScore, cap)
		a.shortCap = cap
	}
	return a
}

type ccand struct {
	name int32
	a    calign
}

// ScreenCompany checks a company against the listed entities (not
// individuals, vessels or aircraft) and returns the hits at or above
// Threshold, best first, at most MaxHits (one per entry, with its
// best-matching name).
//
// Company names are read as companies, not persons: no titles, initials or
// given names; words are core words, descriptors, legal forms or stop
// words (legalforms.go). Scoring, all of it in Hit.Breakdown:
//
//  1. Candidates: listed names sharing a similar core word with the query
//     (equal, phonetic, one typo, close spelling: the person engine's
//     token similarity); and, for a query of one core word of three to
//     eight letters written as an acronym (in capitals or dotted, or in a
//     name typed all in lower case: "Bio LLC" is a word), the listed names
//     whose initials it is.
//  2. NameScore: see alignCompany. A listed name whose matching words are
//     all three letters or shorter (a published acronym) matches only the
//     acronym alone (with a legal form), at most at 0.88 (published
//     three-letter alias or acronym) or 0.82 (a short word of a primary
//     name); a generated acronym scores 0.88 (four letters or more) or 0.85
//     (three: the review threshold), less 3% per descriptor beside it.
//  3. Country (Breakdown.Nationality, NationalityAdjust): one of the
//     company's countries among the entry's countries (registration and
//     identification numbers, addresses) +0.05; none of them −0.10 when
//     the query is the listed name, every word of it exactly or
//     phonetically and nothing more than a legal form (a namesake abroad
//     goes to review), −0.35 otherwise: an acronym, a short name, a
//     partial or approximate name, or the listed name inside a longer
//     one, in another country, is a namesake and not the listed company
//     (a front abroad whose parent is listed is found through the parent,
//     screened as a corporate member); unknown (no country on either
//     side) 0. For a generated acronym of an entity the lists give no
//     country, the countries of its programmes or names (impliedCountries)
//     take their place when the company has a country.
//  4. A hit needs Score ≥ Threshold and NameScore ≥ MinNameScore.
func (ix *Index) ScreenCompany(q CompanyQuery) []Hit {
	p := prepareCompany(q)
	if p.ncore == 0 {
		return nil
	}
	countries := make([]string, 0, len(q.Countries))
	for _, c := range q.Countries {
		if c = strings.ToUpper(strings.TrimSpace(c)); c != "" && !slices.Contains(countries, c) {
			countries = append(countries, c)
		}
	}
	sc := ix.pool.Get().(*scratch)
	defer ix.pool.Put(sc)
	sc.begin()
	var coreMask uint16
	for i := range p.qt {
		if p.w[i] == weightCore {
			coreMask |= 1 << i
		}
		ix.similar(sc, p.qt, i)
	}
	sc.ctouched = sc.ctouched[:0]
	for i := range p.qt {
		if coreMask&(1<<i) == 0 {
			continue
		}
		for _, t := range sc.match[i] {
			for _, nm := range ix.cpost[t] {
				if sc.cmask[nm] == 0 {
					sc.ctouched = append(sc.ctouched, nm)
				}
				sc.cmask[nm] |= 1 << i
			}
		}
	}
	best := sc.cbest
	clear(best)
	for _, nm := range sc.ctouched {
		m := sc.cmask[nm]
		sc.cmask[nm] = 0
		rec := &ix.cnames[nm]
		// bound: every listed core word the query could match at 1
		k := min(bits.OnesCount16(m), int(rec.ncore))
		if !ix.companyBound(rec, k) {
			continue
		}
		a := ix.alignCompany(sc, &p, rec)
		if a.nameScore < MinNameScore {
			continue
		}
		if b, ok := best[rec.entry]; ok && (b.a.nameScore > a.nameScore || b.a.nameScore == a.nameScore && b.name < nm) {
			continue
		}
		best[rec.entry] = ccand{name: nm, a: a}
	}
	// a one-word acronym against the initials of listed names
	if p.ncore == 1 {
		i := slices.Index(p.w, weightCore)
		t := p.qt[i].text
		if acr := ix.cacro[t]; len(acr) > 0 && len(t) >= minAcronym && len(t) <= maxAcronym && isLetters(t) && !writtenAsWord(q.Name, t) {
			for _, nm := range acr {
				rec := &ix.cnames[nm]
				a := calign{acronym: true, lfQ: -1, lfE: -1, extraDesc: len(p.qt) - 1}
				for x := range a.qe {
					a.qe[x] = -1
				}
				a.nameScore = acronymScore4
				if len(t) == minAcronym {
					a.nameScore = acronymScore3
				}
				a.nameScore *= 1 - min(companyExtraDesc*float64(a.extraDesc), companyMaxExtra)
				if b, ok := best[rec.entry]; ok && b.a.nameScore >= a.nameScore {
					continue
				}
				best[rec.entry] = ccand{name: nm, a: a}
			}
		}
	}

	hits := make([]Hit, 0, min(len(best), MaxHits))
	for ei, c := range best {
		e := &ix.entries[ei]
		var bd Breakdown
		bd.NameScore = round3(c.a.nameScore)
		strong := c.a.complete && !c.a.acronym && !c.a.short && c.a.extraCore+c.a.extraDesc == 0
		bd.Nationality, bd.NationalityAdjust = countryEvidence(e, countries, strong)
		if implied := ix.cimplied[ei]; c.a.acronym && bd.Nationality == "unknown" && len(countries) > 0 && len(implied) > 0 {
			// an entity the lists give no country for: its programmes
			// or names decide between namesakes of a generated acronym
			bd.Nationality, bd.NationalityAdjust = "mismatch", adjCountryVeto
			if slices.ContainsFunc(countries, func(c string) bool { return slices.Contains(implied, c) }) {
				bd.Nationality, bd.NationalityAdjust = "match", adjCountryMatch
			}
		}
		bd.Birthday = "unknown"
		score := round3(min(max(c.a.nameScore+bd.NationalityAdjust, 0), 1))
		if score < ix.threshold {
			continue
		}
		rec := &ix.cnames[c.name]
		hits = append(hits, Hit{
			List: e.List, EntryID: e.ID, EntryType: e.Type, Name: e.Name,
			MatchedName: rec.text, Alias: rec.src != srcName, Score: score,
			Breakdown: bd, Fingerprint: e.Fingerprint,
		})
	}
	slices.SortFunc(hits, func(x, y Hit) int {
		if x.Score != y.Score {
			if x.Score > y.Score {
				return -1
			}
			return 1
		}
		if x.List != y.List {
			return strings.Compare(x.List, y.List)
		}
		return compareIDs(x.EntryID, y.EntryID)
	})
	if len(hits) > MaxHits {
		hits = hits[:MaxHits]
	}
	for i := range hits {
		h := &hits[i]
		ei := ix.byKey[entryKey(h.List, h.EntryID)]
		c := best[ei]
		rec := &ix.cnames[c.name]
		h.Breakdown.Tokens = ix.explainCompany(&p, rec, &c.a)
		h.Fields = []string{"name"}
		if h.Breakdown.Nationality == "match" {
			h.Fields = append(h.Fields, "country")
		}
		h.Breakdown.Notes = ix.companyNotes(&p, rec, &c.a, h, countries)
	}
	return hits
}

// writtenAsWord reports whether the query writes its word t as a word
// and not as an acronym: in lower case ("Bio", "bio") in a name that has
// capitals elsewhere ("Bio LLC"). An acronym is written in capitals
// ("BIO", "B.I.O.") or in a name typed all in lower case.
func writtenAsWord(name, t string) bool {
	hasUpper := strings.IndexFunc(name, unicode.IsUpper) >= 0
	if !hasUpper {
		return false
	}
	for _, w := range strings.FieldsFunc(name, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.' && r != '\''
	}) {
		if strings.IndexFunc(w, unicode.IsLower) < 0 {
			continue // capitals: an acronym, whatever it reads
		}
		if strings.ContainsAny(w, ".'") {
			w = strings.Map(func(r rune) rune {
				if r == '.' || r == '\'' {
					return -1
				}
				return r
			}, w)
		}
		if Normalize(w) == t {
			return true
		}
	}
	return false
}

// companyBound reports whether a listed name of which k full-weight words
// may be matched can still reach MinNameScore.
func (ix *Index) companyBound(rec *compName, k int) bool {
	var w float64
	for _, t := range rec.toks {
		if t.class != clsStop && t.class != clsLegalForm {
			w += float64(t.w)
		}
	}
	up := float64(k) + (w - float64(rec.ncore)) + weightLegalForm
	return up/(w+weightLegalForm) >= MinNameScore
}

// countryEvidence compares the company's countries with the entry's
// (Countries, and Nationalities when a list gives one for an entity).
func countryEvidence(e *Entry, q []string, strong bool) (string, float64) {
	if len(q) == 0 || len(e.Countries)+len(e.Nationalities) == 0 {
		return "unknown", 0
	}
	for _, c := range q {
		if slices.Contains(e.Countries, c) || slices.Contains(e.Nationalities, c) {
			return "match", adjCountryMatch
		}
	}
	if strong {
		return "mismatch", adjCountryMiss
	}
	return "mismatch", adjCountryVeto
}

// explainCompany lists the query's tokens in order, each with how it
// matched, its weight and a sentence for the reviewer.
func (ix *Index) explainCompany(p *cq, rec *compName, a *calign) []TokenMatch {
	up := strings.ToUpper
	ff := func(x float64) string { return strconv.FormatFloat(round3(x), 'f', -1, 64) }
	colOf := make(map[int]int, len(p.col))
	for i, k := range p.col {
		colOf[k] = i
	}
	out := make([]TokenMatch, 0, len(p.toks))
	for k, t := range p.toks {
		tm := TokenMatch{Query: t.text}
		switch t.class {
		case clsStop:
			tm.Kind = KindStop
			tm.Note = "stop word " + up(t.text) + ", weight 0"
		case clsLegalForm:
			f := &legalForms[t.form]
			if a.lfQ == k {
				e := &rec.toks[a.lfE]
				g := &legalForms[e.form]
				tm.Entry, tm.Kind, tm.Weight, tm.Similarity = e.lf, KindLegalForm, weightLegalForm, round3(a.lfSim)
				switch {
				case e.form == t.form:
					tm.Note = "legal form " + up(t.text) + " ↔ " + up(e.lf) + " (same form, " + f.code + "), weight " + ff(weightLegalForm)
				case f.family == g.family:
					tm.Note = "legal form " + up(t.text) + " (" + f.code + ") ↔ " + up(e.lf) + " (" + g.code + "), comparable forms (" +
						familyNames[f.family] + "), similarity " + ff(a.lfSim) + ", weight " + ff(weightLegalForm)
				default:
					tm.Note = "legal form " + up(t.text) + " (" + f.code + ") ↔ " + up(e.lf) + " (" + g.code + "), different forms, similarity " +
						ff(a.lfSim) + ", weight " + ff(weightLegalForm)
				}
			} else {
				tm.Kind = KindLegalForm
				if hasLegalForm(rec) {
					tm.Note = "legal form " + up(t.text) + " (" + f.code + "), a second form of the query: weight 0"
				} else {
					tm.Note = "legal form " + up(t.text) + " (" + f.code + ") not in the listed name: no deduction, weight 0"
				}
			}
		default:
			i := colOf[k]
			tm.Weight = p.w[i]
			if a.acronym {
				tm.Kind = KindAcronym
				if p.w[i] == weightCore {
					tm.Entry = strings.ToLower(rec.text)
					tm.Similarity = 1
					tm.Note = "acronym " + up(t.text) + " ↔ initials of " + up(rec.text) + " (generated acronym, " +
						strconv.Itoa(len(t.text)) + " letters), weight " + ff(p.w[i])
				} else {
					tm.Kind = KindUnmatched
					tm.Note = "descriptor " + up(t.text) + " not in the listed name (−" + ff(companyExtraDesc*100) + "%), weight " + ff(p.w[i])
				}
				break
			}
			j := int(a.qe[i])
			if j < 0 {
				tm.Kind = KindUnmatched
				if t.class == clsDescriptor && p.w[i] < weightCore {
					tm.Note = "descriptor " + up(t.text) + " not in the listed name (−" + ff(companyExtraDesc*100) + "%), weight " + ff(p.w[i])
				} else {
					tm.Note = up(t.text) + " not in the listed name (−" + ff(companyExtraCore*100) + "%), weight " + ff(p.w[i])
				}
				break
			}
			e := &rec.toks[j]
			ti := &ix.toks[e.id]
			tm.Entry = ti.text
			tm.Similarity = round3(float64(a.qs[i]))
			tm.Weight = float64(e.w)
			if e.class == clsDescriptor || t.class == clsDescriptor {
				tm.Kind = KindDescriptor
				how := "same descriptor"
				if t.text != ti.text && t.form == e.form && t.class == e.class {
					how = "same descriptor in another form"
				} else if t.text != ti.text {
					how = "close spelling, similarity " + ff(tm.Similarity)
				}
				tm.Note = "descriptor " + up(t.text) + " ↔ " + up(ti.text) + " (" + how + "), weight " + ff(float64(e.w))
				break
			}
			tm.Kind = pairKind(&p.qt[i], ti)
			switch tm.Kind {
			case KindExact:
				tm.Note = "same word, weight " + ff(float64(e.w))
			case KindPhonetic:
				tm.Note = "same sound in another transliteration " + up(t.text) + " ↔ " + up(ti.text) + ", similarity " + ff(tm.Similarity)
			default:
				tm.Kind = KindFuzzy
				tm.Note = "close spelling " + up(t.text) + " ↔ " + up(ti.text) + ", similarity " + ff(tm.Similarity)
			}
		}
		out = append(out, tm)
	}
	return out
}

func hasLegalForm(rec *compName) bool {
	return slices.ContainsFunc(rec.toks, func(t compTok) bool { return t.class == clsLegalForm })
}

func (ix *Index) companyNotes(p *cq, rec *compName, a *calign, h *Hit, countries []string) []string {
	var n []string
	switch rec.src {
	case srcWeak:
		n = append(n, "matched an OFAC weak a.k.a. (published in the remarks as broad or generic)")
	case srcBracket:
		n = append(n, "matched the acronym published with the listed name")
	}
	if a.acronym {
		n = append(n, "the query is one word equal to the initials of the listed name "+strings.ToUpper(rec.text)+
			": an acronym; the company's country decides between namesakes")
	}
	if a.short && !a.acronym {
		why := ""
		if a.shortCap == shortAcronymScore {
			why = " (an acronym the list publishes)"
		}
		n = append(n, "only words of three letters or fewer agree: name score at most "+strconv.FormatFloat(a.shortCap, 'f', -1, 64)+why)
	}
	if a.missing > 0 {
		var miss []string
		for j, t := range rec.toks {
			if t.w != weightCore || t.id < 0 {
				continue
			}
			used := false
			for i := range p.qt {
				used = used || int(a.qe[i]) == j
			}
			if !used {
				miss = append(miss, strings.ToUpper(ix.toks[t.id].text))
			}
		}
		n = append(n, "listed word(s) not in the query: "+strings.Join(miss, ", "))
	}
	if a.extraCore+a.extraDesc > 0 && !a.acronym {
		n = append(n, "the listed name inside a longer name: "+strconv.Itoa(a.extraCore)+" word(s) and "+
			strconv.Itoa(a.extraDesc)+" descriptor(s) of the query not in the listed name")
	}
	if a.noAnchor && !a.acronym {
		n = append(n, "no word agrees exactly or phonetically (−15%)")
	}
	if a.otherDesc {
		n = append(n, "other descriptors on each side: only the distinctive words are shared (−10%)")
	}
	if a.approxPartial {
		n = append(n, "the listed name inside a longer name with a word spelt differently: partial and approximate (−10%)")
	}
	e := &ix.entries[ix.byKey[entryKey(h.List, h.EntryID)]]
	listed := strings.Join(append(slices.Clone(e.Countries), e.Nationalities...), ", ")
	switch h.Breakdown.Nationality {
	case "match":
		n = append(n, "country agrees: the company's "+strings.Join(countries, ", ")+", listed "+listed+" (+0.05)")
	case "mismatch":
		if h.Breakdown.NationalityAdjust == adjCountryMiss {
			n = append(n, "country differs: the company's "+strings.Join(countries, ", ")+", listed "+listed+
				"; the same name, every word of it, so −0.10 (for review)")
		} else {
			n = append(n, "country differs: the company's "+strings.Join(countries, ", ")+", listed "+listed+
				"; an acronym, a short, partial or approximate name, or the listed name inside a longer one, in another country: probably a namesake (−0.35)")
		}
	}
	return n
}
