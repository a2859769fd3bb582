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
