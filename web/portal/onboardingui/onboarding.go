package onboardingui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"emi/web/portal/frame"
	"emi/web/portal/peopleui"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/views/components"
	"emi/views/onboardingview"
	"emi/views/partnersview"
)

// The company onboarding screens: applications with their company,
// members, documents, checks, risk, events and decision. The companies and
// a member's roles across them are onboarding_companies.go; the
// underwriters' review of an application (claims, decisions, notes,
// corrections) is onboarding_review_app.go.

// appTabs are the status tabs of the applications list, in the order of
// the application's life; "all" is the default.
var appTabs = []struct {
	status emi.ApplicationStatus
	label  string
}{
	{emi.AppChecking, "Checking"},
	{emi.AppInReview, "In review"},
	{emi.AppInfoRequested, "Information requested"},
	{emi.AppApproved, "Approved"},
	{emi.AppRejected, "Rejected"},
	{"", "All"},
}

// listLimit is how many applications or companies a list shows: the
// service has no paging, so the lists say when there may be more.
const listLimit = 100

// applicationList (GET /applications) lists applications, newest first,
// by status tab, partner and a search (legal or trade name, company number,
// application or merchant token).
func (p *Pages) applicationList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := emi.ApplicationFilter{Q: strings.TrimSpace(q.Get("q")), Limit: listLimit}
	if pid := q.Get("partner"); frame.LooksLikeToken(pid) {
		f.PartnerID = pid
	}
	want := q.Get("status")
	if want == "" {
		want = "all"
	}
	v := onboardingview.ApplicationsView{Filter: onboardingview.ApplicationsFilter{Q: f.Q, Partner: f.PartnerID}}
	found := false
	for _, t := range appTabs {
		key := string(t.status)
		if key == "" {
			key = "all"
		}
		tq := url.Values{"status": {key}}
		if f.Q != "" {
			tq.Set("q", f.Q)
		}
		if f.PartnerID != "" {
			tq.Set("partner", f.PartnerID)
		}
		active := key == want
		if active {
			f.Status, found = t.status, true
			v.Filter.Status = key
		}
		v.Tabs = append(v.Tabs, components.Tab{Label: t.label, Href: "/backoffice/applications?" + tq.Encode(), Active: active})
	}
	if !found { // an unknown status: all
		v.Tabs[len(v.Tabs)-1].Active, v.Filter.Status = true, "all"
	}
	if frame.CanDo(r, partners.View) {
		list, err := p.partners.List(r.Context())
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		v.Filter.Partners = []components.Option{}
		for _, pt := range list {
			v.Filter.Partners = append(v.Filter.Partners, components.Option{Value: pt.ID, Label: pt.Name, Selected: pt.ID == f.PartnerID})
		}
	}
	if len(f.Q) > frame.MaxQuery {
		v.Errors = map[string]string{"q": fmt.Sprintf("must be at most %d characters", frame.MaxQuery)}
		v.Empty = "Shorten the search."
		p.frame.Render(w, r, http.StatusUnprocessableEntity, "Applications", onboardingview.Applications(v))
		return
	}
	apps, err := p.onboarding.List(r.Context(), f)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	now := p.frame.Now()
	for _, a := range apps {
		name, trade := companyNames(a.Company)
		v.Rows = append(v.Rows, onboardingview.ApplicationRow{Token: a.Token, Company: name, TradeName: trade, Partner: a.PartnerName,
			Products: strings.Join(a.Products, ", "), Risk: a.RiskScore, RiskTone: frame.RiskTone(a.RiskScore),
			Status: string(a.Status), StatusTone: frame.AppTone(a.Status), Created: frame.FmtTime(a.CreatedAt), Age: frame.Age(now, a.CreatedAt)})
	}
	v.More = len(apps) == f.Limit
	v.Empty = "No applications match."
	if f.Status != "" && f.Q == "" && f.PartnerID == "" {
		v.Empty = "No applications are " + strings.ReplaceAll(string(f.Status), "_", " ") + "."
	}
	p.frame.Render(w, r, http.StatusOK, "Applications", onboardingview.Applications(v))
}

// companyNames returns the name to show for an application's company and
// its trade name.
func companyNames(c *emi.CompanyFields) (string, string) {
	if c == nil {
		return "(no company yet)", ""
	}
	return frame.FirstNonEmpty(c.LegalName, c.TradeName, "(no name yet)"), c.TradeName
}

