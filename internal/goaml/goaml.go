// Package goaml writes a suspicious transaction report (STR) as a goAML XML
// file: the format of UNODC's goAML, the reporting system of many financial
// intelligence units (FIUs). The output is valid against the published goAML
// schema version 5.0.1, which the package embeds (Schema; README.md says
// where the file comes from), as long as its lookup codes are the published
// schema's (the defaults are: see Lookup codes below).
//
// The caller fills a Report with plain values (names, IBANs, dates, amounts
// as decimal strings) and calls Marshal. Marshal checks every field the
// schema requires, its length and its format first, and returns either the
// whole document or a *ValidationError listing every problem by its Go field
// path (Transactions[1].From.Client.IBAN), never part of a document.
//
// What the package writes, element by element:
//
//   - one <report> with report_date (not the older submission_date), a
//     reporting_person (the approving compliance officer), the location,
//     reason and action, the transactions and report_indicators;
//   - per transaction, each side as t_from_my_client / t_to_my_client when it
//     is an account of ours (Party.Client: a t_account_my_client with the
//     holder as its signatory, and the company as t_entity for a company's
//     account), or t_from / t_to for an account elsewhere (Party.External: a
//     t_account) or a card merchant (Party.Merchant: a t_entity);
//   - only elements of schema 5.0 and earlier: none of those the schema
//     marks goaml:supportedIn="5.1" or "5.2".
//
// The package imports only the standard library.
//
// # Lookup codes
//
// The schema fixes the ISO codes (countries, currencies), which
// Marshal checks against the embedded schema's own lists. The other lookup
// lists (funds_type, conduction_type, account_type, report_indicator_type...)
// are placeholders in the published schema: it lists letters without their
// meaning, and each FIU publishes its own table (and its own schema with its
// own codes). Report.Codes holds the codes written, DefaultCodes documents
// the defaults; Marshal checks that a code is present and well-formed, not
// that the FIU knows it.
//
// # Dates
//
// Dates are written in the schema's sql_date form, an xs:dateTime without a
// zone offset ("2024-03-05T14:07:00", from 1753-01-01 as SQL Server's
// datetime), in the time.Time's own location: pass times in the zone the FIU
// expects (usually its local time). Dates that are days (birth dates,
// incorporation, account opening, identity documents) are written at
// midnight of their day.
package goaml

import (
	_ "embed" // the schema file
	"time"
)

// SchemaVersion is the goAML schema version of Schema (the value of its
// goaml:schemaVersion attribute) and the version Marshal writes for.
const SchemaVersion = "5.0.1"

// schema is the embedded goAMLSchema.xsd, which Marshal reads its country
// and currency lists from.
//
//go:embed goAMLSchema.xsd
var schema string

// Schema is the goAML XML schema (XSD) version 5.0.1 as published, byte for
// byte (README.md says where it comes from). A report from Marshal validates
// against it, e.g. with xmllint --noout --schema goAMLSchema.xsd report.xml.
// It is a copy of the embedded file: changing it changes nothing Marshal
// does.
var Schema = []byte(schema)

// Report is a suspicious transaction report, the input of Marshal. Fields
// marked required must be set; the others may stay empty (zero).
type Report struct {
	// RentityID is the reporting entity's id at the FIU (rentity_id,
	// required, 1 or more).
	RentityID int
	// RentityBranch names the reporting entity's branch (rentity_branch,
	// required by the schema, 1-255 characters).
	RentityBranch string
	// EntityReference is our own reference of the report, e.g. its token
	// (entity_reference, optional, up to 255 characters).
	EntityReference string
	// ReportDate is when the report was made (report_date, required).
	ReportDate time.Time
	// CurrencyLocal is the ISO 4217 code of the currency of every
	// Transaction.AmountLocal (currency_code_local, required), e.g. "EUR".
	CurrencyLocal string
	// ReportingPerson is the compliance officer who approved the report
	// (reporting_person). FirstName and LastName are required; Email and
	// Occupation are written when set.
	ReportingPerson Person
	// Location is the address of the reporting entity (location, required).
	Location Address
	// Reason is the narrative: why the activity is suspicious (reason,
	// required here although the schema makes it optional, up to 8,000
	// characters).
	Reason string
	// Action is what the institution did, e.g. "Account blocked, funds held"
	// (action, optional, up to 8,000 characters).
	Action string
	// Indicators are the FIU's report indicator codes (report_indicators,
	// at least one). Empty writes the single code Codes.Indicator.
	Indicators []string
	// Transactions are the reported transactions (at least one).
	Transactions []Transaction
	// Codes are the FIU lookup codes written where the input does not give
	// one; a zero field takes its value from DefaultCodes().
	Codes Codes
}

