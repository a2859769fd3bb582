package screening

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// List names.
const (
	ListOFAC = "ofac_sdn" // OFAC Specially Designated Nationals (sdn.csv + alt.csv)
	ListUN   = "un_sc"    // UN Security Council Consolidated List
	ListEU   = "eu_fsf"   // EU consolidated list (Financial Sanctions Files, XML export)
	ListUK   = "uk_ofsi"  // UK consolidated list of financial sanctions targets (OFSI, CSV)
)

// Entry types.
const (
	TypeIndividual = "individual"
	TypeEntity     = "entity"
	TypeVessel     = "vessel"
	TypeAircraft   = "aircraft"
)

// Entry is one listed party.
type Entry struct {
	// List is ListOFAC or ListUN.
	List string
	// ID identifies the entry within its list: for OFAC the ent_num
	// ("9760"), for the UN the REFERENCE_NUMBER ("KPi.033"), which is the
	// identifier the Security Council publishes and cites (the internal
	// DATAID is not used).
	ID string
	// Type is TypeIndividual, TypeEntity, TypeVessel or TypeAircraft.
	Type string
	// Name is the primary name as published: OFAC "SURNAME, Given Names"
	// for individuals; UN FIRST_NAME SECOND_NAME THIRD_NAME FOURTH_NAME
	// joined by spaces.
	Name string
	// Aliases are the published aliases that are screened: OFAC alt.csv
	// (aka, fka, nka) and UN INDIVIDUAL_ALIAS / ENTITY_ALIAS of every
	// quality (Good, Low, a.k.a., f.k.a.), in publication order. UN alias
	// fields holding several names ("A; B") are split, and remarks in
	// brackets or after "born" removed (see splitUNAlias).
	Aliases []string
	// WeakAliases are OFAC's "weak" a.k.a.s quoted in the remarks column
	// (nicknames such as 'THE CHESS PLAYER'). OFAC describes them as broad
	// or generic; they are kept for display but not screened.
	WeakAliases []string
	// Birthdates as parsed, one of:
	//   "1984-01-08"  exact date
	//   "1960-12"     month and year
	//   "1962"        year only
	//   "1960..1962"  range of years (OFAC "1960 to 1962", UN BETWEEN)
	//   "~1962"       approximate year (OFAC "circa", UN APPROXIMATELY);
	//                 compared as 1961..1963.
	Birthdates []string
	// Nationalities are ISO 3166-1 alpha-2 codes of the published
	// nationalities and citizenships (OFAC "nationality"/"citizen" remarks,
	// UN NATIONALITY); names that do not map (see CountryCode) are dropped.
	Nationalities []string
	// Countries are ISO 3166-1 alpha-2 codes of the countries an entity
	// (vessel, aircraft) is tied to: for OFAC the countries named after its
	// registration, tax and other identification numbers ("Tax ID No.
	// 7708129854 (Russia)") and its "Registration Country" or "Nationality
	// of Registration"; for the UN the countries of its addresses. Company
	// screening compares them with the company's countries as person
	// screening compares nationalities. Empty for individuals.
	Countries []string
	// Programs are the OFAC sanctions programs ("SDGT", "BELARUS") or the
	// UN list type ("DPRK", "Al-Qaida").
	Programs []string
	// Fingerprint is the hex SHA-256 of the canonical content that matters
	// for screening (type, name, aliases, birthdates, nationalities; see
	// fingerprint), so that a changed entry is detectable.
	Fingerprint string
}

