package screening

import (
	"math"
	"testing"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"LUKASHENKA, Alyaksandr Ryhorovich", "alyaksandr ryhorovich lukashenka"},
		{"  Kim   Jong-Un ", "kim jong un"},
		{"José María Aznar-López", "jose maria aznar lopez"},
		{"O'Brien", "obrien"},
		{"KY'ONG-SU", "kyong su"},
		{"D’Angelo", "dangelo"},
		{"Straße", "strasse"},
		{"Łukasz Żółć", "lukasz zolc"},
		{"Søren Kjærgaard", "soren kjaergaard"},
		{"Þóra Sigurðardóttir", "thora sigurdardottir"},
		{"Müller-Lüdenscheidt", "muller ludenscheidt"},
		{"Çelik Şahin Yıldız", "celik sahin yildiz"},
		{"AL-ZAWAHIRI, Ayman", "ayman al zawahiri"},
		{"BANCO NACIONAL DE CUBA", "banco nacional de cuba"},
		{"“Chief Kahwa”", "chief kahwa"},
		{"", ""},
		{" ,. - ", ""},
		// Cyrillic, Russian (BGN/PCGN)
		{"Лукашенко", "lukashenko"},
		{"Щукин Жуков Харитонов Цой Чехов Шишкин", "shchukin zhukov kharitonov tsoy chekhov shishkin"},
		{"Юрий Яков Йошкар", "yuriy yakov yoshkar"},
		{"Мальцев Подъячев", "maltsev podyachev"},
		{"Елена Алексеева Эдуард", "yelena alekseyeva eduard"},
		{"Пётр Фёдоров", "petr fedorov"},
		{"Владимир Путин", "vladimir putin"},
		// Ukrainian (detected from і, ї, є, ґ)
		{"Олександр Зінченко", "oleksandr zinchenko"},
		{"Григорій Їжак Євген Ґудзь", "hryhoriy yizhak yevhen gudz"},
		// Belarusian (detected from і without и, or ў)
		{"Аляксандр Рыгоравіч Лукашэнка", "alyaksandr ryhoravich lukashenka"},
		{"Ўладзімір", "wladzimir"},
		// Serbian / Macedonian
		{"Ђоковић Љубомир Његош Џаја", "djokovic ljubomir njegos dzaja"},
		// Greek (ELOT 743)
		{"Γιώργος Παπαδόπουλος", "giorgos papadopoulos"},
		{"Μπακογιάννη Ντόρα", "bakogianni dora"},
		{"Ευάγγελος Χρήστος Θεοδωρής", "evangelos christos theodoris"},
		{"Ευθύμιος Αυγερινός", "efthymios avgerinos"},
		{"Ψαρράς Ξυδάκης", "psarras xydakis"},
		{"Κωνσταντίνου", "konstantinou"},
	}
	for _, c := range cases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTransliterationHints(t *testing.T) {
	cases := []struct {
		in   string
		lang translitLang
		want string
	}{
		// Bulgarian (Streamlined System) only via the nationality hint
		{"Щерев Ъглов Христо", langBulgarian, "shterev aglov hristo"},
		{"Щерев Христо", langAuto, "shcherev khristo"},
		// Ukrainian hint reads и as y and г as h even without і/ї/є
		{"Григоренко Михайло", langUkrainian, "hryhorenko mykhaylo"},
		{"Григоренко Михайло", langRussian, "grigorenko mikhaylo"},
	}
	for _, c := range cases {
		if got := normString(c.in, c.lang); got != c.want {
			t.Errorf("normString(%q, %d) = %q, want %q", c.in, c.lang, got, c.want)
		}
	}
	if langForCountry("bg") != langBulgarian || langForCountry("UA") != langUkrainian ||
		langForCountry("BY") != langBelarusian || langForCountry("FR") != langAuto {
		t.Error("langForCountry")
	}
}

