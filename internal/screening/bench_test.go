package screening

import (
	"slices"
	"testing"
	"time"
)

// TestLoadTime logs how long LoadDir takes on the full lists (the goal is
// under 2 s; timing is not asserted in tests, see BenchmarkLoad).
func TestLoadTime(t *testing.T) {
	dir := sanctionsDir(t)
	start := time.Now()
	ix, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LoadDir: %v for %d entries, %d names, %d distinct tokens", time.Since(start), ix.Len(), len(ix.names), len(ix.toks))
}

func BenchmarkLoad(b *testing.B) {
	dir := sanctionsDir(b)
	for b.Loop() {
		if _, err := LoadDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// benchQueries mixes the labelled positives and the clean names.
func benchQueries(tb testing.TB, ix *Index) []Query {
	var qs []Query
	pos := generatePositives(ix)
	clean := loadCleanNames(tb)
	for i := 0; i < len(pos) || i < len(clean); i++ {
		if i < len(pos) {
			qs = append(qs, pos[i].q)
		}
		if i < len(clean) {
			qs = append(qs, clean[i].q)
		}
	}
	return qs
}

// BenchmarkScreen times single checks on the full lists over a mix of
// positive and clean queries and reports the p50 and p99 latency of one
// call (goal: p99 under 2 ms).
func BenchmarkScreen(b *testing.B) {
	ix := fullIndex(b)
	qs := benchQueries(b, ix)
	for _, q := range qs { // warm the scratch pool
		ix.Screen(q)
	}
	var durs []time.Duration
	i := 0
	for b.Loop() {
		q := qs[i%len(qs)]
		i++
		start := time.Now()
		ix.Screen(q)
		durs = append(durs, time.Since(start))
	}
	slices.Sort(durs)
	pct := func(p float64) float64 { return float64(durs[int(p*float64(len(durs)-1))].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
	b.ReportMetric(float64(durs[len(durs)-1].Nanoseconds()), "max-ns")
}

// companyBenchQueries mixes the generated company variations and the
// clean merchant names.
func companyBenchQueries(tb testing.TB, ix *Index) []CompanyQuery {
	var qs []CompanyQuery
	pos := generateCompanyVariations(ix, companySeed)
	clean := loadCleanCompanies(tb)
	for i := 0; i < len(pos) || i < len(clean); i++ {
		if i < len(pos) {
			qs = append(qs, pos[i].q)
		}
		if i < len(clean) {
			qs = append(qs, clean[i].q)
		}
	}
	return qs
}

// BenchmarkScreenCompany times single company checks on the full lists
// over a mix of listed-entity variations and clean merchant names and
// reports the p50 and p99 latency of one call (goal: p99 under 1 ms on a
// quiet machine).
func BenchmarkScreenCompany(b *testing.B) {
	ix := fullIndex(b)
	qs := companyBenchQueries(b, ix)
	for _, q := range qs { // warm the scratch pool
		ix.ScreenCompany(q)
	}
	var durs []time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		q := qs[i%len(qs)]
		i++
		start := time.Now()
		ix.ScreenCompany(q)
		durs = append(durs, time.Since(start))
	}
	slices.Sort(durs)
	pct := func(p float64) float64 { return float64(durs[int(p*float64(len(durs)-1))].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
	b.ReportMetric(float64(durs[len(durs)-1].Nanoseconds()), "max-ns")
}