// applicationDetail (GET /applications/{application}) is an application's
// page: status and risk, the review (claim, decisions, four-eyes, notes;
// onboarding_review_app.go), the decision, the application and company as submitted
// beside the trade register, members, checks with their details and
// history, the risk breakdown, the documents, the events sent to the
// partner and the audit trail.
func (p *Pages) applicationDetail(w http.ResponseWriter, r *http.Request) {
	p.renderApplication(w, r, http.StatusOK, nil)
}

// applicationView lays out what onboarding knows of an application.
func (p *Pages) applicationView(r *http.Request, a emi.Application, docs map[string][]emi.StoredDocument, history []emi.CheckResult) (onboardingview.ApplicationView, error) {
	ctx := r.Context()
	name, _ := companyNames(a.Company)
	v := onboardingview.ApplicationView{Token: a.Token, CompanyName: name, Status: string(a.Status), StatusTone: frame.AppTone(a.Status),
		Processing: string(a.Processing), Risk: a.RiskScore, RiskTone: frame.RiskTone(a.RiskScore), RiskPoints: strconv.Itoa(a.RiskPoints),
		Application: applicationKVs(r, a), HasCompany: a.Company != nil, Members: memberRows(a, docs),
		CompanyDocs: peopleui.DocViews(docs["company"]), MemberDocs: memberDocs(a, docs), RiskFactors: riskRows(a.RiskFactors)}
	if a.Company != nil {
		v.Company = companyKVs(*a.Company)
		v.CompanyHref = "/backoffice/companies/" + a.Token
	}
	for _, pd := range a.PayoutDetails {
		row := onboardingview.PayoutRow{Currency: pd.Currency, IBAN: pd.IBAN, SortCode: pd.SortCode, AccountNumber: pd.AccountNumber,
			Period: pd.Period, Delay: pd.Delay}
		if pd.Amount != nil {
			row.Amount = string(*pd.Amount)
		}
		v.Payouts = append(v.Payouts, row)
	}
	for _, c := range a.Checks {
		v.Checks = append(v.Checks, checkView(c, a))
	}
	for i := len(history) - 1; i >= 0; i-- { // newest first
		c := history[i]
		v.History = append(v.History, onboardingview.CheckHistoryRow{At: frame.FmtTime(c.UpdatedAt), Title: checkTitle(c.Name),
			Status: c.Status, StatusTone: frame.CheckTone(c.Status), Summary: checkSummary(c)})
	}
	grounds, err := p.approvalGrounds(r, a)
	if err != nil {
		return v, err
	}
	v.Decided, v.Decision = decisionKVs(a, grounds)
	// Everyone who reviews applications sees what the partner was told;
	// the delivery log (and replays) stay with the webhook permission.
	v.ShowEvents = true
	if frame.CanDo(r, partners.ViewWebhooks) {
		v.EventsHref = "/backoffice/partners/" + a.PartnerID + "/events?resource=" + url.QueryEscape(a.Token)
	}
	log, err := p.events.ApplicationEvents(ctx, a.Token)
	if err != nil {
		return v, err
	}
	for _, e := range log.Items {
		data, _ := json.Marshal(e.Data)
		row := onboardingview.AppEventRow{ID: e.ID, Type: string(e.Type), CreatedAt: frame.FmtTime(e.CreatedAt), Data: string(data)}
		for _, d := range e.Deliveries {
			row.Deliveries = append(row.Deliveries, partnersview.DeliveryRow{ID: d.ID, Endpoint: d.EndpointURL,
				State: string(d.State), StateTone: frame.DeliveryTone(d.State)})
		}
		v.Events = append(v.Events, row)
	}
	return v, nil
}

func yesNo(b *bool) string {
	if b == nil {
		return ""
	}
	return map[bool]string{true: "yes", false: "no"}[*b]
}

