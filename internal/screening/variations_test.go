package screening

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The variation generator: listed people written the way real customers
// write them. Each class is one kind of difference between how a list
// publishes a name and how a person types it; the generator applies it to
// entries drawn with a fixed seed, so the figures are repeatable and
// TestRecallByVariation reports recall per class. It was written from
// general knowledge of naming conventions (Spanish double surnames, Arabic
// articles and theophoric names, Korean syllables, German and French
// transliteration of Cyrillic...), not from any list of missed examples.
//
// Run it with
//
//	go test ./internal/screening -run 'TestRecallByVariation' -v
//
// (EMI_VARIATION_SEED=n draws another sample; the goals hold for any seed
// that was tried, see the README).

const (
	variationSeed = 77031
	perClass      = 150
	// goals on the generated set: overall recall, per class, and
	// false-positive rate on clean names.
	goalGenRecall = 0.97
	goalGenClass  = 0.90
	goalGenFPR    = 0.01
)

// variationClasses, in report order.
var variationClasses = []string{
	"middle_added",   // an extra given name after the first
	"middle_initial", // an initial after the first given name, or a later given name as initial
	"first_initial",  // the first given name as an initial
	"joined",         // two adjacent name parts written as one word
	"split",          // one word with an article/prefix or two syllables written as two
	"translit",       // another transliteration system for one word
	"equivalent",     // a given name in another language's form
	"year_off",       // one year off a year-only listing, with an extra given name
	"near_date",      // exact name, full date 1 to 4 years off a listed full date
	"combined",       // surname first, plus an extra given name, no diacritics
	"two_typos",      // two typos, in one word or two (must keep working)
}

// extraGiven are given names added as middle names.
var extraGiven = []string{
	"Maria", "Jose", "Ahmed", "Karim", "Elena", "Pavel", "Hassan", "Omar",
	"Luis", "Fatima", "Ivan", "Sergei", "Yusuf", "Daniel", "Alberto",
	"Rafael", "Nadia", "Samir", "Tariq", "Olga", "Jorge", "Carmen",
	"Anwar", "Bilal", "Khalid", "Lucia", "Andres", "Viktor", "Tatiana",
	"Hamza", "Ibrahim", "Mariam", "Sung", "Young", "Chen", "Wei",
}

// nameForms are given names in the forms different languages and
// transliterations give them (a test-side list written apart from
// givennames.go; each row is one name).
var nameForms = [][]string{
	{"Alexander", "Aleksandr", "Alyaksandr", "Oleksandr", "Aleksander", "Alexandre", "Alessandro", "Alejandro"},
	{"Vladimir", "Uladzimir", "Volodymyr", "Wladimir", "Włodzimierz"},
	{"Nikolay", "Nikolai", "Mykola", "Mikalai", "Nicolas", "Nikola", "Mikola"},
	{"Konstantin", "Kanstantsin", "Kostiantyn", "Kostyantyn", "Constantin"},
	{"Dmitry", "Dmitri", "Dzmitry", "Dmytro", "Dimitri"},
	{"Sergey", "Sergei", "Siarhei", "Serhiy", "Serhii", "Sergiu"},
	{"Yuri", "Yury", "Yuriy", "Yurii", "Iouri", "Jurij", "Yuras"},
	{"Mikhail", "Mikhael", "Mykhailo", "Mikhas", "Michail", "Michael"},
	{"Pavel", "Pavlo", "Paval", "Paul", "Pawel"},
	{"Petr", "Pyotr", "Petro", "Piotr", "Pyotra", "Peter"},
	{"Viktor", "Victor", "Wiktor", "Viktar"},
	{"Andrey", "Andrei", "Andriy", "Andrii", "Andrej", "Andrzej", "Andrew"},
	{"Ivan", "Iwan", "Ioann", "Jan", "Juan"},
	{"Georgy", "Georgiy", "Heorhiy", "Yuriy", "Georgi", "George", "Jurgis"},
	{"Mohammed", "Muhammad", "Mohamed", "Mohammad", "Muhammed", "Mehmet", "Magomed", "Mohd", "Mamadou"},
	{"Ahmed", "Ahmad", "Akhmed", "Ahmet", "Achmed"},
	{"Abdulrahman", "Abd al-Rahman", "Abdel Rahman", "Abdurrahman", "Abdul Rahman"},
	{"Abdullah", "Abdallah", "Abd Allah", "Abdulla", "Abdellah"},
	{"Abdulaziz", "Abd al-Aziz", "Abdelaziz", "Abdul Aziz"},
	{"Yusuf", "Yousef", "Youssef", "Yusif", "Joseph", "Josef", "Yousif"},
	{"Husayn", "Hussein", "Hussain", "Husain", "Hüseyin", "Houssein"},
	{"Umar", "Omar", "Omer", "Ömer"},
	{"Uthman", "Othman", "Osman", "Usman", "Ousmane"},
	{"Ibrahim", "Ebrahim", "Ibragim", "Brahim", "Abraham"},
	{"Mustafa", "Mostafa", "Moustafa", "Mustapha"},
	{"Chol", "Chul", "Cheol"},
	{"Kyong", "Kyung", "Gyeong", "Gyong"},
	{"Song", "Seong", "Sung"},
	{"Hyon", "Hyun", "Hyeon"},
	{"Yong", "Young", "Yeong"},
	{"Myong", "Myung", "Myeong"},
	{"Jose", "José", "Josep", "Joseph"},
	{"Joaquin", "Joaquim", "Joachim"},
	{"Kirill", "Kiryl", "Kyrylo", "Cyril"},
	{"Aleksey", "Alexei", "Aliaksei", "Oleksiy", "Alexey"},
	{"Anatoly", "Anatoli", "Anatoliy", "Anatol"},
	{"Valery", "Valeriy", "Valeri", "Valer"},
	{"Yevgeny", "Evgeny", "Yevgeniy", "Yauhen", "Yevhen", "Eugene"},
	{"Grigory", "Grigoriy", "Hryhoriy", "Ryhor", "Gregory"},
	{"Leonid", "Leanid", "Leonidas"},
}

