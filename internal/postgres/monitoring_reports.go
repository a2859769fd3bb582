package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/goaml"
	"emi/internal/service/monitoring"
)

// ReportBuilder implements monitoring.ReportData: it reads what a
// suspicious transaction report says of the institution, the subject (a
// person's identity and documents on file, a merchant's name) and the
// transactions, and writes them as goAML (internal/goaml).
type ReportBuilder struct {
	db      *DB
	inst    config.Reporting
	sandbox bool
}

// NewReportBuilder returns the builder; in the sandbox the institution's
// missing fields get placeholders (config.Reporting.Sandbox).
func NewReportBuilder(db *DB, inst config.Reporting, sandbox bool) *ReportBuilder {
	return &ReportBuilder{db: db, inst: inst, sandbox: sandbox}
}

var _ monitoring.ReportData = (*ReportBuilder)(nil)

// Institution implements monitoring.ReportData.
func (b *ReportBuilder) Institution(context.Context) (goaml.Report, error) {
	inst := b.inst
	if b.sandbox {
		inst = inst.Sandbox()
	} else if missing := inst.Missing(); len(missing) > 0 {
		return goaml.Report{}, emi.ErrCaseConflict.WithPublic("The institution's reporting details are not configured: set %s.",
			strings.Join(missing, ", "))
	}
	return goaml.Report{RentityID: inst.RentityID, RentityBranch: inst.Branch, CurrencyLocal: "EUR",
		Location: goaml.Address{Street: inst.Name, City: inst.City, Country: inst.Country}}, nil
}

// Build implements monitoring.ReportData.
func (b *ReportBuilder) Build(ctx context.Context, r goaml.Report, subject monitoring.Subject, movements []int64, officer string) (goaml.Report, error) {
	var st struct {
		Name  string `db:"name"`
		Email string `db:"email"`
	}
	if err := sqlx.GetContext(ctx, b.db.Ext(ctx), &st, `SELECT name, email FROM staff_users WHERE id = $1`, officer); err != nil {
		return r, Translate(err)
	}
	first, last, _ := strings.Cut(st.Name, " ")
	if last == "" {
		last = first
	}
	r.ReportingPerson = goaml.Person{FirstName: first, LastName: last, Email: st.Email, Occupation: "Compliance officer"}
	holder, company, err := b.subject(ctx, subject)
	if err != nil {
		return r, err
	}
	var rows []struct {
		movementRow
		Counterparty []byte         `db:"counterparty"`
		Merchant     sql.NullString `db:"merchant_name"`
		IBAN         sql.NullString `db:"own_iban"`
		Opened       time.Time      `db:"opened"`
	}
	if err := sqlx.SelectContext(ctx, b.db.Ext(ctx), &rows, `SELECT mm.id, mm.partner_id, mm.subject_kind, mm.subject_token, mm.account,
		mm.program, mm.kind, mm.direction, mm.amount_minor, mm.currency, mm.eur_minor, mm.counterparty_key, mm.counterparty_country,
		mm.mcc, mm.declined, mm.at, mm.ref, mm.source, mm.screened,
		coalesce((SELECT t.counterparty FROM transfers t WHERE mm.source <> '' AND t.token::text = mm.source), '{}') AS counterparty,
		(SELECT ca.merchant_name FROM card_authorizations ca WHERE mm.source <> '' AND ca.token::text = mm.source) AS merchant_name,
		(SELECT bl.iban FROM balances bl JOIN accounts a ON bl.account = coalesce(a.main, a.token) WHERE a.token = mm.account
			ORDER BY bl.position LIMIT 1) AS own_iban,
		(SELECT a.created_at FROM accounts a WHERE a.token = mm.account) AS opened
		FROM monitoring_movements mm WHERE mm.id = ANY($1) ORDER BY mm.at, mm.id`, pq.Int64Array(movements)); err != nil {
		return r, Translate(err)
	}
	for _, row := range rows {
		mv := row.movement()
		var cp emi.Counterparty
		_ = json.Unmarshal(row.Counterparty, &cp)
		client := &goaml.ClientAccount{InstitutionName: b.institutionName(), BIC: b.institutionBIC(), NonBank: true,
			Branch: r.RentityBranch, Number: mv.Account, IBAN: row.IBAN.String, Currency: mv.Currency, Name: holder.FirstName + " " + holder.LastName,
			ClientNumber: strings.ReplaceAll(subject.Token, "-", "")[:30], Opened: row.Opened.UTC(), Country: r.Location.Country, Holder: holder, Company: company}
		if company != nil {
			client.Name = company.Name
		}
		own := goaml.Party{Client: client}
		var other goaml.Party
		switch {
		case mv.MCC != "" || row.Merchant.Valid:
			other = goaml.Party{Merchant: &goaml.Merchant{Name: nonEmpty(row.Merchant.String, "card merchant"), Country: countryOr(mv.CounterpartyCountry, r.Location.Country)}}
		default:
			other = goaml.Party{External: &goaml.ExternalAccount{InstitutionName: nonEmpty(cp.BIC, "unknown institution"), BIC: cp.BIC,
				InstitutionCode: institutionCode(cp), Number: nonEmpty(nonEmpty(cp.AccountNumber, cp.IBAN), "not recorded"), IBAN: cp.IBAN, Name: nonEmpty(cp.Name, "unknown"),
				Currency: mv.Currency, Country: countryOr(mv.CounterpartyCountry, r.Location.Country)}}
		}
		t := goaml.Transaction{Number: fmt.Sprintf("%d", mv.ID), InternalRef: nonEmpty(mv.Source, mv.Ref), Location: r.RentityBranch,
			Description: describeMovement(mv), Date: mv.At, AmountLocal: emi.FormatMinor(mv.EUR)}
		if mv.Direction == monitoring.In {
			t.From, t.To = other, own
		} else {
			t.From, t.To = own, other
		}
		r.Transactions = append(r.Transactions, t)
	}
	return r, nil
}