// applicationKVs are the application's own fields.
func applicationKVs(r *http.Request, a emi.Application) []components.KV {
	partner := components.KV{Label: "Partner", Value: a.PartnerName}
	if frame.CanDo(r, partners.View) {
		partner.Href = "/backoffice/partners/" + a.PartnerID
	}
	rev := strconv.Itoa(a.Revision)
	if a.CheckedRevision != 0 && a.CheckedRevision != a.Revision {
		rev += " (decided on revision " + strconv.Itoa(a.CheckedRevision) + ")"
	}
	return []components.KV{
		{Label: "Application", Value: a.Token, Mono: true}, partner,
		{Label: "Master merchant", Value: a.Merchant, Mono: true},
		{Label: "Products", Value: strings.Join(a.Products, ", ")},
		{Label: "Due diligence", Value: a.DueDiligence},
		{Label: "Processing", Value: string(a.Processing)},
		{Label: "IP address", Value: a.IPAddress, Mono: true},
		{Label: "Fingerprint", Value: a.Fingerprint, Mono: true},
		{Label: "Revision", Value: rev},
		{Label: "Created (UTC)", Value: frame.FmtTime(a.CreatedAt), Mono: true},
		{Label: "Updated (UTC)", Value: frame.FmtTime(a.UpdatedAt), Mono: true},
	}
}

// companyKVs are every company field as submitted.
func companyKVs(c emi.CompanyFields) []components.KV {
	return []components.KV{
		{Label: "Legal name", Value: c.LegalName}, {Label: "Trade name", Value: c.TradeName},
		{Label: "Company number (uic)", Value: c.UIC, Mono: true},
		{Label: "Incorporated", Value: c.IncorporationDate, Mono: true},
		{Label: "Country", Value: c.Country}, {Label: "County", Value: c.County}, {Label: "City", Value: c.City},
		{Label: "Postcode", Value: c.Zip}, {Label: "Address", Value: c.Address1}, {Label: "Address line 2", Value: c.Address2},
		{Label: "Correspondence address", Value: c.CorrespondenceAddress},
		{Label: "Address of the shop", Value: c.AddressOfShop},
		{Label: "Website", Value: c.Website, Mono: true},
		{Label: "Contact e-mail", Value: c.ContactEmail, Mono: true},
		{Label: "Phone", Value: c.Phone, Mono: true}, {Label: "Mobile phone", Value: c.MobilePhone, Mono: true},
		{Label: "Business activity", Value: c.BusinessActivity},
		{Label: "Description of the activity", Value: c.DescriptionOfActivity},
		{Label: "Declared on a sanctions list (is_sie)", Value: yesNo(c.IsSIE), Tone: declaredTone(c.IsSIE)},
	}
}

// declaredTone marks a "yes" to a sanctions or PEP declaration.
func declaredTone(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "bad"
	}
	return "ok"
}

// decisionKVs describe the decision once there is one.
// grounds is ApprovalGrounds for an approval (what it rests on, as the
// back office states it), "" otherwise.
func decisionKVs(a emi.Application, grounds string) (bool, []components.KV) {
	if !a.Status.Decided() {
		return false, nil
	}
	kvs := []components.KV{{Label: "Status", Value: string(a.Status), Tone: frame.ToneOrNeutral(frame.AppTone(a.Status))}}
	if a.DecidedAt != nil {
		kvs = append(kvs, components.KV{Label: "Decided (UTC)", Value: frame.FmtTime(*a.DecidedAt), Mono: true})
	}
	if a.DecisionReason != "" || a.Status != emi.AppApproved {
		kvs = append(kvs, components.KV{Label: "Reason", Value: a.DecisionReason})
	}
	if a.Status == emi.AppApproved {
		kvs = append(kvs, components.KV{Label: "Grounds", Value: grounds})
		kvs = append(kvs, components.KV{Label: "Onboarded merchant", Value: a.OnboardedMerchant, Mono: true})
		if a.MID != "" || a.TID != "" || slices.ContainsFunc(a.Products, emi.AcquiringProduct) {
			kvs = append(kvs, components.KV{Label: "MID", Value: a.MID, Mono: true}, components.KV{Label: "TID", Value: a.TID, Mono: true})
		} else {
			kvs = append(kvs, components.KV{Label: "MID and TID", Value: "none: no acquiring product"})
		}
	}
	return true, kvs
}

