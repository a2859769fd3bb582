package screening

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Scoring parameters. See Screen for the formula.
const (
	// DefaultThreshold is the minimum Score of a Hit.
	DefaultThreshold = 0.85
	// MinNameScore is the minimum NameScore of a Hit, whatever the
	// birthday and nationality add: corroborating evidence cannot turn a
	// weak name match into a hit.
	MinNameScore = 0.80
	// MaxHits is the maximum number of hits Screen returns.
	MaxHits = 10

	weightParticle      = 0.3  // query particles (al, bin, van, ...)
	weightMissingMiddle = 0.2  // a query middle-name token without partner
	extraTokenPenalty   = 0.04 // per unmatched non-particle entry token
	maxExtraPenalty     = 0.20
	surnameCap          = 0.60 // name score cap when the entry's surname is not matched

	adjBirthdayMatch    = 0.10  // same date
	adjBirthdayYear     = 0.03  // same year / within the entry's range
	adjBirthdayNear     = -0.05 // 1 or 2 years apart
	adjBirthdayApprox   = -0.10 // 3 to maxNearYears apart, strong name
	adjBirthdayFar      = -0.35 // further apart: a namesake, not the person
	maxNearYears        = 5
	strongName          = 0.95 // name score of a close full-name match
	adjNationalityMatch = 0.03
	adjNationalityMiss  = -0.05
	adjNonPerson        = -0.05 // entity/vessel/aircraft: the query is a natural person
	adjNonPersonBday    = -0.20 // ... and even more clearly so when it has a birthday

	// anchorSim: a name needs at least one non-particle token pair this
	// similar (equal, phonetically equal, or nearly so); otherwise the
	// name score is multiplied by noAnchorFactor, so that a match made
	// only of approximate tokens (Priya Kang / Ariya Kani) needs a
	// matching birthday to reach the threshold.
	anchorSim      = 0.95
	noAnchorFactor = 0.90

	// Token similarity: tokens shorter than 4 letters must be equal or
	// phonetically equal; 4-letter tokens need Jaro-Winkler >= 0.88,
	// longer ones >= 0.85. Phonetically equal tokens score at least
	// phoneticSim.
	tokenMin4   = 0.88
	tokenMin5   = 0.85
	phoneticSim = 0.95
	oneEditSim  = 0.90

	maxQueryTokens = 12
	maxCompounds   = 12
	simCols        = maxQueryTokens + maxCompounds
	minDeleteLen   = 4 // index one-deletion variants of tokens this long

	weightInitial              = 0.5  // a one-letter initial
	weightMissingMiddleInitial = 0.1  // a middle initial without partner
	initialSim                 = 0.9  // an initial and a name starting with it
	eqSim                      = 0.93 // below anchorSim: an equivalent given name alone does not anchor a match
	shortWord                  = 3
	shortAnchorCap             = 0.84
)

// Kinds of token pairs, as reported in TokenMatch.Kind.
const (
	KindExact      = "exact"      // the same token
	KindPhonetic   = "phonetic"   // the same after the transliteration-variant folding
	KindFuzzy      = "fuzzy"      // close spelling (Jaro-Winkler, one edit)
	KindFold       = "fold"       // equal or close once č, š, ž... are read ch, sh, zh
	KindEquivalent = "equivalent" // the same given name in another form (givennames.go)
	KindInitial    = "initial"    // a one-letter initial and a name starting with it
	KindJoined     = "joined"     // one query word for two or three listed parts (Binladen / BIN LADEN)
	KindSplit      = "split"      // two or three query words for one listed part (Al Tikriti / ALTIKRITI)
	KindMiddle     = "middle"     // not in the listed name, read as a possible middle name
	KindUnmatched  = "unmatched"  // not in the listed name
)

// pair kinds inside the engine
// (in the order they win ties: a joined or split form that matches
// exactly explains more of the name than a single word)
const (
	kJoined uint8 = iota
	kSplit
	kSingle
	kInitial
)

// name-part roles of query tokens
const (
	roleGiven  uint8 = iota // first word of the given-name field
	roleMiddle              // later words of the given-name field, or Query.MiddleName
	roleLast                // the last-name field
)

// query fields
const (
	fieldFirst int8 = iota
	fieldMiddle
	fieldLast
)

// qtok is one normalized query token, or (after the real tokens) a
// compound of two or three adjacent ones.
type qtok struct {
	text, phon   string
	alt, altPhon string // digraph spelling (foldDigraph), "" none
	ascii        bool
	particle     bool
	initial      bool // a one-letter initial (C. or C)
	role         uint8
	field        int8
	eq           int32   // given-name equivalence row, -1 none
	parts        [3]int8 // compound: its real tokens
	nparts       int8    // 0 for a real token
}

// scratch holds per-call buffers, pooled per Index.
type scratch struct {
	stamp    uint32
	tokStamp []uint32  // per index token: stamp of the call that gave it a slot
	tokSlot  []int32   // per index token: slot in sims
	sims     []float32 // slot*simCols + query column; -1 = not computed
	nslots   int
	match    [simCols][]int32        // per query column: similar index tokens
	jnames   [maxQueryTokens][]int32 // per query token: names with parts that joined give it
	mask     []uint16                // per name: query tokens with a similar token in it
	jmask    []uint16                // per name: query tokens found in it by the joined-form index
	touched  []int32
	buf      []byte
	pairs    []pair
	best     map[int32]cand
	// company screening
	cmask    []uint16 // per company name: query columns with a similar token in it
	ctouched []int32
	cbest    map[int32]ccand
}

type pair struct {
	q, e int
	ne   int8 // entry parts covered (joined: 2 or 3)
	kind uint8
	s    float32
}

type cand struct {
	name      int32
	nameScore float64
	jm        uint16 // query tokens the joined-form index found in the name
}