// TestTransliterationTable checks every letter of the Russian alphabet.
func TestTransliterationTable(t *testing.T) {
	ru := "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
	want := []string{"a", "b", "v", "g", "d", "ye", "ye", "zh", "z", "i", "y", "k", "l", "m", "n", "o",
		"p", "r", "s", "t", "u", "f", "kh", "ts", "ch", "sh", "shch", "", "y", "", "e", "yu", "ya"}
	for i, r := range []rune(ru) {
		// each letter on its own as a word: е/ё are word-initial
		if got := transliterate(string(r), langRussian); got != want[i] {
			t.Errorf("%c -> %q, want %q", r, got, want[i])
		}
	}
	gr := "αβγδεζηθικλμνξοπρστυφχψω"
	wantGr := []string{"a", "v", "g", "d", "e", "z", "i", "th", "i", "k", "l", "m", "n", "x", "o", "p",
		"r", "s", "t", "y", "f", "ch", "ps", "o"}
	for i, r := range []rune(gr) {
		if got := transliterate(string(r), langAuto); got != wantGr[i] {
			t.Errorf("%c -> %q, want %q", r, got, wantGr[i])
		}
	}
}

func TestJaroWinkler(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"MARTHA", "MARHTA", 0.961},
		{"DWAYNE", "DUANE", 0.840},
		{"DIXON", "DICKSONX", 0.813},
		{"JONES", "JOHNSON", 0.832},
		{"ABC", "ABC", 1},
		{"ABC", "XYZ", 0},
		{"", "", 1},
		{"A", "", 0},
	}
	for _, c := range cases {
		got := math.Round(JaroWinkler(c.a, c.b)*1000) / 1000
		if got != c.want {
			t.Errorf("JaroWinkler(%q, %q) = %.3f, want %.3f", c.a, c.b, got, c.want)
		}
		if r := JaroWinkler(c.b, c.a); math.Abs(r-JaroWinkler(c.a, c.b)) > 1e-12 {
			t.Errorf("JaroWinkler not symmetric for %q %q", c.a, c.b)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		JaroWinkler("alyaksandr", "aleksandr")
	})
	if allocs != 0 {
		t.Errorf("JaroWinkler allocates %.0f times", allocs)
	}
}

func TestPhonetic(t *testing.T) {
	same := [][2]string{
		{"alexander", "aleksander"},
		{"khassan", "hassan"},
		{"dzhamal", "jamal"},
		{"grigoriev", "grigoryev"},
		{"grigorev", "grigoryev"},
		{"yevgeniy", "evgeniy"},
		{"ali", "aly"},
		{"mohammed", "mohamed"},
		{"qasim", "kasim"},
		{"dhaou", "daou"},
		{"paye", "pae"},
		{"schmidt", "shmidt"},
		{"youssef", "yusef"},
	}
	for _, p := range same {
		if phonetic(p[0]) != phonetic(p[1]) {
			t.Errorf("phonetic(%q) = %q, phonetic(%q) = %q, want equal", p[0], phonetic(p[0]), p[1], phonetic(p[1]))
		}
	}
	if skeleton(phonetic("mohammed")) != skeleton(phonetic("muhammad")) {
		t.Error("mohammed and muhammad should share a skeleton")
	}
	if phonetic("ivan") == phonetic("ivana") {
		t.Error("ivan/ivana should differ")
	}
}

