package goaml

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// publishedSHA256 is the sha256 of goAMLSchema.xsd in github.com/thecury/goAML
// at commit 94e24e80a6ccb8cc49faf68d74ef77efbc85b266 (README.md).
const publishedSHA256 = "412fbd8b49eb5ff0960f94ca78b12a196ac9408da6b08de75b9b4280eac7c82d"

func TestSchemaIsThePublishedFile(t *testing.T) {
	sum := sha256.Sum256(Schema)
	if got := hex.EncodeToString(sum[:]); got != publishedSHA256 {
		t.Errorf("goAMLSchema.xsd has sha256 %s, want %s: the schema must stay the published file, byte for byte", got, publishedSHA256)
	}
	if !bytes.Contains(Schema[:400], []byte(`goaml:schemaVersion="`+SchemaVersion+`"`)) {
		t.Errorf("the schema's root does not carry goaml:schemaVersion=%q", SchemaVersion)
	}
}

var paris = mustLoad("Europe/Paris")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.FixedZone(name, 3600) // no tz database: the tests only need a zone
	}
	return loc
}

func at(y int, m time.Month, d, hh, mm int) time.Time { return time.Date(y, m, d, hh, mm, 0, 0, paris) }
func date(y int, m time.Month, d int) time.Time       { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// Our institution, as every ClientAccount shows it.
func ourAccount(iban, name, client string, holder Person) *ClientAccount {
	return &ClientAccount{
		InstitutionName: "Émi Paiements SAS",
		BIC:             "EMIPFRP1XXX",
		NonBank:         true,
		Branch:          "Head office",
		IBAN:            iban,
		Currency:        "EUR",
		Name:            name,
		ClientNumber:    client,
		Opened:          date(2023, time.June, 1),
		Country:         "FR",
		Holder:          holder,
	}
}

// client is a person client with an identity document, and a name that
// needs escaping.
func client() Person {
	return Person{
		FirstName:   "Zoë <Jo>",
		LastName:    "Dupré & Søn",
		BirthDate:   date(1988, time.February, 29),
		SSN:         "2880275123456",
		Nationality: "FR",
		Residence:   "FR",
		Phones:      []Phone{{CountryPrefix: "+33", Number: "612345678"}},
		Addresses:   []Address{{Street: "12 rue de l'Église", City: "Lyon", Zip: "69002", Country: "FR"}},
		Email:       "zoe@example.org",
		Occupation:  "Consultante",
		Documents: []IDDocument{{
			Number:       "19AB12345",
			IssueCountry: "FR",
			IssuedBy:     "Préfecture du Rhône",
			IssueDate:    date(2019, time.March, 4),
			ExpiryDate:   date(2029, time.March, 3),
		}},
	}
}

func secondClient() Person {
	return Person{
		FirstName:   "Łukasz",
		LastName:    "Żółć",
		BirthDate:   date(1979, time.November, 11),
		SSN:         "79111112345",
		Nationality: "PL",
		Residence:   "FR",
		Phones:      []Phone{{CountryPrefix: "33", Number: "698765432"}},
		Occupation:  "Ingénieur",
		Documents:   []IDDocument{{Type: "A", Number: "AB1234567", IssueCountry: "PL"}},
	}
}

// realistic is a report on a person client: an incoming SEPA transfer from
// an external IBAN, an outgoing transfer to an external IBAN, a card
// payment at a merchant, and an internal transfer to another client.
func realistic() Report {
	zoe := ourAccount("FR76 3000 6000 0112 3456 7890 189", "Zoë <Jo> Dupré & Søn", "M-1042", client())
	lukasz := ourAccount("FR1420041010050500013M02606", "Łukasz Żółć", "M-2077", secondClient())
	return Report{
		RentityID:       4711,
		RentityBranch:   "Head office",
		EntityReference: "str_9fK2mQ",
		ReportDate:      at(2024, time.March, 12, 16, 45),
		CurrencyLocal:   "EUR",
		ReportingPerson: Person{FirstName: "Anne", LastName: "Martin", Email: "mlro@emi.example", Occupation: "MLRO"},
		Location:        Address{Street: "5 avenue de l'Opéra", City: "Paris", Zip: "75001", Country: "FR"},
		Reason: "Funds received from an unrelated third party were moved out within hours (\"pass-through\"),\n" +
			"then spent at a casino & passed to another client. Amounts < 10 000 EUR each.",
		Action:     "Account blocked on 2024-03-12; outgoing payments held.",
		Indicators: []string{"-"},
		Transactions: []Transaction{
			{
				Number:      "mov_0001",
				InternalRef: "E2E-20240311-ABC",
				Location:    "SEPA",
				Description: "Incoming SEPA credit transfer",
				Date:        at(2024, time.March, 11, 9, 2),
				AmountLocal: "9800.00",
				From: Party{External: &ExternalAccount{
					InstitutionName: "Deutsche Bank",
					BIC:             "DEUTDEFFXXX",
					IBAN:            "DE89370400440532013000",
					Name:            "Müller & Co <GmbH>",
					Country:         "DE",
				}},
				To: Party{Client: zoe},
			},
			{
				Number:      "mov_0002",
				Description: "Outgoing SEPA credit transfer",
				Date:        at(2024, time.March, 11, 11, 30),
				AmountLocal: "7500",
				From:        Party{Client: zoe},
				To: Party{External: &ExternalAccount{
					InstitutionName: "Banco Santander",
					InstitutionCode: "0049",
					IBAN:            "ES9121000418450200051332",
					Name:            "José Ñúñez",
					Currency:        "EUR",
					Country:         "ES",
				}},
			},
			{
				Number:        "mov_0003",
				Description:   "Card payment",
				Date:          at(2024, time.March, 11, 22, 14),
				TransmodeCode: "B",
				AmountLocal:   "1500.5",
				From:          Party{Client: zoe},
				To:            Party{Merchant: &Merchant{Name: "CASINO DE MONTE-CARLO", Business: "7995 Betting/Casino gambling", Country: "MC"}},
			},
			{
				Number:      "mov_0004",
				Description: "Transfer between two clients",
				Date:        at(2024, time.March, 12, 8, 0),
				AmountLocal: "790.0000000000001",
				From:        Party{Client: zoe},
				To:          Party{Client: lukasz, FundsCode: "K"},
			},
		},
	}
}

// companyReport is a report on a company client.
func companyReport() Report {
	director := secondClient()
	acct := ourAccount("FR7630001007941234567890185", "Atelier Ünal SARL", "C-311", director)
	acct.Company = &Company{
		Name:                 "Atelier Ünal & Fils SARL",
		IncorporationNumber:  "852 123 456 R.C.S. Lyon",
		Business:             "Import of textiles",
		Phones:               []Phone{{CountryPrefix: "33", Number: "478000000"}},
		Addresses:            []Address{{Street: "3 quai Saint-Vincent", City: "Lyon", Zip: "69001", Country: "FR"}},
		Email:                "contact@atelier.example",
		IncorporationCountry: "FR",
		IncorporationDate:    date(2019, time.May, 15),
		Directors:            []Director{{Person: Person{FirstName: director.FirstName, LastName: director.LastName, Nationality: "PL"}}},
	}
	r := realistic()
	r.EntityReference = "str_company"
	r.Indicators = nil // writes Codes.Indicator
	r.Transactions = []Transaction{{
		Number:      "mov_0101",
		Description: "Outgoing transfer to a supplier",
		Date:        at(2024, time.April, 2, 10, 0),
		AmountLocal: "48000.00",
		From:        Party{Client: acct},
		To: Party{External: &ExternalAccount{
			InstitutionName: "Türkiye İş Bankası",
			BIC:             "ISBKTRIS",
			IBAN:            "TR330006100519786457841326",
			Name:            "Ünal Tekstil A.Ş.",
			Country:         "TR",
		}},
	}}
	return r
}

// xmllint validates doc against the embedded schema with xmllint, both
// written to a temporary directory, and returns its output when doc does not
// validate. Without xmllint the test is skipped, unless CI is set or
// EMI_REQUIRE_XMLLINT=1: then it fails. A failure to run xmllint at all
// fails the test, so an error always means an invalid document.
func xmllint(t *testing.T, doc []byte) error {
	t.Helper()
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		msg := "xmllint is not installed (Debian: apt-get install libxml2-utils): the goAML report is not validated against the schema"
		if os.Getenv("CI") != "" || os.Getenv("EMI_REQUIRE_XMLLINT") == "1" {
			t.Fatal(msg + " (CI or EMI_REQUIRE_XMLLINT=1 is set: .ci/run installs it)")
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	xsd, report := filepath.Join(dir, "goAMLSchema.xsd"), filepath.Join(dir, "report.xml")
	if err := os.WriteFile(xsd, Schema, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--noout", "--nonet", "--schema", xsd, report).CombinedOutput()
	if err == nil {
		return nil
	}
	// Exit status 3 and 4 are xmllint's "the document does not validate";
	// others (the schema does not compile, a file is missing) are the test's
	// failure.
	var exit *exec.ExitError
	if !errors.As(err, &exit) || (exit.ExitCode() != 3 && exit.ExitCode() != 4) {
		t.Fatalf("xmllint did not run the validation: %v\n%s", err, out)
	}
	return fmt.Errorf("%w: %s", err, out)
}

// numbered is doc with line numbers, for failure messages.
func numbered(doc []byte) string {
	var b strings.Builder
	for i, line := range strings.Split(string(doc), "\n") {
		fmt.Fprintf(&b, "%4d %s\n", i+1, line)
	}
	return b.String()
}

func TestReportValidatesAgainstTheSchema(t *testing.T) {
	for name, r := range map[string]Report{"person client": realistic(), "company client": companyReport()} {
		t.Run(name, func(t *testing.T) {
			doc, err := r.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if err := xmllint(t, doc); err != nil {
				t.Fatalf("the report does not validate: %v\n%s", err, numbered(doc))
			}
		})
	}
}

// TestXmllintRejectsABrokenReport is the test of the test: the validation
// can fail, on a wrong value and on elements out of the schema's order.
func TestXmllintRejectsABrokenReport(t *testing.T) {
	doc, err := realistic().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, from, to, element string }{
		{"amount", "<amount_local>7500</amount_local>", "<amount_local>7,500</amount_local>", "amount_local"},
		{"order", "<rentity_id>4711</rentity_id>\n  <rentity_branch>Head office</rentity_branch>",
			"<rentity_branch>Head office</rentity_branch>\n  <rentity_id>4711</rentity_id>", "rentity_branch"},
		{"country", "<to_country>MC</to_country>", "<to_country>XX</to_country>", "to_country"},
		{"is_primary", "<is_primary>1</is_primary>", "<is_primary>0</is_primary>", "is_primary"},
	} {
		broken := bytes.Replace(doc, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(broken, doc) {
			t.Fatalf("%s: %q is not in the output: the test is out of date", c.name, c.from)
		}
		err := xmllint(t, broken)
		if err == nil {
			t.Errorf("%s: xmllint accepted a broken report", c.name)
		} else if !strings.Contains(err.Error(), "Element '"+c.element+"'") {
			t.Errorf("%s: xmllint rejected the report, but not for %s: %v", c.name, c.element, err)
		}
	}
}

func TestMarshalWritesTheDeclarationAndEscapes(t *testing.T) {
	doc, err := realistic().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(doc, []byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n<report>")) {
		t.Errorf("the document starts %q", doc[:60])
	}
	for _, want := range []string{
		"<first_name>Zoë &lt;Jo&gt;</first_name>",
		"<last_name>Dupré &amp; Søn</last_name>",
		"<account_name>Müller &amp; Co &lt;GmbH&gt;</account_name>",
		"<report_date>2024-03-12T16:45:00</report_date>",
		"<birthdate>1988-02-29T00:00:00</birthdate>",
		"<iban>FR7630006000011234567890189</iban>", // spaces removed
		"<report_code>STR</report_code>",
		"<submission_code>E</submission_code>",
		"<swift>DEUTDEFFXXX</swift>",
		"<institution_code>0049</institution_code>",
		"<non_bank_institution>true</non_bank_institution>",
		"<to_funds_code>K</to_funds_code>",
		"<transmode_code>B</transmode_code>",
	} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("the document lacks %s", want)
		}
	}
	for _, unwanted := range []string{"submission_date", "schema_version", "reporting_user_code", "related_persons", "<account_type>"} {
		if bytes.Contains(doc, []byte(unwanted)) {
			t.Errorf("the document has %s, which schema 5.0.1 reports should not use", unwanted)
		}
	}
}

// parsed is what TestOutputParsesBack reads back.
type parsed struct {
	Reason       string `xml:"reason"`
	Transactions []struct {
		Number string `xml:"transactionnumber"`
		Amount string `xml:"amount_local"`
		Sides  []struct {
			XMLName xml.Name // t_from_my_client, t_from, t_to_my_client or t_to
			Parts   []struct {
				XMLName   xml.Name // from_funds_code, from_account, to_entity...
				IBAN      string   `xml:"iban"`
				Name      string   `xml:"name"`
				FirstName string   `xml:"signatory>t_person>first_name"`
			} `xml:",any"`
		} `xml:",any"`
	} `xml:"transaction"`
}

func TestOutputParsesBack(t *testing.T) {
	r := realistic()
	doc, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got parsed
	if err := xml.Unmarshal(doc, &got); err != nil {
		t.Fatalf("encoding/xml cannot read the output back: %v", err)
	}
	if got.Reason != r.Reason {
		t.Errorf("reason = %q, want %q", got.Reason, r.Reason)
	}
	if len(got.Transactions) != len(r.Transactions) {
		t.Fatalf("%d transactions read back, want %d", len(got.Transactions), len(r.Transactions))
	}
	// describe is a side as "element account-or-entity IBAN-or-name first-name".
	describe := func(el string, p Party) string {
		switch {
		case p.Client != nil:
			return fmt.Sprintf("%s_my_client account %s %s", el, normIBAN(p.Client.IBAN), p.Client.Holder.FirstName)
		case p.External != nil:
			return fmt.Sprintf("%s account %s ", el, p.External.IBAN)
		default:
			return fmt.Sprintf("%s entity %s ", el, p.Merchant.Name)
		}
	}
	for i, want := range r.Transactions {
		g := got.Transactions[i]
		if g.Number != want.Number || g.Amount != want.AmountLocal {
			t.Errorf("transaction %d = %s %s, want %s %s", i, g.Number, g.Amount, want.Number, want.AmountLocal)
		}
		var sides []string
		for _, s := range g.Sides {
			for _, p := range s.Parts {
				if _, kind, ok := strings.Cut(p.XMLName.Local, "_"); ok && (kind == "account" || kind == "entity") {
					sides = append(sides, fmt.Sprintf("%s %s %s %s", s.XMLName.Local, kind, p.IBAN+p.Name, p.FirstName))
				}
			}
		}
		wantSides := []string{describe("t_from", want.From), describe("t_to", want.To)}
		if !slices.Equal(sides, wantSides) {
			t.Errorf("transaction %d sides = %q, want %q", i, sides, wantSides)
		}
	}
}

func TestInvalidReportReturnsTheFieldsAndNoBytes(t *testing.T) {
	r := realistic()
	r.Reason = ""
	r.Transactions[1].AmountLocal = "7,500.00"
	r.Transactions[0].From.External.Country = "XX"
	r.Transactions[2].To.Merchant.Country = "fr"
	r.Transactions[3].To.Client.Holder.BirthDate = time.Time{}       // the second client's only account
	r.Transactions[3].To.Client.IBAN = "FR1420041010050500013M02607" // one check digit off

	doc, err := r.Marshal()
	if doc != nil {
		t.Errorf("Marshal returned %d bytes with its error", len(doc))
	}
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	fields := map[string]string{}
	for _, p := range verr.Problems {
		fields[p.Field] = p.Problem
	}
	for _, want := range []string{
		"Reason",
		"Transactions[1].AmountLocal",
		"Transactions[0].From.External.Country",
		"Transactions[2].To.Merchant.Country",
		"Transactions[3].To.Client.Holder.BirthDate",
		"Transactions[3].To.Client.IBAN",
	} {
		if _, ok := fields[want]; !ok {
			t.Errorf("no problem reported for %s (got %v)", want, verr.Problems)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error message does not name %s: %v", want, err)
		}
	}
	if len(verr.Problems) != 6 {
		t.Errorf("%d problems, want 6: %v", len(verr.Problems), verr.Problems)
	}
}

func TestInvalidValues(t *testing.T) {
	for _, c := range []struct {
		name, field string
		edit        func(*Report)
	}{
		{"no transactions", "Transactions", func(r *Report) { r.Transactions = nil }},
		{"rentity id", "RentityID", func(r *Report) { r.RentityID = 0 }},
		{"report date", "ReportDate", func(r *Report) { r.ReportDate = time.Time{} }},
		{"date before 1753", "Transactions[0].Date", func(r *Report) { r.Transactions[0].Date = date(1697, time.February, 1) }},
		{"currency", "CurrencyLocal", func(r *Report) { r.CurrencyLocal = "EURO" }},
		{"negative amount", "Transactions[0].AmountLocal", func(r *Report) { r.Transactions[0].AmountLocal = "-5" }},
		{"zero amount", "Transactions[0].AmountLocal", func(r *Report) { r.Transactions[0].AmountLocal = "0.00" }},
		{"too many decimals", "Transactions[0].AmountLocal", func(r *Report) { r.Transactions[0].AmountLocal = "1.12345678901234" }},
		{"above the maximum", "Transactions[0].AmountLocal", func(r *Report) { r.Transactions[0].AmountLocal = "7900000000000000.01" }},
		{"two sides", "Transactions[0].From", func(r *Report) { r.Transactions[0].From.Merchant = &Merchant{Name: "x", Country: "FR"} }},
		{"no side", "Transactions[0].To", func(r *Report) { r.Transactions[0].To = Party{} }},
		{"no BIC nor code", "Transactions[0].From.External.BIC", func(r *Report) { r.Transactions[0].From.External.BIC = "" }},
		{"bad BIC", "Transactions[0].From.External.BIC", func(r *Report) { r.Transactions[0].From.External.BIC = "deutdeff" }},
		{"no account number", "Transactions[0].From.External.IBAN", func(r *Report) { r.Transactions[0].From.External.IBAN = "" }},
		{"long branch", "Transactions[0].To.Client.Branch", func(r *Report) { r.Transactions[0].To.Client.Branch = strings.Repeat("é", 256) }},
		{"client number", "Transactions[0].To.Client.ClientNumber", func(r *Report) { r.Transactions[0].To.Client.ClientNumber = strings.Repeat("9", 31) }},
		{"no SSN", "Transactions[0].To.Client.Holder.SSN", func(r *Report) { r.Transactions[0].To.Client.Holder.SSN = " " }},
		{"no phone", "Transactions[0].To.Client.Holder.Phones", func(r *Report) { r.Transactions[0].To.Client.Holder.Phones = nil }},
		{"long prefix", "Transactions[0].To.Client.Holder.Phones[0].CountryPrefix", func(r *Report) {
			r.Transactions[0].To.Client.Holder.Phones[0].CountryPrefix = "+0033"
		}},
		{"document country", "Transactions[0].To.Client.Holder.Documents[0].IssueCountry", func(r *Report) {
			r.Transactions[0].To.Client.Holder.Documents[0].IssueCountry = ""
		}},
		{"control character", "Action", func(r *Report) { r.Action = "held\x00" }},
		{"invalid UTF-8", "Transactions[0].Description", func(r *Report) { r.Transactions[0].Description = "caf\xe9" }},
		{"reporting person", "ReportingPerson.LastName", func(r *Report) { r.ReportingPerson.LastName = "" }},
		{"location", "Location.City", func(r *Report) { r.Location.City = "" }},
		{"indicator", "Indicators[0]", func(r *Report) { r.Indicators = []string{"a b"} }},
		{"transmode code", "Transactions[0].TransmodeCode", func(r *Report) { r.Transactions[0].TransmodeCode = "é" }},
		{"codes", "Codes.Funds", func(r *Report) { r.Codes.Funds = "\t" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := realistic()
			c.edit(&r)
			doc, err := r.Marshal()
			var verr *ValidationError
			if doc != nil || !errors.As(err, &verr) {
				t.Fatalf("Marshal = %d bytes, %v; want no bytes and a *ValidationError", len(doc), err)
			}
			// A problem of the client's account shows once per
			// transaction that names the account.
			if verr.Problems[0].Field != c.field {
				t.Errorf("problems = %v, want the first for %s", verr.Problems, c.field)
			}
			for _, p := range verr.Problems[1:] {
				if p.Problem != verr.Problems[0].Problem || !strings.Contains(p.Field, ".Client.") {
					t.Errorf("problems = %v, want only %s", verr.Problems, c.field)
				}
			}
		})
	}
}

// TestCompanyNeedsItsRequiredFields: a company client's directors, phones,
// incorporation number and date are required by the schema.
func TestCompanyNeedsItsRequiredFields(t *testing.T) {
	r := companyReport()
	co := r.Transactions[0].From.Client.Company
	co.Directors, co.Phones, co.IncorporationNumber, co.IncorporationDate = nil, nil, "", time.Time{}
	_, err := r.Marshal()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	var fields []string
	for _, p := range verr.Problems {
		fields = append(fields, p.Field)
	}
	p := "Transactions[0].From.Client.Company."
	want := []string{p + "IncorporationNumber", p + "IncorporationDate", p + "Phones", p + "Directors"}
	if !slices.Equal(fields, want) {
		t.Errorf("fields = %q, want %q", fields, want)
	}
}

// TestDefaultCodesAreInThePublishedSchema: every default code is a value of
// its list in the embedded schema, so a report with the defaults validates.
func TestDefaultCodesAreInThePublishedSchema(t *testing.T) {
	lists := enumerationsOf(t, Schema)
	d := DefaultCodes()
	for list, code := range map[string]string{
		"submission_type":          d.Submission,
		"report_type":              d.Report,
		"conduction_type":          d.Transmode,
		"funds_type":               d.Funds,
		"account_type":             d.AccountType,
		"account_status_type":      d.AccountStatus,
		"account_person_role_type": d.SignatoryRole,
		"entity_person_role_type":  d.DirectorRole,
		"legal_form_type":          d.LegalForm,
		"identifier_type":          d.Identification,
		"contact_type":             d.ContactType,
		"communication_type":       d.CommunicationType,
		"report_indicator_type":    d.Indicator,
	} {
		if !slices.Contains(lists[list], code) {
			t.Errorf("default %q is not in the schema's %s %v", code, list, lists[list])
		}
	}
	if got := (Codes{}).withDefaults(); got != d {
		t.Errorf("Codes{}.withDefaults() = %+v, want DefaultCodes() %+v", got, d)
	}
	if got := (Codes{Funds: "K"}).withDefaults(); got.Funds != "K" || got.Report != "STR" {
		t.Errorf("a set code is replaced or a zero one kept: %+v", got)
	}
}

// enumerationsOf returns the enumeration values of every named simpleType.
func enumerationsOf(t *testing.T, xsd []byte) map[string][]string {
	t.Helper()
	var s struct {
		Types []struct {
			Name   string `xml:"name,attr"`
			Values []struct {
				Value string `xml:"value,attr"`
			} `xml:"restriction>enumeration"`
		} `xml:"simpleType"`
	}
	if err := xml.Unmarshal(xsd, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, ty := range s.Types {
		for _, v := range ty.Values {
			out[ty.Name] = append(out[ty.Name], v.Value)
		}
	}
	if len(out["country_type"]) < 200 || len(out["currency_type"]) < 100 {
		t.Fatalf("the schema's lists were not read: %d countries, %d currencies", len(out["country_type"]), len(out["currency_type"]))
	}
	return out
}

// TestCountryAndCurrencyListsComeFromTheSchema: Marshal's ISO lists are the
// schema's, without its "-" (unknown) entry.
func TestCountryAndCurrencyListsComeFromTheSchema(t *testing.T) {
	lists := enumerationsOf(t, Schema)
	got := schemaLists()
	for name, pair := range map[string]struct {
		schema []string
		ours   map[string]bool
	}{"country_type": {lists["country_type"], got.countries}, "currency_type": {lists["currency_type"], got.currencies}} {
		want := slices.DeleteFunc(slices.Clone(pair.schema), func(v string) bool { return v == "-" })
		if len(pair.ours) != len(want) {
			t.Errorf("%s: %d codes, the schema has %d besides -", name, len(pair.ours), len(want))
		}
		for _, v := range want {
			if !pair.ours[v] {
				t.Errorf("%s: %s missing", name, v)
			}
		}
	}
}
