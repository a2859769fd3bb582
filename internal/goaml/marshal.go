package goaml

import (
	"encoding/xml"
	"fmt"
	"time"
)

// Marshal checks the report and returns it as a goAML XML document: the
// declaration <?xml version="1.0" encoding="UTF-8"?>, then <report>,
// indented. When a field is missing or wrong it returns no bytes and a
// *ValidationError naming every such field.
//
// The document is valid against Schema when the lookup codes are codes of
// the published schema (DefaultCodes() are); with an FIU's own codes it is
// valid against that FIU's schema.
func (r Report) Marshal() ([]byte, error) {
	c := &checker{}
	doc := r.build(c)
	if len(c.problems) > 0 {
		return nil, &ValidationError{Problems: c.problems}
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("goaml: %w", err)
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// The wire types below follow the schema's xs:sequence order, which matters:
// encoding/xml writes fields in declaration order. Optional elements carry
// omitempty; required ones never do, so an empty required value still shows
// as an element (the checks reject those that may not be empty).

type xReport struct {
	XMLName         xml.Name       `xml:"report"`
	RentityID       int            `xml:"rentity_id"`
	RentityBranch   string         `xml:"rentity_branch"`
	SubmissionCode  string         `xml:"submission_code"`
	ReportCode      string         `xml:"report_code"`
	EntityReference string         `xml:"entity_reference,omitempty"`
	ReportDate      string         `xml:"report_date"`
	CurrencyLocal   string         `xml:"currency_code_local"`
	ReportingPerson xPerson        `xml:"reporting_person"`
	Location        xAddress       `xml:"location"`
	Reason          string         `xml:"reason,omitempty"`
	Action          string         `xml:"action,omitempty"`
	Transactions    []xTransaction `xml:"transaction"`
	Indicators      []string       `xml:"report_indicators>indicator"`
}

type xTransaction struct {
	Number        string         `xml:"transactionnumber"`
	InternalRef   string         `xml:"internal_ref_number,omitempty"`
	Location      string         `xml:"transaction_location"`
	Description   string         `xml:"transaction_description"`
	Date          string         `xml:"date_transaction"`
	TransmodeCode string         `xml:"transmode_code"`
	AmountLocal   string         `xml:"amount_local"`
	FromMyClient  *xFromMyClient `xml:"t_from_my_client"`
	From          *xFrom         `xml:"t_from"`
	ToMyClient    *xToMyClient   `xml:"t_to_my_client"`
	To            *xTo           `xml:"t_to"`
}

type xFromMyClient struct {
	FundsCode string           `xml:"from_funds_code"`
	Account   xAccountMyClient `xml:"from_account"`
	Country   string           `xml:"from_country"`
}

type xToMyClient struct {
	FundsCode string           `xml:"to_funds_code"`
	Account   xAccountMyClient `xml:"to_account"`
	Country   string           `xml:"to_country"`
}

type xFrom struct {
	FundsCode string    `xml:"from_funds_code"`
	Account   *xAccount `xml:"from_account"`
	Entity    *xEntity  `xml:"from_entity"`
	Country   string    `xml:"from_country"`
}

type xTo struct {
	FundsCode string    `xml:"to_funds_code"`
	Account   *xAccount `xml:"to_account"`
	Entity    *xEntity  `xml:"to_entity"`
	Country   string    `xml:"to_country"`
}

// xAccountMyClient is t_account_my_client.
type xAccountMyClient struct {
	InstitutionName string           `xml:"institution_name"`
	InstitutionCode string           `xml:"institution_code,omitempty"`
	Swift           string           `xml:"swift,omitempty"`
	NonBank         bool             `xml:"non_bank_institution,omitempty"`
	Branch          string           `xml:"branch"`
	Account         string           `xml:"account"`
	Currency        string           `xml:"currency_code"`
	AccountName     string           `xml:"account_name"`
	IBAN            string           `xml:"iban,omitempty"`
	ClientNumber    string           `xml:"client_number"`
	AccountType     string           `xml:"personal_account_type"`
	Entity          *xEntityMyClient `xml:"t_entity"`
	Signatory       xSignatory       `xml:"signatory"`
	Opened          string           `xml:"opened"`
	StatusCode      string           `xml:"status_code"`
}

type xSignatory struct {
	IsPrimary string  `xml:"is_primary"` // the schema fixes it to "1" (xmllint compares the text)
	Person    xPerson `xml:"t_person"`
	Role      string  `xml:"role"`
}

// xAccount is t_account.
type xAccount struct {
	InstitutionName string `xml:"institution_name"`
	InstitutionCode string `xml:"institution_code,omitempty"`
	Swift           string `xml:"swift,omitempty"`
	Account         string `xml:"account"`
	Currency        string `xml:"currency_code,omitempty"`
	AccountName     string `xml:"account_name,omitempty"`
	IBAN            string `xml:"iban,omitempty"`
}

// xEntityMyClient is t_entity_my_client.
type xEntityMyClient struct {
	Name                 string      `xml:"name"`
	CommercialName       string      `xml:"commercial_name"`
	LegalForm            string      `xml:"incorporation_legal_form"`
	IncorporationNumber  string      `xml:"incorporation_number"`
	Business             string      `xml:"business"`
	Phones               *xPhones    `xml:"phones"`
	Addresses            *xAddresses `xml:"addresses"`
	Email                string      `xml:"email,omitempty"`
	IncorporationCountry string      `xml:"incorporation_country_code"`
	Directors            []xDirector `xml:"director_id"`
	IncorporationDate    string      `xml:"incorporation_date"`
}

// xEntity is t_entity, as far as a merchant needs it.
type xEntity struct {
	Name     string `xml:"name"`
	Business string `xml:"business,omitempty"`
}

// xPerson is t_person_my_client, t_person and
// t_person_registration_in_report at once: the elements used here come in
// the same order in the three, and the checks enforce what each requires.
type xPerson struct {
	FirstName      string            `xml:"first_name"`
	MiddleName     string            `xml:"middle_name,omitempty"`
	LastName       string            `xml:"last_name"`
	BirthDate      string            `xml:"birthdate,omitempty"`
	SSN            string            `xml:"ssn,omitempty"`
	Nationality    string            `xml:"nationality1,omitempty"`
	Residence      string            `xml:"residence,omitempty"`
	Phones         *xPhones          `xml:"phones"`
	Addresses      *xAddresses       `xml:"addresses"`
	Email          string            `xml:"email,omitempty"`
	Occupation     string            `xml:"occupation,omitempty"`
	Identification []xIdentification `xml:"identification,omitempty"`
}

// xDirector is the t_person extension director_id: the person, then role.
type xDirector struct {
	xPerson
	Role string `xml:"role"`
}

type xIdentification struct {
	Type         string `xml:"type"`
	Number       string `xml:"number"`
	IssueDate    string `xml:"issue_date,omitempty"`
	ExpiryDate   string `xml:"expiry_date,omitempty"`
	IssuedBy     string `xml:"issued_by,omitempty"`
	IssueCountry string `xml:"issue_country"`
}

// xPhones and xAddresses are the phones and addresses lists, nil when
// empty: encoding/xml writes an empty parent for a "phones>phone" field with
// omitempty and no phone.
type xPhones struct {
	Phone []xPhone `xml:"phone"`
}

type xAddresses struct {
	Address []xAddress `xml:"address"`
}

type xPhone struct {
	ContactType       string `xml:"tph_contact_type"`
	CommunicationType string `xml:"tph_communication_type"`
	CountryPrefix     string `xml:"tph_country_prefix"`
	Number            string `xml:"tph_number"`
}

type xAddress struct {
	AddressType string `xml:"address_type"`
	Address     string `xml:"address"`
	City        string `xml:"city"`
	Zip         string `xml:"zip,omitempty"`
	Country     string `xml:"country_code"`
	State       string `xml:"state,omitempty"`
}

// dateTime is the sql_date form of an instant, in t's location.
func dateTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02T15:04:05")
}

// day is the sql_date form of a day: midnight of t's date.
func day(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02") + "T00:00:00"
}

// build checks the report into c and returns its wire form, which is only
// meaningful when c found no problem.
func (r Report) build(c *checker) xReport {
	codes := r.Codes.withDefaults()
	for _, f := range []struct{ name, v string }{
		{"Submission", codes.Submission}, {"Report", codes.Report}, {"Transmode", codes.Transmode},
		{"Funds", codes.Funds}, {"AccountType", codes.AccountType}, {"AccountStatus", codes.AccountStatus},
		{"SignatoryRole", codes.SignatoryRole}, {"DirectorRole", codes.DirectorRole}, {"LegalForm", codes.LegalForm},
		{"Identification", codes.Identification}, {"ContactType", codes.ContactType},
		{"CommunicationType", codes.CommunicationType}, {"Indicator", codes.Indicator},
	} {
		c.code("Codes."+f.name, f.v)
	}

	if r.RentityID < 1 || r.RentityID > 1<<31-1 {
		c.add("RentityID", "is %d: the FIU's id of the reporting entity is required, 1 or more", r.RentityID)
	}
	c.text("RentityBranch", r.RentityBranch, 1, 255)
	c.text("EntityReference", r.EntityReference, 0, 255)
	c.date("ReportDate", r.ReportDate, true)
	c.currency("CurrencyLocal", r.CurrencyLocal, true)
	c.text("Reason", r.Reason, 1, 8000)
	c.text("Action", r.Action, 0, 8000)

	doc := xReport{
		RentityID:       r.RentityID,
		RentityBranch:   r.RentityBranch,
		SubmissionCode:  codes.Submission,
		ReportCode:      codes.Report,
		EntityReference: r.EntityReference,
		ReportDate:      dateTime(r.ReportDate),
		CurrencyLocal:   r.CurrencyLocal,
		ReportingPerson: person(c, "ReportingPerson", r.ReportingPerson, codes, false),
		Location:        address(c, "Location", r.Location, codes),
		Reason:          r.Reason,
		Action:          r.Action,
	}

	if len(r.Transactions) == 0 {
		c.add("Transactions", "is empty: a report needs at least one transaction")
	}
	for i, t := range r.Transactions {
		doc.Transactions = append(doc.Transactions, transaction(c, fmt.Sprintf("Transactions[%d]", i), t, codes))
	}

	doc.Indicators = r.Indicators
	if len(doc.Indicators) == 0 {
		doc.Indicators = []string{codes.Indicator}
	}
	for i, ind := range r.Indicators {
		c.code(fmt.Sprintf("Indicators[%d]", i), ind)
	}
	return doc
}

func transaction(c *checker, path string, t Transaction, codes Codes) xTransaction {
	c.text(path+".Number", t.Number, 1, 100)
	c.text(path+".InternalRef", t.InternalRef, 0, 100)
	c.text(path+".Location", t.Location, 0, 255)
	c.text(path+".Description", t.Description, 0, 8000)
	c.date(path+".Date", t.Date, true)
	mode := t.TransmodeCode
	if mode == "" {
		mode = codes.Transmode
	} else {
		c.code(path+".TransmodeCode", mode)
	}
	c.amount(path+".AmountLocal", t.AmountLocal)

	x := xTransaction{
		Number:        t.Number,
		InternalRef:   t.InternalRef,
		Location:      t.Location,
		Description:   t.Description,
		Date:          dateTime(t.Date),
		TransmodeCode: mode,
		AmountLocal:   t.AmountLocal,
	}

	funds, country, mine, account, entity := party(c, path+".From", t.From, codes)
	if mine != nil {
		x.FromMyClient = &xFromMyClient{FundsCode: funds, Account: *mine, Country: country}
	} else {
		x.From = &xFrom{FundsCode: funds, Account: account, Entity: entity, Country: country}
	}
	funds, country, mine, account, entity = party(c, path+".To", t.To, codes)
	if mine != nil {
		x.ToMyClient = &xToMyClient{FundsCode: funds, Account: *mine, Country: country}
	} else {
		x.To = &xTo{FundsCode: funds, Account: account, Entity: entity, Country: country}
	}
	return x
}

// party returns one side of a transaction: its funds code and country, and
// one of our client's account, another account or a merchant.
func party(c *checker, path string, p Party, codes Codes) (funds, country string, mine *xAccountMyClient, account *xAccount, entity *xEntity) {
	funds = p.FundsCode
	if funds == "" {
		funds = codes.Funds
	} else {
		c.code(path+".FundsCode", funds)
	}
	set := 0
	for _, b := range []bool{p.Client != nil, p.External != nil, p.Merchant != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		c.add(path, "sets %d of Client, External and Merchant: exactly one is required", set)
		return funds, "", nil, nil, nil
	}
	switch {
	case p.Client != nil:
		a := clientAccount(c, path+".Client", *p.Client, codes)
		c.country(path+".Client.Country", p.Client.Country)
		return funds, p.Client.Country, &a, nil, nil
	case p.External != nil:
		e := p.External
		ep := path + ".External"
		c.text(ep+".InstitutionName", e.InstitutionName, 1, 255)
		c.institution(ep, e.BIC, e.InstitutionCode)
		number := accountNumber(c, ep, e.Number, e.IBAN)
		c.text(ep+".Name", e.Name, 0, 255)
		c.currency(ep+".Currency", e.Currency, false)
		c.country(ep+".Country", e.Country)
		a := &xAccount{
			InstitutionName: e.InstitutionName,
			Account:         number,
			Currency:        e.Currency,
			AccountName:     e.Name,
			IBAN:            normIBAN(e.IBAN),
		}
		a.Swift, a.InstitutionCode = institutionIDs(e.BIC, e.InstitutionCode)
		return funds, e.Country, nil, a, nil
	default:
		m := p.Merchant
		mp := path + ".Merchant"
		c.text(mp+".Name", m.Name, 1, 255)
		c.text(mp+".Business", m.Business, 0, 255)
		c.country(mp+".Country", m.Country)
		return funds, m.Country, nil, nil, &xEntity{Name: m.Name, Business: m.Business}
	}
}

// institutionIDs is the swift or institution_code written: BIC when set.
func institutionIDs(bic, code string) (swift, institutionCode string) {
	if bic != "" {
		return bic, ""
	}
	return "", code
}

// accountNumber checks an account's number and IBAN and returns the
// account element's value: the number, or else the IBAN.
func accountNumber(c *checker, path, number, iban string) string {
	if iban != "" {
		c.iban(path+".IBAN", iban)
	}
	if number != "" {
		c.text(path+".Number", number, 1, 255)
		return number
	}
	if iban == "" {
		c.add(path+".IBAN", "is required, or Number (the schema requires the account's number)")
	}
	return normIBAN(iban)
}

func clientAccount(c *checker, path string, a ClientAccount, codes Codes) xAccountMyClient {
	c.text(path+".InstitutionName", a.InstitutionName, 1, 255)
	c.institution(path, a.BIC, a.InstitutionCode)
	c.text(path+".Branch", a.Branch, 1, 255)
	number := accountNumber(c, path, a.Number, a.IBAN)
	c.currency(path+".Currency", a.Currency, true)
	c.text(path+".Name", a.Name, 1, 255)
	c.text(path+".ClientNumber", a.ClientNumber, 1, 30)
	c.date(path+".Opened", a.Opened, true)

	x := xAccountMyClient{
		InstitutionName: a.InstitutionName,
		NonBank:         a.NonBank,
		Branch:          a.Branch,
		Account:         number,
		Currency:        a.Currency,
		AccountName:     a.Name,
		IBAN:            normIBAN(a.IBAN),
		ClientNumber:    a.ClientNumber,
		AccountType:     codes.AccountType,
		Signatory: xSignatory{
			IsPrimary: "1",
			Person:    person(c, path+".Holder", a.Holder, codes, true),
			Role:      codes.SignatoryRole,
		},
		Opened:     day(a.Opened),
		StatusCode: codes.AccountStatus,
	}
	x.Swift, x.InstitutionCode = institutionIDs(a.BIC, a.InstitutionCode)
	if a.Company != nil {
		e := company(c, path+".Company", *a.Company, codes)
		x.Entity = &e
	}
	return x
}

func company(c *checker, path string, co Company, codes Codes) xEntityMyClient {
	c.text(path+".Name", co.Name, 1, 255)
	commercial := co.CommercialName
	if commercial == "" {
		commercial = co.Name
	} else {
		c.text(path+".CommercialName", commercial, 1, 255)
	}
	legal := co.LegalForm
	if legal == "" {
		legal = codes.LegalForm
	} else {
		c.code(path+".LegalForm", legal)
	}
	c.text(path+".IncorporationNumber", co.IncorporationNumber, 1, 50)
	c.text(path+".Business", co.Business, 0, 255)
	c.text(path+".Email", co.Email, 0, 255)
	c.country(path+".IncorporationCountry", co.IncorporationCountry)
	c.date(path+".IncorporationDate", co.IncorporationDate, true)
	if len(co.Phones) == 0 {
		c.add(path+".Phones", "is empty: the schema requires at least one phone of a company client")
	}
	if len(co.Directors) == 0 {
		c.add(path+".Directors", "is empty: the schema requires at least one director of a company client")
	}

	x := xEntityMyClient{
		Name:                 co.Name,
		CommercialName:       commercial,
		LegalForm:            legal,
		IncorporationNumber:  co.IncorporationNumber,
		Business:             co.Business,
		Phones:               phones(c, path+".Phones", co.Phones, codes),
		Addresses:            addresses(c, path+".Addresses", co.Addresses, codes),
		Email:                co.Email,
		IncorporationCountry: co.IncorporationCountry,
		IncorporationDate:    day(co.IncorporationDate),
	}
	for i, d := range co.Directors {
		dp := fmt.Sprintf("%s.Directors[%d]", path, i)
		role := d.Role
		if role == "" {
			role = codes.DirectorRole
		} else {
			c.code(dp+".Role", role)
		}
		x.Directors = append(x.Directors, xDirector{xPerson: person(c, dp, d.Person, codes, false), Role: role})
	}
	return x
}

// person checks and converts a person. client is true for our client
// (t_person_my_client), which requires more than the other person types.
func person(c *checker, path string, p Person, codes Codes, client bool) xPerson {
	req := 0
	if client {
		req = 1
	}
	c.text(path+".FirstName", p.FirstName, 1, 100)
	c.text(path+".MiddleName", p.MiddleName, 0, 100)
	c.text(path+".LastName", p.LastName, 1, 100)
	c.date(path+".BirthDate", p.BirthDate, client)
	c.text(path+".SSN", p.SSN, req, 25)
	if client || p.Nationality != "" {
		c.country(path+".Nationality", p.Nationality)
	}
	if client || p.Residence != "" {
		c.country(path+".Residence", p.Residence)
	}
	if client && len(p.Phones) == 0 {
		c.add(path+".Phones", "is empty: the schema requires at least one phone of a client")
	}
	c.text(path+".Email", p.Email, 0, 255)
	c.text(path+".Occupation", p.Occupation, req, 255)

	x := xPerson{
		FirstName:   p.FirstName,
		MiddleName:  p.MiddleName,
		LastName:    p.LastName,
		BirthDate:   day(p.BirthDate),
		SSN:         p.SSN,
		Nationality: p.Nationality,
		Residence:   p.Residence,
		Phones:      phones(c, path+".Phones", p.Phones, codes),
		Addresses:   addresses(c, path+".Addresses", p.Addresses, codes),
		Email:       p.Email,
		Occupation:  p.Occupation,
	}
	for i, d := range p.Documents {
		dp := fmt.Sprintf("%s.Documents[%d]", path, i)
		typ := d.Type
		if typ == "" {
			typ = codes.Identification
		} else {
			c.code(dp+".Type", typ)
		}
		c.text(dp+".Number", d.Number, 1, 255)
		c.text(dp+".IssuedBy", d.IssuedBy, 0, 255)
		c.date(dp+".IssueDate", d.IssueDate, false)
		c.date(dp+".ExpiryDate", d.ExpiryDate, false)
		c.country(dp+".IssueCountry", d.IssueCountry)
		x.Identification = append(x.Identification, xIdentification{
			Type:         typ,
			Number:       d.Number,
			IssueDate:    day(d.IssueDate),
			ExpiryDate:   day(d.ExpiryDate),
			IssuedBy:     d.IssuedBy,
			IssueCountry: d.IssueCountry,
		})
	}
	return x
}

func phones(c *checker, path string, ps []Phone, codes Codes) *xPhones {
	if len(ps) == 0 {
		return nil
	}
	out := &xPhones{}
	for i, p := range ps {
		pp := fmt.Sprintf("%s[%d]", path, i)
		c.text(pp+".CountryPrefix", p.CountryPrefix, 1, 4)
		c.text(pp+".Number", p.Number, 1, 50)
		out.Phone = append(out.Phone, xPhone{
			ContactType:       codes.ContactType,
			CommunicationType: codes.CommunicationType,
			CountryPrefix:     p.CountryPrefix,
			Number:            p.Number,
		})
	}
	return out
}

func addresses(c *checker, path string, as []Address, codes Codes) *xAddresses {
	if len(as) == 0 {
		return nil
	}
	out := &xAddresses{}
	for i, a := range as {
		out.Address = append(out.Address, address(c, fmt.Sprintf("%s[%d]", path, i), a, codes))
	}
	return out
}

func address(c *checker, path string, a Address, codes Codes) xAddress {
	c.text(path+".Street", a.Street, 1, 100)
	c.text(path+".City", a.City, 1, 255)
	c.text(path+".Zip", a.Zip, 0, 10)
	c.text(path+".State", a.State, 0, 255)
	c.country(path+".Country", a.Country)
	return xAddress{
		AddressType: codes.ContactType,
		Address:     a.Street,
		City:        a.City,
		Zip:         a.Zip,
		Country:     a.Country,
		State:       a.State,
	}
}