// Transaction is one reported transaction: money moving From one party To
// another.
type Transaction struct {
	// Number is the transaction's number, e.g. the ledger entry's id
	// (transactionnumber, required, 1-100 characters).
	Number string
	// InternalRef is another reference of ours, e.g. the payment's end-to-end
	// id (internal_ref_number, optional, up to 100 characters).
	InternalRef string
	// Location is where the transaction took place, e.g. "online banking"
	// (transaction_location, optional, up to 255 characters).
	Location string
	// Description says what the transaction is, e.g. "Incoming SEPA credit
	// transfer" (transaction_description, optional, up to 8,000 characters).
	Description string
	// Date is when the transaction took place (date_transaction, required).
	Date time.Time
	// TransmodeCode is the FIU's conduction type code: how the transaction
	// was conducted (transmode_code). Empty writes Codes.Transmode.
	TransmodeCode string
	// AmountLocal is the amount in Report.CurrencyLocal, as a decimal
	// string with a dot: "1234.56" (amount_local, required, more than zero,
	// up to 13 decimals and at most 7,900,000,000,000,000).
	AmountLocal string
	// From is where the money came from, To where it went. Each sets exactly
	// one of Party's Client, External or Merchant.
	From, To Party
}

// Party is one side of a Transaction: an account of one of our clients
// (Client), an account at another institution (External), or a card merchant
// (Merchant). Exactly one of the three is set.
type Party struct {
	// FundsCode is the FIU's funds type code of this side
	// (from_funds_code / to_funds_code). Empty writes Codes.Funds.
	FundsCode string
	// Client is an account of one of our clients: written as
	// t_from_my_client / t_to_my_client.
	Client *ClientAccount
	// External is an account elsewhere: written as t_from / t_to with an
	// account.
	External *ExternalAccount
	// Merchant is a card merchant: written as t_from / t_to with an entity.
	Merchant *Merchant
}

// ClientAccount is an account of one of our clients (t_account_my_client),
// held by a person or by a company. The schema requires much of it.
type ClientAccount struct {
	// InstitutionName is our name (institution_name, required, 1-255).
	InstitutionName string
	// BIC is our BIC (swift, 8 or 11 characters). One of BIC and
	// InstitutionCode is required; BIC wins when both are set.
	BIC string
	// InstitutionCode is our code at the FIU or the national bank code
	// (institution_code, 1-50 characters), written when BIC is empty.
	InstitutionCode string
	// NonBank writes non_bank_institution true: the account is held at an
	// institution that is not a bank, as an e-money institution is.
	NonBank bool
	// Branch is the branch that holds the account (branch, required by the
	// schema, 1-255 characters), e.g. "Head office".
	Branch string
	// Number is the account number (account, 1-255 characters). Empty
	// writes the IBAN.
	Number string
	// IBAN is the account's IBAN (iban), written without spaces in capitals;
	// its check digits are verified.
	IBAN string
	// Currency is the ISO 4217 code of the account's currency
	// (currency_code, required).
	Currency string
	// Name is the account's name, usually the holder's name (account_name,
	// required, 1-255 characters).
	Name string
	// ClientNumber is our number of the client, e.g. the member or company
	// id (client_number, required, 1-30 characters).
	ClientNumber string
	// Opened is when the account was opened (opened, required).
	Opened time.Time
	// Country is the ISO 3166 code of the country where the account is held
	// (from_country / to_country, required).
	Country string
	// Holder is the account holder when a person; for a company's account,
	// the person who acts for the company on it. It is written as the
	// account's signatory (t_person_my_client), which the schema requires
	// on every account of ours: FirstName, LastName, BirthDate, SSN,
	// Nationality, Residence, Occupation and at least one phone are required.
	Holder Person
	// Company is the holder when a company (t_entity); nil for a person's
	// account.
	Company *Company
}