// memberRows lists an application's members with their declarations and
// the sanctions hits about them.
func memberRows(a emi.Application, docs map[string][]emi.StoredDocument) []onboardingview.MemberRow {
	hits := map[string]int{}
	for _, c := range a.Checks {
		if c.Name != emi.CheckSanctions {
			continue
		}
		for _, h := range decodeDetails(c.Details).sanctionHits() {
			if h.Member != "" {
				hits[h.Member]++
			}
		}
	}
	rows := make([]onboardingview.MemberRow, 0, len(a.Members))
	for _, m := range a.Members {
		row := onboardingview.MemberRow{Token: m.Token, Href: memberHref(a.Token, m.Token), Name: frame.FirstNonEmpty(m.DisplayName(), "(no name)"),
			Types: strings.Join(m.Type, ", "), Status: m.Status, StatusTone: frame.MemberTone(m.Status), Ownership: ownership(m),
			Nationality: m.Nationality, Birthday: m.Birthday, Docs: strconv.Itoa(len(docs[m.Token]))}
		row.PEP, row.PEPTone = pepOf(m)
		row.Sanctions, row.SanctionsTone = "not declared", ""
		if m.IsSIP != nil {
			row.Sanctions, row.SanctionsTone = "not listed", "ok"
			if *m.IsSIP {
				row.Sanctions, row.SanctionsTone = "declared listed", "bad"
			}
		}
		if n := hits[m.Token]; n > 0 && row.SanctionsTone != "bad" {
			row.Sanctions, row.SanctionsTone = strconv.Itoa(n)+" possible hit(s)", "warn"
		}
		rows = append(rows, row)
	}
	return rows
}

func ownership(m emi.Member) string {
	switch {
	case m.OwnershipPercentage != nil:
		return strconv.Itoa(*m.OwnershipPercentage) + " %"
	case m.Ownership != nil && *m.Ownership:
		return "yes"
	case m.Ownership != nil:
		return "no"
	}
	return "—"
}

func pepOf(m emi.Member) (string, string) {
	switch {
	case m.PEPDeclaration != nil && *m.PEPDeclaration:
		return "PEP", "bad"
	case m.PEPRelatedDeclaration != nil && *m.PEPRelatedDeclaration:
		return "related to a PEP", "warn"
	case m.PEPDeclaration == nil && m.PEPRelatedDeclaration == nil:
		return "not declared", ""
	}
	return "no", "ok"
}

func memberDocs(a emi.Application, docs map[string][]emi.StoredDocument) []onboardingview.MemberDocs {
	out := make([]onboardingview.MemberDocs, 0, len(a.Members))
	for _, m := range a.Members {
		out = append(out, onboardingview.MemberDocs{Name: frame.FirstNonEmpty(m.DisplayName(), "(no name)"), Href: memberHref(a.Token, m.Token),
			Docs: peopleui.DocViews(docs[m.Token])})
	}
	return out
}

func riskRows(fs []emi.RiskFactor) []onboardingview.RiskFactorRow {
	out := make([]onboardingview.RiskFactorRow, len(fs))
	for i, f := range fs {
		out[i] = onboardingview.RiskFactorRow{Factor: f.Factor, Detail: f.Detail, Points: strconv.Itoa(f.Points)}
	}
	return out
}

// checkDetails are the details the checks write (internal/service's
// Checks), read back from JSON.
type checkDetails struct {
	WaitingFor string `json:"waiting_for"`
	Reason     string `json:"reason"`
	Error      string `json:"error"`
	// risk
	Score   string           `json:"score"`
	Points  *int             `json:"points"`
	Factors []emi.RiskFactor `json:"factors"`
	// trade_register
	Register       string `json:"register"`
	UIC            string `json:"uic"`
	Country        string `json:"country"`
	RegisteredName string `json:"registered_name"`
	SubmittedName  string `json:"submitted_name"`
	RegisterStatus string `json:"register_status"`
	Address        string `json:"address"`
	IncorporatedOn string `json:"incorporated_on"`
	// sanctions and adverse_media
	ListVersion string          `json:"list_version"`
	Screened    *int            `json:"screened"`
	Hits        json.RawMessage `json:"hits"`
	Searched    []string        `json:"searched"`

	raw map[string]any
}

// knownDetails are the keys checkDetails reads; others are shown as they
// are.
var knownDetails = []string{"waiting_for", "reason", "error", "score", "points", "factors", "register", "uic", "country",
	"registered_name", "submitted_name", "register_status", "address", "incorporated_on", "list_version", "screened",
	"hits", "searched"}

type sanctionHit struct {
	Subject     string   `json:"subject"`
	Member      string   `json:"member"`
	List        string   `json:"list"`
	EntryID     string   `json:"entry_id"`
	Name        string   `json:"name"`
	MatchedName string   `json:"matched_name"`
	Score       float64  `json:"score"`
	Fields      []string `json:"fields"`
	// Remembered: a one-person false positive remembered for this person
	// and entry, which does not settle the hit (a false positive inside an
	// application takes two people).
	Remembered string `json:"remembered_false_positive"`
}