// variationRecord is one generated positive.
type variationRecord struct {
	class    string
	q        Query
	list, id string
}

// rawWords splits a name field into words at spaces and hyphens.
func rawWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '-' })
}

func coreCount(words []string) int {
	n := 0
	for _, w := range words {
		for _, t := range normTokens(w, langAuto) {
			if !isParticle(t) {
				n++
			}
		}
	}
	return n
}

func isSimpleWord(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) || r >= 0x80 {
			return false
		}
	}
	return w != ""
}

// generateVariations draws perClass positives of every class.
func generateVariations(ix *Index, seed uint64) []variationRecord {
	rng := rand.New(rand.NewPCG(seed, 11))
	var ofac, un []*Entry
	ix.Entries(func(e *Entry) bool {
		if e.Type != TypeIndividual {
			return true
		}
		f, l := splitForQuery(e.Name, e.List == ListOFAC)
		if !queryable(f, l) {
			return true
		}
		if e.List == ListOFAC {
			ofac = append(ofac, e)
		} else {
			un = append(un, e)
		}
		return true
	})
	var out []variationRecord
	for _, class := range variationClasses {
		used := make(map[string]bool)
		for k := range perClass {
			pool := ofac
			if k%5 == 4 {
				pool = un
			}
			for range 20000 {
				e := pool[rng.IntN(len(pool))]
				if used[e.List+e.ID] {
					continue
				}
				if q, ok := makeVariation(rng, class, e); ok {
					used[e.List+e.ID] = true
					out = append(out, variationRecord{class: class, q: q, list: e.List, id: e.ID})
					break
				}
			}
		}
	}
	return out
}

func initialOf(rng *rand.Rand, w string) string {
	r := []rune(w)[0]
	s := string(unicode.ToUpper(r))
	if rng.IntN(2) == 0 {
		s += "."
	}
	return s
}

