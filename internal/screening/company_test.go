package screening

import (
	"slices"
	"strings"
	"testing"
)

func companyTok(h Hit, query string) TokenMatch {
	for _, tm := range h.Breakdown.Tokens {
		if tm.Query == query {
			return tm
		}
	}
	return TokenMatch{}
}

// TestCompanyTokens: legal forms, descriptors, stop words and dotted
// letters are read as company words, never as a person's initials or
// titles.
func TestCompanyTokens(t *testing.T) {
	type tok struct {
		text  string
		class uint8
		code  string
	}
	for _, c := range []struct {
		in   string
		want []tok
	}{
		{"Zen Technology Limited", []tok{{"zen", clsCore, ""}, {"technology", clsDescriptor, ""}, {"limited", clsLegalForm, "Ltd"}}},
		{"Grupo Bimbo, S.A. de C.V.", []tok{{"grupo", clsDescriptor, ""}, {"bimbo", clsCore, ""}, {"sa de cv", clsLegalForm, "S.A. de C.V."}}},
		{"Grupo Bimbo S. A. de C. V.", []tok{{"grupo", clsDescriptor, ""}, {"bimbo", clsCore, ""}, {"sa de cv", clsLegalForm, "S.A. de C.V."}}},
		{"ООО «Ромашка»", []tok{{"ooo", clsLegalForm, "LLC"}, {"romashka", clsCore, ""}}},
		{"Общество с ограниченной ответственностью Ромашка", []tok{{"obshchestvo s ogranichennoy otvetstvennostyu", clsLegalForm, "LLC"}, {"romashka", clsCore, ""}}},
		{"ПАО «Газпром нефть»", []tok{{"pao", clsLegalForm, "PJSC"}, {"gazprom", clsCore, ""}, {"neft", clsCore, ""}}},
		{"General Trading Co.", []tok{{"general", clsDescriptor, ""}, {"trading", clsDescriptor, ""}, {"co", clsLegalForm, "Co."}}},
		{"Al Noor Import and Export L.L.C.", []tok{{"al", clsStop, ""}, {"noor", clsCore, ""}, {"import", clsDescriptor, ""}, {"and", clsStop, ""}, {"export", clsDescriptor, ""}, {"llc", clsLegalForm, "LLC"}}},
		{"T.G.A. D.O.O.", []tok{{"tga", clsCore, ""}, {"doo", clsLegalForm, "d.o.o."}}},
		{"Yıldız Gıda Sanayi ve Ticaret A.Ş.", []tok{{"yildiz", clsCore, ""}, {"gida", clsCore, ""}, {"sanayi", clsDescriptor, ""}, {"ve", clsStop, ""}, {"ticaret", clsDescriptor, ""}, {"as", clsLegalForm, "A.Ş."}}},
		// an ambiguous short form inside a name is an ordinary word
		{"Ansar As Sunna", []tok{{"ansar", clsCore, ""}, {"as", clsCore, ""}, {"sunna", clsCore, ""}}},
		// a name that is only a legal form keeps it as its name
		{"PLC", []tok{{"plc", clsCore, ""}}},
	} {
		got := companyTokens(c.in, langAuto)
		var g []tok
		for _, x := range got {
			code := ""
			if x.class == clsLegalForm {
				code = legalForms[x.form].code
			}
			g = append(g, tok{x.text, x.class, code})
		}
		if !slices.Equal(g, c.want) {
			t.Errorf("%q: got %v, want %v", c.in, g, c.want)
		}
	}
}