func (ix *Index) newScratch() *scratch {
	return &scratch{
		tokStamp: make([]uint32, len(ix.toks)),
		tokSlot:  make([]int32, len(ix.toks)),
		mask:     make([]uint16, len(ix.names)),
		jmask:    make([]uint16, len(ix.names)),
		best:     make(map[int32]cand),
		cmask:    make([]uint16, len(ix.cnames)),
		cbest:    make(map[int32]ccand),
	}
}

func (sc *scratch) begin() {
	sc.stamp++
	if sc.stamp == 0 { // wrapped: clear stamps
		clear(sc.tokStamp)
		sc.stamp = 1
	}
	sc.nslots = 0
	sc.sims = sc.sims[:0]
	for i := range sc.match {
		sc.match[i] = sc.match[i][:0]
	}
	for i := range sc.jnames {
		sc.jnames[i] = sc.jnames[i][:0]
	}
	sc.touched = sc.touched[:0]
	clear(sc.best)
}

// slot returns the sims row of index token t for this call.
func (sc *scratch) slot(t int32) int {
	if sc.tokStamp[t] == sc.stamp {
		return int(sc.tokSlot[t])
	}
	sc.tokStamp[t] = sc.stamp
	s := sc.nslots
	sc.nslots++
	sc.tokSlot[t] = int32(s) // #nosec G115 -- slots of one query, far below 2^31
	for range simCols {
		sc.sims = append(sc.sims, -1)
	}
	return s
}

// cell returns the similarity of query column qi and index token t,
// computing and caching it when needed: every pair of a candidate name is
// scored by the engine's own similarity, whether or not the index proposed
// it.
func (ix *Index) cell(sc *scratch, qt []qtok, t int32, qi int) float32 {
	p := &sc.sims[sc.slot(t)*simCols+qi]
	if *p < 0 {
		*p = float32(pairSim(&qt[qi], &ix.toks[t]))
	}
	return *p
}

// pairSim is the similarity of a query token and an index token: the best
// tokenSim over their plain and digraph spellings, and at least eqSim when
// both are forms of one given name (givennames.go).
func pairSim(q *qtok, ti *tokInfo) float64 {
	asc := q.ascii && ti.ascii
	s := tokenSim(q.text, q.phon, ti.text, ti.phon, asc)
	if s == 1 {
		return 1
	}
	if q.alt != "" {
		s = max(s, tokenSim(q.alt, q.altPhon, ti.text, ti.phon, asc))
	}
	if ti.alt != "" {
		s = max(s, tokenSim(q.text, q.phon, ti.alt, ti.altPhon, asc))
		if q.alt != "" {
			s = max(s, tokenSim(q.alt, q.altPhon, ti.alt, ti.altPhon, asc))
		}
	}
	if q.eq >= 0 && q.eq == ti.eq {
		s = max(s, eqSim)
	}
	return s
}

// pairKind names how a single pair matched (for the explanation).
func pairKind(q *qtok, ti *tokInfo) string {
	if q.text == ti.text {
		return KindExact
	}
	asc := q.ascii && ti.ascii
	plain := tokenSim(q.text, q.phon, ti.text, ti.phon, asc)
	best := pairSim(q, ti)
	switch {
	case plain >= best && q.phon == ti.phon:
		return KindPhonetic
	case plain >= best:
		return KindFuzzy
	case q.eq >= 0 && q.eq == ti.eq && best == eqSim:
		return KindEquivalent
	}
	return KindFold
}

// tokenSim is the similarity of two normalized tokens (a, b) with phonetic
// forms (pa, pb): 1 when equal; 0 unless they are similar enough (see the
// token constants); otherwise the higher of the Jaro-Winkler similarity of
// the tokens and of their phonetic forms (phoneticSim at least when the
// phonetic forms are equal).
func tokenSim(a, pa, b, pb string, ascii bool) float64 {
	if a == b {
		return 1
	}
	if !ascii {
		return 0
	}
	mn := min(len(a), len(b))
	if mn <= 3 {
		if pa == pb {
			return phoneticSim
		}
		return 0
	}
	// A name that is a prefix of a longer one is a different name
	// (ivan/ivanov, maria/mariana, abdul/abdullah): only one trailing
	// letter (a typo) is tolerated.
	la, lb := len(a), len(b)
	if (la-lb > 2 || lb-la > 2) && (len(pa)-len(pb) > 2 || len(pb)-len(pa) > 2) {
		return 0
	}
	if la >= lb+2 && strings.HasPrefix(a, b) || lb >= la+2 && strings.HasPrefix(b, a) {
		return 0
	}
	s := JaroWinkler(a, b)
	if pa == pb {
		s = max(s, phoneticSim)
	} else if p := JaroWinkler(pa, pb); p > s {
		s = p
	}
	// Jaro-Winkler under-rates some single typos near the start of a
	// word (jawad/jwad 0.865, apodaca/opodaca 0.849): one edit in a word
	// of 5 or more letters scores at least oneEditSim.
	if s < oneEditSim && (max(la, lb) >= 5 && oneEdit(a, b) || max(len(pa), len(pb)) >= 5 && oneEdit(pa, pb)) {
		s = oneEditSim
	}
	thr := tokenMin5
	if mn == 4 {
		thr = tokenMin4
	}
	if s < thr {
		return 0
	}
	return s
}

