package screening

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
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
	adjBirthdayFar      = -0.35 // 3 or more years apart: a namesake, not the person
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
	minDeleteLen   = 4 // index one-deletion variants of tokens this long
)

// qtok is one normalized query token.
type qtok struct {
	text, phon string
	ascii      bool
	particle   bool
	middle     bool
	last       bool
	weight     float64
}

// scratch holds per-call buffers, pooled per Index.
type scratch struct {
	stamp    uint32
	tokStamp []uint32  // per index token: stamp of the call that gave it a slot
	tokSlot  []int32   // per index token: slot in sims
	sims     []float32 // slot*maxQueryTokens + query token; -1 = not computed
	nslots   int
	match    [maxQueryTokens][]int32 // per query token: similar index tokens
	mask     []uint16                // per name: query tokens with a similar token in it
	touched  []int32
	buf      []byte
	pairs    []pair
	best     map[int32]cand
}

type pair struct {
	q, e int
	s    float32
}

type cand struct {
	name      int32
	nameScore float64
}

func (ix *Index) newScratch() *scratch {
	return &scratch{
		tokStamp: make([]uint32, len(ix.toks)),
		tokSlot:  make([]int32, len(ix.toks)),
		mask:     make([]uint16, len(ix.names)),
		best:     make(map[int32]cand),
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
	for range maxQueryTokens {
		sc.sims = append(sc.sims, -1)
	}
	return s
}

// sim returns the similarity of query token qi and index token t computed
// during candidate generation, or 0 when t was never found similar.
func (sc *scratch) sim(t int32, qi int) float32 {
	if sc.tokStamp[t] != sc.stamp {
		return 0
	}
	s := sc.sims[int(sc.tokSlot[t])*maxQueryTokens+qi]
	if s < 0 {
		return 0
	}
	return s
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

// prepare normalizes the query into tokens.
func prepare(q Query) []qtok {
	lang := langForCountry(q.Nationality)
	var out []qtok
	add := func(s string, middle, last bool) {
		for _, t := range normTokens(s, lang) {
			if len(out) == maxQueryTokens {
				return
			}
			qt := qtok{text: t, phon: phonetic(t), ascii: isASCII(t), particle: isParticle(t), middle: middle, last: last, weight: 1}
			if qt.particle {
				qt.weight = weightParticle
			}
			out = append(out, qt)
		}
	}
	add(q.FirstName, false, false)
	add(q.MiddleName, true, false)
	add(q.LastName, false, true)
	return out
}

// similar finds the index tokens similar to query token qi: those sharing
// its phonetic form, one of its one-deletion variants, or its consonant
// skeleton, and whose tokenSim passes.
func (ix *Index) similar(sc *scratch, qt *qtok, qi int) {
	consider := func(ids []int32) {
		for _, t := range ids {
			s := sc.slot(t)
			p := &sc.sims[s*maxQueryTokens+qi]
			if *p >= 0 {
				continue
			}
			ti := &ix.toks[t]
			v := float32(tokenSim(qt.text, qt.phon, ti.text, ti.phon, qt.ascii && ti.ascii))
			*p = v
			if v > 0 {
				sc.match[qi] = append(sc.match[qi], t)
			}
		}
	}
	if id, ok := ix.tokID[qt.text]; ok {
		consider([]int32{id})
	}
	consider(ix.del[qt.phon])
	if !qt.ascii {
		return
	}
	// One-deletion variants of the phonetic form and, when it differs, of
	// the token itself (phonetic folding can shorten a typo: habb -> hab).
	for _, p := range [2]string{qt.phon, qt.text} {
		if p != qt.phon {
			consider(ix.del[p])
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
		if qt.text == qt.phon {
			break
		}
	}
	if s := skeleton(qt.phon); len(s) >= 2 {
		consider(ix.skel[s])
	}
}

// alignment is the token assignment for one name.
type alignment struct {
	qe        [maxQueryTokens]int8 // entry token index per query token, -1 none
	qs        [maxQueryTokens]float32
	nameScore float64
	extra     int  // unmatched non-particle entry tokens
	noSurname bool // the entry's surname is known and was not matched
	noAnchor  bool // no non-particle token pair reaches anchorSim
}

// align assigns query tokens to entry tokens greedily by decreasing
// similarity (each token used once) and computes the name score:
//
//	coverage  = Σ weight·similarity over matched query tokens / Σ weight
//	nameScore = coverage · (1 − min(0.04·extra, 0.20))
//
// where weight is 1 (0.3 for particles, 0.2 for middle-name tokens without
// partner) and extra counts the entry's unmatched non-particle tokens. If
// the entry's surname is known (OFAC "SURNAME, Given") and none of its
// non-particle tokens is matched, nameScore is capped at 0.6.
func (ix *Index) align(sc *scratch, qt []qtok, rec *nameRec) alignment {
	var a alignment
	for i := range a.qe {
		a.qe[i] = -1
	}
	ps := sc.pairs[:0]
	for j, t := range rec.toks {
		if sc.tokStamp[t] != sc.stamp {
			continue
		}
		for i := range qt {
			if s := sc.sim(t, i); s > 0 {
				ps = append(ps, pair{q: i, e: j, s: s})
			}
		}
	}
	// insertion sort: few pairs; ties prefer the query's last name on the
	// entry's surname, then earlier positions.
	for k := 1; k < len(ps); k++ {
		for m := k; m > 0 && pairLess(ps[m], ps[m-1], qt, rec); m-- {
			ps[m], ps[m-1] = ps[m-1], ps[m]
		}
	}
	sc.pairs = ps
	var usedE uint64
	var usedQ uint16
	for _, p := range ps {
		if usedQ&(1<<p.q) != 0 || usedE&(1<<p.e) != 0 {
			continue
		}
		usedQ |= 1 << p.q
		usedE |= 1 << p.e
		a.qe[p.q] = int8(p.e) // #nosec G115 -- an edit distance of a token, bounded well below 128
		a.qs[p.q] = p.s
	}
	var w, m float64
	a.noAnchor = true
	for i := range qt {
		if a.qe[i] >= 0 && !qt[i].particle && a.qs[i] >= anchorSim {
			a.noAnchor = false
		}
		if a.qe[i] >= 0 {
			w += qt[i].weight
			m += qt[i].weight * float64(a.qs[i])
		} else if qt[i].middle && !qt[i].particle {
			w += weightMissingMiddle
		} else {
			w += qt[i].weight
		}
	}
	surMatched := false
	for j, t := range rec.toks {
		if ix.toks[t].particle {
			continue
		}
		if usedE&(1<<j) == 0 {
			a.extra++
		} else if rec.surname&(1<<j) != 0 {
			surMatched = true
		}
	}
	if w > 0 {
		a.nameScore = m / w
	}
	a.nameScore *= 1 - min(extraTokenPenalty*float64(a.extra), maxExtraPenalty)
	if a.noAnchor {
		a.nameScore *= noAnchorFactor
	}
	if rec.surname != 0 && !surMatched && surnameHasCore(ix, rec) {
		a.noSurname = true
		a.nameScore = min(a.nameScore, surnameCap)
	}
	return a
}

func surnameHasCore(ix *Index, rec *nameRec) bool {
	for j, t := range rec.toks {
		if rec.surname&(1<<j) != 0 && !ix.toks[t].particle {
			return true
		}
	}
	return false
}

func pairLess(x, y pair, qt []qtok, rec *nameRec) bool {
	if x.s != y.s {
		return x.s > y.s
	}
	xs := qt[x.q].last && rec.surname&(1<<x.e) != 0
	ys := qt[y.q].last && rec.surname&(1<<y.e) != 0
	if xs != ys {
		return xs
	}
	if x.e != y.e {
		return x.e < y.e
	}
	return x.q < y.q
}

// Screen checks a natural person against the index and returns the hits at
// or above Threshold, best first, at most MaxHits (one per entry, with the
// entry's best-matching name or alias).
//
// Scoring, all of it reported in Hit.Breakdown:
//
//  1. Names are normalized (Normalize), Cyrillic in the query transliterated
//     with the system of the query's nationality (UA, BY, BG) or detected.
//  2. Candidates: names sharing at least two similar non-particle tokens
//     with the query (one when the query has a single token, and then only
//     single-token names). Similar tokens are found through an inverted
//     index of each token's phonetic form, its one-deletion variants and its
//     consonant skeleton, so one typo or a different transliteration still
//     finds the candidate.
//  3. NameScore: see align (weighted token coverage, Jaro-Winkler per
//     aligned token pair, penalty for unmatched entry tokens, surname rule).
//  4. Score = NameScore + birthday (+0.10 same date, +0.03 same year or
//     within the published range, −0.05 one or two years apart, −0.35
//     three or more years apart, 0 unknown) + nationality (+0.03 listed
//     nationality, −0.05 other, 0 unknown) − 0.20 for entities, vessels and
//     aircraft when the query has a birthday; clamped to [0, 1].
//  5. A hit needs Score ≥ Threshold (0.85) and NameScore ≥ MinNameScore
//     (0.80).
func (ix *Index) Screen(q Query) []Hit {
	qt := prepare(q)
	if len(qt) == 0 {
		return nil
	}
	var coreMask uint16
	core := 0
	for i := range qt {
		if !qt[i].particle {
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
		ix.similar(sc, &qt[i], i)
	}
	for i := range qt {
		if qt[i].particle {
			continue
		}
		bit := uint16(1) << i
		for _, t := range sc.match[i] {
			for _, n := range ix.post[t] {
				if sc.mask[n] == 0 {
					sc.touched = append(sc.touched, n)
				}
				sc.mask[n] |= bit
			}
		}
	}
	for _, n := range sc.touched {
		m := sc.mask[n]
		sc.mask[n] = 0
		if bits.OnesCount16(m&coreMask) < need {
			continue
		}
		rec := &ix.names[n]
		if core == 1 && rec.core != 1 {
			continue
		}
		a := ix.align(sc, qt, rec)
		if a.nameScore < MinNameScore {
			continue
		}
		if b, ok := sc.best[rec.entry]; ok && (b.nameScore > a.nameScore || b.nameScore == a.nameScore && b.name < n) {
			continue
		}
		sc.best[rec.entry] = cand{name: n, nameScore: a.nameScore}
	}

	hits := make([]Hit, 0, min(len(sc.best), MaxHits))
	for ei, c := range sc.best {
		e := &ix.entries[ei]
		f := &ix.facts[ei]
		var bd Breakdown
		bd.NameScore = round3(c.nameScore)
		bd.Birthday, bd.BirthdayAdjust = birthdayEvidence(f.dobs, bday, hasBday)
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
		a := ix.align(sc, qt, rec)
		h.Breakdown.Tokens = make([]TokenMatch, len(qt))
		for qi := range qt {
			tm := TokenMatch{Query: qt[qi].text}
			if j := a.qe[qi]; j >= 0 {
				tm.Entry = ix.toks[rec.toks[j]].text
				tm.Similarity = round3(float64(a.qs[qi]))
			}
			h.Breakdown.Tokens[qi] = tm
		}
		h.Fields = []string{"name"}
		if h.Breakdown.Birthday == "match" || h.Breakdown.Birthday == "year_match" {
			h.Fields = append(h.Fields, "birthday")
		}
		if h.Breakdown.Nationality == "match" {
			h.Fields = append(h.Fields, "nationality")
		}
		h.Breakdown.Notes = notes(a, h, q, hasBday)
	}
	return hits
}

func notes(a alignment, h *Hit, q Query, hasBday bool) []string {
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

// birthdayEvidence compares the query birthday with the entry's birthdates.
func birthdayEvidence(dobs []dobRange, q qdate, ok bool) (string, float64) {
	if !ok || len(dobs) == 0 {
		return "unknown", 0
	}
	yearMatch := false
	dist := math.MaxInt
	for _, r := range dobs {
		if r.d > 0 && r.lo == q.y && r.m == q.m && r.d == q.d {
			return "match", adjBirthdayMatch
		}
		switch {
		case q.y >= r.lo && q.y <= r.hi:
			yearMatch = true
		case q.y < r.lo:
			dist = min(dist, r.lo-q.y)
		default:
			dist = min(dist, q.y-r.hi)
		}
	}
	switch {
	case yearMatch:
		return "year_match", adjBirthdayYear
	case dist <= 2:
		return "mismatch", adjBirthdayNear
	}
	return "mismatch", adjBirthdayFar
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