func TestTokenSim(t *testing.T) {
	sim := func(a, b string) float64 { return tokenSim(a, phonetic(a), b, phonetic(b), true) }
	zero := [][2]string{
		{"ivan", "ivanov"},      // prefix: different name
		{"maria", "mariana"},    // prefix
		{"abdul", "abdullah"},   // prefix
		{"kim", "kin"},          // short, different
		{"olena", "oleg"},       // different
		{"ivan", "ivanovich"},   // length
		{"smith", "jones"},      // unrelated
		{"priya", "kang"},       // unrelated
		{"sandqvist", "sandoz"}, // different
	}
	for _, p := range zero {
		if s := sim(p[0], p[1]); s != 0 {
			t.Errorf("tokenSim(%q, %q) = %.3f, want 0", p[0], p[1], s)
		}
	}
	atLeast := []struct {
		a, b string
		min  float64
	}{
		{"lukashenko", "lukashenko", 1},
		{"ali", "aly", phoneticSim},
		{"jawad", "jwad", oneEditSim},      // deletion
		{"apodaca", "opodaca", oneEditSim}, // substitution of the first letter
		{"lukashenko", "lukashneko", 0.95}, // transposition
		{"alexander", "aleksandr", 0.9},    // transliteration
		{"lukashenka", "lukashenko", 0.95}, // Belarusian/Russian
	}
	for _, c := range atLeast {
		if s := sim(c.a, c.b); s < c.min {
			t.Errorf("tokenSim(%q, %q) = %.3f, want >= %.3f", c.a, c.b, s, c.min)
		}
	}
}

func TestOneEdit(t *testing.T) {
	yes := [][2]string{{"jones", "janes"}, {"jones", "joens"}, {"jones", "jnes"}, {"jones", "joness"}, {"a", "b"}}
	no := [][2]string{{"jones", "jones"}, {"jones", "jaens"}, {"jones", "jo"}, {"abcd", "badc"}}
	for _, p := range yes {
		if !oneEdit(p[0], p[1]) || !oneEdit(p[1], p[0]) {
			t.Errorf("oneEdit(%q, %q) = false", p[0], p[1])
		}
	}
	for _, p := range no {
		if oneEdit(p[0], p[1]) {
			t.Errorf("oneEdit(%q, %q) = true", p[0], p[1])
		}
	}
}

func TestCountryCode(t *testing.T) {
	cases := map[string]string{
		"Korea, North":                          "KP",
		"Democratic People's Republic of Korea": "KP",
		"Russian Federation":                    "RU",
		"Russia":                                "RU",
		"Iran (Islamic Republic of)":            "IR",
		"Congo, Democratic Republic of the":     "CD",
		"Democratic Republic of the Congo":      "CD",
		"Congo":                                 "CG",
		"Burma":                                 "MM",
		"Türkiye":                               "TR",
		"Turkey":                                "TR",
		"United Kingdom of Great Britain and Northern Ireland": "GB",
		"North Macedonia, The Republic of":                     "MK",
		"The Gambia":                                           "GM",
		"possibly Palestinian":                                 "PS",
		"State of Palestine":                                   "PS",
		"Kosovo":                                               "XK",
		"Syrian Arab Republic":                                 "SY",
		"United Republic of Tanzania":                          "TZ",
		"Cabo Verde":                                           "CV",
	}
	for in, want := range cases {
		if got, ok := CountryCode(in); !ok || got != want {
			t.Errorf("CountryCode(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"former Soviet Union", "Region: Gaza", "na", ""} {
		if got, ok := CountryCode(in); ok {
			t.Errorf("CountryCode(%q) = %q, want unmapped", in, got)
		}
	}
}

func TestNameSimilarity(t *testing.T) {
	if s := NameSimilarity("LUKASHENKA, Alyaksandr", "Alyaksandr Lukashenka"); s != 1 {
		t.Errorf("same name reordered: %.3f", s)
	}
	if s := NameSimilarity("Владимир Путин", "PUTIN, Vladimir"); s < 0.99 {
		t.Errorf("Cyrillic: %.3f", s)
	}
	if s := NameSimilarity("Anna Schmidt", "Anna Schmitt"); s < 0.9 {
		t.Errorf("one letter: %.3f", s)
	}
	if s := NameSimilarity("Anna Schmidt", "Peter Schmidt"); s > 0.6 {
		t.Errorf("different first name: %.3f", s)
	}
	if s := NameSimilarity("", "x"); s != 0 {
		t.Errorf("empty: %.3f", s)
	}
}