// makeVariation writes entry e in class's way; false when e does not lend
// itself to the class.
func makeVariation(rng *rand.Rand, class string, e *Entry) (Query, bool) {
	first, last := splitForQuery(e.Name, e.List == ListOFAC)
	fw, lw := rawWords(first), rawWords(last)
	if len(fw) == 0 || len(lw) == 0 {
		return Query{}, false
	}
	for _, w := range append(slices.Clone(fw), lw...) {
		if !isSimpleWord(w) {
			return Query{}, false // keep the generator to plain Latin names
		}
	}
	join := func(ws []string) string { return strings.Join(ws, " ") }
	q := Query{FirstName: first, LastName: last}
	switch class {
	case "middle_added":
		x := extraGiven[rng.IntN(len(extraGiven))]
		if strings.Contains(strings.ToLower(e.Name), strings.ToLower(x)) {
			return q, false
		}
		q.FirstName = join(slices.Insert(slices.Clone(fw), 1, x))
	case "middle_initial":
		if len(fw) >= 2 && rng.IntN(2) == 0 && !isParticle(strings.ToLower(fw[1])) {
			g := slices.Clone(fw)
			g[1] = initialOf(rng, g[1])
			q.FirstName = join(g)
		} else {
			l := string(rune('A' + rng.IntN(26)))
			if rng.IntN(2) == 0 {
				l += "."
			}
			q.FirstName = join(slices.Insert(slices.Clone(fw), 1, l))
		}
	case "first_initial":
		if isParticle(strings.ToLower(fw[0])) || coreCount(fw[1:])+coreCount(lw) < 2 {
			return q, false
		}
		g := slices.Clone(fw)
		g[0] = initialOf(rng, g[0])
		q.FirstName = join(g)
	case "joined":
		// two adjacent words of one field, one of them short (a particle
		// or a syllable), written as one
		type at struct {
			last bool
			i    int
		}
		var cands []at
		for i := 0; i+1 < len(fw); i++ {
			if len(fw[i]) <= 4 || len(fw[i+1]) <= 4 {
				cands = append(cands, at{false, i})
			}
		}
		for i := 0; i+1 < len(lw); i++ {
			if len(lw[i]) <= 4 || len(lw[i+1]) <= 4 {
				cands = append(cands, at{true, i})
			}
		}
		if len(cands) == 0 {
			return q, false
		}
		c := cands[rng.IntN(len(cands))]
		ws := fw
		if c.last {
			ws = lw
		}
		ws = slices.Clone(ws)
		ws[c.i] = ws[c.i] + strings.ToLower(ws[c.i+1])
		ws = slices.Delete(ws, c.i+1, c.i+2)
		if c.last {
			q.LastName = join(ws)
		} else {
			q.FirstName = join(ws)
		}
		if coreCount(rawWords(q.FirstName))+coreCount(rawWords(q.LastName)) < 2 {
			return q, false
		}
	case "split":
		prefixes := []string{"abdul", "abdel", "abd", "abu", "bin", "ben", "ibn", "al", "el", "ul"}
		type at struct {
			last bool
			i, p int
		}
		var cands []at
		for li, ws := range [][]string{fw, lw} {
			for i, w := range ws {
				lw := strings.ToLower(w)
				for _, p := range prefixes {
					if strings.HasPrefix(lw, p) && len(lw)-len(p) >= 4 {
						cands = append(cands, at{li == 1, i, len(p)})
						break
					}
				}
			}
		}
		if len(cands) == 0 {
			return q, false
		}
		c := cands[rng.IntN(len(cands))]
		ws := fw
		if c.last {
			ws = lw
		}
		ws = slices.Clone(ws)
		w := ws[c.i]
		sep := " "
		if rng.IntN(2) == 0 {
			sep = "-"
		}
		rest := w[c.p:]
		ws[c.i] = w[:c.p] + sep + strings.ToUpper(rest[:1]) + strings.ToLower(rest[1:])
		if c.last {
			q.LastName = join(ws)
		} else {
			q.FirstName = join(ws)
		}
	case "translit":
		all := append(slices.Clone(fw), lw...)
		i := rng.IntN(len(all))
		w, ok := translitVariant(rng, all[i])
		if !ok {
			return q, false
		}
		all[i] = w
		q.FirstName, q.LastName = join(all[:len(fw)]), join(all[len(fw):])
	case "equivalent":
		for gi, w := range fw {
			for _, row := range nameForms {
				k := slices.IndexFunc(row, func(f string) bool { return strings.EqualFold(f, w) })
				if k < 0 {
					continue
				}
				alt := row[rng.IntN(len(row))]
				if strings.EqualFold(alt, w) {
					alt = row[(k+1)%len(row)]
				}
				g := slices.Clone(fw)
				g[gi] = alt
				q.FirstName = join(g)
				return q, true
			}
		}
		return q, false
	case "year_off":
		y, ok := yearOnly(e)
		if !ok {
			return q, false
		}
		x := extraGiven[rng.IntN(len(extraGiven))]
		if strings.Contains(strings.ToLower(e.Name), strings.ToLower(x)) {
			return q, false
		}
		q.FirstName = join(slices.Insert(slices.Clone(fw), 1, x))
		d := 1
		if rng.IntN(2) == 0 {
			d = -1
		}
		q.Birthday = fmt.Sprintf("%04d-%02d-%02d", y+d, 1+rng.IntN(12), 1+rng.IntN(28))
	case "near_date":
		var dates []string
		for _, b := range e.Birthdates {
			if len(b) == 10 {
				dates = append(dates, b)
			}
		}
		if len(dates) != 1 || len(e.Birthdates) != 1 {
			return q, false
		}
		y, _ := strconv.Atoi(dates[0][:4])
		d := 1 + rng.IntN(4)
		if rng.IntN(2) == 0 {
			d = -d
		}
		q.Birthday = fmt.Sprintf("%04d-%02d-%02d", y+d, 1+rng.IntN(12), 1+rng.IntN(28))
	case "combined":
		x := extraGiven[rng.IntN(len(extraGiven))]
		if strings.Contains(strings.ToLower(e.Name), strings.ToLower(x)) {
			return q, false
		}
		g := slices.Insert(slices.Clone(fw), 1, x)
		q = Query{FirstName: stripDiacritics(last), LastName: stripDiacritics(join(g))}
	case "two_typos":
		f, l, ok := typo(rng, first, last)
		if !ok {
			return q, false
		}
		f, l, ok = typo(rng, f, l)
		if !ok {
			return q, false
		}
		q.FirstName, q.LastName = f, l
	default:
		panic(class)
	}
	return q, true
}