type mediaHit struct {
	Name     string  `json:"name"`
	Matched  string  `json:"matched"`
	Category string  `json:"category"`
	Note     string  `json:"note"`
	Source   string  `json:"source"`
	Score    float64 `json:"score"`
}

func decodeDetails(m map[string]any) checkDetails {
	var d checkDetails
	if b, err := json.Marshal(m); err == nil {
		_ = json.Unmarshal(b, &d)
	}
	d.raw = m
	return d
}

func (d checkDetails) sanctionHits() []sanctionHit {
	var hs []sanctionHit
	if len(d.Hits) > 0 {
		_ = json.Unmarshal(d.Hits, &hs)
	}
	return hs
}

// hitKeys are the service's keys of a sanctions check's hits, in order
// (service.HitKey of each element of details["hits"]).
func hitKeys(details map[string]any) []string {
	var out []string
	switch hs := details["hits"].(type) {
	case []any:
		for _, x := range hs {
			h, _ := x.(map[string]any)
			if h == nil {
				out = append(out, "")
				continue
			}
			out = append(out, onboarding.HitKey(h))
		}
	case []map[string]any:
		for _, h := range hs {
			out = append(out, onboarding.HitKey(h))
		}
	}
	return out
}

func (d checkDetails) mediaHits() []mediaHit {
	var hs []mediaHit
	if len(d.Hits) > 0 {
		_ = json.Unmarshal(d.Hits, &hs)
	}
	return hs
}

