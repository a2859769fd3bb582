package screening

import (
	"bytes"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestMustPass(t *testing.T) {
	ix := fullIndex(t)

	kim := ix.Screen(Query{FirstName: "Kim", LastName: "Jong Un", Nationality: "KP", Birthday: "1984-01-08"})
	i := found(kim, ListOFAC, "20157")
	if i < 0 {
		t.Fatalf("Kim Jong Un not found: %+v", kim)
	}
	h := kim[i]
	if h.Score < ix.Threshold() || h.Breakdown.Birthday != "match" || !slices.Contains(h.Fields, "birthday") || h.Name != "KIM, Jong Un" {
		t.Errorf("Kim Jong Un hit: %+v", h)
	}
	if i != 0 {
		t.Errorf("Kim Jong Un ranked %d", i)
	}

	luk := ix.Screen(Query{FirstName: "Alexander", LastName: "Lukashenko"})
	i = found(luk, ListOFAC, "9760")
	if i < 0 {
		t.Fatalf("Lukashenka not found: %+v", luk)
	}
	h = luk[i]
	if !h.Alias || h.Name != "LUKASHENKA, Alyaksandr Ryhorovich" || h.MatchedName != "LUKASHENKO, Alexander Grigoryevich" {
		t.Errorf("Lukashenka hit: %+v", h)
	}
	t.Logf("Lukashenko: %.3f via %q %+v", h.Score, h.MatchedName, h.Breakdown)

	// The same in Cyrillic (Russian and Belarusian spellings).
	for _, q := range []Query{
		{FirstName: "Александр", LastName: "Лукашенко"},
		{FirstName: "Аляксандр", LastName: "Лукашэнка", Nationality: "BY"},
	} {
		if found(ix.Screen(q), ListOFAC, "9760") < 0 {
			t.Errorf("%+v: Lukashenka not found", q)
		}
	}

	for _, q := range []Query{
		{FirstName: "Elin", LastName: "Sandqvist", Nationality: "SE", Birthday: "1987-03-02"},
		{FirstName: "Mara", LastName: "Velikova", Nationality: "BG", Birthday: "1990-04-12"},
	} {
		if hits := ix.Screen(q); len(hits) != 0 {
			t.Errorf("%+v should be clear, got %+v", q, hits)
		}
	}
}

func TestBirthdayEvidence(t *testing.T) {
	ix := fullIndex(t)
	base := Query{FirstName: "Jong Un", LastName: "Kim"}
	score := func(q Query) (Hit, bool) {
		hits := ix.Screen(q)
		if i := found(hits, ListOFAC, "20157"); i >= 0 {
			return hits[i], true
		}
		return Hit{}, false
	}
	none, ok := score(base)
	if !ok || none.Breakdown.Birthday != "unknown" {
		t.Fatalf("no birthday: %+v %v", none, ok)
	}
	q := base
	q.Birthday = "1984-01-08"
	same, _ := score(q)
	q.Birthday = "1984-06-30"
	year, _ := score(q)
	q.Birthday = "1985-01-08"
	near, nearOK := score(q)
	// (scores are clamped at 1: compare the adjustments)
	if !(same.Breakdown.BirthdayAdjust > year.Breakdown.BirthdayAdjust && year.Breakdown.BirthdayAdjust > none.Breakdown.BirthdayAdjust) ||
		same.Breakdown.Birthday != "match" || year.Breakdown.Birthday != "year_match" || none.Breakdown.BirthdayAdjust != 0 {
		t.Errorf("same date %+v, same year %+v, none %+v", same.Breakdown, year.Breakdown, none.Breakdown)
	}
	if !nearOK || near.Breakdown.Birthday != "mismatch" || near.Score >= none.Score {
		t.Errorf("one year apart: %+v", near)
	}
	// A namesake born 30 years apart is not the person.
	q.Birthday = "1954-01-08"
	if h, ok := score(q); ok {
		t.Errorf("born 30 years apart still a hit: %+v", h)
	}
	// An invalid birthday is ignored and noted.
	q.Birthday = "08/01/1984"
	h, ok := score(q)
	if !ok || h.Breakdown.Birthday != "unknown" || len(h.Breakdown.Notes) == 0 {
		t.Errorf("invalid birthday: %+v", h)
	}
}

func TestNationalityEvidence(t *testing.T) {
	ix := fullIndex(t)
	q := Query{FirstName: "Alyaksandr", LastName: "Lukashenka"}
	get := func(nat string) Hit {
		q.Nationality = nat
		hits := ix.Screen(q)
		i := found(hits, ListOFAC, "9760")
		if i < 0 {
			t.Fatalf("nationality %q: not found", nat)
		}
		return hits[i]
	}
	unknown, match, miss := get(""), get("by"), get("FR")
	if match.Breakdown.Nationality != "match" || miss.Breakdown.Nationality != "mismatch" || unknown.Breakdown.Nationality != "unknown" {
		t.Errorf("nationality evidence: %s %s %s", match.Breakdown.Nationality, miss.Breakdown.Nationality, unknown.Breakdown.Nationality)
	}
	if !(match.Score > unknown.Score && unknown.Score > miss.Score) || !slices.Contains(match.Fields, "nationality") {
		t.Errorf("scores: match %.3f unknown %.3f mismatch %.3f", match.Score, unknown.Score, miss.Score)
	}
}

func TestMinimumQuery(t *testing.T) {
	ix := fullIndex(t)
	for _, q := range []Query{
		{},
		{LastName: "Kim"},
		{FirstName: "Vladimir"},
		{LastName: "Ali"},
		{LastName: "al"},
		{FirstName: "bin", LastName: "al"},
		{LastName: "Lukashenko"},
	} {
		if hits := ix.Screen(q); len(hits) != 0 {
			t.Errorf("%+v: %d hits, first %q", q, len(hits), hits[0].MatchedName)
		}
	}
	// A single token only matches single-token names.
	hits := ix.Screen(Query{LastName: "Hizballah"})
	if found(hits, ListOFAC, "4697") < 0 {
		t.Errorf("single-token name: %+v", hits)
	}
	// A missing surname kills the match: given names and patronymic alone.
	if found(ix.Screen(Query{FirstName: "Alyaksandr", LastName: "Ryhorovich"}), ListOFAC, "9760") >= 0 {
		t.Error("matched without the surname")
	}
	// An extra given name in the list does not.
	if found(ix.Screen(Query{FirstName: "Alyaksandr", LastName: "Lukashenka"}), ListOFAC, "9760") < 0 {
		t.Error("patronymic in the list killed the match")
	}
	// A middle name the list does not have costs little.
	if found(ix.Screen(Query{FirstName: "Alyaksandr", MiddleName: "Pavel", LastName: "Lukashenka"}), ListOFAC, "9760") < 0 {
		t.Error("extra middle name in the query killed the match")
	}
}

func TestEntities(t *testing.T) {
	ix := fullIndex(t)
	q := Query{FirstName: "Banco Nacional", LastName: "de Cuba"}
	hits := ix.Screen(q)
	i := found(hits, ListOFAC, "306")
	if i < 0 {
		t.Fatalf("entity not searchable: %+v", hits)
	}
	if hits[i].EntryType != TypeEntity || hits[i].Breakdown.TypeAdjust >= 0 {
		t.Errorf("entity hit: %+v", hits[i])
	}
	// A person with a birthday is not flooded with entities.
	q.Birthday = "1980-01-01"
	if found(ix.Screen(q), ListOFAC, "306") >= 0 {
		t.Error("entity matched a person query with a birthday")
	}
}

func TestHitInvariants(t *testing.T) {
	ix := fullIndex(t)
	queries := []Query{
		{FirstName: "Mohammed", LastName: "Ali"},
		{FirstName: "Kim", LastName: "Chol"},
		{FirstName: "Kim", LastName: "Jong Un", Nationality: "KP", Birthday: "1984-01-08"},
		{FirstName: "Nicolas", LastName: "Maduro Moros", Birthday: "1962-11-23", Nationality: "VE"},
	}
	for _, q := range queries {
		hits := ix.Screen(q)
		if len(hits) == 0 || len(hits) > MaxHits {
			t.Errorf("%+v: %d hits", q, len(hits))
		}
		seen := make(map[string]bool)
		for k, h := range hits {
			if k > 0 && hits[k-1].Score < h.Score {
				t.Errorf("%+v: not sorted", q)
			}
			if h.Score < ix.Threshold() || h.Score > 1 || h.Breakdown.NameScore < MinNameScore {
				t.Errorf("%+v: score %.3f name %.3f", q, h.Score, h.Breakdown.NameScore)
			}
			if math.Round(h.Score*1000)/1000 != h.Score {
				t.Errorf("score not rounded: %v", h.Score)
			}
			b := h.Breakdown
			sum := min(max(b.NameScore+b.BirthdayAdjust+b.NationalityAdjust+b.TypeAdjust, 0), 1)
			if math.Abs(sum-h.Score) > 0.0015 {
				t.Errorf("%+v: breakdown %.3f does not add up to score %.3f", q, sum, h.Score)
			}
			if len(b.Tokens) == 0 || h.Fields[0] != "name" {
				t.Errorf("%+v: no explanation: %+v", q, h)
			}
			e, ok := ix.Entry(h.List, h.EntryID)
			if !ok || e.Fingerprint != h.Fingerprint || e.Name != h.Name || e.Type != h.EntryType {
				t.Errorf("hit does not match its entry: %+v", h)
			}
			if h.Alias != (h.MatchedName != e.Name) || (h.Alias && !slices.Contains(e.Aliases, h.MatchedName)) {
				t.Errorf("matched name %q alias=%v of %+v", h.MatchedName, h.Alias, e)
			}
			if seen[h.List+h.EntryID] {
				t.Errorf("entry %s twice", h.EntryID)
			}
			seen[h.List+h.EntryID] = true
		}
	}
}

func TestScreener(t *testing.T) {
	s := NewScreener()
	if s.Current() != nil {
		t.Fatal("new screener has an index")
	}
	if _, _, err := s.Screen(Query{FirstName: "a", LastName: "b"}); err != ErrNoList {
		t.Errorf("Screen without list: %v", err)
	}
	ix := fullIndex(t)
	if old := s.Swap(ix); old != nil {
		t.Error("first swap returned an index")
	}
	hits, v, err := s.Screen(Query{FirstName: "Vladimir", LastName: "Putin"})
	if err != nil || v != ix.Version() || len(hits) == 0 {
		t.Errorf("Screen: %v %q %d", err, v, len(hits))
	}
}

// TestConcurrentScreenAndSwap runs Screen from several goroutines while the
// index is swapped; run with -race.
func TestConcurrentScreenAndSwap(t *testing.T) {
	full := fullIndex(t)
	small, err := Parse(nil, nil, bytes.NewReader(readShared(t, FileUN)), Meta{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewScreener()
	s.Swap(full)
	queries := []Query{
		{FirstName: "Kim", LastName: "Jong Un", Birthday: "1984-01-08"},
		{FirstName: "Alexander", LastName: "Lukashenko"},
		{FirstName: "Eric", LastName: "Badege"},
		{FirstName: "Elin", LastName: "Sandqvist"},
		{FirstName: "Мара", LastName: "Великова", Nationality: "BG"},
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var checks atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for k := 0; !stop.Load(); k++ {
				q := queries[(g+k)%len(queries)]
				ix := s.Current()
				hits := ix.Screen(q)
				for _, h := range hits {
					if _, ok := ix.Entry(h.List, h.EntryID); !ok {
						t.Errorf("hit %s/%s not in the index that produced it", h.List, h.EntryID)
					}
				}
				checks.Add(1)
			}
		})
	}
	swaps := 0
	for ; swaps < 200 || checks.Load() < 400; swaps++ {
		if swaps%2 == 0 {
			s.Swap(small)
		} else {
			s.Swap(full)
		}
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d concurrent checks during %d swaps", checks.Load(), swaps)
}

func TestQueryValidate(t *testing.T) {
	good := []Query{
		{FirstName: "Anna", LastName: "Schmidt"},
		{LastName: "Lee", Birthday: "1990-02-03", Nationality: "kr"},
		{FirstName: "Олена", LastName: "Шевчук", Nationality: "UA"},
	}
	bad := []Query{
		{},
		{FirstName: " - ", LastName: "."},
		{FirstName: "Anna", LastName: "Schmidt", Birthday: "03.02.1990"},
		{FirstName: "Anna", LastName: "Schmidt", Birthday: "1990-13-01"},
		{FirstName: "Anna", LastName: "Schmidt", Nationality: "DEU"},
	}
	for _, q := range good {
		if err := q.Validate(); err != nil {
			t.Errorf("%+v: %v", q, err)
		}
	}
	for _, q := range bad {
		if q.Validate() == nil {
			t.Errorf("%+v: no error", q)
		}
	}
}
