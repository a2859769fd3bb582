package registry

import "testing"

func TestNamesMatch(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		// same name, same legal form, any spelling
		{"Sandbox Trading Limited", "SANDBOX TRADING LTD", true},
		{"Sandbox Trading Ltd.", "Sandbox Trading Ltd", true},
		{"sandbox   trading ltd", "Sandbox Trading Ltd", true},
		{"The Sandbox Trading Company Limited", "SANDBOX TRADING CO LTD", true},
		{"Smith & Sons Ltd", "Smith and Sons Limited", true},
		{"Sandbox Holdings Public Limited Company", "Sandbox Holdings PLC", true},
		{"Sandbox Partners LLP", "SANDBOX PARTNERS LIMITED LIABILITY PARTNERSHIP", true},
		{"Sandbox Inc.", "Sandbox Incorporated", true},
		{"Sandbox L.L.C.", "Sandbox Limited Liability Company", true},
		{"Müller Sandbox GmbH", "MULLER SANDBOX G.M.B.H.", true},
		{"Müller Sandbox Gesellschaft mit beschränkter Haftung", "Müller Sandbox GmbH", true},
		{"Sandbox GmbH & Co. KG", "Sandbox GmbH und Co KG", true},
		{"Société Générale de Sandbox S.A.R.L.", "SOCIETE GENERALE DE SANDBOX SARL", true},
		{"Société Sandbox SARL", "Socie\u0301te\u0301 Sandbox SARL", true}, // decomposed accents
		{"Sandbox Bulgaria EOOD", "Sandbox Bulgaria ЕООД", true},
		{"Сандбокс ООД", "SANDBOKS OOD", true},
		{"Sandbox Holdings AD", "Sandbox Holdings АД", true},
		{"Sandbox Polska Sp. z o.o.", "SANDBOX POLSKA SP Z OO", true},
		{"Sandbox Polska sp.z o.o.", "Sandbox Polska Spółka z ograniczoną odpowiedzialnością", true},
		{"Sandbox Italia S.r.l.", "Sandbox Italia SRL", true},
		{"Sandbox Italia S.p.A.", "Sandbox Italia SpA", true},
		{"Sandbox Danmark A/S", "Sandbox Danmark AS", true},
		{"Sandbox Sverige AB (publ)", "Sandbox Sverige AB", true},
		{"Sandbox Nederland B.V.", "Sandbox Nederland BV", true},
		{"Sandbox Suomi Oy", "SANDBOX SUOMI OY", true},
		{"O'Neil Sandbox Ltd", "ONEIL SANDBOX LIMITED", true},
		{"Sandbox-Trading Ltd", "Sandbox Trading Ltd", true},
		{"Sand Box Trading Ltd", "Sandbox Trading Ltd", true},
		{"Łódź Sandbox SA", "Lodz Sandbox S.A.", true},
		{"Straße Sandbox AG", "Strasse Sandbox AG", true},

		// a missing legal form is tolerated
		{"Sandbox Trading", "Sandbox Trading Ltd", true},
		{"Sandbox Bulgaria", "Sandbox Bulgaria EOOD", true},
		{"sandbox trading", "SANDBOX TRADING LIMITED", true},
		// a last word that looks like a legal form but is part of the name
		{"Kids Spa", "Kids Spa Ltd", true},

		// different legal forms do not match
		{"Sandbox Trading GmbH", "Sandbox Trading Ltd", false},
		{"Sandbox Trading PLC", "Sandbox Trading Ltd", false},
		{"Sandbox Bulgaria OOD", "Sandbox Bulgaria EOOD", false},
		{"Sandbox Bulgaria АД", "Sandbox Bulgaria ЕАД", false},
		{"Sandbox LLP", "Sandbox LLC", false},
		{"Sandbox Italia S.p.A.", "Sandbox Italia S.r.l.", false},

		// different names do not match
		{"Completely Different Holdings Ltd", "Sandbox Trading Ltd", false},
		{"Sandbox Trading Ltd", "Sandbox Trading Ltd", true},
		{"Sandbox Trading Ltd", "Sandbox Trading Co Ltd", false},
		{"Sandbox Trading Ltd", "Sandbox Tradings Ltd", false},
		{"Sandbox Ltd", "Sandbox Trading Ltd", false},
		{"Sandbox Trading UK Ltd", "Sandbox Trading Ltd", false},
		{"Sandbox 2 Ltd", "Sandbox Ltd", false},
		{"Sandbox Bulgaria EOOD", "Sandbox Romania EOOD", false},
		{"Ltd", "Sandbox Ltd", false},
		{"", "Sandbox Ltd", false},
		{"", "", false},
		{"...", "---", false},
	} {
		if got := NamesMatch(c.a, c.b); got != c.want {
			t.Errorf("NamesMatch(%q, %q) = %v, want %v (%q vs %q)",
				c.a, c.b, got, c.want, NormalizeCompanyName(c.a), NormalizeCompanyName(c.b))
		}
		if got := NamesMatch(c.b, c.a); got != c.want {
			t.Errorf("NamesMatch(%q, %q) = %v, want %v (reversed)", c.b, c.a, got, c.want)
		}
	}
}