func (b *ReportBuilder) institutionName() string {
	if b.sandbox {
		return b.inst.Sandbox().Name
	}
	return b.inst.Name
}

func (b *ReportBuilder) institutionBIC() string {
	if b.sandbox {
		return b.inst.Sandbox().BIC
	}
	return b.inst.BIC
}

// institutionCode identifies the other bank when there is no BIC: its UK
// sort code, or the IBAN's bank code.
func institutionCode(cp emi.Counterparty) string {
	switch {
	case cp.BIC != "":
		return ""
	case cp.SortCode != "":
		return cp.SortCode
	case len(cp.IBAN) >= 8:
		return cp.IBAN[4:8]
	}
	return "unknown"
}

func nonEmpty(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func countryOr(c, def string) string {
	if len(c) == 2 {
		return c
	}
	return def
}

func describeMovement(mv monitoring.Movement) string {
	what := map[string]string{monitoring.KindIncoming: "incoming payment", monitoring.KindTransferOut: "outgoing transfer",
		monitoring.KindTransferInternal: "internal transfer", monitoring.KindCardPayment: "card payment",
		monitoring.KindCardWithdrawal: "cash withdrawal"}[mv.Kind]
	s := fmt.Sprintf("%s of %s %s", what, emi.FormatMinor(mv.Amount), mv.Currency)
	if mv.Declined {
		s += " (declined: no money moved)"
	}
	return s
}

// subject reads the subject: a person as the FIU wants them (identity,
// address, phone, occupation, the identity document on file), or a
// merchant as a company.
func (b *ReportBuilder) subject(ctx context.Context, s monitoring.Subject) (goaml.Person, *goaml.Company, error) {
	if s.Kind == monitoring.SubjectMerchant {
		var name string
		if err := sqlx.GetContext(ctx, b.db.Ext(ctx), &name, `SELECT name FROM merchants WHERE token = $1`, s.Token); err != nil {
			return goaml.Person{}, nil, Translate(err)
		}
		return goaml.Person{}, &goaml.Company{Name: name}, nil
	}
	var r userRow
	if err := sqlx.GetContext(ctx, b.db.Ext(ctx), &r, `SELECT `+userColumns+` FROM users WHERE token = $1`, s.Token); err != nil {
		return goaml.Person{}, nil, Translate(err)
	}
	u, err := r.user()
	if err != nil {
		return goaml.Person{}, nil, err
	}
	p := goaml.Person{FirstName: u.FirstName, MiddleName: u.MiddleName, LastName: u.LastName, SSN: u.UniqueIdentifier,
		Nationality: u.Nationality, Residence: u.Country, Email: u.Email, Occupation: nonEmpty(u.Occupation, u.OtherOccupation)}
	if t, err := time.Parse(time.DateOnly, u.Birthday); err == nil {
		p.BirthDate = t
	}
	for _, ph := range []string{u.MobilePhone, u.Phone} {
		if ph != "" {
			p.Phones = append(p.Phones, splitPhone(ph))
		}
	}
	if u.Address1 != "" || u.City != "" {
		p.Addresses = append(p.Addresses, goaml.Address{Street: strings.TrimSpace(u.Address1 + " " + u.Address2), City: u.City,
			Zip: u.Zip, Country: u.Country})
	}
	if u.IDPassportNumber != "" {
		d := goaml.IDDocument{Number: u.IDPassportNumber, IssueCountry: nonEmpty(u.CountryIssuingIDCard, u.Nationality)}
		if t, err := time.Parse(time.DateOnly, u.IDIssueDate); err == nil {
			d.IssueDate = t
		}
		if t, err := time.Parse(time.DateOnly, u.IDPassportValidity); err == nil {
			d.ExpiryDate = t
		}
		p.Documents = append(p.Documents, d)
	}
	return p, nil, nil
}

// callingCodes are the international dialling codes of the countries emi
// serves and their neighbours, longest first where they share digits.
var callingCodes = []string{"359", "353", "351", "352", "356", "357", "358", "370", "371", "372", "380", "385", "386", "420", "421",
	"30", "31", "32", "33", "34", "36", "39", "40", "41", "43", "44", "45", "46", "47", "48", "49", "90", "1", "7"}

// splitPhone splits an international number into its calling code and
// the rest (goAML keeps them apart); a number whose code is not known
// keeps its first digit as the prefix, as written.
func splitPhone(ph string) goaml.Phone {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, ph)
	digits = strings.TrimPrefix(digits, "00")
	for _, c := range callingCodes {
		if strings.HasPrefix(digits, c) && len(digits) > len(c)+4 {
			return goaml.Phone{CountryPrefix: c, Number: digits[len(c):]}
		}
	}
	if len(digits) > 1 {
		return goaml.Phone{CountryPrefix: digits[:1], Number: digits[1:]}
	}
	return goaml.Phone{CountryPrefix: "0", Number: nonEmpty(digits, "0")}
}
