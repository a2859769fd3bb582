package screening

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// File names read by LoadDir.
const (
	FileSDN = "sdn.csv"
	FileALT = "alt.csv"
	FileUN  = "un_consolidated.xml"
	// Optional: read by LoadDir when present.
	FileEU = "eu_fsf.xml"     // EU Financial Sanctions Files, XML export
	FileUK = "uk_conlist.csv" // UK OFSI consolidated list, CSV
)

// maxNameTokens bounds the tokens kept per name (long entity names); the
// surname bit mask is a uint64.
const maxNameTokens = 40

// Index is an immutable, searchable set of sanctions lists. It is safe for
// concurrent use; build a new one (Parse, LoadDir) to change it.
type Index struct {
	entries []Entry
	facts   []entryFacts
	byKey   map[string]int32

	names []nameRec
	toks  []tokInfo
	tokID map[string]int32
	post  [][]int32          // token id -> ids of names containing it
	del   map[string][]int32 // phonetic form and its one-deletion variants -> token ids
	skel  map[string][]int32 // consonant skeleton -> token ids
	// eqToks: given-name equivalence row (givennames.go) -> token ids.
	eqToks map[int32][]int32
	// joined: phonetic form of two adjacent name parts written as one
	// word (bin laden -> binladen; abd al rahman -> abdalrahman, three
	// parts when the middle one is a particle) -> ids of the names with
	// those parts.
	joined map[string][]int32

	// Company screening (company.go): the names of the listed entities,
	// classified; core token id -> those names; generated acronym ->
	// those names.
	cnames []compName
	cpost  map[int32][]int32
	cacro  map[string][]int32
	// cimplied: for an entity the lists give no country, the countries
	// its sanctions programmes or its names point to (impliedCountries);
	// they decide only generated acronyms.
	cimplied map[int32][]string

	lists     []ListInfo
	version   string
	threshold float64
	unmapped  int // nationality values that did not map to a country code

	pool sync.Pool // *scratch
}

// entryFacts are the parsed forms of an entry's birthdates and
// nationalities used for scoring.
type entryFacts struct {
	dobs []dobRange
	nats []string
}

// dobRange is a parsed birthdate: years lo..hi, and month/day when exact.
type dobRange struct {
	lo, hi int
	m, d   int // exact date when d > 0 (lo == hi)
}

func parseDOBRange(s string) (dobRange, bool) {
	approx := false
	if rest, ok := strings.CutPrefix(s, "~"); ok {
		approx, s = true, rest
	}
	if a, b, ok := strings.Cut(s, ".."); ok {
		y1, ok1 := year(a)
		y2, ok2 := year(b)
		return dobRange{lo: y1, hi: y2}, ok1 && ok2
	}
	y, ok := year(s[:min(4, len(s))])
	if !ok {
		return dobRange{}, false
	}
	r := dobRange{lo: y, hi: y}
	if approx {
		r.lo, r.hi = y-1, y+1
		return r, true
	}
	if len(s) == 10 {
		m, err1 := strconv.Atoi(s[5:7])
		d, err2 := strconv.Atoi(s[8:10])
		if err1 == nil && err2 == nil {
			r.m, r.d = m, d
		}
	}
	return r, true
}

// nameRec is one screened name variant (primary name or alias).
type nameRec struct {
	entry   int32
	alias   bool
	text    string  // as published
	toks    []int32 // token ids, given names first, surname last
	surname uint64  // bit j: toks[j] belongs to the surname; 0 = not known
	core    uint8   // number of non-particle tokens
}

type tokInfo struct {
	text     string
	phon     string
	particle bool
	ascii    bool
	// initial: a one-letter name part that is not a particle (a listed
	// "C." or the query's initial).
	initial bool
	// alt and altPhon are the token written with the transliteration
	// digraphs (see foldDigraph) when its source had č, š, ž...; "".
	alt, altPhon string
	// eq is the given-name equivalence row, -1 for none.
	eq int32
}