// Company is a company client (t_entity_my_client).
type Company struct {
	// Name is the registered name (name, required, 1-255 characters).
	Name string
	// CommercialName is the trading name (commercial_name, required by the
	// schema, 1-255 characters). Empty writes Name.
	CommercialName string
	// LegalForm is the FIU's legal form code (incorporation_legal_form).
	// Empty writes Codes.LegalForm.
	LegalForm string
	// IncorporationNumber is the registration number (incorporation_number,
	// required, 1-50 characters).
	IncorporationNumber string
	// Business describes the activity (business, up to 255 characters).
	Business string
	// Phones are the company's phones (phones, at least one).
	Phones []Phone
	// Addresses are the company's addresses (addresses, optional).
	Addresses []Address
	// Email is the company's e-mail address (email, optional, up to 255).
	Email string
	// IncorporationCountry is the ISO 3166 code of the country of
	// registration (incorporation_country_code, required).
	IncorporationCountry string
	// IncorporationDate is when the company was registered
	// (incorporation_date, required).
	IncorporationDate time.Time
	// Directors are the company's directors and other related persons
	// (director_id, at least one). Their FirstName and LastName are
	// required.
	Directors []Director
}

// Director is a person related to a Company (director_id).
type Director struct {
	Person
	// Role is the FIU's code of the person's role in the company (role).
	// Empty writes Codes.DirectorRole.
	Role string
}

// ExternalAccount is an account at another institution (t_account): the
// counterparty of a transfer.
type ExternalAccount struct {
	// InstitutionName is the name of the institution that holds the
	// account (institution_name, required by the schema, 1-255 characters).
	InstitutionName string
	// BIC is the institution's BIC (swift, 8 or 11 characters). One of BIC
	// and InstitutionCode is required; BIC wins when both are set.
	BIC string
	// InstitutionCode is the institution's national bank code
	// (institution_code, 1-50 characters), written when BIC is empty.
	InstitutionCode string
	// Number is the account number (account, 1-255 characters). Empty
	// writes the IBAN.
	Number string
	// IBAN is the account's IBAN (iban), written without spaces in capitals;
	// its check digits are verified.
	IBAN string
	// Name is the account holder's name as the payment gave it
	// (account_name, optional, up to 255 characters).
	Name string
	// Currency is the ISO 4217 code of the account's currency
	// (currency_code, optional).
	Currency string
	// Country is the ISO 3166 code of the country where the account is held
	// (from_country / to_country, required).
	Country string
}

// Merchant is a card merchant (t_entity).
type Merchant struct {
	// Name is the merchant's name as the card network gave it (name,
	// required, 1-255 characters).
	Name string
	// Business describes the merchant's activity, e.g. its category code
	// and label (business, optional, up to 255 characters).
	Business string
	// Country is the ISO 3166 code of the merchant's country (from_country
	// / to_country, required).
	Country string
}

// Person is a natural person. Which fields are required depends on the
// role: see Report.ReportingPerson, ClientAccount.Holder and
// Company.Directors. Fields that are set are always checked.
type Person struct {
	// FirstName (first_name, 1-100 characters), MiddleName (middle_name, up
	// to 100) and LastName (last_name, 1-100).
	FirstName, MiddleName, LastName string
	// BirthDate is the date of birth (birthdate).
	BirthDate time.Time
	// SSN is the person's national identification number (ssn, 1-25
	// characters), which the schema requires for our clients. Where the
	// client has none, the FIU's guidance says what to write.
	SSN string
	// Nationality is the ISO 3166 code of the nationality (nationality1).
	Nationality string
	// Residence is the ISO 3166 code of the country of residence
	// (residence).
	Residence string
	// Phones are the person's phones (phones).
	Phones []Phone
	// Addresses are the person's addresses (addresses).
	Addresses []Address
	// Email is the person's e-mail address (email, up to 255 characters).
	Email string
	// Occupation is the person's occupation, or for the reporting person
	// the position, e.g. "MLRO" (occupation, 1-255 characters).
	Occupation string
	// Documents are the identity documents seen (identification).
	Documents []IDDocument
}

// IDDocument is an identity document (t_person_identification).
type IDDocument struct {
	// Type is the FIU's identifier type code (type), e.g. its code for a
	// passport. Empty writes Codes.Identification.
	Type string
	// Number is the document's number (number, required, 1-255 characters).
	Number string
	// IssueCountry is the ISO 3166 code of the issuing country
	// (issue_country, required).
	IssueCountry string
	// IssuedBy names the issuing authority (issued_by, optional, up to 255).
	IssuedBy string
	// IssueDate and ExpiryDate are written when set (issue_date,
	// expiry_date).
	IssueDate, ExpiryDate time.Time
}