// fingerprint hashes the canonical content of e: type, primary name, the
// sorted aliases, sorted birthdates and sorted nationalities (and, for an
// entity, vessel or aircraft that has them, its sorted weak aliases and
// countries), separated by
// control characters that cannot occur in the data.
func fingerprint(e *Entry) string {
	h := sha256.New()
	w := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0x1f})
	}
	list := func(l []string) {
		c := slices.Clone(l)
		slices.Sort(c)
		for _, s := range c {
			w(s)
		}
		h.Write([]byte{0x1e})
	}
	w(e.Type)
	w(e.Name)
	list(e.Aliases)
	list(e.Birthdates)
	list(e.Nationalities)
	// Company screening reads an entity's weak a.k.a.s and countries: a
	// change to them is a change to what is screened. Individuals (and
	// entities with neither) keep the fingerprint they had before.
	if e.Type != TypeIndividual && len(e.WeakAliases)+len(e.Countries) > 0 {
		list(e.WeakAliases)
		list(e.Countries)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Query is the natural person to screen. Only the names are required.
type Query struct {
	FirstName  string
	MiddleName string
	LastName   string
	// Birthday is YYYY-MM-DD; empty when unknown. Any other form is
	// ignored (treated as unknown, noted in the breakdown).
	Birthday string
	// Nationality is an ISO 3166-1 alpha-2 code (case-insensitive); empty
	// when unknown.
	Nationality string
}

// Hit is one listed entry that matched a query.
type Hit struct {
	List      string
	EntryID   string
	EntryType string
	// Name is the entry's primary name as published.
	Name string
	// MatchedName is the published name or alias that matched best.
	MatchedName string
	// Alias is true when MatchedName is an alias.
	Alias bool
	// Score in [0, 1], rounded to 3 decimals; see Breakdown for how it
	// was computed.
	Score float64
	// Fields lists the evidence that agreed: "name" always, "birthday"
	// when the birthday matched (date or year), "nationality" when the
	// nationality matched.
	Fields []string
	// Breakdown explains the score.
	Breakdown Breakdown
	// Fingerprint of the entry at the time of the check.
	Fingerprint string
}

// TokenMatch is one aligned pair of name tokens (after Normalize).
type TokenMatch struct {
	Query string
	// Entry is the listed part(s) matched: one token, or two or three
	// separated by spaces for a joined form; empty when the query token
	// found no partner.
	Entry      string
	Similarity float64
	// Weight is the share of the query token in the name score (1; 0.3
	// for a particle; 0.5 for an initial; 0.2 for a possible middle name
	// without partner, 0.1 for such an initial).
	Weight float64
	// Kind is how the pair matched: KindExact, KindPhonetic, KindFuzzy,
	// KindFold, KindEquivalent, KindInitial, KindJoined, KindSplit, or
	// KindMiddle / KindUnmatched for a token without partner; for a
	// company also KindLegalForm, KindDescriptor, KindStop, KindAcronym.
	Kind string
	// Note says it in words for the reviewer ("initial C. ↔ CARLOS,
	// weight 0.5").
	Note string
}

// Breakdown explains a score: Score = NameScore + BirthdayAdjust +
// NationalityAdjust + TypeAdjust, clamped to [0, 1].
type Breakdown struct {
	// NameScore is the weighted share of query tokens found in the
	// matched name, times the penalty for unmatched entry tokens.
	NameScore float64
	// Tokens is the alignment used, in query order.
	Tokens []TokenMatch
	// Birthday is "match" (same date), "year_match" (same year, or within
	// the entry's range), "mismatch" or "unknown".
	Birthday       string
	BirthdayAdjust float64
	// Nationality is "match", "mismatch" or "unknown": the person's
	// nationality, or for a company (ScreenCompany) its countries against
	// the entity's countries.
	Nationality       string
	NationalityAdjust float64
	// TypeAdjust is negative for entities, vessels and aircraft when the
	// query carries a birthday (it is then clearly a natural person).
	TypeAdjust float64
	// Notes are human-readable remarks on penalties and caps applied.
	Notes []string
}

// ListInfo describes one loaded list.
type ListInfo struct {
	// Name is ListOFAC or ListUN.
	Name string
	// Source is where the list was read from (paths or URLs, main file
	// first).
	Source string
	// Published is the publication date when the list states one (UN
	// dateGenerated) or the source reported one (HTTP Last-Modified);
	// empty otherwise (OFAC's legacy CSV carries no date).
	Published string
	// Entries and Aliases count the list's entries and screened aliases.
	Entries, Aliases int
	// SHA256 is the hex SHA-256 of the list's main file (sdn.csv or the UN
	// XML); Files has every file.
	SHA256 string
	Files  []FileInfo
	// LoadedAt is when the index was built.
	LoadedAt time.Time
}

// FileInfo describes one source file of a list.
type FileInfo struct {
	Name   string // "sdn.csv", "alt.csv", "un_consolidated.xml"
	Source string
	Size   int64
	SHA256 string
}

// EntryRef identifies one version of an entry.
type EntryRef struct {
	List, ID, Fingerprint string
}

func entryKey(list, id string) string { return list + "\x00" + id }

func uniqueStrings(in []string) []string {
	if len(in) < 2 {
		return in
	}
	out := in[:0:0]
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

func cleanSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Validate reports whether q is a well-formed query: a first or last name
// with at least one letter or digit, a birthday in YYYY-MM-DD form if given,
// and a two-letter nationality if given. Screen itself accepts any query
// (it ignores a malformed birthday and says so in the breakdown); callers
// use Validate to reject bad input early.
func (q Query) Validate() error {
	if Normalize(q.FirstName+" "+q.MiddleName+" "+q.LastName) == "" {
		return errors.New("screening: query has no name")
	}
	if q.Birthday != "" {
		if _, ok := parseQueryBirthday(q.Birthday); !ok {
			return fmt.Errorf("screening: birthday %q is not YYYY-MM-DD", q.Birthday)
		}
	}
	if n := strings.TrimSpace(q.Nationality); n != "" {
		if len(n) != 2 || !isLetters(n) {
			return fmt.Errorf("screening: nationality %q is not an ISO alpha-2 code", q.Nationality)
		}
	}
	return nil
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
