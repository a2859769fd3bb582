package screening

import "strings"

// Legal forms, descriptor words and stop words of company names.
//
// Source: this table was written for emi from public knowledge of
// company-law forms (the names companies register under in the
// jurisdictions most present on the sanctions lists and among our
// merchants: common-law Ltd/LLC/PLC, Russian, Ukrainian, Belarusian and
// Kazakh forms in Cyrillic and in their romanizations, German, French,
// Spanish, Portuguese, Italian, Dutch, Nordic, Polish, Czech, Bulgarian,
// Turkish, Gulf and UAE free-zone forms, Persian, Malaysian, Indonesian,
// Chinese, Korean and Japanese romanized forms). It copies no external
// data set. Every row is one legal form; its phrases are the ways it is
// written, after Normalize (Cyrillic transliterated, punctuation removed,
// dotted letters joined: "S.A." and "S A" read "sa", "L.L.C." reads "llc").
// Phrases are compared on phonetic forms, so the transliteration variants
// of one word (ogranichennoy / ogranichennoi, aktsionernoye / aktsionernoe)
// need one spelling only.
//
// Rows share a family when the forms are comparable (a private company
// with limited liability: LLC, Ltd, GmbH, SARL...; a joint-stock or public
// company: JSC, PJSC, PLC, S.A., AG...); see legalFormSim.
//
// Legal forms are their own token class in company screening: they weigh
// weightLegalForm, never count towards the words two names must share, are
// never read as initials, and a form on one side only costs nothing (a
// customer often drops it or adds one the list does not publish).

// legal-form families
const (
	lfPrivate     = iota // private company with limited liability
	lfJointStock         // joint-stock / public limited / société anonyme
	lfCompany            // "company", "corporation", "incorporated", "establishment"
	lfPartnership        // partnerships
	lfFreeZone           // UAE free-zone forms
	lfState              // state and unitary enterprises
)

var familyNames = [...]string{
	lfPrivate:     "private limited company",
	lfJointStock:  "joint-stock company",
	lfCompany:     "company",
	lfPartnership: "partnership",
	lfFreeZone:    "free-zone company",
	lfState:       "state enterprise",
}

// legalForm is one row of the table. edge: the form is also an ordinary
// word or article in some names (AS, SA, AG, KG, PT, SAL, DMCC...), so a
// one-word phrase of it counts as a legal form only as the first or last
// word of the name (or of several dotted letters, which Normalize gives as
// one-letter words: "A.Ş.", "S.A.").
type legalForm struct {
	code    string // short display form
	family  int
	phrases []string
	edge    bool
}