// Meta describes where the data given to Parse came from.
type Meta struct {
	// SDNSource, ALTSource, UNSource, EUSource and UKSource are paths or
	// URLs, recorded in ListInfo.Source.
	SDNSource, ALTSource, UNSource, EUSource, UKSource string
	// OFACPublished, UNPublished, EUPublished and UKPublished override
	// ListInfo.Published (for example with an HTTP Last-Modified date).
	OFACPublished, UNPublished, EUPublished, UKPublished string
	// LoadedAt defaults to time.Now().
	LoadedAt time.Time
	// Threshold overrides DefaultThreshold when > 0.
	Threshold float64
}

// LoadDir reads sdn.csv, alt.csv and un_consolidated.xml from dir, and
// eu_fsf.xml and uk_conlist.csv when they are there, and builds an Index.
func LoadDir(dir string) (*Index, error) {
	var opt [2][]byte
	var optSrc [2]string
	for i, name := range []string{FileEU, FileUK} {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path) // #nosec G304 -- the operator's EMI_SANCTIONS_DIR and a fixed list file name
		switch {
		case err == nil:
			opt[i], optSrc[i] = b, path
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	var files [3]*os.File
	for i, name := range []string{FileSDN, FileALT, FileUN} {
		f, err := os.Open(filepath.Join(dir, name)) // #nosec G304 -- the operator's EMI_SANCTIONS_DIR and a fixed list file name
		if err != nil {
			for _, g := range files[:i] {
				_ = g.Close()
			}
			return nil, err
		}
		files[i] = f
	}
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	in := Inputs{SDN: files[0], ALT: files[1], UN: files[2]}
	if opt[0] != nil {
		in.EU = bytes.NewReader(opt[0])
	}
	if opt[1] != nil {
		in.UK = bytes.NewReader(opt[1])
	}
	return ParseAll(in, Meta{
		SDNSource: files[0].Name(),
		ALTSource: files[1].Name(),
		UNSource:  files[2].Name(),
		EUSource:  optSrc[0],
		UKSource:  optSrc[1],
	})
}

// Inputs are the list files given to ParseAll; nil leaves a list out.
type Inputs struct {
	SDN, ALT, UN, EU, UK io.Reader
}

// Parse builds an Index from OFAC's sdn.csv and alt.csv and the UN
// consolidated XML. sdn or un may be nil to leave that list out (not both);
// alt may be nil (no OFAC aliases). Any parse error fails the whole call.
func Parse(sdn, alt, un io.Reader, meta Meta) (*Index, error) {
	return ParseAll(Inputs{SDN: sdn, ALT: alt, UN: un}, meta)
}

// ParseAll builds an Index from any of the lists: OFAC (SDN with ALT, ALT
// optional), UN, EU and UK; at least one. Any parse error fails the whole
// call.
func ParseAll(in Inputs, meta Meta) (*Index, error) {
	sdn, alt, un := in.SDN, in.ALT, in.UN
	if sdn == nil && un == nil && in.EU == nil && in.UK == nil {
		return nil, errors.New("screening: no list given")
	}
	if meta.LoadedAt.IsZero() {
		meta.LoadedAt = time.Now()
	}
	ix := &Index{threshold: DefaultThreshold}
	if meta.Threshold > 0 {
		ix.threshold = meta.Threshold
	}
	if sdn != nil {
		sdnData, err := io.ReadAll(sdn)
		if err != nil {
			return nil, fmt.Errorf("read sdn.csv: %w", err)
		}
		var altData []byte
		if alt != nil {
			if altData, err = io.ReadAll(alt); err != nil {
				return nil, fmt.Errorf("read alt.csv: %w", err)
			}
		}
		entries, _, unmapped, err := parseOFAC(sdnData, altData)
		if err != nil {
			return nil, err
		}
		ix.unmapped += unmapped
		info := ListInfo{
			Name: ListOFAC, Source: sourceList(meta.SDNSource, meta.ALTSource),
			Published: meta.OFACPublished, LoadedAt: meta.LoadedAt,
			Files: []FileInfo{fileInfo(FileSDN, meta.SDNSource, sdnData)},
		}
		if alt != nil {
			info.Files = append(info.Files, fileInfo(FileALT, meta.ALTSource, altData))
		}
		ix.addList(info, entries)
	}
	if un != nil {
		unData, err := io.ReadAll(un)
		if err != nil {
			return nil, fmt.Errorf("read un xml: %w", err)
		}
		entries, published, unmapped, err := parseUN(unData)
		if err != nil {
			return nil, err
		}
		if meta.UNPublished != "" {
			published = meta.UNPublished
		}
		ix.unmapped += unmapped
		ix.addList(ListInfo{
			Name: ListUN, Source: meta.UNSource, Published: published,
			LoadedAt: meta.LoadedAt,
			Files:    []FileInfo{fileInfo(FileUN, meta.UNSource, unData)},
		}, entries)
	}
	type extra struct {
		r               io.Reader
		list, file, src string
		pub             string
		parse           func([]byte) ([]Entry, string, int, error)
	}
	for _, x := range []extra{
		{in.EU, ListEU, FileEU, meta.EUSource, meta.EUPublished, parseEU},
		{in.UK, ListUK, FileUK, meta.UKSource, meta.UKPublished, parseUK},
	} {
		if x.r == nil {
			continue
		}
		data, err := io.ReadAll(x.r)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", x.file, err)
		}
		entries, published, unmapped, err := x.parse(data)
		if err != nil {
			return nil, err
		}
		if x.pub != "" {
			published = x.pub
		}
		ix.unmapped += unmapped
		ix.addList(ListInfo{
			Name: x.list, Source: x.src, Published: published, LoadedAt: meta.LoadedAt,
			Files: []FileInfo{fileInfo(x.file, x.src, data)},
		}, entries)
	}
	ix.build()
	return ix, nil
}

