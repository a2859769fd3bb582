package screening

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Published figures (README of the shared data directory).
const (
	sdnSHA256 = "210ca6b4a8187a34e0850be69ecc6e918f23ad7778b8b5b2f9c9d5fbbaf4e0cb"
	altSHA256 = "f8c1cab56b08fb83ab4c06a4b9823c042ae645b853858049d076f729152de992"
	unSHA256  = "66b392a4090868d2d39161e8d748efd39138377b0e6e60b7921aa67a4f99c8bf"
)

func readShared(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(sanctionsDir(tb), name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestParseOFAC(t *testing.T) {
	sdn, alt := readShared(t, FileSDN), readShared(t, FileALT)
	entries, skipped, unmapped, err := parseOFAC(sdn, alt)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 14965 {
		t.Errorf("entries = %d, want 14965", len(entries))
	}
	types := make(map[string]int)
	var aliases, withDOB, withNat, weak int
	for _, e := range entries {
		types[e.Type]++
		aliases += len(e.Aliases)
		weak += len(e.WeakAliases)
		if len(e.Birthdates) > 0 {
			withDOB++
		}
		if len(e.Nationalities) > 0 {
			withNat++
		}
		if len(e.Fingerprint) != 64 {
			t.Fatalf("%s: fingerprint %q", e.ID, e.Fingerprint)
		}
	}
	want := map[string]int{TypeIndividual: 6854, TypeVessel: 851, TypeAircraft: 376, TypeEntity: 6884}
	for k, v := range want {
		if types[k] != v {
			t.Errorf("%s: %d, want %d", k, types[k], v)
		}
	}
	// alt.csv has 20,107 rows; 2,460 belong to entries added after the
	// sdn.csv snapshot and are skipped; the rest are joined (no duplicates).
	if skipped != 2460 || aliases != 20107-2460 {
		t.Errorf("aliases joined %d, skipped %d; want %d, 2460", aliases, skipped, 20107-2460)
	}
	if withDOB != 6736 {
		t.Errorf("entries with a DOB: %d, want 6736 (README)", withDOB)
	}
	// Unmapped nationality/citizenship values are dropped and counted:
	// exactly one in this snapshot ("nationality Region: Gaza").
	if unmapped != 1 {
		t.Errorf("unmapped OFAC nationalities: %d, want 1", unmapped)
	}
	t.Logf("OFAC: %d entries, %d aliases joined, %d skipped, %d weak aliases, %d with DOB, %d with nationality, %d unmapped nationality values",
		len(entries), aliases, skipped, weak, withDOB, withNat, unmapped)

	byID := make(map[string]Entry)
	for _, e := range entries {
		byID[e.ID] = e
	}
	luk := byID["9760"]
	if luk.Name != "LUKASHENKA, Alyaksandr Ryhorovich" || luk.Type != TypeIndividual {
		t.Errorf("9760: %+v", luk)
	}
	if !slices.Contains(luk.Aliases, "LUKASHENKO, Alexander Grigoryevich") || len(luk.Aliases) != 5 {
		t.Errorf("9760 aliases: %q", luk.Aliases)
	}
	if !slices.Equal(luk.Birthdates, []string{"1954-08-30", "1954-08-31"}) {
		t.Errorf("9760 birthdates: %q", luk.Birthdates)
	}
	if !slices.Equal(luk.Nationalities, []string{"BY"}) || !slices.Equal(luk.Programs, []string{"BELARUS"}) {
		t.Errorf("9760: %q %q", luk.Nationalities, luk.Programs)
	}
	kim := byID["20157"]
	if kim.Name != "KIM, Jong Un" || !slices.Equal(kim.Birthdates, []string{"1984-01-08"}) || !slices.Equal(kim.Programs, []string{"DPRK3"}) {
		t.Errorf("20157: %+v", kim)
	}
	bnc := byID["306"]
	if bnc.Type != TypeEntity || !slices.Equal(bnc.WeakAliases, []string{"BNC"}) || !slices.Equal(bnc.Aliases, []string{"NATIONAL BANK OF CUBA"}) {
		t.Errorf("306: %+v", bnc)
	}
	// Birthdate forms found in the data.
	forms := map[string]string{"6862": "1938-09", "7782": "~1951", "12057": "1951..1953", "2678": "1946"}
	for id, b := range forms {
		if !slices.Contains(byID[id].Birthdates, b) {
			t.Errorf("%s birthdates %q, want %q among them", id, byID[id].Birthdates, b)
		}
	}
}

func TestParseOFACDOB(t *testing.T) {
	cases := map[string]string{
		"08 Jan 1984":                "1984-01-08",
		"1962":                       "1962",
		"circa 1962":                 "~1962",
		"Dec 1960":                   "1960-12",
		"1960 to 1962":               "1960..1962",
		"01 Jan 1960 to 31 Dec 1962": "1960..1962",
		"01 Jan 1960 to 31 Dec 1960": "1960",
		"Mar 1960 to Mar 1962":       "1960..1962",
		"05 Mar 1960 to 05 Mar 1960": "1960-03-05",
		"unknown":                    "",
		"32 Jan 1960":                "",
		"1500":                       "",
	}
	for in, want := range cases {
		if got := parseOFACDOB(in); got != want {
			t.Errorf("parseOFACDOB(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseUN(t *testing.T) {
	entries, published, unmapped, err := parseUN(readShared(t, FileUN))
	if err != nil {
		t.Fatal(err)
	}
	var ind, ent, aliases int
	for _, e := range entries {
		switch e.Type {
		case TypeIndividual:
			ind++
		case TypeEntity:
			ent++
		}
		aliases += len(e.Aliases)
	}
	if ind != 730 || ent != 273 {
		t.Errorf("UN: %d individuals, %d entities; want 730, 273", ind, ent)
	}
	if published != "2026-02-27T00:00:09.554Z" {
		t.Errorf("published %q", published)
	}
	// "former Soviet Union" and "na" do not map to a country code.
	if unmapped != 2 {
		t.Errorf("unmapped UN nationalities: %d, want 2", unmapped)
	}
	t.Logf("UN: %d individuals, %d entities, %d aliases, %d unmapped nationality values", ind, ent, aliases, unmapped)
	byID := make(map[string]Entry)
	for _, e := range entries {
		byID[e.ID] = e
	}
	e := byID["CDi.001"]
	if e.Name != "ERIC BADEGE" || !slices.Equal(e.Birthdates, []string{"1971"}) || !slices.Equal(e.Nationalities, []string{"CD"}) || !slices.Equal(e.Programs, []string{"DRC"}) {
		t.Errorf("CDi.001: %+v", e)
	}
	e = byID["CDi.002"]
	if e.Name != "FRANK KAKOLELE BWAMBALE" || !slices.Contains(e.Aliases, "FRANK KAKORERE BWAMBALE") {
		t.Errorf("CDi.002: %+v", e)
	}
	e = byID["LYi.019"]
	if !slices.Equal(e.Aliases, []string{"Safia Farkash Mohammed Al-Hadad"}) {
		t.Errorf("LYi.019 alias not cleaned: %q", e.Aliases)
	}
	e = byID["CDe.001"]
	if e.Type != TypeEntity || e.Name != "ADF" {
		t.Errorf("CDe.001: %+v", e)
	}
	var between, approx int
	for _, e := range entries {
		for _, b := range e.Birthdates {
			if strings.Contains(b, "..") {
				between++
			}
			if strings.HasPrefix(b, "~") {
				approx++
			}
		}
	}
	if between == 0 || approx == 0 {
		t.Errorf("UN birthdates: %d ranges, %d approximate; want some of each", between, approx)
	}
}

func TestUNDOB(t *testing.T) {
	cases := []struct {
		d    unDOB
		want string
	}{
		{unDOB{Type: "EXACT", Date: "1984-01-08"}, "1984-01-08"},
		{unDOB{Type: "EXACT", Year: "1971"}, "1971"},
		{unDOB{Type: "APPROXIMATELY", Year: "1966"}, "~1966"},
		{unDOB{Type: "BETWEEN", FromYear: "1960", ToYear: "1962"}, "1960..1962"},
		{unDOB{Type: ""}, ""},
	}
	for _, c := range cases {
		if got := unDOBString(c.d); got != c.want {
			t.Errorf("%+v -> %q, want %q", c.d, got, c.want)
		}
	}
}

func TestSplitUNAlias(t *testing.T) {
	cases := map[string][]string{
		"Qasim Soleimani; Qasem Sulaimani":                         {"Qasim Soleimani", "Qasem Sulaimani"},
		"Mohammed Sabet; Mohammad Sabet b) M. Javad Sabet":         {"Mohammed Sabet", "Mohammad Sabet", "M. Javad Sabet"},
		"Encep Nurjaman (birth name)":                              {"Encep Nurjaman"},
		"Jin Tiesan (金铁三)":                                         {"Jin Tiesan"},
		"Safia Farkash Al-Hadad, born 1 Jan. 1953 (Oman passport)": {"Safia Farkash Al-Hadad"},
		"“Chief Kahwa”":                                            {"Chief Kahwa"},
		"":                                                         nil,
	}
	for in, want := range cases {
		if got := splitUNAlias(in); !slices.Equal(got, want) {
			t.Errorf("splitUNAlias(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadDir(t *testing.T) {
	ix := fullIndex(t)
	if ix.Len() != 14965+1003 {
		t.Errorf("Len = %d", ix.Len())
	}
	lists := ix.Lists()
	if len(lists) != 2 || lists[0].Name != ListOFAC || lists[1].Name != ListUN {
		t.Fatalf("lists %+v", lists)
	}
	o, u := lists[0], lists[1]
	if o.Entries != 14965 || o.Aliases != 17647 || o.SHA256 != sdnSHA256 || len(o.Files) != 2 || o.Files[1].SHA256 != altSHA256 {
		t.Errorf("ofac %+v", o)
	}
	if u.Entries != 1003 || u.SHA256 != unSHA256 || u.Published != "2026-02-27T00:00:09.554Z" {
		t.Errorf("un %+v", u)
	}
	if o.LoadedAt.IsZero() || !strings.HasSuffix(o.Source, FileALT) {
		t.Errorf("ofac source/loaded %+v", o)
	}
	if ix.UnmappedNationalities() != 3 {
		t.Errorf("unmapped nationalities %d, want 3 (1 OFAC + 2 UN)", ix.UnmappedNationalities())
	}
	if len(ix.Version()) != 12 {
		t.Errorf("version %q", ix.Version())
	}
	// The version depends only on the data.
	again, err := Parse(bytes.NewReader(readShared(t, FileSDN)), bytes.NewReader(readShared(t, FileALT)),
		bytes.NewReader(readShared(t, FileUN)), Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Version() != ix.Version() {
		t.Errorf("version not stable: %s vs %s", again.Version(), ix.Version())
	}
	e, ok := ix.Entry(ListUN, "CDi.001")
	if !ok || e.Name != "ERIC BADEGE" {
		t.Errorf("Entry(un_sc, CDi.001) = %+v, %v", e, ok)
	}
	// Entry returns a copy.
	e.Aliases = append(e.Aliases, "X")
	e2, _ := ix.Entry(ListUN, "CDi.001")
	if len(e2.Aliases) != 0 {
		t.Error("Entry shares its slices")
	}
	if _, ok := ix.Entry(ListOFAC, "999999"); ok {
		t.Error("unknown entry found")
	}
	if ix.Threshold() != DefaultThreshold {
		t.Errorf("threshold %v", ix.Threshold())
	}
}

func TestLoadDirMissing(t *testing.T) {
	if _, err := LoadDir(t.TempDir()); err == nil {
		t.Error("LoadDir on an empty directory succeeded")
	}
}

func TestParseErrors(t *testing.T) {
	sdn, alt, un := readShared(t, FileSDN), readShared(t, FileALT), readShared(t, FileUN)
	r := func(b []byte) *bytes.Reader { return bytes.NewReader(b) }
	cases := map[string]func() error{
		"no list": func() error { _, err := Parse(nil, nil, nil, Meta{}); return err },
		"garbage sdn": func() error {
			_, err := Parse(r([]byte("<html>Service unavailable</html>\n")), r(alt), r(un), Meta{})
			return err
		},
		"sdn cut mid-record": func() error {
			_, err := Parse(r(sdn[:len(sdn)/2]), r(alt), r(un), Meta{})
			return err
		},
		"empty sdn": func() error { _, err := Parse(r(nil), r(alt), r(un), Meta{}); return err },
		"truncated un": func() error {
			_, err := Parse(r(sdn), r(alt), r(un[:len(un)/2]), Meta{})
			return err
		},
		"garbage un": func() error {
			_, err := Parse(r(sdn), r(alt), r([]byte("not xml at all")), Meta{})
			return err
		},
		"empty un list": func() error {
			_, err := Parse(nil, nil, r([]byte(`<CONSOLIDATED_LIST><INDIVIDUALS/><ENTITIES/></CONSOLIDATED_LIST>`)), Meta{})
			return err
		},
		"garbage alt": func() error {
			_, err := Parse(r(sdn), r([]byte("a,b\n\"unterminated")), r(un), Meta{})
			return err
		},
	}
	for name, f := range cases {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Only one list, or no aliases, is allowed.
	ix, err := Parse(r(sdn), nil, nil, Meta{})
	if err != nil || len(ix.Lists()) != 1 || ix.Lists()[0].Aliases != 0 {
		t.Errorf("OFAC only: %v", err)
	}
	ix, err = Parse(nil, nil, r(un), Meta{})
	if err != nil || ix.Len() != 1003 {
		t.Errorf("UN only: %v", err)
	}
}