// other returns the details this screen does not lay out, sorted by key.
func (d checkDetails) other() []components.KV {
	var keys []string
	for k := range d.raw {
		if !slices.Contains(knownDetails, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []components.KV
	for _, k := range keys {
		val := ""
		switch x := d.raw[k].(type) {
		case string:
			val = x
		default:
			b, _ := json.Marshal(x)
			val = string(b)
		}
		out = append(out, components.KV{Label: strings.ReplaceAll(k, "_", " "), Value: val, Mono: true})
	}
	return out
}

func checkTitle(name string) string {
	switch name {
	case emi.CheckRisk:
		return "Risk assessment"
	case emi.CheckTradeRegister:
		return "Trade register"
	case emi.CheckSanctions:
		return "Sanctions screening"
	case emi.CheckAdverseMedia:
		return "Adverse media"
	}
	return strings.ReplaceAll(name, "_", " ")
}

// checkView lays out one check's latest result.
func checkView(c emi.CheckResult, a emi.Application) onboardingview.CheckView {
	d := decodeDetails(c.Details)
	v := onboardingview.CheckView{Name: c.Name, Title: checkTitle(c.Name), Status: c.Status, StatusTone: frame.CheckTone(c.Status),
		Updated: frame.FmtTime(c.UpdatedAt), Reason: d.Reason, WaitingFor: d.WaitingFor, Error: d.Error, Kind: c.Name, Other: d.other()}
	members := map[string]emi.Member{}
	for _, m := range a.Members {
		members[m.Token] = m
	}
	switch c.Name {
	case emi.CheckRisk:
		if d.Score != "" {
			v.Facts = append(v.Facts, components.KV{Label: "frame.Score", Value: d.Score, Tone: frame.ToneOrNeutral(frame.RiskTone(d.Score))})
		}
		v.RiskFactors = riskRows(d.Factors)
		if d.Points != nil {
			v.RiskTotal = strconv.Itoa(*d.Points)
		}
	case emi.CheckTradeRegister:
		if d.Register != "" || d.RegisteredName != "" {
			status := components.KV{Label: "Register status", Value: d.RegisterStatus, Tone: "warn"}
			if strings.EqualFold(d.RegisterStatus, "active") {
				status.Tone = "ok"
			}
			v.Facts = append(v.Facts,
				components.KV{Label: "Register", Value: d.Register},
				components.KV{Label: "Registered name", Value: d.RegisteredName},
				components.KV{Label: "Submitted name", Value: d.SubmittedName},
				status,
				components.KV{Label: "Company number", Value: d.UIC, Mono: true},
				components.KV{Label: "Registered address", Value: d.Address},
				components.KV{Label: "Incorporated on", Value: d.IncorporatedOn, Mono: true})
		} else if d.UIC != "" || d.Country != "" {
			v.Facts = append(v.Facts, components.KV{Label: "Company number", Value: d.UIC, Mono: true}, components.KV{Label: "Country", Value: d.Country})
		}
	case emi.CheckSanctions:
		hits := d.sanctionHits()
		if d.ListVersion != "" || d.Screened != nil {
			v.Facts = append(v.Facts, components.KV{Label: "Lists version", Value: d.ListVersion, Mono: true})
			if d.Screened != nil {
				v.Facts = append(v.Facts, components.KV{Label: "Names screened", Value: strconv.Itoa(*d.Screened)})
			}
			v.Facts = append(v.Facts, components.KV{Label: "Possible matches", Value: strconv.Itoa(len(hits)), Tone: countTone(len(hits))})
		}
		keys := hitKeys(c.Details)
		for i, h := range hits {
			row := onboardingview.SanctionHitRow{Subject: "the company", List: h.List, EntryID: h.EntryID, Name: h.Name,
				MatchedName: h.MatchedName, Score: frame.Score(h.Score), Fields: strings.Join(h.Fields, ", "), Remembered: h.Remembered}
			if i < len(keys) {
				row.Key = keys[i]
			}
			if h.Subject == "member" {
				row.Subject = "member " + h.Member
				if m, ok := members[h.Member]; ok {
					row.Subject = frame.FirstNonEmpty(m.DisplayName(), "(no name)")
				}
				row.SubjectHref = memberHref(a.Token, h.Member)
			}
			v.SanctionHits = append(v.SanctionHits, row)
		}
	case emi.CheckAdverseMedia:
		hits := d.mediaHits()
		if d.Searched != nil {
			v.Facts = append(v.Facts, components.KV{Label: "Names searched", Value: strings.Join(d.Searched, "; ")},
				components.KV{Label: "Findings", Value: strconv.Itoa(len(hits)), Tone: countTone(len(hits))})
		}
		for _, h := range hits {
			v.MediaHits = append(v.MediaHits, onboardingview.MediaHitRow{Name: h.Name, Matched: h.Matched, Category: h.Category,
				Note: h.Note, Source: h.Source, SourceHref: frame.WebURL(h.Source), Score: frame.Score(h.Score)})
		}
	}
	return v
}

func countTone(n int) string {
	if n == 0 {
		return "ok"
	}
	return "warn"
}

// checkSummary is one line about a stored check result.
func checkSummary(c emi.CheckResult) string {
	d := decodeDetails(c.Details)
	switch {
	case d.Reason != "":
		return d.Reason
	case d.WaitingFor != "":
		return "waiting for " + d.WaitingFor
	}
	switch c.Name {
	case emi.CheckRisk:
		pts := 0
		if d.Points != nil {
			pts = *d.Points
		}
		return fmt.Sprintf("%s, %d points", frame.FirstNonEmpty(d.Score, "no score"), pts)
	case emi.CheckTradeRegister:
		return "registered as " + d.RegisteredName + " (" + frame.FirstNonEmpty(d.RegisterStatus, "status not given") + ")"
	case emi.CheckSanctions:
		n := 0
		if d.Screened != nil {
			n = *d.Screened
		}
		return fmt.Sprintf("%d name(s) screened, %d possible match(es)", n, len(d.sanctionHits()))
	case emi.CheckAdverseMedia:
		return fmt.Sprintf("%d name(s) searched, %d finding(s)", len(d.Searched), len(d.mediaHits()))
	}
	return ""
}

// approvalGrounds is what an approved application's approval rests on
// (service.ApprovalGrounds with its hit decisions); "" for other states.
func (p *Pages) approvalGrounds(r *http.Request, a emi.Application) (string, error) {
	if a.Status != emi.AppApproved {
		return "", nil
	}
	var hits map[string]emi.HitDecisionRecord
	if p.review != nil && hasSanctionHitsIn(a) {
		var err error
		if hits, err = p.review.HitDecisions(r.Context(), a.Token); err != nil {
			return "", err
		}
	}
	return onboarding.ApprovalGrounds(a, hits), nil
}

func hasSanctionHitsIn(a emi.Application) bool {
	for _, c := range a.Checks {
		if c.Name == emi.CheckSanctions && len(decodeDetails(c.Details).sanctionHits()) > 0 {
			return true
		}
	}
	return false
}

func applicationHref(token string) string { return "/backoffice/applications/" + token }

func memberHref(application, member string) string {
	return "/backoffice/applications/" + application + "/members/" + member
}