// TestCompanyAttacks: clean names built to trip each rule of the person
// screen that misread companies (General dropped as a title, legal forms
// counted as shared words, dotted letters and SA, CV read as initials)
// find nothing; the listed names they imitate are found.
func TestCompanyAttacks(t *testing.T) {
	ix := fullIndex(t)
	clean := []CompanyQuery{
		{Name: "Zen Technology Limited", Countries: []string{"GB"}}, // GENERAL TECHNOLOGY LIMITED once, General read as a title
		{Name: "Zen Technology Limited"},
		{Name: "Bio LLC", Countries: []string{"US"}}, // BIO PHARM TRADE LLC once: LLC counted as a shared word
		{Name: "Bio LLC"},
		{Name: "General Trading Co.", Countries: []string{"AE"}},
		{Name: "General Trading Co."},
		{Name: "Global Trading LLC"},
		{Name: "Servicios Integrales Gómez S.A. de C.V.", Countries: []string{"MX"}}, // S.A. de C.V. as initials
		{Name: "S. A. de C. V. Comercial"},
		{Name: "Kaida Logistics Ltd", Countries: []string{"HK"}},     // AL QA'IDA by sound, inside a longer name
		{Name: "Beirut Bay Trading SARL", Countries: []string{"LB"}}, // BEIRUT TRADE SAL plus a word of its own
		{Name: "Baekdu Hana Electronics Corp.", Countries: []string{"KR"}},
		{Name: "OOO Parus", Countries: []string{"RU"}},                  // BARUS LLC: one listed word, only close
		{Name: "Inter Logistics Sp. z o.o.", Countries: []string{"PL"}}, // OFAC weak a.k.a. INTER inside a longer name
		{Name: "SSL Solutions Ltd", Countries: []string{"GB"}},          // a published acronym inside a longer name
		{Name: "ABC Trading LLC", Countries: []string{"US"}},
		{Name: "Thành Công TNHH", Countries: []string{"VN"}}, // THINH CUONG: every word only close
	}
	for _, q := range clean {
		if hits := ix.ScreenCompany(q); len(hits) > 0 {
			t.Errorf("%q %v: false positive %s/%s %q %.3f %v", q.Name, q.Countries, hits[0].List, hits[0].EntryID,
				hits[0].MatchedName, hits[0].Score, hits[0].Breakdown.Notes)
		}
	}
	listed := []struct {
		q        CompanyQuery
		list, id string
	}{
		{CompanyQuery{Name: "General Technology Limited"}, ListOFAC, ""},
		{CompanyQuery{Name: "Bio Pharm Trade LLC"}, ListOFAC, ""},
		{CompanyQuery{Name: "Al Bashair Trading Company Limited"}, ListOFAC, "8211"}, // AL-BASHAIR TRADING COMPANY, LTD
		{CompanyQuery{Name: "Polyus Service LLC", Countries: []string{"RU"}}, ListOFAC, "43100"},
		{CompanyQuery{Name: "ООО «Полюс Сервис»", Countries: []string{"RU"}}, ListOFAC, "43100"},
		{CompanyQuery{Name: "Rosneft Trading FZE"}, ListOFAC, "18299"}, // ROSNEFT TRADING S.A.
		{CompanyQuery{Name: "Dandong Hongxiang Industrial Development Company Limited"}, ListOFAC, "20564"},
		{CompanyQuery{Name: "IRGC", Countries: []string{"IR"}}, ListOFAC, ""},
		{CompanyQuery{Name: "SSL", Countries: []string{"IR"}}, ListUN, "IRe.072"},    // SOUTH SHIPPING LINE IRAN (SSL)
		{CompanyQuery{Name: "Ocean Maritime Management Co. Ltd"}, ListUN, "KPe.020"}, // OCEAN MARITIME MANAGEMENT COMPANY, LIMITED (OMM)
		{CompanyQuery{Name: "OMM", Countries: []string{"KP"}}, ListUN, "KPe.020"},
	}
	for _, c := range listed {
		hits := ix.ScreenCompany(c.q)
		if len(hits) == 0 {
			t.Errorf("%q: listed name not found", c.q.Name)
			continue
		}
		if c.id != "" && found(hits, c.list, c.id) < 0 {
			t.Errorf("%q: %s/%s not found: %v", c.q.Name, c.list, c.id, hits[0].MatchedName)
		}
	}
}

