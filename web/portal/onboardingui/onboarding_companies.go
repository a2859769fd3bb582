package onboardingui

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"emi/web/portal/frame"
	"emi/web/portal/peopleui"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/views/components"
	"emi/views/fragments"
	"emi/views/onboardingview"
)

// Onboarded companies: the list, a company's page (its details, members,
// documents, application, decision, accounts and cards), a member's page
// with their roles across companies, and the companies' part of the global
// search.

// companyList (GET /companies) lists companies, most recently updated
// first, with a search (legal or trade name, company number, merchant
// token, partner name).
func (p *Pages) companyList(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > frame.MaxQuery {
		errs := map[string]string{"q": fmt.Sprintf("must be at most %d characters", frame.MaxQuery)}
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "Companies", onboardingview.Companies(q, nil, false, errs))
		return
	}
	list, err := p.onboarding.Companies(r.Context(), q, listLimit)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	rows := make([]onboardingview.CompanyListRow, len(list))
	for i, c := range list {
		rows[i] = onboardingview.CompanyListRow{Href: "/backoffice/companies/" + c.Application,
			LegalName: frame.FirstNonEmpty(c.LegalName, c.TradeName, "(no name yet)"), TradeName: c.TradeName, UIC: c.UIC,
			Country: c.Country, Partner: c.PartnerName, Status: string(c.Status), StatusTone: frame.AppTone(c.Status),
			Merchant: c.OnboardedMerchant, Updated: frame.FmtTime(c.UpdatedAt)}
	}
	p.frame.Render(w, r, http.StatusOK, "Companies", onboardingview.Companies(q, rows, len(list) == listLimit, nil))
}