func TestNormalizeCompanyName(t *testing.T) {
	for in, want := range map[string]string{
		"SANDBOX TRADING LIMITED":             "sandbox trading ltd",
		"Sandbox Trading Ltd.":                "sandbox trading ltd",
		"  The Sandbox  Trading Company Ltd ": "sandbox trading co ltd",
		"Sandbox Bulgaria ЕООД":               "sandbox bulgaria eood",
		"Сандбокс България ЕООД":              "sandboks balgariya eood",
		"Société Sandbox S.A.R.L.":            "societe sandbox sarl",
		"Smith & Sons":                        "smith and sons",
		"Sandbox GmbH & Co. KG":               "sandbox gmbh co kg",
		"Sandbox Polska Sp. z o.o.":           "sandbox polska spzoo",
		"Sandbox (UK) Holdings plc":           "sandbox uk holdings plc",
		"Ltd":                                 "ltd",
		"The":                                 "the",
		"":                                    "",
		"東京サンドボックス株式会社":                       "東京サンドボックス株式会社",
		"Sandbox Public Limited Company":      "sandbox plc",
		"Sandbox Trading Corporation":         "sandbox trading corp",
		"Sandbox Corporation Holdings Ltd":    "sandbox corp holdings ltd",
		"Øresund Sandbox ApS":                 "oresund sandbox aps",
		"Sandbox Sverige Aktiebolag":          "sandbox sverige ab",
		"Sandbox Oyj":                         "sandbox oyj",
		"Sandbox Eesti OÜ":                    "sandbox eesti ou",
		"Sandbox\tTrading\u00a0Ltd":           "sandbox trading ltd",
		"İstanbul Sandbox A.Ş.":               "istanbul sandbox as",
		"Sandbox UG (haftungsbeschränkt)":     "sandbox ug",
	} {
		if got := NormalizeCompanyName(in); got != want {
			t.Errorf("NormalizeCompanyName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLegalFormSpellingsAreUnique: a spelling listed under two legal forms
// would be canonicalised to either, depending on map order.
func TestLegalFormSpellingsAreUnique(t *testing.T) {
	seen := map[string]string{}
	for canon, spellings := range legalFormSpellings {
		for _, s := range spellings {
			if other, ok := seen[s]; ok {
				t.Errorf("%q is a spelling of both %q and %q", s, other, canon)
			}
			seen[s] = canon
			if toks := tokenize(s); len(toks) != 1 || toks[0] != s {
				t.Errorf("spelling %q is not in tokenized form", s)
			}
		}
	}
}

func TestFoldIsASCII(t *testing.T) {
	for r, s := range fold {
		for i := 0; i < len(s); i++ {
			if s[i] < 'a' || s[i] > 'z' {
				t.Errorf("fold[%q] = %q", r, s)
			}
		}
	}
}

func FuzzNamesMatch(f *testing.F) {
	for _, s := range []string{"Sandbox Trading Ltd", "Сандбокс ЕООД", "Sp. z o.o.", "&", "", "\xff", "e\u0301"} {
		f.Add(s, "Sandbox Trading Limited")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if NamesMatch(a, b) != NamesMatch(b, a) {
			t.Fatalf("NamesMatch(%q, %q) is not symmetric", a, b)
		}
		n := NormalizeCompanyName(a)
		if NamesMatch(a, a) != (n != "") {
			t.Fatalf("NamesMatch(%q, itself) = %v with normal form %q", a, NamesMatch(a, a), n)
		}
		if n != "" && !NamesMatch(a, n) {
			t.Fatalf("%q does not match its normal form %q", a, n)
		}
	})
}