// TestCompanyExplained: every company hit says in words how each query
// word matched, with its weight (the back office's "How" column).
func TestCompanyExplained(t *testing.T) {
	ix := fullIndex(t)
	hits := ix.ScreenCompany(CompanyQuery{Name: "ООО «Полюс Сервис»", Countries: []string{"RU"}})
	i := found(hits, ListOFAC, "43100") // LIMITED LIABILITY COMPANY POLYUS SERVICE
	if i < 0 {
		t.Fatalf("not found: %+v", hits)
	}
	h := hits[i]
	lf := companyTok(h, "ooo")
	if lf.Kind != KindLegalForm || lf.Weight != weightLegalForm || !strings.Contains(lf.Note, "legal form OOO ↔ LIMITED LIABILITY COMPANY") ||
		!strings.Contains(lf.Note, "weight 0.1") {
		t.Errorf("legal form explained as %+v", lf)
	}
	if d := companyTok(h, "servis"); d.Kind != KindDescriptor || !strings.Contains(d.Note, "descriptor SERVIS ↔ SERVICE") {
		t.Errorf("descriptor explained as %+v", d)
	}
	if c := companyTok(h, "polyus"); c.Kind != KindExact || c.Weight != 1 {
		t.Errorf("core word explained as %+v", c)
	}
	if h.Breakdown.Nationality != "match" || h.Breakdown.NationalityAdjust != adjCountryMatch || !slices.Contains(h.Fields, "country") {
		t.Errorf("country evidence %+v %v", h.Breakdown, h.Fields)
	}
	if h.EntryType != TypeEntity || h.Breakdown.TypeAdjust != 0 {
		t.Errorf("an entity hit of a company query carries a type penalty: %+v", h.Breakdown)
	}

	// a generated acronym, with the country deciding
	acr := ix.ScreenCompany(CompanyQuery{Name: "NBK", Countries: []string{"IR"}}) // NASIM BAHR KISH
	if k := found(acr, ListOFAC, "43115"); k < 0 {
		t.Errorf("acronym with the listed country not found: %+v", acr)
	} else if tm := acr[k].Breakdown.Tokens[0]; tm.Kind != KindAcronym || !strings.Contains(tm.Note, "initials of NASIM BAHR KISH") {
		t.Errorf("acronym explained as %+v", tm)
	}
	// without the company's country nothing decides: at the review
	// threshold, below the hit with the country
	none := ix.ScreenCompany(CompanyQuery{Name: "NBK"})
	if k, j := found(none, ListOFAC, "43115"), found(acr, ListOFAC, "43115"); k < 0 || j < 0 {
		t.Error("a three-letter generated acronym without the country not found")
	} else if none[k].Score != acronymScore3 || none[k].Breakdown.Nationality != "unknown" || none[k].Score >= acr[j].Score {
		t.Errorf("a three-letter generated acronym without the country scored %.3f (%s), with it %.3f", none[k].Score,
			none[k].Breakdown.Nationality, acr[j].Score)
	}
	if found(ix.ScreenCompany(CompanyQuery{Name: "NBK", Countries: []string{"DE"}}), ListOFAC, "43115") >= 0 {
		t.Error("a three-letter generated acronym hit with another country")
	}
}

// TestCompanyCountryEvidence: an exact name in another country is
// downgraded (review), a partial one vetoed.
func TestCompanyCountryEvidence(t *testing.T) {
	ix := fullIndex(t)
	name := "Limited Liability Company Polyus Service"
	same := ix.ScreenCompany(CompanyQuery{Name: name, Countries: []string{"RU"}})
	other := ix.ScreenCompany(CompanyQuery{Name: name, Countries: []string{"DE"}})
	i, j := found(same, ListOFAC, "43100"), found(other, ListOFAC, "43100")
	if i < 0 || j < 0 {
		t.Fatalf("exact name not found: same %d other %d", i, j)
	}
	if other[j].Breakdown.NationalityAdjust != adjCountryMiss || other[j].Score >= same[i].Score {
		t.Errorf("exact name in another country: %+v", other[j].Breakdown)
	}
	// the listed name inside a longer name, or an approximate one, in
	// another country: vetoed
	if found(ix.ScreenCompany(CompanyQuery{Name: "Polyus Service Trading GmbH", Countries: []string{"DE"}}), ListOFAC, "43100") >= 0 {
		t.Error("partial name in another country not vetoed")
	}
	if found(ix.ScreenCompany(CompanyQuery{Name: "Polyus Servise Trading GmbH", Countries: []string{"DE"}}), ListOFAC, "43100") >= 0 {
		t.Error("approximate name in another country not vetoed")
	}
	if found(ix.ScreenCompany(CompanyQuery{Name: "Polyus Servise Trading GmbH", Countries: []string{"RU"}}), ListOFAC, "43100") < 0 {
		t.Error("approximate name in the listed country not found")
	}
	if found(ix.ScreenCompany(CompanyQuery{Name: "Polyus Service Trading LLC", Countries: []string{"RU"}}), ListOFAC, "43100") < 0 {
		t.Error("partial name in the listed country not found")
	}
}

func TestCompanyQueryEmpty(t *testing.T) {
	ix := fullIndex(t)
	for _, n := range []string{"", "  ", "LLC", "«»", "Ltd."} {
		if hits := ix.ScreenCompany(CompanyQuery{Name: n}); len(hits) > 0 {
			t.Errorf("%q: %d hits", n, len(hits))
		}
	}
}