var legalForms = []legalForm{
	// Private limited companies.
	{code: "LLC", family: lfPrivate, phrases: []string{"llc", "limited liability company", "limited liability co",
		"ltd liability company", "ltd liability co", "ooo", "obshchestvo s ogranichennoy otvetstvennostyu",
		"obshestvo s ogranichennoy otvetstvennostyu", "mchj", "mas uliyati cheklangan jamiyat"}},
	{code: "TOV", family: lfPrivate, phrases: []string{"tov", "tovarystvo z obmezhenoyu vidpovidalnistyu"}},
	{code: "TOO", family: lfPrivate, phrases: []string{"too", "tovarishchestvo s ogranichennoy otvetstvennostyu"}},
	{code: "Ltd", family: lfPrivate, phrases: []string{"ltd", "limited", "ltd sti", "limited sirketi", "sti"}},
	{code: "Co. Ltd", family: lfPrivate, phrases: []string{"co ltd", "company limited", "company ltd", "co limited",
		"ltd co", "limited company", "youxian gongsi", "yugen gaisha", "yugen kaisha"}},
	{code: "Pte Ltd", family: lfPrivate, phrases: []string{"pte ltd", "pte limited", "private limited", "pvt ltd",
		"private ltd", "pvt limited", "pte", "pvt"}},
	{code: "Pty Ltd", family: lfPrivate, phrases: []string{"pty ltd", "pty limited", "proprietary limited", "pty"}},
	{code: "Sdn Bhd", family: lfPrivate, phrases: []string{"sdn bhd", "sendirian berhad"}},
	{code: "GmbH", family: lfPrivate, phrases: []string{"gmbh", "gesellschaft mit beschrankter haftung",
		"gesellschaft mit beschraenkter haftung"}},
	{code: "SARL", family: lfPrivate, phrases: []string{"sarl", "societe a responsabilite limitee", "eurl", "sprl"}},
	{code: "SRL", family: lfPrivate, phrases: []string{"srl", "societa a responsabilita limitata", "societate cu raspundere limitata",
		"sociedad de responsabilidad limitada"}},
	{code: "S. de R.L. de C.V.", family: lfPrivate, phrases: []string{"s de rl de cv", "sociedad de responsabilidad limitada de capital variable"}},
	{code: "S. de R.L.", family: lfPrivate, phrases: []string{"s de rl"}},
	{code: "S.L.", family: lfPrivate, phrases: []string{"sl", "slu", "sociedad limitada"}, edge: true},
	{code: "Ltda", family: lfPrivate, phrases: []string{"ltda", "limitada"}},
	{code: "B.V.", family: lfPrivate, phrases: []string{"bv", "besloten vennootschap"}, edge: true},
	{code: "Sp. z o.o.", family: lfPrivate, phrases: []string{"sp zoo", "sp z oo", "spolka z ograniczona odpowiedzialnoscia"}},
	{code: "s.r.o.", family: lfPrivate, phrases: []string{"sro", "spol sro", "spolecnost s rucenim omezenym"}},
	{code: "d.o.o.", family: lfPrivate, phrases: []string{"doo", "drustvo s ogranicenom odgovornoscu"}},
	{code: "OOD", family: lfPrivate, phrases: []string{"ood", "eood"}},
	{code: "Kft.", family: lfPrivate, phrases: []string{"kft"}},
	{code: "OÜ", family: lfPrivate, phrases: []string{"ou", "osauhing"}, edge: true},
	{code: "WLL", family: lfPrivate, phrases: []string{"wll", "with limited liability"}},
	{code: "SPC", family: lfPrivate, phrases: []string{"spc", "single person company"}},
	{code: "PT", family: lfPrivate, phrases: []string{"pt", "perseroan terbatas"}, edge: true},
	{code: "TNHH", family: lfPrivate, phrases: []string{"tnhh", "cong ty tnhh", "trach nhiem huu han"}},
	// Joint-stock and public companies.
	{code: "JSC", family: lfJointStock, phrases: []string{"jsc", "joint stock company", "joint stock co", "jsco", "stock company",
		"ao", "aktsionernoye obshchestvo", "aktsionernoe obshestvo", "at", "aktsionerne tovarystvo"}, edge: true},
	{code: "OJSC", family: lfJointStock, phrases: []string{"ojsc", "open joint stock company", "open joint stock co",
		"oao", "otkrytoye aktsionernoye obshchestvo"}},
	{code: "CJSC", family: lfJointStock, phrases: []string{"cjsc", "closed joint stock company", "closed joint stock co",
		"zao", "zakrytoye aktsionernoye obshchestvo"}},
	{code: "PJSC", family: lfJointStock, phrases: []string{"pjsc", "public joint stock company", "public joint stock co", "public jsc",
		"pao", "publichnoye aktsionernoye obshchestvo", "pat", "publichne aktsionerne tovarystvo"}},
	{code: "NAO", family: lfJointStock, phrases: []string{"nao", "non public joint stock company", "nepublichnoye aktsionernoye obshchestvo"}},
	{code: "PrJSC", family: lfJointStock, phrases: []string{"prjsc", "private joint stock company", "private joint stock co",
		"prat", "pryvatne aktsionerne tovarystvo", "pjs", "sherkat sahami khass", "sahami khass", "sahami khas"}},
	{code: "PLC", family: lfJointStock, phrases: []string{"plc", "public limited company", "public company limited", "pcl"}},
	{code: "S.A.", family: lfJointStock, phrases: []string{"sa", "societe anonyme", "sociedad anonima", "sociedade anonima",
		"ca", "compania anonima"}, edge: true},
	{code: "S.A. de C.V.", family: lfJointStock, phrases: []string{"sa de cv", "sociedad anonima de capital variable",
		"sapi de cv", "sab de cv"}},
	{code: "S.A.S.", family: lfJointStock, phrases: []string{"sas", "societe par actions simplifiee", "sociedad por acciones simplificada"}},
	{code: "S.A.L.", family: lfJointStock, phrases: []string{"sal", "societe anonyme libanaise", "sal offshore", "sal holding"}, edge: true},
	{code: "S.p.A.", family: lfJointStock, phrases: []string{"spa", "societa per azioni"}, edge: true},
	{code: "AG", family: lfJointStock, phrases: []string{"ag", "aktiengesellschaft"}, edge: true},
	{code: "N.V.", family: lfJointStock, phrases: []string{"nv", "naamloze vennootschap"}, edge: true},
	{code: "A.Ş.", family: lfJointStock, phrases: []string{"as", "anonim sirketi", "anonim sirket"}, edge: true},
	{code: "AB", family: lfJointStock, phrases: []string{"ab", "aktiebolag", "aktiebolaget"}, edge: true},
	{code: "ASA", family: lfJointStock, phrases: []string{"asa", "allmennaksjeselskap"}, edge: true},
	{code: "Oy", family: lfJointStock, phrases: []string{"oy", "oyj", "osakeyhtio"}, edge: true},
	{code: "K.K.", family: lfJointStock, phrases: []string{"kk", "kabushiki kaisha", "kabushiki gaisha", "kabushikigaisha"}, edge: true},
	{code: "Bhd", family: lfJointStock, phrases: []string{"bhd", "berhad"}},
	{code: "Tbk", family: lfJointStock, phrases: []string{"tbk", "pt tbk"}},
	{code: "Chusik Hoesa", family: lfJointStock, phrases: []string{"chusik hoesa", "jusik hoesa", "jusikhoesa", "chusikhoesa"}},
	{code: "Gufen Youxian Gongsi", family: lfJointStock, phrases: []string{"gufen youxian gongsi", "gufen gongsi"}},
	// Generic "company".
	{code: "Co.", family: lfCompany, phrases: []string{"co", "company", "cia", "compania", "companhia", "compagnie", "cie",
		"kompaniya", "sherkat", "sherkate", "shirkat", "sharikat", "sharika", "sharikah", "sirketi", "gongsi", "hoesa", "cong ty"}},
	{code: "Corp.", family: lfCompany, phrases: []string{"corp", "corporation", "corpn", "korporatsiya"}},
	{code: "Inc.", family: lfCompany, phrases: []string{"inc", "incorporated"}},
	{code: "Est.", family: lfCompany, phrases: []string{"est", "establishment", "muassasa", "muassasat", "moassesseh"}},
	// Partnerships.
	{code: "LLP", family: lfPartnership, phrases: []string{"llp", "limited liability partnership"}},
	{code: "LP", family: lfPartnership, phrases: []string{"lp", "limited partnership"}, edge: true},
	{code: "GmbH & Co. KG", family: lfPartnership, phrases: []string{"gmbh co kg", "gmbh und co kg", "gmbh and co kg"}},
	{code: "KG", family: lfPartnership, phrases: []string{"kg", "kommanditgesellschaft"}, edge: true},
	{code: "S. en C.", family: lfPartnership, phrases: []string{"s en c", "s en cs", "s en c s", "sociedad en comandita"}},
	{code: "C.V.", family: lfPartnership, phrases: []string{"cv", "commanditaire vennootschap"}, edge: true},
	// UAE free zones.
	{code: "FZE", family: lfFreeZone, phrases: []string{"fze", "free zone establishment", "fz e"}},
	{code: "FZCO", family: lfFreeZone, phrases: []string{"fzco", "fz co", "free zone company", "fzc"}},
	{code: "FZ-LLC", family: lfFreeZone, phrases: []string{"fz llc", "fzllc", "free zone limited liability company"}},
	{code: "DMCC", family: lfFreeZone, phrases: []string{"dmcc", "dmcc branch"}, edge: true},
	// State and unitary enterprises (Russian and Belarusian forms).
	{code: "FGUP", family: lfState, phrases: []string{"fgup", "federal state unitary enterprise", "federalnoye gosudarstvennoye unitarnoye predpriyatiye"}},
	{code: "GUP", family: lfState, phrases: []string{"gup", "state unitary enterprise", "gosudarstvennoye unitarnoye predpriyatiye"}},
	{code: "Unitary Enterprise", family: lfState, phrases: []string{"unitary enterprise", "unitarnoye predpriyatiye", "rup", "republican unitary enterprise"}},
}