// yearOnly returns the year of an entry listed with year-only birthdates
// (one year or "circa"), and no full date.
func yearOnly(e *Entry) (int, bool) {
	if len(e.Birthdates) == 0 {
		return 0, false
	}
	for _, b := range e.Birthdates {
		if len(b) != 4 {
			return 0, false
		}
	}
	y, err := strconv.Atoi(e.Birthdates[0])
	return y, err == nil
}

// translitVariant rewrites one word as another romanization system would:
// German (sch, tsch, ch for kh, j for y, w for v at the end), French (ou
// for u, dj for j), Czech/Croatian letters (š, č, ž) and a few others.
func translitVariant(rng *rand.Rand, w string) (string, bool) {
	lw := strings.ToLower(w)
	type rule struct{ from, to string }
	rules := []rule{
		{"sh", "sch"}, {"sh", "š"}, {"ch", "tsch"}, {"ch", "č"}, {"zh", "ž"},
		{"kh", "ch"}, {"ya", "ja"}, {"yu", "ju"}, {"ye", "je"}, {"ov", "ow"},
		{"ev", "ew"}, {"iy", "ij"}, {"u", "ou"}, {"j", "dj"}, {"ts", "tz"},
		{"q", "k"}, {"ee", "i"}, {"ii", "i"}, {"y", "i"}, {"x", "ks"},
	}
	var ok []rule
	for _, r := range rules {
		if strings.Contains(lw, r.from) {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return "", false
	}
	r := ok[rng.IntN(len(ok))]
	i := strings.Index(lw, r.from)
	out := lw[:i] + r.to + lw[i+len(r.from):]
	rs := []rune(out)
	rs[0] = unicode.ToUpper(rs[0])
	return string(rs), true
}

// namesakes are listed names with a birthday ten or more years from every
// listed birthdate: the same name, another person, never to be flagged
// against that entry (the birthday veto).
func generateNamesakes(ix *Index, seed uint64, n int) []variationRecord {
	rng := rand.New(rand.NewPCG(seed, 13))
	var pool []*Entry
	ix.Entries(func(e *Entry) bool {
		if e.Type == TypeIndividual && len(e.Birthdates) > 0 {
			f, l := splitForQuery(e.Name, e.List == ListOFAC)
			if queryable(f, l) {
				pool = append(pool, e)
			}
		}
		return true
	})
	var out []variationRecord
	used := make(map[string]bool)
	for len(out) < n {
		e := pool[rng.IntN(len(pool))]
		if used[e.ID] {
			continue
		}
		used[e.ID] = true
		lo, hi := 3000, 0
		for _, b := range e.Birthdates {
			if r, ok := parseDOBRange(b); ok {
				lo, hi = min(lo, r.lo), max(hi, r.hi)
			}
		}
		if hi == 0 {
			continue
		}
		y := hi + 10 + rng.IntN(15)
		if rng.IntN(2) == 0 && lo-10 > 1930 {
			y = lo - 10 - rng.IntN(10)
		}
		if y > 2006 {
			continue
		}
		f, l := splitForQuery(e.Name, e.List == ListOFAC)
		out = append(out, variationRecord{class: "namesake", list: e.List, id: e.ID,
			q: Query{FirstName: f, LastName: l, Birthday: fmt.Sprintf("%04d-%02d-%02d", y, 1+rng.IntN(12), 1+rng.IntN(28))}})
	}
	return out
}

func variationSeedFromEnv() uint64 {
	seed := uint64(variationSeed)
	if s := os.Getenv("EMI_VARIATION_SEED"); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			seed = v
		}
	}
	return seed
}