func sourceList(s ...string) string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, " ")
}

func fileInfo(name, source string, data []byte) FileInfo {
	sum := sha256.Sum256(data)
	return FileInfo{Name: name, Source: source, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
}

func (ix *Index) addList(info ListInfo, entries []Entry) {
	info.Entries = len(entries)
	for i := range entries {
		info.Aliases += len(entries[i].Aliases)
	}
	info.SHA256 = info.Files[0].SHA256
	ix.lists = append(ix.lists, info)
	ix.entries = append(ix.entries, entries...)
}

// build creates the name variants, the token dictionary and the inverted
// index.
func (ix *Index) build() {
	ix.byKey = make(map[string]int32, len(ix.entries))
	ix.facts = make([]entryFacts, len(ix.entries))
	ix.tokID = make(map[string]int32, 1<<16)
	ix.del = make(map[string][]int32, 1<<19)
	ix.skel = make(map[string][]int32, 1<<16)
	ix.eqToks = make(map[int32][]int32, len(givenNameRows))
	ix.joined = make(map[string][]int32, 1<<17)
	for i := range ix.entries {
		e := &ix.entries[i]
		ix.byKey[entryKey(e.List, e.ID)] = int32(i) // #nosec G115 -- an entry index, far below 2^31
		f := &ix.facts[i]
		for _, b := range e.Birthdates {
			if r, ok := parseDOBRange(b); ok {
				f.dobs = append(f.dobs, r)
			}
		}
		f.nats = e.Nationalities

		seen := make(map[string]bool, 1+len(e.Aliases))
		ix.addName(int32(i), e, e.Name, false, seen) // #nosec G115 -- an entry index, far below 2^31
		for _, a := range e.Aliases {
			ix.addName(int32(i), e, a, true, seen) // #nosec G115 -- an entry index, far below 2^31
		}
	}
	ix.buildCompanies()
	ix.post = make([][]int32, len(ix.toks))
	for n := range ix.names {
		rec := &ix.names[n]
		forEachSpan(len(rec.toks), func(j int) bool { return ix.toks[rec.toks[j]].particle }, func(j, k int) {
			var b strings.Builder
			for _, t := range rec.toks[j:k] {
				ti := &ix.toks[t]
				if !ti.ascii || ti.initial {
					return
				}
				b.WriteString(ti.text)
			}
			p := phonetic(b.String())
			ix.joined[p] = appendUnique(ix.joined[p], int32(n)) // #nosec G115 -- a name index, far below 2^31
		})
		for j, t := range rec.toks {
			dup := false
			for _, u := range rec.toks[:j] {
				if u == t {
					dup = true
					break
				}
			}
			if !dup {
				ix.post[t] = append(ix.post[t], int32(n)) // #nosec G115 -- a name index, far below 2^31
			}
		}
	}
	h := sha256.New()
	for _, l := range ix.lists {
		h.Write([]byte(l.Name))
		for _, f := range l.Files {
			h.Write([]byte(f.Name + f.SHA256))
		}
	}
	ix.version = hex.EncodeToString(h.Sum(nil))[:12]
	ix.pool.New = func() any { return ix.newScratch() }
}

// addName adds one name variant of entry i unless an equivalent one (same
// tokens) was already added for that entry.
func (ix *Index) addName(i int32, e *Entry, text string, alias bool, seen map[string]bool) {
	var given, sur, galt, salt []string
	// OFAC writes individuals (and their aliases) "SURNAME, Given Names";
	// the EU and UK parsers write their split names the same way.
	if e.List != ListUN && e.Type == TypeIndividual {
		if k := strings.IndexByte(text, ','); k >= 0 {
			sur, salt = normTokensAlt(text[:k], langAuto)
			given, galt = normTokensAlt(text[k+1:], langAuto)
		}
	}
	if sur == nil {
		given, galt = normTokensAlt(text, langAuto)
	}
	toks := append(given, sur...)
	if len(toks) == 0 {
		return
	}
	var alts []string
	if galt != nil || salt != nil {
		alts = make([]string, len(toks))
		copy(alts, galt)
		copy(alts[len(given):], salt)
	}
	if len(toks) > maxNameTokens {
		toks = toks[:maxNameTokens]
	}
	key := strings.Join(toks, " ")
	if seen[key] {
		return
	}
	seen[key] = true
	rec := nameRec{entry: i, alias: alias, text: text, toks: make([]int32, len(toks))}
	for j, t := range toks {
		alt := ""
		if alts != nil {
			alt = alts[j]
		}
		id := ix.token(t, alt)
		rec.toks[j] = id
		if !ix.toks[id].particle {
			rec.core++
		}
		if j >= len(given) && sur != nil {
			rec.surname |= 1 << uint(j) // #nosec G115 -- j is a non-negative loop index
		}
	}
	ix.names = append(ix.names, rec)
}

// token returns the id of token t (with its digraph spelling alt, or ""),
// adding it and its lookup keys when new.
func (ix *Index) token(t, alt string) int32 {
	key := t
	if alt != "" {
		key = t + "\x00" + alt
	}
	if id, ok := ix.tokID[key]; ok {
		return id
	}
	id := int32(len(ix.toks)) // #nosec G115 -- distinct tokens of the lists, far below 2^31
	info := newTokInfo(t, alt)
	ix.toks = append(ix.toks, info)
	ix.tokID[key] = id
	// Lookup keys: the phonetic form and the token (and its digraph
	// spelling), each with its one-deletion variants (symmetric deletion:
	// two tokens one edit apart share a key), and the consonant skeleton.
	keys := [4]string{info.phon, t, info.altPhon, alt}
	for k, p := range keys {
		if p == "" || k > 0 && slices.Contains(keys[:k], p) {
			continue
		}
		ix.del[p] = appendUnique(ix.del[p], id)
		if info.ascii && len(p) >= minDeleteLen {
			buf := make([]byte, len(p)-1)
			for k := 0; k < len(p); k++ {
				copy(buf, p[:k])
				copy(buf[k:], p[k+1:])
				ix.del[string(buf)] = appendUnique(ix.del[string(buf)], id)
			}
		}
	}
	if info.ascii {
		if s := skeleton(info.phon); len(s) >= 2 {
			ix.skel[s] = append(ix.skel[s], id)
		}
	}
	if info.eq >= 0 {
		ix.eqToks[info.eq] = append(ix.eqToks[info.eq], id)
	}
	return id
}

// newTokInfo describes token t with its digraph spelling alt ("" none).
func newTokInfo(t, alt string) tokInfo {
	info := tokInfo{text: t, phon: phonetic(t), particle: isParticle(t), ascii: isASCII(t), eq: -1}
	info.initial = !info.particle && utf8.RuneCountInString(t) == 1
	if alt != "" && alt != t {
		info.alt, info.altPhon = alt, phonetic(alt)
	}
	info.eq = givenGroupOf(info.phon)
	if info.eq < 0 && info.altPhon != "" {
		info.eq = givenGroupOf(info.altPhon)
	}
	return info
}

// forEachSpan calls fn(j, k) for every run toks[j:k] of a name's parts that
// may be written as one word: two adjacent parts, or three when the middle
// one is a particle (abd al rahman).
func forEachSpan(n int, particle func(int) bool, fn func(j, k int)) {
	for j := 0; j+1 < n; j++ {
		fn(j, j+2)
		if j+2 < n && particle(j+1) {
			fn(j, j+3)
		}
	}
}

func appendUnique(l []int32, id int32) []int32 {
	if n := len(l); n > 0 && l[n-1] == id {
		return l
	}
	return append(l, id)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Threshold is the minimum Score of a Hit.
func (ix *Index) Threshold() float64 { return ix.threshold }

// Lists describes the loaded lists.
func (ix *Index) Lists() []ListInfo {
	out := make([]ListInfo, len(ix.lists))
	for i, l := range ix.lists {
		l.Files = append([]FileInfo(nil), l.Files...)
		out[i] = l
	}
	return out
}

// Version is a short id (12 hex digits) derived from the SHA-256 of every
// loaded file: equal versions mean identical source data.
func (ix *Index) Version() string { return ix.version }

// Entry returns the entry with the given list and id.
func (ix *Index) Entry(list, id string) (Entry, bool) {
	i, ok := ix.byKey[entryKey(list, id)]
	if !ok {
		return Entry{}, false
	}
	return cloneEntry(&ix.entries[i]), true
}

// Entries calls fn for every entry, in list order, until fn returns false.
// The Entry passed to fn must not be modified.
func (ix *Index) Entries(fn func(e *Entry) bool) {
	for i := range ix.entries {
		if !fn(&ix.entries[i]) {
			return
		}
	}
}

// Len is the number of entries over all lists.
func (ix *Index) Len() int { return len(ix.entries) }

// UnmappedNationalities counts the published nationality and citizenship
// values (OFAC remarks, UN NATIONALITY) that did not map to an ISO code and
// were dropped.
func (ix *Index) UnmappedNationalities() int { return ix.unmapped }

func cloneEntry(e *Entry) Entry {
	c := *e
	c.Aliases = append([]string(nil), e.Aliases...)
	c.WeakAliases = append([]string(nil), e.WeakAliases...)
	c.Birthdates = append([]string(nil), e.Birthdates...)
	c.Nationalities = append([]string(nil), e.Nationalities...)
	c.Countries = append([]string(nil), e.Countries...)
	c.Programs = append([]string(nil), e.Programs...)
	return c
}

// Changed returns the entries of new that are not in old or whose
// Fingerprint differs, in new's order. A nil old reports every entry.
func Changed(old, new *Index) []EntryRef {
	if new == nil {
		return nil
	}
	var out []EntryRef
	for i := range new.entries {
		e := &new.entries[i]
		if old != nil {
			if j, ok := old.byKey[entryKey(e.List, e.ID)]; ok && old.entries[j].Fingerprint == e.Fingerprint {
				continue
			}
		}
		out = append(out, EntryRef{List: e.List, ID: e.ID, Fingerprint: e.Fingerprint})
	}
	return out
}