// Descriptor words say what a company does or how it is organised
// (Trading, Group, Holding, International, Services, Import and Export...)
// rather than who it is. They weigh weightDescriptor, and all the words of
// one row are the same descriptor (trade, trading, ticaret; group, grupo).
// A name made of descriptors only ("General Trading") keeps them at full
// weight: there is nothing else to tell it apart.
var descriptorRows = [][]string{
	{"trading", "trade", "traders", "trader", "tradings", "ticaret", "tijarat", "tejarat", "handel", "handels", "comercio", "commerce", "torgovyy", "torgovaya", "torgovy"},
	{"group", "grp", "grupo", "groupe", "gruppa", "gruppe", "jituan", "grup"},
	{"holding", "holdings", "hldg", "hldgs", "holding company"},
	{"international", "intl", "internacional", "internationale", "internazionale", "mezhdunarodnaya", "beynelmilel", "uluslararasi"},
	{"services", "service", "svc", "svcs", "servicios", "servicos", "servizi", "servis", "hizmetleri"},
	{"import", "imp", "importers", "importer", "ithalat"},
	{"export", "exp", "exporters", "exporter", "ihracat"},
	{"impex", "import export", "imp exp", "importexport"},
	{"general"},
	{"global"},
	{"industries", "industry", "industrial", "industrie", "industria", "industrias", "sanayi", "sanaye"},
	{"enterprise", "enterprises", "enterprize"},
	{"investment", "investments", "invest", "inversiones", "investimentos", "sarmayeh"},
	{"development", "developments"},
	{"technology", "technologies", "tech", "technic", "technics", "tekhnologii", "teknoloji"},
	{"solutions", "solution"},
	{"logistics", "logistic", "logistik", "logistica"},
	{"management"},
	{"consulting", "consultancy", "consultants", "consultoria"},
	{"commercial", "comercial", "commerciale", "kommercheskaya"},
	{"partners"},
	{"ventures"},
	{"worldwide"},
	{"overseas"},
	{"systems"},
	{"products"},
	{"manufacturing"},
	{"engineering"},
	{"resources"},
	{"dis"}, // Turkish dış (foreign), in "Dış Ticaret"
	{"shipping", "shipping lines", "shipping line"},
	{"marine", "maritime"},
	{"contracting", "contractors", "contracting company"},
	{"electronics", "electronic"},
	{"energy", "energia", "enerji"},
	{"technical"},
	{"supplies", "supply"},
	{"distribution", "distributors", "distributor", "distribuidora"},
	{"agency", "agencies"},
	{"construction", "constructions", "construcciones", "insaat"},
	{"transport", "transportation", "transports", "transportes"},
	{"commodities"},
}

