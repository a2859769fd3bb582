package screening

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The EU and UK lists are not in the shared data directory: their parsers
// are tested on fixtures written in the published layouts
// (testdata/eu_fsf_sample.xml, testdata/uk_conlist_sample.csv; invented
// people).

func TestParseEU(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "eu_fsf_sample.xml"))
	if err != nil {
		t.Fatal(err)
	}
	entries, published, unmapped, err := parseEU(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || published != "2026-02-20T18:00:00.000+01:00" || unmapped != 1 {
		t.Fatalf("%d entries, published %q, unmapped %d", len(entries), published, unmapped)
	}
	p := entries[0]
	if p.ID != "EU.9001.01" || p.Type != TypeIndividual || p.Name != "Tsikhanovich, Uladzimir Piatrovich" ||
		!slices.Contains(p.Aliases, "Vladimir Tikhonovich") || !slices.Contains(p.Aliases, "Тихонович, Владимир Петрович") ||
		!slices.Equal(p.Birthdates, []string{"1971-06-14"}) || !slices.Equal(p.Nationalities, []string{"BY"}) ||
		!slices.Equal(p.Programs, []string{"BLR"}) || len(p.Fingerprint) != 64 {
		t.Errorf("person: %+v", p)
	}
	if q := entries[1]; q.Name != "Abd al-Rahim Salih Qurban" || !slices.Equal(q.Birthdates, []string{"~1966", "1968..1970"}) || len(q.Nationalities) != 0 {
		t.Errorf("whole-name person: %+v", q)
	}
	if e := entries[2]; e.ID != "700003" || e.Type != TypeEntity || e.Name != "Severnaya Verf Trading LLC" {
		t.Errorf("entity without a reference number: %+v", e)
	}
	if _, _, _, err := parseEU([]byte(`<export xmlns="http://eu.europa.ec/fpi/fsd/export"></export>`)); err == nil {
		t.Error("an empty export parsed")
	}
}

func TestParseUK(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "uk_conlist_sample.csv"))
	if err != nil {
		t.Fatal(err)
	}
	entries, published, unmapped, err := parseUK(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || published != "2026-02-20" || unmapped != 0 {
		t.Fatalf("%d entries, published %q, unmapped %d", len(entries), published, unmapped)
	}
	k := entries[0]
	if k.ID != "90001" || k.Type != TypeIndividual || k.Name != "KOVALCHUK, Mykola Petrovych" ||
		!slices.Equal(k.Aliases, []string{"KOVALCHUK, Nikolay Petrovich"}) || !slices.Equal(k.Birthdates, []string{"1969-09-03"}) ||
		!slices.Equal(k.Nationalities, []string{"UA"}) || !slices.Equal(k.Programs, []string{"Russia"}) {
		t.Errorf("individual: %+v", k)
	}
	if h := entries[1]; !slices.Equal(h.Birthdates, []string{"1974", "1975-06"}) || !slices.Equal(h.Nationalities, []string{"AF", "PK"}) {
		t.Errorf("partial dates, two nationalities: %+v", h)
	}
	if s := entries[2]; s.Type != TypeEntity || s.Name != "NORTHERN STAR SHIPPING" {
		t.Errorf("entity: %+v", s)
	}
	if _, _, _, err := parseUK([]byte("Last Updated,20/02/2026\nName 6,Name 1\n")); err == nil {
		t.Error("a file without Group ID parsed")
	}
}

// TestEUUKScreened: LoadDir picks the EU and UK files up when they are in
// the directory, and their people are screened with the same engine (here a
// Belarusian form against the EU's, an initial and a Russian form against
// the UK's).
func TestEUUKScreened(t *testing.T) {
	dir := t.TempDir()
	for src, dst := range map[string]string{
		filepath.Join(sanctionsDir(t), FileSDN): FileSDN, filepath.Join(sanctionsDir(t), FileALT): FileALT,
		filepath.Join(sanctionsDir(t), FileUN): FileUN, filepath.Join("testdata", "eu_fsf_sample.xml"): FileEU,
		filepath.Join("testdata", "uk_conlist_sample.csv"): FileUK,
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range ix.Lists() {
		names = append(names, l.Name)
	}
	if !slices.Equal(names, []string{ListOFAC, ListUN, ListEU, ListUK}) {
		t.Fatalf("lists %v", names)
	}
	for _, c := range []struct {
		q        Query
		list, id string
	}{
		{Query{FirstName: "Vladimir", LastName: "Tsikhanovich", Birthday: "1971-06-14"}, ListEU, "EU.9001.01"},
		{Query{FirstName: "Abdul Rahim Salih", LastName: "Qurban"}, ListEU, "EU.9002.02"},
		{Query{FirstName: "N.", LastName: "Kovalchuk", MiddleName: "Petrovich", Nationality: "UA"}, ListUK, "90001"},
		{Query{FirstName: "Hamid", LastName: "Al Durrani", Birthday: "1975-02-02"}, ListUK, "90002"},
	} {
		if found(ix.Screen(c.q), c.list, c.id) < 0 {
			t.Errorf("%+v: %s/%s not found", c.q, c.list, c.id)
		}
	}
}