// Phone is a phone number (t_phone). Its contact and communication types
// are Codes.ContactType and Codes.CommunicationType.
type Phone struct {
	// CountryPrefix is the international dialling prefix, e.g. "33" or
	// "+33" (tph_country_prefix, required, 1-4 characters).
	CountryPrefix string
	// Number is the number without the prefix (tph_number, required, 1-50).
	Number string
}

// Address is a postal address (t_address). Its type is Codes.ContactType.
type Address struct {
	// Street is the street and number (address, required, 1-100
	// characters).
	Street string
	// City is the city (city, required, 1-255 characters).
	City string
	// Zip is the postal code (zip, optional, up to 10 characters).
	Zip string
	// State is the state or region (state, optional, up to 255).
	State string
	// Country is the ISO 3166 code of the country (country_code, required).
	Country string
}

// Codes are the FIU lookup codes Marshal writes where the input gives none.
// Each FIU publishes its own tables for these lists: set the codes of the
// FIU the report goes to. A zero field takes the value of DefaultCodes().
type Codes struct {
	// Submission is the submission_code, "E" by default.
	Submission string
	// Report is the report_code, "STR" by default.
	Report string
	// Transmode is the conduction type (transmode_code) of a Transaction
	// without TransmodeCode.
	Transmode string
	// Funds is the funds type (from_funds_code, to_funds_code) of a Party
	// without FundsCode.
	Funds string
	// AccountType is the account type of our clients' accounts
	// (personal_account_type).
	AccountType string
	// AccountStatus is the status of our clients' accounts (status_code).
	AccountStatus string
	// SignatoryRole is the role of ClientAccount.Holder on the account
	// (signatory role).
	SignatoryRole string
	// DirectorRole is the role of a Director without Role.
	DirectorRole string
	// LegalForm is the legal form of a Company without LegalForm
	// (incorporation_legal_form).
	LegalForm string
	// Identification is the type of an IDDocument without Type.
	Identification string
	// ContactType is the contact type of every address and phone
	// (address_type, tph_contact_type).
	ContactType string
	// CommunicationType is the communication type of every phone
	// (tph_communication_type).
	CommunicationType string
	// Indicator is the report indicator written when Report.Indicators is
	// empty.
	Indicator string
}

// DefaultCodes returns the codes Marshal writes for the zero fields of
// Report.Codes.
//
// Report is "STR", the code the schema annotates as STR in report_type.
// Submission is "E": submission_type lists "-", "E" and "M" without saying
// what they mean, and E is taken here for an electronic submission (M for a
// manual one), as the letters suggest; check the FIU's table.
//
// The published schema gives no meaning to the codes of the other lists,
// whose meanings each FIU sets in its own tables (the same letter can mean
// different things at different FIUs). Their default is "-", the code every
// one of those lists has and which report_type annotates as UNKNOWN: it is
// valid against the published schema but says nothing, so set the FIU's
// codes before filing. In the published schema "-" is also the only report
// indicator code.
func DefaultCodes() Codes {
	return Codes{
		Submission:        "E",
		Report:            "STR",
		Transmode:         "-",
		Funds:             "-",
		AccountType:       "-",
		AccountStatus:     "-",
		SignatoryRole:     "-",
		DirectorRole:      "-",
		LegalForm:         "-",
		Identification:    "-",
		ContactType:       "-",
		CommunicationType: "-",
		Indicator:         "-",
	}
}

// withDefaults returns c with each empty field taken from DefaultCodes.
func (c Codes) withDefaults() Codes {
	or := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	d := DefaultCodes()
	or(&c.Submission, d.Submission)
	or(&c.Report, d.Report)
	or(&c.Transmode, d.Transmode)
	or(&c.Funds, d.Funds)
	or(&c.AccountType, d.AccountType)
	or(&c.AccountStatus, d.AccountStatus)
	or(&c.SignatoryRole, d.SignatoryRole)
	or(&c.DirectorRole, d.DirectorRole)
	or(&c.LegalForm, d.LegalForm)
	or(&c.Identification, d.Identification)
	or(&c.ContactType, d.ContactType)
	or(&c.CommunicationType, d.CommunicationType)
	or(&c.Indicator, d.Indicator)
	return c
}