// Stop words of company names weigh nothing: conjunctions, articles and
// prepositions ("and", "&" which Normalize drops, "of", "de", "al", "ve").
var companyStop = map[string]bool{
	"and": true, "of": true, "the": true, "for": true, "und": true, "et": true, "ve": true, "y": true,
	"e": true, "i": true, "de": true, "del": true, "la": true, "le": true, "les": true, "el": true,
	"los": true, "las": true, "du": true, "des": true, "da": true, "do": true, "dos": true,
	"das": true, "di": true, "al": true, "an": true, "a": true, "z": true, "s": true, "v": true,
	"ul": true, "wa": true, "va": true, "in": true, "on": true, "to": true,
}

// lfPhrase is one phrase of the table, as phonetic forms.
type lfPhrase struct {
	words []string // phonetic forms
	raw   []string // as written in the table
	form  int16
}

var (
	// lfByFirst: phrases by the phonetic form of their first word,
	// longest first.
	lfByFirst   map[string][]lfPhrase
	descByPhon  map[string]int16 // one-word descriptor -> row
	descPhrases map[string][]lfPhrase
)

func init() {
	lfByFirst = make(map[string][]lfPhrase)
	for i, f := range legalForms {
		for _, p := range f.phrases {
			ph := lfPhrase{form: int16(i), raw: strings.Fields(p)} // #nosec G115 -- a table row
			for _, w := range ph.raw {
				ph.words = append(ph.words, phonetic(w))
			}
			lfByFirst[ph.words[0]] = append(lfByFirst[ph.words[0]], ph)
		}
	}
	for k, l := range lfByFirst {
		sortPhrases(l)
		lfByFirst[k] = l
	}
	descByPhon = make(map[string]int16)
	descPhrases = make(map[string][]lfPhrase)
	for i, row := range descriptorRows {
		for _, p := range row {
			ws := strings.Fields(p)
			if len(ws) == 1 {
				descByPhon[phonetic(p)] = int16(i) // #nosec G115 -- a table row
				continue
			}
			ph := lfPhrase{form: int16(i), raw: ws} // #nosec G115 -- a table row
			for _, w := range ws {
				ph.words = append(ph.words, phonetic(w))
			}
			descPhrases[ph.words[0]] = append(descPhrases[ph.words[0]], ph)
		}
	}
}

func sortPhrases(l []lfPhrase) {
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && len(l[j].words) > len(l[j-1].words); j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
}