// oneEdit reports whether a and b differ by exactly one substitution,
// insertion, deletion or transposition of adjacent bytes.
func oneEdit(a, b string) bool {
	if len(a) < len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(b) && a[i] == b[i] {
		i++
	}
	switch len(a) - len(b) {
	case 0:
		if i == len(a) {
			return false // equal
		}
		if a[i+1:] == b[i+1:] {
			return true
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		return a[i+1:] == b[i:]
	}
	return false
}

// prepare normalizes the query into tokens: the real tokens first (n of
// them), then the compounds of adjacent tokens of one field (two, or three
// around a particle) used to find listed names written as one word.
//
// Roles: the first word of the first-name field is the given name, its
// later words and the MiddleName field are possible middle names, the
// last-name field is the surname. A one-letter word is an initial in the
// name fields, or anywhere when written with a dot; in the last-name field a
// one-letter particle without a dot (García y López) stays a particle.
func prepare(q Query) ([]qtok, int) {
	lang := langForCountry(q.Nationality)
	out := make([]qtok, 0, 2*maxQueryTokens)
	add := func(s string, field int8) {
		first := true
		for _, w := range strings.Fields(s) {
			toks, alts := normTokensAlt(w, lang)
			segs := strings.FieldsFunc(w, func(r rune) bool {
				return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !isApostrophe(r)
			})
			dotted := strings.ContainsRune(w, '.')
			for k, t := range toks {
				if len(out) == maxQueryTokens {
					return
				}
				qt := qtok{text: t, phon: phonetic(t), ascii: isASCII(t), particle: isParticle(t), field: field, eq: -1}
				switch {
				case field == fieldLast:
					qt.role = roleLast
				case field == fieldFirst && first:
					qt.role = roleGiven
				default:
					qt.role = roleMiddle
				}
				if alts != nil && alts[k] != "" {
					qt.alt, qt.altPhon = alts[k], phonetic(alts[k])
				}
				// One letter: an initial in the given-name fields, or with a
				// dot; a one-letter surname (Korean O, Burmese U) or particle
				// (García y López) otherwise.
				if len(segs) == len(toks) && utf8.RuneCountInString(segs[k]) == 1 && (field != fieldLast || dotted) {
					qt.initial, qt.particle = true, false
				}
				if qt.alt == "" && qt.ascii {
					qt.alt = jotAlt(t)
					if qt.alt != "" {
						qt.altPhon = phonetic(qt.alt)
					}
				}
				if !qt.initial {
					qt.eq = givenGroupOf(qt.phon)
					if qt.eq < 0 && qt.altPhon != "" {
						qt.eq = givenGroupOf(qt.altPhon)
					}
				}
				out = append(out, qt)
				first = false
			}
		}
	}
	add(q.FirstName, fieldFirst)
	add(q.MiddleName, fieldMiddle)
	add(q.LastName, fieldLast)
	n := len(out)
	compound := func(parts ...int) {
		if len(out)-n == maxCompounds {
			return
		}
		c := qtok{ascii: true, eq: -1, field: out[parts[0]].field, role: out[parts[0]].role}
		allParticles := true
		for k, p := range parts {
			t := &out[p]
			if t.initial || !t.ascii || t.field != c.field {
				return
			}
			allParticles = allParticles && t.particle
			c.text += t.text
			c.parts[k] = int8(p) // #nosec G115 -- a query token index, below maxQueryTokens
		}
		if allParticles {
			return
		}
		c.nparts = int8(len(parts)) // #nosec G115 -- 2 or 3
		c.phon = phonetic(c.text)
		c.eq = givenGroupOf(c.phon)
		out = append(out, c)
	}
	for i := 0; i+1 < n; i++ {
		compound(i, i+1)
		if i+2 < n && out[i+1].particle {
			compound(i, i+1, i+2)
		}
	}
	return out, n
}

// similar finds the index tokens similar to query column qi: those sharing
// its phonetic form (or its digraph spelling's), one of their one-deletion
// variants, its consonant skeleton or its given-name equivalence row, and
// whose pairSim passes. For a real token it also collects the names whose
// adjacent parts, written as one word, give the token (joined forms).
func (ix *Index) similar(sc *scratch, qt []qtok, qi int) {
	q := &qt[qi]
	consider := func(ids []int32) {
		for _, t := range ids {
			s := sc.slot(t)
			p := &sc.sims[s*simCols+qi]
			if *p >= 0 {
				continue
			}
			v := float32(pairSim(q, &ix.toks[t]))
			*p = v
			if v > 0 {
				sc.match[qi] = append(sc.match[qi], t)
			}
		}
	}
	if id, ok := ix.tokID[q.text]; ok {
		consider([]int32{id})
	}
	if q.eq >= 0 {
		consider(ix.eqToks[q.eq])
	}
	if !q.ascii {
		consider(ix.del[q.phon])
		return
	}
	// The phonetic form and the token (and the digraph spelling), with
	// their one-deletion variants (phonetic folding can shorten a typo:
	// habb -> hab).
	keys := [4]string{q.phon, q.text, q.altPhon, q.alt}
	joinable := q.nparts == 0 && !q.particle && len(q.text) >= 4
	for k, p := range keys {
		if p == "" || k > 0 && slices.Contains(keys[:k], p) {
			continue
		}
		if q.nparts > 0 {
			if k == 0 || k == 2 {
				consider(ix.del[p]) // a compound: its phonetic forms only
			}
			continue
		}
		consider(ix.del[p])
		if joinable && (k == 0 || k == 2) {
			sc.jnames[qi] = append(sc.jnames[qi], ix.joined[p]...)
		}
		if len(p) >= minDeleteLen {
			buf := sc.buf[:0]
			for k := 0; k < len(p); k++ {
				buf = append(buf[:0], p[:k]...)
				buf = append(buf, p[k+1:]...)
				consider(ix.del[string(buf)])
			}
			sc.buf = buf
		}
	}
	if s := skeleton(q.phon); len(s) >= 2 && q.nparts == 0 {
		consider(ix.skel[s])
	}
}

// alignment is the token assignment for one name. Per real query token:
// the entry part it matched (qe, -1 none; qn parts from there), how (qk),
// the similarity (qs) and the weight it counted with (qw).
type alignment struct {
	qe        [maxQueryTokens]int8
	qn        [maxQueryTokens]int8
	qk        [maxQueryTokens]uint8
	qs        [maxQueryTokens]float32
	qw        [maxQueryTokens]float32
	qc        [maxQueryTokens]int8 // split: the compound column
	nameScore float64
	extra     int  // unmatched non-particle entry tokens
	noSurname bool // the entry's surname is known and was not matched
	noAnchor  bool // no non-particle token pair reaches anchorSim
	// shortAnchor: the only strong pairs are short words (≤ 3 letters)
	// and another pair is a loose spelling (more than one edit): the name
	// score is capped at shortAnchorCap.
	shortAnchor bool
}

// align assigns query tokens to entry tokens greedily by decreasing
// similarity (each token used once) over every pair of the name: single
// tokens (pairSim), initials (initialSim), one query word for two or three
// adjacent entry parts (joined) and two or three adjacent query words for
// one entry part (split). Then
//
//	coverage  = Σ weight·similarity over matched query tokens / Σ weight
//	nameScore = coverage · (1 − min(0.04·extra, 0.20))
//
// Weights: 1; particles 0.3; initials 0.5; a query token without partner
// counts 0.2 when it is a possible middle name (MiddleName, or a word of a
// name field another word of which matched a listed given name, while the
// listed name has no given name left unmatched: otherwise the two would
// contradict each other) and 0.1 for such an initial. extra counts the
// entry's unmatched non-particle tokens. If the entry's surname is known
// (OFAC "SURNAME, Given") and none of its non-particle tokens is matched,
// nameScore is capped at 0.6; with no strong pair at all it is multiplied
// by 0.9, and capped at shortAnchorCap when the strong pairs are only short
// words beside a loose one.
//
// With bound set, a name that cannot reach MinNameScore even if every
// query token without partner found one is given up early (its nameScore
// is then only a bound).
//
// jm marks the query tokens the joined-form index found in this name:
// their joined pairs compete from the start.
func (ix *Index) align(sc *scratch, qt []qtok, n int, rec *nameRec, jm uint16, bound bool) alignment {
	var a alignment
	for i := range a.qe {
		a.qe[i] = -1
	}
	// Phase 1: the pairs the index proposed (cells computed by similar),
	// initials, and joined forms of query words that found no partner.
	ps := sc.pairs[:0]
	for j, t := range rec.toks {
		ti := &ix.toks[t]
		known := sc.tokStamp[t] == sc.stamp
		for i := range qt {
			q := &qt[i]
			if q.initial {
				if !ti.particle && (strings.HasPrefix(ti.text, q.text) || ti.alt != "" && strings.HasPrefix(ti.alt, q.text)) {
					ps = append(ps, pair{q: i, e: j, ne: 1, kind: kInitial, s: initialSim})
				}
				continue
			}
			if ti.initial && q.text != ti.text {
				if i < n && !q.particle && q.text[0] == ti.text[0] {
					ps = append(ps, pair{q: i, e: j, ne: 1, kind: kInitial, s: initialSim})
				}
				continue
			}
			if !known {
				continue
			}
			if s := sc.sims[int(sc.tokSlot[t])*simCols+i]; s > 0 {
				ps = append(ps, pairFor(i, j, n, s))
			}
		}
	}
	for i := range n {
		if jm&(1<<i) != 0 {
			ps = ix.joinedPairs(sc, ps, qt, i, rec, ^uint64(0))
		}
	}
	usedQ, usedE := greedy(ps, qt, n, rec, &a)
	if bound {
		// Could the name still reach MinNameScore if every query token
		// without partner found one at similarity 1? If not, stop here.
		o := a
		oe := usedE
		for i := range n {
			if o.qe[i] >= 0 || qt[i].particle || qt[i].initial {
				continue
			}
			j := ix.freePart(rec, oe)
			if j < 0 {
				break
			}
			oe |= 1 << j
			o.qe[i], o.qn[i], o.qk[i], o.qs[i] = int8(j), 1, kSingle, 1 // #nosec G115 -- below maxNameTokens
		}
		ix.score(qt, n, rec, &o, oe)
		if o.nameScore < MinNameScore {
			a.nameScore = o.nameScore
			return a
		}
	}
	// Phase 2: every remaining pair of a query token and an entry token
	// both still without partner gets the engine's own similarity, whether
	// or not the index proposed it (and unmatched query words are tried
	// against adjacent free entry parts written as one); if one is found,
	// assign again.
	added := false
	for i := range n {
		if usedQ&(1<<i) == 0 && jm&(1<<i) == 0 {
			before := len(ps)
			ps = ix.joinedPairs(sc, ps, qt, i, rec, ^usedE)
			added = added || len(ps) > before
		}
	}
	for j, t := range rec.toks {
		if usedE&(1<<j) != 0 {
			continue
		}
		for i := range qt {
			q := &qt[i]
			if q.initial || i < n && usedQ&(1<<i) != 0 || ix.toks[t].initial && q.text != ix.toks[t].text {
				continue
			}
			if i >= n {
				free := true
				for _, k := range q.parts[:q.nparts] {
					free = free && usedQ&(1<<k) == 0
				}
				if !free {
					continue
				}
			}
			if sc.tokStamp[t] == sc.stamp && sc.sims[int(sc.tokSlot[t])*simCols+i] >= 0 {
				continue // known: already a pair above (or zero)
			}
			if s := ix.cell(sc, qt, t, i); s > 0 {
				ps = append(ps, pairFor(i, j, n, s))
				added = true
			}
		}
	}
	if added {
		for i := range a.qe {
			a.qe[i] = -1
		}
		_, usedE = greedy(ps, qt, n, rec, &a)
	}
	sc.pairs = ps
	ix.score(qt, n, rec, &a, usedE)
	return a
}

// freePart returns the first non-particle entry part not in used,
// surname parts first; -1 when none is left.
func (ix *Index) freePart(rec *nameRec, used uint64) int {
	best := -1
	for j, t := range rec.toks {
		if used&(1<<j) != 0 || ix.toks[t].particle {
			continue
		}
		if rec.surname&(1<<j) != 0 {
			return j
		}
		if best < 0 {
			best = j
		}
	}
	return best
}

// score computes the weights and the name score of alignment a (usedE:
// the entry parts it uses); see align.
func (ix *Index) score(qt []qtok, n int, rec *nameRec, a *alignment, usedE uint64) {
	a.extra = 0
	// Roles of the entry's parts: given names (not surname) and whether
	// one of them is left unmatched.
	given := func(j int) bool {
		if rec.surname != 0 {
			return rec.surname&(1<<j) == 0
		}
		return j < len(rec.toks)-1
	}
	givenLeft := false
	surMatched := false
	for j, t := range rec.toks {
		if ix.toks[t].particle {
			continue
		}
		if usedE&(1<<j) == 0 {
			a.extra++
			if given(j) || rec.surname == 0 {
				givenLeft = true
			}
		} else if rec.surname&(1<<j) != 0 {
			surMatched = true
		}
	}
	var fieldGiven [3]bool
	for i := range n {
		if a.qe[i] >= 0 && !qt[i].particle {
			for j := int(a.qe[i]); j < int(a.qe[i])+int(a.qn[i]); j++ {
				if given(j) {
					fieldGiven[qt[i].field] = true
				}
			}
		}
	}
	var w, m float64
	a.noAnchor = true
	anchors, shortAnchors, loose := 0, 0, false
	for i := range n {
		q := &qt[i]
		var wi float64
		switch {
		case q.particle:
			wi = weightParticle
		case q.initial && a.qe[i] < 0 && q.role != roleGiven:
			wi = weightMissingMiddleInitial
		case q.initial:
			wi = weightInitial
		case a.qe[i] >= 0:
			wi = 1
		case q.field == fieldMiddle || fieldGiven[q.field] && !givenLeft:
			wi = weightMissingMiddle
		default:
			wi = 1
		}
		a.qw[i] = float32(wi)
		w += wi
		if a.qe[i] < 0 {
			continue
		}
		m += wi * float64(a.qs[i])
		if q.particle || q.initial || a.qk[i] == kInitial {
			continue
		}
		if a.qs[i] >= anchorSim && (a.qk[i] != kSingle || sameForm(q, &ix.toks[rec.toks[a.qe[i]]])) {
			a.noAnchor = false
			anchors++
			if len(q.text) <= shortWord && a.qk[i] == kSingle {
				shortAnchors++
			}
		} else if a.qk[i] == kSingle && ix.loosePair(q, &ix.toks[rec.toks[a.qe[i]]]) {
			loose = true
		}
	}
	if w > 0 {
		a.nameScore = m / w
	}
	a.nameScore *= 1 - min(extraTokenPenalty*float64(a.extra), maxExtraPenalty)
	if a.noAnchor {
		a.nameScore *= noAnchorFactor
	}
	if anchors > 0 && anchors == shortAnchors && loose && a.nameScore > shortAnchorCap {
		a.shortAnchor = true
		a.nameScore = shortAnchorCap
	}

	if rec.surname != 0 && !surMatched && surnameHasCore(ix, rec) {
		a.noSurname = true
		a.nameScore = min(a.nameScore, surnameCap)
	}
}

func pairFor(i, j, n int, s float32) pair {
	k := kSingle
	if i >= n {
		k = kSplit
	}
	return pair{q: i, e: j, ne: 1, kind: k, s: s}
}

// joinedPairs appends the pairs of real query token i with two or three
// adjacent entry parts (within free) that, written as one word, are
// similar to it.
func (ix *Index) joinedPairs(sc *scratch, ps []pair, qt []qtok, i int, rec *nameRec, free uint64) []pair {
	q := &qt[i]
	if q.initial || q.particle || !q.ascii || len(q.text) < 4 {
		return ps
	}
	forEachSpan(len(rec.toks), func(j int) bool { return ix.toks[rec.toks[j]].particle }, func(j, k int) {
		l := 0
		for x, t := range rec.toks[j:k] {
			ti := &ix.toks[t]
			if !ti.ascii || ti.initial || free&(1<<(j+x)) == 0 {
				return
			}
			l += len(ti.text)
		}
		first := &ix.toks[rec.toks[j]]
		if l < len(q.text)-2 || l > len(q.text)+2 || first.text[0] != q.text[0] && first.phon[0] != q.phon[0] {
			return
		}
		buf := sc.buf[:0]
		for _, t := range rec.toks[j:k] {
			buf = append(buf, ix.toks[t].text...)
		}
		sc.buf = buf
		c := string(buf)
		pc := phonetic(c)
		s := tokenSim(q.text, q.phon, c, pc, true)
		if q.alt != "" {
			s = max(s, tokenSim(q.alt, q.altPhon, c, pc, true))
		}
		if s > 0 {
			ps = append(ps, pair{q: i, e: j, ne: int8(k - j), kind: kJoined, s: float32(s)}) // #nosec G115 -- 2 or 3
		}
	})
	return ps
}

// greedy sorts ps and assigns them by decreasing similarity, each query
// and entry token used once, into a; it returns the used query and entry
// tokens.
func greedy(ps []pair, qt []qtok, n int, rec *nameRec, a *alignment) (uint16, uint64) {
	slices.SortFunc(ps, func(x, y pair) int { return pairCmp(x, y, qt, rec) })
	var usedE uint64
	var usedQ uint16
	for _, p := range ps {
		var qm uint16
		if p.q >= n {
			for _, k := range qt[p.q].parts[:qt[p.q].nparts] {
				qm |= 1 << k
			}
		} else {
			qm = 1 << p.q
		}
		em := (uint64(1)<<uint(p.ne) - 1) << uint(p.e) // #nosec G115 -- small non-negative positions
		if usedQ&qm != 0 || usedE&em != 0 {
			continue
		}
		usedQ |= qm
		usedE |= em
		for i := range n {
			if qm&(1<<i) == 0 {
				continue
			}
			a.qe[i] = int8(p.e) // #nosec G115 -- a token position, below maxNameTokens
			a.qn[i] = p.ne
			a.qk[i] = p.kind
			a.qs[i] = p.s
			a.qc[i] = int8(p.q) // #nosec G115 -- a query column, below simCols
		}
	}
	return usedQ, usedE
}

// jotAlt returns t with a j before a vowel read as y (German, Polish,
// Czech and Scandinavian romanizations write я, ю, е, ё as ja, ju, je, jo
// and й as j: Jurij, Pjotr), or "" when t has no such j. A word-initial
// j counts in words of five letters or more.
func jotAlt(t string) string {
	var b []byte
	for i := 0; i+1 < len(t); i++ {
		// word-initial only in longer words: the short syllables of
		// Korean and Chinese names (Jong, Jun) have a real j
		if t[i] == 'j' && isVowelByte(t[i+1]) && (i == 0 && len(t) >= 5 || i > 0 && !isVowelByte(t[i-1]) && t[i-1] != 'd') {
			if b == nil {
				b = []byte(t)
			}
			b[i] = 'y'
		}
	}
	return string(b)
}

// sameForm reports whether a query token and an index token are equal in
// one of their spellings or phonetic forms (not merely close).
func sameForm(q *qtok, ti *tokInfo) bool {
	return q.text == ti.text || q.phon == ti.phon ||
		q.alt != "" && (q.alt == ti.text || q.altPhon == ti.phon || q.alt == ti.alt) ||
		ti.alt != "" && (q.text == ti.alt || q.phon == ti.altPhon)
}

// loosePair reports whether a fuzzy pair is more than one typo apart in
// every spelling (a different word rather than a misspelt one).
func (ix *Index) loosePair(q *qtok, ti *tokInfo) bool {
	if q.eq >= 0 && q.eq == ti.eq {
		return false
	}
	for _, x := range [2][2]string{{q.text, q.phon}, {q.alt, q.altPhon}} {
		for _, y := range [2][2]string{{ti.text, ti.phon}, {ti.alt, ti.altPhon}} {
			if x[0] == "" || y[0] == "" {
				continue
			}
			if oneEdit(x[0], y[0]) || oneEdit(x[1], y[1]) || x[1] == y[1] {
				return false
			}
		}
	}
	return true
}

func surnameHasCore(ix *Index, rec *nameRec) bool {
	for j, t := range rec.toks {
		if rec.surname&(1<<j) != 0 && !ix.toks[t].particle {
			return true
		}
	}
	return false
}

// pairCmp orders pairs by decreasing similarity; on ties single pairs come
// before joined and split ones and initials last, then the query's last
// name on the entry's surname, then earlier positions.
func pairCmp(x, y pair, qt []qtok, rec *nameRec) int {
	if x.s != y.s {
		if x.s > y.s {
			return -1
		}
		return 1
	}
	if x.kind != y.kind {
		return int(x.kind) - int(y.kind)
	}
	xs := qt[x.q].role == roleLast && rec.surname&(1<<x.e) != 0
	ys := qt[y.q].role == roleLast && rec.surname&(1<<y.e) != 0
	if xs != ys {
		if xs {
			return -1
		}
		return 1
	}
	if x.e != y.e {
		return x.e - y.e
	}
	return x.q - y.q
}

// Screen checks a natural person against the index and returns the hits at
// or above Threshold, best first, at most MaxHits (one per entry, with the
// entry's best-matching name or alias).
//
// Scoring, all of it reported in Hit.Breakdown:
//
//  1. Names are normalized (Normalize), Cyrillic in the query transliterated
//     with the system of the query's nationality (UA, BY, BG) or detected;
//     letters such as č, š, ž keep their digraph reading (ch, sh, zh) as an
//     alternative spelling.
//  2. Candidates: names sharing at least two similar non-particle tokens
//     with the query (one when the query has a single token, and then only
//     single-token names); initials do not count. Similar tokens are found
//     through an inverted index of each token's phonetic form, its
//     one-deletion variants, its consonant skeleton and its given-name
//     equivalence row; adjacent query words are also looked up written as
//     one, and query words in an index of adjacent listed parts written as
//     one.
//  3. NameScore: see align (weighted token coverage over every pair of the
//     candidate, penalty for unmatched entry tokens, surname rule).
//  4. Score = NameScore + birthday (see birthdayEvidence) + nationality
//     (+0.03 listed nationality, −0.05 other, 0 unknown) − 0.20 for
//     entities, vessels and aircraft when the query has a birthday;
//     clamped to [0, 1].
//  5. A hit needs Score ≥ Threshold (0.85) and NameScore ≥ MinNameScore
//     (0.80).
func (ix *Index) Screen(q Query) []Hit {
	qt, n := prepare(q)
	if n == 0 {
		return nil
	}
	// coreMask: the query's words that count towards the two shared
	// words a candidate needs; a word repeated in the query (Mohamad ...
	// bin Mohamad) counts once.
	var coreMask uint16
	core, words := 0, 0
	for i := range n {
		if qt[i].particle || qt[i].initial {
			continue
		}
		words++
		dup := false
		for k := range i {
			dup = dup || qt[k].phon == qt[i].phon
		}
		if !dup {
			coreMask |= 1 << i
			core++
		}
	}
	if core == 0 {
		return nil
	}
	need := min(core, 2)
	bday, hasBday := parseQueryBirthday(q.Birthday)
	nat := strings.ToUpper(strings.TrimSpace(q.Nationality))

	sc := ix.pool.Get().(*scratch)
	defer ix.pool.Put(sc)
	sc.begin()
	for i := range qt {
		if !qt[i].initial {
			ix.similar(sc, qt, i)
		}
	}
	mark := func(names []int32, bit uint16, joined bool) {
		for _, nm := range names {
			if sc.mask[nm] == 0 && sc.jmask[nm] == 0 {
				sc.touched = append(sc.touched, nm)
			}
			sc.mask[nm] |= bit
			if joined {
				sc.jmask[nm] |= bit
			}
		}
	}
	for i := range qt {
		var bit uint16
		if i < n {
			bit = coreMask & (1 << i)
		} else {
			for _, k := range qt[i].parts[:qt[i].nparts] {
				bit |= coreMask & (1 << k)
			}
		}
		if bit == 0 {
			continue
		}
		for _, t := range sc.match[i] {
			mark(ix.post[t], bit, false)
		}
		if i < n {
			mark(sc.jnames[i], 1<<i, true)
		}
	}
	for _, nm := range sc.touched {
		m := sc.mask[nm]
		jm := sc.jmask[nm]
		sc.mask[nm], sc.jmask[nm] = 0, 0
		if bits.OnesCount16(m&coreMask) < need {
			continue
		}
		rec := &ix.names[nm]
		if words == 1 && rec.core != 1 {
			continue
		}
		a := ix.align(sc, qt, n, rec, jm, true)
		if a.nameScore < MinNameScore {
			continue
		}
		if b, ok := sc.best[rec.entry]; ok && (b.nameScore > a.nameScore || b.nameScore == a.nameScore && b.name < nm) {
			continue
		}
		sc.best[rec.entry] = cand{name: nm, nameScore: a.nameScore, jm: jm}
	}

	hits := make([]Hit, 0, min(len(sc.best), MaxHits))
	bdNotes := make(map[int32]string)
	for ei, c := range sc.best {
		e := &ix.entries[ei]
		f := &ix.facts[ei]
		var bd Breakdown
		bd.NameScore = round3(c.nameScore)
		var note string
		bd.Birthday, bd.BirthdayAdjust, note = birthdayEvidence(f.dobs, bday, hasBday, c.nameScore >= strongName)
		if note != "" {
			bdNotes[ei] = note
		}
		bd.Nationality, bd.NationalityAdjust = nationalityEvidence(f.nats, nat)
		if e.Type != TypeIndividual {
			bd.TypeAdjust = adjNonPerson
			if hasBday {
				bd.TypeAdjust = adjNonPersonBday
			}
		}
		score := c.nameScore + bd.BirthdayAdjust + bd.NationalityAdjust + bd.TypeAdjust
		score = round3(min(max(score, 0), 1))
		if score < ix.threshold {
			continue
		}
		rec := &ix.names[c.name]
		hits = append(hits, Hit{
			List: e.List, EntryID: e.ID, EntryType: e.Type, Name: e.Name,
			MatchedName: rec.text, Alias: rec.alias, Score: score,
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
	// Explain the hits kept: redo their alignment to list the tokens.
	for i := range hits {
		h := &hits[i]
		ei := ix.byKey[entryKey(h.List, h.EntryID)]
		rec := &ix.names[sc.best[ei].name]
		a := ix.align(sc, qt, n, rec, sc.best[ei].jm, false)
		h.Breakdown.Tokens = ix.explain(qt, n, rec, &a)
		h.Fields = []string{"name"}
		if h.Breakdown.Birthday == "match" || h.Breakdown.Birthday == "year_match" {
			h.Fields = append(h.Fields, "birthday")
		}
		if h.Breakdown.Nationality == "match" {
			h.Fields = append(h.Fields, "nationality")
		}
		h.Breakdown.Notes = notes(a, h, q, hasBday, bdNotes[ei])
	}
	return hits
}

// explain lists the alignment a in query order, each pair with its kind,
// weight and a sentence for the reviewer.
func (ix *Index) explain(qt []qtok, n int, rec *nameRec, a *alignment) []TokenMatch {
	up := strings.ToUpper
	out := make([]TokenMatch, n)
	for i := range n {
		q := &qt[i]
		tm := TokenMatch{Query: q.text, Weight: round3(float64(a.qw[i]))}
		w := strconv.FormatFloat(tm.Weight, 'f', -1, 64)
		if a.qe[i] < 0 {
			switch {
			case q.particle:
				tm.Kind = KindUnmatched
				tm.Note = "particle " + up(q.text) + " not in the listed name, weight " + w
			case q.initial:
				tm.Kind = KindUnmatched
				if tm.Weight < weightInitial {
					tm.Kind = KindMiddle
				}
				tm.Note = "initial " + up(q.text) + ". not in the listed name, weight " + w
			case tm.Weight < 1:
				tm.Kind = KindMiddle
				tm.Note = "possible middle name " + up(q.text) + ", not in the listed name, weight " + w
			default:
				tm.Kind = KindUnmatched
				tm.Note = up(q.text) + " not in the listed name, weight " + w
			}
			out[i] = tm
			continue
		}
		j := int(a.qe[i])
		var parts []string
		for _, t := range rec.toks[j : j+int(a.qn[i])] {
			parts = append(parts, ix.toks[t].text)
		}
		tm.Entry = strings.Join(parts, " ")
		tm.Similarity = round3(float64(a.qs[i]))
		sim := strconv.FormatFloat(tm.Similarity, 'f', -1, 64)
		ti := &ix.toks[rec.toks[j]]
		switch a.qk[i] {
		case kInitial:
			tm.Kind = KindInitial
			if q.initial {
				tm.Note = "initial " + up(q.text) + ". ↔ " + up(ti.text) + ", weight " + w
			} else {
				tm.Note = up(q.text) + " ↔ listed initial " + up(ti.text) + ".,  weight " + w
			}
		case kJoined:
			tm.Kind = KindJoined
			tm.Note = "joined form " + up(q.text) + " ↔ " + up(strings.Join(parts, " + ")) + ", similarity " + sim
		case kSplit:
			tm.Kind = KindSplit
			c := &qt[a.qc[i]]
			var qp []string
			for _, k := range c.parts[:c.nparts] {
				qp = append(qp, up(qt[k].text))
			}
			tm.Note = "split form " + strings.Join(qp, " + ") + " ↔ " + up(ti.text) + ", similarity " + sim
		default:
			tm.Kind = pairKind(q, ti)
			switch tm.Kind {
			case KindExact:
				tm.Note = "same name part"
			case KindPhonetic:
				tm.Note = "same sound in another transliteration, similarity " + sim
			case KindFuzzy:
				tm.Note = "close spelling, similarity " + sim
			case KindEquivalent:
				tm.Note = "given-name equivalent " + up(q.text) + " ↔ " + up(ti.text) + " (same name in another language or romanization), similarity " + sim
			case KindFold:
				x, y := q.text, ti.text
				if q.alt != "" {
					x = q.alt
				}
				if ti.alt != "" {
					y = ti.alt
				}
				tm.Note = "transliteration fold (č, š, ž read ch, sh, zh; ä, ö, ü read ae, oe, ue) " + up(x) + " ↔ " + up(y) + ", similarity " + sim
			}
			if q.particle {
				tm.Note += ", particle, weight " + w
			}
		}
		out[i] = tm
	}
	return out
}

func notes(a alignment, h *Hit, q Query, hasBday bool, bdNote string) []string {
	var n []string
	if a.extra > 0 {
		n = append(n, strconv.Itoa(a.extra)+" name part(s) of the listed name not in the query (−"+
			strconv.FormatFloat(min(extraTokenPenalty*float64(a.extra), maxExtraPenalty)*100, 'f', 0, 64)+"%)")
	}
	if a.noSurname {
		n = append(n, "listed surname not matched (name score capped)")
	}
	if a.noAnchor {
		n = append(n, "no name part agrees exactly or phonetically (−10%)")
	}
	if a.shortAnchor {
		n = append(n, "only short name parts agree exactly, beside a loosely similar one: name score capped at "+
			strconv.FormatFloat(shortAnchorCap, 'f', -1, 64))
	}
	if bdNote != "" {
		n = append(n, bdNote)
	}
	if h.Breakdown.TypeAdjust != 0 {
		what := "an " + h.EntryType
		if h.EntryType == TypeVessel {
			what = "a vessel"
		}
		if hasBday {
			n = append(n, "listed party is "+what+", the query a person with a birthday")
		} else {
			n = append(n, "listed party is "+what+", the query a person")
		}
	}
	if !hasBday && strings.TrimSpace(q.Birthday) != "" {
		n = append(n, "query birthday "+strconv.Quote(q.Birthday)+" is not YYYY-MM-DD; ignored")
	}
	return n
}

// compareIDs orders numeric ids numerically, others as strings.
func compareIDs(a, b string) int {
	if len(a) != len(b) {
		if _, err := strconv.Atoi(a); err == nil {
			if _, err := strconv.Atoi(b); err == nil {
				return len(a) - len(b)
			}
		}
	}
	return strings.Compare(a, b)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

type qdate struct{ y, m, d int }

func parseQueryBirthday(s string) (qdate, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return qdate{}, false
	}
	y, ok := year(s[:4])
	m, err1 := strconv.Atoi(s[5:7])
	d, err2 := strconv.Atoi(s[8:10])
	if !ok || err1 != nil || err2 != nil || m < 1 || m > 12 || d < 1 || d > 31 {
		return qdate{}, false
	}
	return qdate{y, m, d}, true
}

// birthdayEvidence compares the query birthday with the entry's
// birthdates (strong: the name matched at strongName or better) and returns
// the verdict, the adjustment and, when a rule beyond a plain match applied,
// a sentence for the reviewer:
//
//   - same date +0.10; same year or within the listed range +0.03;
//   - one year from a listing that gives no full date (a year, a month, a
//     range, "circa"): 0, that is within the listing's precision;
//   - one or two years apart −0.05;
//   - three to five years apart −0.10 when the name is a strong match
//     (list dates are often approximate: such a hit goes to review),
//     otherwise −0.35;
//   - six or more years apart −0.35: a namesake born that far apart is not
//     the person (ten or more years apart never makes a hit).
func birthdayEvidence(dobs []dobRange, q qdate, ok, strong bool) (string, float64, string) {
	if !ok || len(dobs) == 0 {
		return "unknown", 0, ""
	}
	yearMatch := false
	dist := math.MaxInt
	imprecise := false
	for _, r := range dobs {
		if r.d > 0 && r.lo == q.y && r.m == q.m && r.d == q.d {
			return "match", adjBirthdayMatch, ""
		}
		var d int
		switch {
		case q.y >= r.lo && q.y <= r.hi:
			yearMatch = true
			continue
		case q.y < r.lo:
			d = r.lo - q.y
		default:
			d = q.y - r.hi
		}
		if d < dist || d == dist && r.d == 0 {
			dist, imprecise = d, r.d == 0
		}
	}
	years := func(d int) string {
		if d == 1 {
			return "one year"
		}
		return strconv.Itoa(d) + " years"
	}
	switch {
	case yearMatch:
		return "year_match", adjBirthdayYear, ""
	case dist == 1 && imprecise:
		return "mismatch", 0, "birthday one year from a listed date without day (within the list's precision): no deduction"
	case dist <= 2:
		return "mismatch", adjBirthdayNear, ""
	case dist <= maxNearYears && strong:
		return "mismatch", adjBirthdayApprox, "birthday " + years(dist) + " from the listed date; list dates are often approximate and the name matches closely, so −0.10 instead of −0.35 (for review)"
	}
	return "mismatch", adjBirthdayFar, "birthday " + years(dist) + " from every listed date: probably a namesake (−0.35)"
}

func nationalityEvidence(nats []string, q string) (string, float64) {
	if q == "" || len(nats) == 0 {
		return "unknown", 0
	}
	if slices.Contains(nats, q) {
		return "match", adjNationalityMatch
	}
	return "mismatch", adjNationalityMiss
}