// TestCompanyPublishedAcronyms: every acronym the lists publish for an
// entity (in brackets or after " / " in a name, a one-word alias, an OFAC
// weak a.k.a.) of three to eight letters is found written plain, dotted,
// and with a legal form after it, with the entity's country or without
// one. Two-letter acronyms (LJ, JI) match no query alone, by design, and
// acronyms that are a legal form (SPC, PTY) read as the legal form.
func TestCompanyPublishedAcronyms(t *testing.T) {
	ix := fullIndex(t)
	n := 0
	ix.Entries(func(e *Entry) bool {
		if e.Type != TypeEntity {
			return true
		}
		var acr []string
		for _, a := range append([]string{e.Name}, e.Aliases...) {
			_, extra := splitEntityName(a)
			acr = append(acr, extra...)
			if len(strings.Fields(a)) == 1 {
				acr = append(acr, a)
			}
		}
		acr = append(acr, e.WeakAliases...)
		countries := [][]string{nil}
		if cs := entityCountries(e); len(cs) > 0 {
			countries = append(countries, cs[:1])
		}
		for _, a := range uniqueStrings(acr) {
			a = strings.Trim(a, ".'\" ")
			if len(a) < minAcronym || len(a) > maxAcronym || !isLetters(a) || strings.ToUpper(a) != a ||
				isLegalFormWord(strings.ToLower(a)) {
				continue
			}
			dotted := strings.Join(strings.Split(a, ""), ".") + "."
			for _, q := range []string{a, dotted, a + " LLC", dotted + " Ltd", "OOO " + a} {
				for _, cs := range countries {
					n++
					if hits := ix.ScreenCompany(CompanyQuery{Name: q, Countries: cs}); found(hits, e.List, e.ID) < 0 {
						t.Errorf("published acronym %q %v: %s/%s %s not found", q, cs, e.List, e.ID, e.Name)
					}
				}
			}
		}
		return true
	})
	if n < 500 {
		t.Errorf("only %d published acronym queries", n)
	}
	t.Logf("%d published acronym queries", n)
}

// TestCompanyGeneratedAcronyms: how a generated acronym decides, case by
// case: the countries, the implied countries of an entity without one,
// a word that is not an acronym, acronym letters that are not sounds.
func TestCompanyGeneratedAcronyms(t *testing.T) {
	ix := fullIndex(t)
	// KHORASAN METALLURGY INDUSTRIES: no country in the UN list, the
	// Iran list type
	const list, id = ListUN, "IRe.037"
	if e, ok := ix.Entry(list, id); !ok || len(entityCountries(&e)) > 0 {
		t.Fatalf("fixture changed: %+v", e)
	}
	for _, c := range []struct {
		q     CompanyQuery
		want  bool
		score float64
	}{
		{CompanyQuery{Name: "KMI"}, true, acronymScore3},                                   // nothing decides: review
		{CompanyQuery{Name: "K.M.I. Ltd"}, true, acronymScore3},                            // dotted, a legal form
		{CompanyQuery{Name: "KMI", Countries: []string{"IR"}}, true, acronymScore3 + 0.05}, // the programme's country
		{CompanyQuery{Name: "KMI Ltd", Countries: []string{"GB"}}, false, 0},               // another country
		{CompanyQuery{Name: "Kmi Ltd"}, false, 0},                                          // written as a word
		{CompanyQuery{Name: "KMI Trading"}, false, 0},                                      // a descriptor more: below review without the country
	} {
		hits := ix.ScreenCompany(c.q)
		i := found(hits, list, id)
		if (i >= 0) != c.want {
			t.Errorf("%q %v: found %v, want %v", c.q.Name, c.q.Countries, i >= 0, c.want)
			continue
		}
		if i >= 0 && hits[i].Score != round3(c.score) {
			t.Errorf("%q %v: score %.3f, want %.3f (%v)", c.q.Name, c.q.Countries, hits[i].Score, c.score, hits[i].Breakdown.Notes)
		}
	}
	// an acronym that spells a stop word (FLORBEL OPERADORA DE
	// RESTAURANTES -> FOR)
	if found(ix.ScreenCompany(CompanyQuery{Name: "FOR S.A. de C.V.", Countries: []string{"MX"}}), ListOFAC, "12277") < 0 {
		t.Error("FOR S.A. de C.V. not found")
	}
	// short words agree by sound only with short words; a legal form is
	// not found in a short word by sound
	for _, q := range []string{"ACB", "AKB Ltd"} {
		for _, h := range ix.ScreenCompany(CompanyQuery{Name: q}) {
			if m := strings.ToLower(h.MatchedName); m != strings.ToLower(strings.Fields(q)[0]) && !strings.Contains(strings.Join(h.Breakdown.Notes, " "), "initials") {
				t.Errorf("%q matched %q by sound", q, h.MatchedName)
			}
		}
	}
	if found(ix.ScreenCompany(CompanyQuery{Name: "DMC LLC", Countries: []string{"IR"}}), ListOFAC, "30379") < 0 {
		t.Error("DMC LLC (DAMAVAND MINING, weak a.k.a. DMC) not found: DMC read as the legal form DMCC")
	}
}