// companyDetail (GET /companies/{application}) is a company's page: its
// details, members, documents, application and decision.
func (p *Pages) companyDetail(w http.ResponseWriter, r *http.Request) {
	a, docs, err := p.onboarding.Get(r.Context(), frame.Param(r, "application"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	if a.Company == nil {
		p.frame.ErrorPage(w, r, http.StatusNotFound, "This application has no company yet.")
		return
	}
	name, trade := companyNames(a.Company)
	v := onboardingview.CompanyView{Name: name, TradeName: trade, Status: string(a.Status), StatusTone: frame.AppTone(a.Status),
		Details: companyKVs(*a.Company), Members: memberRows(a, docs), CompanyDocs: peopleui.DocViews(docs["company"]),
		MemberDocs: memberDocs(a, docs)}
	partner := components.KV{Label: "Partner", Value: a.PartnerName}
	if frame.CanDo(r, partners.View) {
		partner.Href = "/backoffice/partners/" + a.PartnerID
	}
	risk := components.KV{Label: "Risk", Value: a.RiskScore, Tone: frame.ToneOrNeutral(frame.RiskTone(a.RiskScore))}
	if a.RiskScore != "" {
		risk.Value += " (" + strconv.Itoa(a.RiskPoints) + " points)"
	}
	v.Application = []components.KV{
		{Label: "Application", Value: a.Token, Href: applicationHref(a.Token), Mono: true}, partner,
		{Label: "Status", Value: string(a.Status), Tone: frame.ToneOrNeutral(frame.AppTone(a.Status))},
		{Label: "Products", Value: strings.Join(a.Products, ", ")}, risk,
		{Label: "Created (UTC)", Value: frame.FmtTime(a.CreatedAt), Mono: true},
	}
	grounds, err := p.approvalGrounds(r, a)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v.Decided, v.Decision = decisionKVs(a, grounds)
	// The onboarded merchant's accounts and cards (none before the
	// approval).
	// OwnerAccounts and OwnerCards answer whether the lists show at all
	// and, with no merchant yet, that they are empty.
	show, accountRows, err := p.accountPages.OwnerAccounts(r, "", a.OnboardedMerchant)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	showCards, cards, err := p.cardPages.OwnerCards(r, "", a.OnboardedMerchant, "")
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, name, onboardingview.CompanyPage(v, show, accountRows, showCards, cards))
}

// maxRoleCompanies bounds the companies looked up for a member's roles.
const maxRoleCompanies = 50

// memberDetail (GET /applications/{application}/members/{member}) is a
// member's page: the details, documents and the same person's roles in
// every company (by unique identifier, or names and birthday).
func (p *Pages) memberDetail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	app := frame.Param(r, "application")
	if !frame.LooksLikeToken(app) {
		p.frame.RenderError(w, r, emi.ErrApplicationNotFound)
		return
	}
	a, docs, err := p.onboarding.Get(ctx, app)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	m, like, err := p.onboarding.MemberRoles(ctx, a.Token, frame.Param(r, "member"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	company, _ := companyNames(a.Company)
	name := frame.FirstNonEmpty(m.DisplayName(), "(no name)")
	v := onboardingview.MemberView{Token: m.Token, Name: name, Types: strings.Join(m.Type, ", "), Status: m.Status,
		StatusTone: frame.MemberTone(m.Status), Company: company, AppHref: applicationHref(a.Token),
		Groups: memberGroups(r, m), Docs: peopleui.DocViews(docs[m.Token])}
	if a.Company != nil {
		v.CompanyHref = "/backoffice/companies/" + a.Token
	}
	companies := map[string]*emi.CompanyRow{}
	for _, l := range like {
		if _, seen := companies[l.Application]; seen || len(companies) >= maxRoleCompanies {
			continue
		}
		companies[l.Application] = nil
		rows, err := p.onboarding.Companies(ctx, l.Application, 5)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		for i := range rows {
			if rows[i].Application == l.Application {
				companies[l.Application] = &rows[i]
			}
		}
	}
	for _, l := range like {
		row := onboardingview.RoleRow{Company: "(no company yet)", Types: strings.Join(l.Type, ", "), Status: l.Status,
			StatusTone: frame.MemberTone(l.Status), Ownership: ownership(l), MemberHref: memberHref(l.Application, l.Token),
			Match: "same names and birthday", This: l.Token == m.Token}
		if m.UniqueIdentifier != "" && l.UniqueIdentifier == m.UniqueIdentifier {
			row.Match = "same unique identifier"
		} else if l.LastName == "" && l.LegalName != "" {
			row.Match = "same legal name"
		}
		if row.This {
			row.Match = "—"
		}
		if c := companies[l.Application]; c != nil {
			row.Company = frame.FirstNonEmpty(c.LegalName, c.TradeName, "(no name yet)")
			row.CompanyHref = "/backoffice/companies/" + c.Application
			row.Partner = c.PartnerName
			row.AppStatus, row.AppStatusTone = string(c.Status), frame.AppTone(c.Status)
		} else {
			row.CompanyHref = applicationHref(l.Application)
			row.AppStatus = "see the application"
		}
		v.Roles = append(v.Roles, row)
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, name+" · "+company, onboardingview.MemberDetail(v))
}

// memberGroups arranges a member's fields in the sections a reviewer reads.
func memberGroups(r *http.Request, m emi.Member) []components.FieldGroup {
	pct := ""
	if m.OwnershipPercentage != nil {
		pct = strconv.Itoa(*m.OwnershipPercentage) + " %"
	}
	user := components.KV{Label: "Person (user)", Value: m.User, Mono: true}
	if m.User != "" && frame.CanDo(r, people.View) {
		user.Href = "/backoffice/users/" + m.User
	}
	return []components.FieldGroup{
		{Title: "Member", Items: []components.KV{
			{Label: "First name", Value: m.FirstName}, {Label: "Last name", Value: m.LastName},
			{Label: "Legal name", Value: m.LegalName}, {Label: "Legal form", Value: m.LegalForm},
			{Label: "Birthday", Value: m.Birthday, Mono: true}, {Label: "Place of birth", Value: m.PlaceOfBirth},
			{Label: "Nationality", Value: m.Nationality},
			{Label: "Unique identifier", Value: m.UniqueIdentifier, Mono: true},
			{Label: "Company number (uic)", Value: m.UIC, Mono: true},
		}},
		{Title: "Role and ownership", Items: []components.KV{
			{Label: "Roles", Value: strings.Join(m.Type, ", ")},
			{Label: "Status", Value: m.Status, Tone: frame.ToneOrNeutral(frame.MemberTone(m.Status))},
			{Label: "Owner", Value: yesNo(m.Ownership)}, {Label: "Ownership", Value: pct},
		}},
		{Title: "Declarations", Items: []components.KV{
			{Label: "PEP", Value: yesNo(m.PEPDeclaration), Tone: declaredTone(m.PEPDeclaration)},
			{Label: "Related to a PEP", Value: yesNo(m.PEPRelatedDeclaration), Tone: declaredTone(m.PEPRelatedDeclaration)},
			{Label: "On a sanctions list (is_sip)", Value: yesNo(m.IsSIP), Tone: declaredTone(m.IsSIP)},
		}},
		{Title: "Contact and address", Items: []components.KV{
			{Label: "E-mail", Value: m.ContactEmail, Mono: true}, {Label: "Phone", Value: m.Phone, Mono: true},
			{Label: "Mobile phone", Value: m.MobilePhone, Mono: true}, {Label: "Address", Value: m.Address1},
			{Label: "Address line 2", Value: m.Address2}, {Label: "Postcode", Value: m.Zip}, {Label: "City", Value: m.City},
			{Label: "County", Value: m.County}, {Label: "Country", Value: m.Country},
			{Label: "Country of residence", Value: m.CountryOfResidence},
		}},
		{Title: "Record", Items: []components.KV{
			{Label: "Member", Value: m.Token, Mono: true}, user,
			{Label: "Created (UTC)", Value: frame.FmtTime(m.CreatedAt), Mono: true},
			{Label: "Updated (UTC)", Value: frame.FmtTime(m.UpdatedAt), Mono: true},
		}},
	}
}

// SearchCompanies adds companies to the global search for roles that see
// applications (Onboarding.Companies: legal or trade name, company number,
// merchant or application token, partner name).
func (p *Pages) SearchCompanies(r *http.Request, q string) ([]fragments.Hit, error) {
	if q == "" || p.onboarding == nil || !frame.CanDo(r, onboarding.View) {
		return nil, nil
	}
	if len(q) > frame.MaxQuery {
		q = q[:frame.MaxQuery]
	}
	list, err := p.onboarding.Companies(r.Context(), q, 20)
	if err != nil {
		return nil, err
	}
	hits := make([]fragments.Hit, len(list))
	for i, c := range list {
		detail := strings.Join(slices.DeleteFunc([]string{c.UIC, c.Country, c.PartnerName, string(c.Status)},
			func(s string) bool { return s == "" }), " · ")
		hits[i] = fragments.Hit{Kind: "company", Title: frame.FirstNonEmpty(c.LegalName, c.TradeName, "(no name yet)"), Detail: detail,
			Href: "/backoffice/companies/" + c.Application}
	}
	return hits, nil
}
