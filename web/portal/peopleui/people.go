package peopleui

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
	"emi/views/cardsview"
	"emi/views/components"
	"emi/views/fragments"
	"emi/views/peopleview"
)

// kycStatuses are the KYC statuses the people filter offers.
var kycStatuses = []emi.KYCStatus{emi.KYCNone, emi.KYCPending, emi.KYCSubmitted, emi.KYCApproved, emi.KYCRejected, emi.KYCExpired}

// userList (GET /users) lists people, newest first, 50 a page, with a
// search box (name, e-mail, phone, token) and a KYC status filter. Paging is
// by keyset: before_at and before_token name the last row seen.
func (p *Pages) userList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := emi.UserFilter{Q: strings.TrimSpace(q.Get("q")), Limit: 50}
	for _, st := range kycStatuses {
		if q.Get("kyc_status") == string(st) {
			f.KYCStatus = st
		}
	}
	sort := frame.ReadSort(r, "created", "desc", "name", "email", "kyc", "created")
	if q.Get("sort") != "" && sort.Err == "" {
		f.Sort = sort.Order()
		if frame.LooksLikeToken(q.Get("before_token")) {
			f.BeforeToken = q.Get("before_token")
		}
	} else if at, err := time.Parse(time.RFC3339Nano, q.Get("before_at")); err == nil && frame.LooksLikeToken(q.Get("before_token")) {
		f.BeforeAt, f.BeforeToken = at, q.Get("before_token")
	}
	view := peopleview.UsersFilter{Q: f.Q, KYCStatus: string(f.KYCStatus)}
	statuses := make([]string, len(kycStatuses))
	for i, st := range kycStatuses {
		statuses[i] = string(st)
	}
	users, err := p.users.List(r.Context(), f)
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			p.frame.RenderError(w, r, err)
			return
		}
		errs, _ := frame.FieldErrors(err)
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "People", peopleview.Users(view, statuses, nil, "", "", errs, sort.View(r)))
		return
	}
	names := p.frame.PartnerNames(r)
	rows := make([]peopleview.UserRow, len(users))
	for i, u := range users {
		rows[i] = peopleview.UserRow{Token: u.Token, Name: u.FullName(), Email: u.Email, Phone: frame.FirstNonEmpty(u.MobilePhone, u.Phone),
			Partner: names.Name(u.PartnerID), PartnerID: u.PartnerID, KYCStatus: string(u.KYCStatus), KYCTone: frame.KYCTone(u.KYCStatus),
			Created: frame.FmtTime(u.CreatedAt), Removed: u.Status == emi.UserRemoved}
	}
	if err := p.personCards(r, f.Q, rows); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	var prev, next string
	if len(users) == f.Limit {
		last := users[len(users)-1]
		nq := frame.CloneQuery(q)
		if f.Sort.Key == "" {
			nq.Set("before_at", last.CreatedAt.UTC().Format(time.RFC3339Nano))
		}
		nq.Set("before_token", last.Token)
		next = "/backoffice/users?" + nq.Encode()
	}
	if f.BeforeToken != "" {
		pq := frame.CloneQuery(q)
		pq.Del("before_at")
		pq.Del("before_token")
		prev = "/backoffice/users?" + pq.Encode()
	}
	p.frame.Render(w, r, sort.Status(), "People", peopleview.Users(view, statuses, rows, prev, next, nil, sort.View(r)))
}

// personCards lists under each person a search found their cards (customer
// service is asked by name: a name search shows the person's cards, masked,
// with status and account, linked to the card page), for roles that see
// cards. They are the cards the cards search finds for the same query (a
// person's name, e-mail or phone; each card belongs to a person of its own
// partner), so a search by a person's token lists no cards: the person's
// page does. A query the cards search refuses (a full card number) lists
// none.
func (p *Pages) personCards(r *http.Request, q string, rows []peopleview.UserRow) error {
	if q == "" || len(rows) == 0 || p.cards == nil || !frame.CanDo(r, accounts.View) {
		return nil
	}
	list, err := p.cards.Search(r.Context(), q)
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			return nil
		}
		return err
	}
	cards, err := p.cardPages.CardRows(r, list)
	if err != nil {
		return err
	}
	byUser := map[string][]cardsview.CardRow{}
	for i, c := range list {
		if c.User != "" {
			byUser[c.User] = append(byUser[c.User], cards[i])
		}
	}
	for i := range rows {
		rows[i].Cards = byUser[rows[i].Token]
	}
	return nil
}