// TestRecallByVariation reports recall per variation class on the
// generated set, the veto on namesakes, and the false-positive rate on the
// clean names, as the Markdown table of the README.
func TestRecallByVariation(t *testing.T) {
	ix := fullIndex(t)
	seed := variationSeedFromEnv()
	recs := generateVariations(ix, seed)
	type stat struct{ n, ok int }
	per := make(map[string]*stat)
	var total stat
	for _, r := range recs {
		s := per[r.class]
		if s == nil {
			s = &stat{}
			per[r.class] = s
		}
		s.n++
		total.n++
		hits := ix.Screen(r.q)
		if found(hits, r.list, r.id) >= 0 {
			s.ok++
			total.ok++
			continue
		}
		e, _ := ix.Entry(r.list, r.id)
		msg := fmt.Sprintf("MISS %-14s %s/%s %q %v: query %q / %q %s", r.class, r.list, r.id, e.Name, e.Birthdates, r.q.FirstName, r.q.LastName, r.q.Birthday)
		if len(hits) > 0 {
			msg += fmt.Sprintf(" (best: %s %q %.3f)", hits[0].EntryID, hits[0].MatchedName, hits[0].Score)
		}
		if testing.Verbose() && os.Getenv("EMI_VARIATION_MISSES") != "" {
			t.Log(msg)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| class | recall |\n|---|---|\n")
	for _, c := range variationClasses {
		s := per[c]
		if s == nil || s.n == 0 {
			t.Errorf("class %s: no positives generated", c)
			continue
		}
		r := float64(s.ok) / float64(s.n)
		fmt.Fprintf(&b, "| %s | %d/%d = %.3f |\n", c, s.ok, s.n, r)
		goal := goalGenClass
		if c == "two_typos" {
			// two edits in one word of four to six letters often make
			// another word (BAHAJI / AHAI): the old engine found 0.687
			goal = 0.75
		}
		if r < goal {
			t.Errorf("recall for %s %.3f below %.2f", c, r, goal)
		}
	}
	recall := float64(total.ok) / float64(total.n)
	fmt.Fprintf(&b, "| **all classes** | %d/%d = **%.3f** |\n", total.ok, total.n, recall)

	names := generateNamesakes(ix, seed, 300)
	flagged := 0
	for _, r := range names {
		if found(ix.Screen(r.q), r.list, r.id) >= 0 {
			flagged++
			if testing.Verbose() && os.Getenv("EMI_VARIATION_MISSES") != "" {
				e, _ := ix.Entry(r.list, r.id)
				t.Logf("NAMESAKE FLAGGED %s/%s %q %v: %q / %q %s", r.list, r.id, e.Name, e.Birthdates, r.q.FirstName, r.q.LastName, r.q.Birthday)
			}
		}
	}
	fmt.Fprintf(&b, "| namesakes born ≥ 10 years apart flagged | %d/%d |\n", flagged, len(names))

	clean := loadCleanNames(t)
	fp := 0
	cultures := make(map[string]bool)
	for _, c := range clean {
		cultures[c.culture] = true
		hits := ix.Screen(c.q)
		if len(hits) == 0 {
			continue
		}
		fp++
		t.Logf("FALSE POSITIVE line %d %q / %q -> %s/%s %q score %.3f %v %v", c.line, c.q.FirstName, c.q.LastName,
			hits[0].List, hits[0].EntryID, hits[0].MatchedName, hits[0].Score, hits[0].Breakdown.Tokens, hits[0].Breakdown.Notes)
	}
	fpr := float64(fp) / float64(len(clean))
	fmt.Fprintf(&b, "| false positives on clean names (%d names, %d culture groups) | %d/%d = **%.4f** |\n", len(clean), len(cultures), fp, len(clean), fpr)
	t.Logf("seed %d%s", seed, b.String())

	if recall < goalGenRecall {
		t.Errorf("recall %.3f below %.2f", recall, goalGenRecall)
	}
	if flagged > 0 {
		t.Errorf("%d namesakes born ten or more years apart flagged", flagged)
	}
	if fpr > goalGenFPR {
		t.Errorf("false-positive rate %.4f above %.3f", fpr, goalGenFPR)
	}
}