// Token classes of company names.
const (
	clsCore       uint8 = iota // a word that tells the company apart
	clsDescriptor              // Trading, Group, Holding...
	clsLegalForm               // LLC, OOO, GmbH... (one token for a whole phrase)
	clsStop                    // and, of, de, al...
)

// ctoken is one token of a company name after classification. For a legal
// form text is the phrase as written (normalized) and form its row; for a
// descriptor form is its row.
type ctoken struct {
	text  string
	class uint8
	form  int16
}

// companyTokens normalizes a company name and classifies its words:
// dotted letters ("S.A.", "L.L.C.", "I.R.G.C.") are joined into one word, legal-form phrases (longest first) become one
// legal-form token, descriptor words and stop words are marked. A comma is
// a separator (no "SURNAME, Given" reordering).
func companyTokens(name string, lang translitLang) []ctoken {
	// Dotted letters are joined into one word: within a word of the
	// name ("T.G.A." reads tga, "D.O.O." doo), and across words that are
	// one letter each ("S. A. de C. V." reads sa de cv).
	var words []string
	run := -1 // index in words of a word built of one-letter words, -1 none
	for _, chunk := range strings.Fields(name) {
		toks := normTokens(chunk, lang)
		if len(toks) == 0 {
			continue
		}
		if len(toks) == 1 && isLetter1(toks[0]) {
			if run >= 0 {
				words[run] += toks[0]
			} else {
				run = len(words)
				words = append(words, toks[0])
			}
			continue
		}
		run = -1
		for k := 0; k < len(toks); k++ {
			if !isLetter1(toks[k]) || k+1 == len(toks) || !isLetter1(toks[k+1]) {
				words = append(words, toks[k])
				continue
			}
			j := k
			for j < len(toks) && isLetter1(toks[j]) {
				j++
			}
			words = append(words, strings.Join(toks[k:j], "")) // S.A.DE reads sa de
			k = j - 1
		}
	}
	if len(words) == 0 {
		return nil
	}
	phon := make([]string, len(words))
	for i, w := range words {
		phon[i] = phonetic(w)
	}
	out := make([]ctoken, 0, len(words))
	matchAt := func(table map[string][]lfPhrase, legal bool, i int) (lfPhrase, bool) {
		for _, p := range table[phon[i]] {
			if i+len(p.words) > len(words) {
				continue
			}
			// phonetic forms, but words of three letters or fewer, on
			// either side, as written (SSL is not S.L., DMC is not DMCC)
			ok := true
			for k, w := range p.words {
				if phon[i+k] != w || min(len(p.raw[k]), len(words[i+k])) <= shortWord && words[i+k] != p.raw[k] {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			if legal && len(p.words) == 1 && legalForms[p.form].edge &&
				i != 0 && i != len(words)-1 {
				continue // an ambiguous short form inside the name: an ordinary word
			}
			return p, true
		}
		return lfPhrase{}, false
	}
	for i := 0; i < len(words); {
		if p, ok := matchAt(lfByFirst, true, i); ok && len(words) > len(p.words) {
			out = append(out, ctoken{text: strings.Join(words[i:i+len(p.words)], " "), class: clsLegalForm, form: p.form})
			i += len(p.words)
			continue
		}
		if p, ok := matchAt(descPhrases, false, i); ok {
			out = append(out, ctoken{text: strings.Join(words[i:i+len(p.words)], " "), class: clsDescriptor, form: p.form})
			i += len(p.words)
			continue
		}
		t := ctoken{text: words[i], class: clsCore, form: -1}
		if r, ok := descByPhon[phon[i]]; ok {
			t.class, t.form = clsDescriptor, r
		} else if companyStop[words[i]] {
			t.class = clsStop
		}
		out = append(out, t)
		i++
	}
	return out
}

// isLegalFormWord reports whether w (normalized) is a one-word legal form.
func isLegalFormWord(w string) bool {
	for _, p := range lfByFirst[phonetic(w)] {
		if len(p.words) == 1 && (p.raw[0] == w || len(w) > shortWord) {
			return true
		}
	}
	return false
}

// isLetter1 reports whether w is one Latin letter.
func isLetter1(w string) bool { return len(w) == 1 && w[0] >= 'a' && w[0] <= 'z' }

// legalFormSim is the similarity of two legal forms (table rows): 1 for
// the same form (in any language or script), 0.8 for comparable forms
// (one family: LLC and Ltd, JSC and S.A.), 0.3 otherwise.
func legalFormSim(a, b int16) float64 {
	switch {
	case a == b:
		return 1
	case legalForms[a].family == legalForms[b].family:
		return 0.8
	}
	return 0.3
}