// userDetail (GET /users/{user}) is a person's page: the profile, documents,
// AML checks, KYC sessions and, for roles that read the audit log, the
// person's history.
func (p *Pages) userDetail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u, docs, err := p.users.Get(ctx, frame.Param(r, "user"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	checks, err := p.aml.List(ctx, emi.AMLFilter{UserToken: u.Token, Limit: 50})
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	sessions, err := p.kyc.List(ctx, emi.KYCFilter{UserToken: u.Token, Limit: 50})
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := peopleview.UserView{Token: u.Token, Name: u.FullName(), Removed: u.Status == emi.UserRemoved,
		KYCStatus: string(u.KYCStatus), KYCTone: frame.KYCTone(u.KYCStatus), Docs: DocViews(docs)}
	v.Groups = userGroups(r, u, p.frame.PartnerNames(r).KV(r, "Partner", u.PartnerID))
	for _, c := range checks {
		v.Checks = append(v.Checks, amlRow(c, p.frame.Now()))
	}
	for _, s := range sessions {
		v.Sessions = append(v.Sessions, kycRow(s, p.frame.Now()))
	}
	if frame.CanDo(r, kernel.ViewAudit) {
		entries, err := p.audit.List(ctx, emi.AuditFilter{ResourceType: "user", ResourceToken: u.Token, Limit: 50})
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		v.ShowAudit = true
		v.AuditHref = "/backoffice/audit?resource_type=user&resource_token=" + u.Token
		for _, e := range entries {
			v.Audit = append(v.Audit, frame.AuditRow(r, e))
		}
	}
	p.frame.NameAuditIDs(r, v.Audit)
	if v.ShowAccounts, v.Accounts, err = p.accountPages.OwnerAccounts(r, u.Token, ""); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if v.ShowCards, v.Cards, err = p.cardPages.OwnerCards(r, u.Token, "", ""); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	title := u.FullName()
	if title == "" {
		title = "Person"
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, title, peopleview.UserDetail(v))
}

// documentCSP lets a document render and nothing else: no script, no
// requests besides its own images, and a sandbox (a unique origin) so a
// crafted file cannot act as the back office. Inline styles are allowed
// because browsers' built-in image and PDF viewers use them.
const documentCSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox"

// document (GET /documents/{doc}) sends a document's content, decrypted,
// for display in the browser. The service audits every view.
func (p *Pages) document(w http.ResponseWriter, r *http.Request) {
	d, content, err := p.users.Document(r.Context(), frame.Param(r, "doc"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", d.ContentType)
	h.Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s.%s"`, frame.SafeFileName(d.DocumentType), frame.SafeFileName(d.FileType)))
	h.Set("Content-Security-Policy", documentCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Length", strconv.Itoa(len(content)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(content)
	}
}

func DocViews(docs []emi.StoredDocument) []fragments.DocView {
	out := make([]fragments.DocView, len(docs))
	for i, d := range docs {
		sum := hex.EncodeToString(d.SHA256)
		if len(sum) > 12 {
			sum = sum[:12]
		}
		out[i] = fragments.DocView{Token: d.Token, Type: d.DocumentType, FileType: d.FileType, ContentType: d.ContentType,
			Size: fmtBytes(d.Size), SHA: sum, Created: frame.FmtTime(d.CreatedAt), Href: "/backoffice/documents/" + d.Token,
			Image: strings.HasPrefix(d.ContentType, "image/")}
	}
	return out
}

// userGroups arranges a profile in the sections a reviewer reads.
func userGroups(r *http.Request, u emi.User, partnerKV components.KV) []components.FieldGroup {
	yesNo := func(b *bool) string {
		if b == nil {
			return ""
		}
		return map[bool]string{true: "yes", false: "no"}[*b]
	}
	status := components.KV{Label: "Status", Value: string(u.Status), Tone: "ok"}
	if u.Status == emi.UserRemoved {
		status.Tone = "bad"
	}
	amlKV := components.KV{Label: "AML check", Value: u.AML, Mono: true}
	if u.AML != "" {
		amlKV.Href = "/backoffice/aml/" + u.AML
	}
	removed := ""
	if u.RemovedAt != nil {
		removed = frame.FmtTime(*u.RemovedAt)
	}
	return []components.FieldGroup{
		{Title: "Person", Items: []components.KV{
			{Label: "First name", Value: u.FirstName}, {Label: "Middle name", Value: u.MiddleName}, {Label: "Last name", Value: u.LastName},
			{Label: "Birthday", Value: u.Birthday, Mono: true}, {Label: "Place of birth", Value: u.PlaceOfBirth},
			{Label: "Nationality", Value: u.Nationality}, {Label: "Other nationalities", Value: strings.Join(u.AdditionalNationality, ", ")},
			{Label: "Language", Value: u.Language}, {Label: "Education", Value: u.Education},
		}},
		{Title: "Contact and address", Items: []components.KV{
			{Label: "E-mail", Value: u.Email, Mono: true}, {Label: "Phone", Value: u.Phone, Mono: true},
			{Label: "Mobile phone", Value: u.MobilePhone, Mono: true}, {Label: "Address", Value: u.Address1},
			{Label: "Address line 2", Value: u.Address2}, {Label: "Postcode", Value: u.Zip}, {Label: "City", Value: u.City},
			{Label: "Country", Value: u.Country},
		}},
		{Title: "Identity document", Items: []components.KV{
			{Label: "Proof of identity", Value: u.ProofOfIdentityType}, {Label: "Number", Value: u.IDPassportNumber, Mono: true},
			{Label: "Issuing country", Value: u.CountryIssuingIDCard}, {Label: "Issued", Value: u.IDIssueDate, Mono: true},
			{Label: "Valid until", Value: u.IDPassportValidity, Mono: true}, {Label: "Unique identifier", Value: u.UniqueIdentifier, Mono: true},
		}},
		{Title: "Occupation and funds", Items: []components.KV{
			{Label: "Occupation", Value: u.Occupation}, {Label: "Other occupation", Value: u.OtherOccupation},
			{Label: "Position", Value: u.OccupationPosition}, {Label: "Employment", Value: u.EmploymentStatus},
			{Label: "Other employment", Value: u.OtherEmploymentStatus}, {Label: "Monthly net income", Value: u.ClientMonthlyNetIncome},
			{Label: "Source of funds", Value: u.SourceOfFunds}, {Label: "Other source of funds", Value: u.OtherSourceOfFunds},
			{Label: "Money declaration", Value: u.MoneyDeclaration},
			{Label: "Incoming funds", Value: strings.Join(u.TypeOfIncomingFunds, ", ")},
			{Label: "Expected in / month (EUR)", Value: u.ExpectedIncomingMonthlyEUR},
			{Label: "Expected out / month (EUR)", Value: u.ExpectedOutgoingMonthlyEUR},
			{Label: "Incoming transfers / month", Value: u.ExpectedMonthlyFrequency},
			{Label: "Purpose of the wallet", Value: strings.Join(u.PurposeOfWalletUsage, ", ")},
			{Label: "Other purpose", Value: u.OtherPurposeOfWalletUsage},
		}},
		{Title: "Compliance", Items: []components.KV{
			{Label: "KYC", Value: string(u.KYCStatus), Tone: frame.ToneOrNeutral(frame.KYCTone(u.KYCStatus))}, amlKV,
			{Label: "Risk score", Value: u.RiskScore}, {Label: "PEP", Value: u.PEP}, {Label: "PEP relative", Value: u.PEPRelative},
			{Label: "PEP declaration", Value: u.PEPsDeclaration}, {Label: "Sanctioned (is_san)", Value: u.IsSAN},
			{Label: "is_sip", Value: u.IsSIP}, {Label: "Sanction and media screening", Value: yesNo(u.SanctionMediaScreening)},
			{Label: "Specified US person", Value: yesNo(u.SpecifiedUSPerson)}, {Label: "Vulnerability", Value: u.VulnerabilityType},
			{Label: "Accessibility needs", Value: u.AccessibilityRequired},
		}},
		{Title: "Registration", Items: []components.KV{
			{Label: "Token", Value: u.Token, Mono: true}, status, partnerKV,
			{Label: "Master merchant", Value: u.MasterMerchant, Mono: true}, {Label: "Merchant", Value: u.Merchant, Mono: true},
			{Label: "Type", Value: u.Type}, {Label: "Company", Value: u.Company},
			{Label: "External reference", Value: u.ExternalReference, Mono: true}, {Label: "Info", Value: u.Info},
			{Label: "Registration IP", Value: u.RegistrationIP, Mono: true},
			{Label: "Registration place", Value: strings.Trim(u.RegistrationCity+", "+u.RegistrationCountry, ", ")},
			{Label: "Registration coordinates", Value: strings.Trim(u.RegistrationLat+", "+u.RegistrationLng, ", "), Mono: true},
			{Label: "Created (UTC)", Value: frame.FmtTime(u.CreatedAt), Mono: true}, {Label: "Updated (UTC)", Value: frame.FmtTime(u.UpdatedAt), Mono: true},
			{Label: "Removed (UTC)", Value: removed, Mono: true},
		}},
	}
}

// fmtBytes writes a size for people: 812 B, 14.2 KiB, 3.1 MiB.
func fmtBytes(n int) string {
	switch {
	case n < 1024:
		return strconv.Itoa(n) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}
