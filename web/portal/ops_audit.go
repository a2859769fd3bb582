package portal

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/views/auth"
	"emi/views/pages"
)

const stamp = "2006-01-02 15:04:05"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(stamp)
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return fmtTime(*t)
}

func current(r *http.Request) emi.StaffUser {
	u, _ := r.Context().Value(userKey{}).(emi.StaffUser)
	return u
}

// dashboard (GET /) shows the figures the role may see.
func (p *Portal) dashboard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pr, _ := emi.PrincipalFrom(ctx)
	var tiles []pages.Tile
	if pr.Can(emi.PermViewPartners) {
		n, err := p.d.Partners.Count(ctx)
		if err != nil {
			p.serverError(w, r, err)
			return
		}
		tiles = append(tiles, pages.Tile{Label: "Partners", Value: strconv.FormatInt(n, 10), Href: "/backoffice/partners"})
	}
	if pr.Can(emi.PermViewStaff) {
		list, err := p.d.Staff.List(ctx)
		if err != nil {
			p.serverError(w, r, err)
			return
		}
		tiles = append(tiles, pages.Tile{Label: "Staff users", Value: strconv.Itoa(len(list)), Href: "/backoffice/staff"})
	}
	if pr.Can(emi.PermViewPeople) && p.d.AML != nil && p.d.KYC != nil {
		aml, err := p.d.AML.QueueSize(ctx)
		if err != nil {
			p.serverError(w, r, err)
			return
		}
		kyc, err := p.d.KYC.QueueSize(ctx)
		if err != nil {
			p.serverError(w, r, err)
			return
		}
		tiles = append(tiles,
			pages.Tile{Label: "AML checks to review", Value: strconv.FormatInt(aml, 10), Href: "/backoffice/aml"},
			pages.Tile{Label: "KYC sessions to review", Value: strconv.FormatInt(kyc, 10), Href: "/backoffice/kyc"})
	}
	if pr.Can(emi.PermViewApps) && p.d.Onboarding != nil {
		for _, st := range []struct {
			status emi.ApplicationStatus
			label  string
		}{{emi.AppChecking, "Applications checking"}, {emi.AppInReview, "Applications in review"}} {
			n, err := p.d.Onboarding.CountByStatus(ctx, st.status)
			if err != nil {
				p.serverError(w, r, err)
				return
			}
			tiles = append(tiles, pages.Tile{Label: st.label, Value: strconv.FormatInt(n, 10),
				Href: "/backoffice/applications?status=" + string(st.status)})
		}
		if p.d.Review != nil {
			m, err := p.d.Review.Metrics(ctx)
			if err != nil {
				p.serverError(w, r, err)
				return
			}
			tiles = append(tiles, pages.Tile{Label: "Review SLA breaches", Value: strconv.FormatInt(m.SLABreaches, 10),
				Href: "/backoffice/review/metrics"})
		}
	}
	if pr.Can(emi.PermViewJobs) && p.d.JobCounts != nil {
		counts, err := p.d.JobCounts(ctx)
		if err != nil {
			p.serverError(w, r, err)
			return
		}
		for _, st := range emi.JobStates() {
			tiles = append(tiles, pages.Tile{Label: "Jobs " + string(st), Value: strconv.FormatInt(counts[string(st)], 10),
				Href: "/backoffice/jobs?state=" + string(st)})
		}
	}
	if p.d.Inbox != nil {
		// Mentions and assignments waiting for this person come first.
		items, err := p.d.Inbox.Mine(ctx, true, 10)
		if err != nil {
			p.serverError(w, r, err)
			return
		}
		p.render(w, r, http.StatusOK, "Dashboard", pages.DashboardWithInbox(tiles, inboxRows(r, items)))
		return
	}
	p.render(w, r, http.StatusOK, "Dashboard", pages.Dashboard(tiles))
}

// search (POST /search from the header's form; GET /search?q= for links)
// is the global search box. The header form posts, so what is typed (a
// card number, say) never reaches a URL, the history or the access log;
// a full card number finds a card only by POST (searchCards).
func (p *Portal) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if r.Method == http.MethodPost {
		q = strings.TrimSpace(r.PostFormValue("q"))
	}
	found, err := p.d.Search.Find(r.Context(), q, 20)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	hits := make([]pages.Hit, len(found))
	for i, h := range found {
		hits[i] = pages.Hit{Kind: h.Kind, Title: h.Title, Detail: h.Detail, Href: hitHref(h)}
	}
	companies, err := p.searchCompanies(r, q)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	hits = append(hits, companies...)
	accounts, err := p.searchAccounts(r, q)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	hits = append(hits, accounts...)
	cards, err := p.searchCards(r, q)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	hits = append(hits, cards...)
	p.render(w, r, http.StatusOK, "Search", pages.Search(maskedQuery(q), hits))
}

// hitHref is where a search hit leads; each area adds its kind here.
func hitHref(h emi.SearchHit) string {
	switch h.Kind {
	case "partner":
		return "/backoffice/partners/" + h.Token
	case "staff":
		return "/backoffice/staff/" + h.Token
	case "user":
		return "/backoffice/users/" + h.Token
	}
	return "/backoffice/search?q=" + url.QueryEscape(h.Token)
}

// audit (GET /audit) lists the audit log, newest first, 50 a page.
func (p *Portal) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := emi.AuditFilter{
		ActorID: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")),
		ResourceType: strings.TrimSpace(q.Get("resource_type")), ResourceToken: strings.TrimSpace(q.Get("resource_token")),
		Limit: 50,
	}
	sort := readSort(r, "time", "desc", "time", "action", "resource", "outcome")
	if q.Get("sort") != "" && sort.Err == "" {
		f.Sort = sort.order()
	}
	view := pages.AuditFilter{Actor: f.ActorID, Action: f.Action, ResourceType: f.ResourceType, ResourceToken: f.ResourceToken,
		From: q.Get("from"), To: q.Get("to"), Sort: sort.view(r)}
	f.From, f.To, view.Errors = dateRange(q)
	if len(view.Errors) > 0 {
		p.render(w, r, http.StatusUnprocessableEntity, "Audit log", pages.Audit(view, nil, "", ""))
		return
	}
	if b, err := strconv.ParseInt(q.Get("before"), 10, 64); err == nil && b > 0 {
		f.BeforeID = b
	}
	entries, err := p.d.Audit.List(r.Context(), f)
	if err != nil {
		p.renderError(w, r, err)
		return
	}
	rows := make([]pages.AuditRow, len(entries))
	for i, e := range entries {
		rows[i] = auditRow(r, e)
	}
	p.nameAuditIDs(r, rows)
	var prev, next string
	if len(entries) == f.Limit {
		nq := cloneQuery(q)
		nq.Set("before", strconv.FormatInt(entries[len(entries)-1].ID, 10))
		next = "/backoffice/audit?" + nq.Encode()
	}
	if f.BeforeID != 0 {
		pq := cloneQuery(q)
		pq.Del("before")
		prev = "/backoffice/audit?" + pq.Encode()
	}
	p.render(w, r, sort.status(), "Audit log", pages.Audit(view, rows, prev, next))
}

func cloneQuery(q url.Values) url.Values {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// auditRow is one audit line as people read it (issue 23): the actor by
// name (a staff member's, or "API key of" the partner's) with the id on
// hover, a partner's or staff user's row by their name, the system as
// "system (test)". Staff actors link to their page for roles that see
// staff.
func auditRow(r *http.Request, e emi.AuditEntry) pages.AuditRow {
	row := pages.AuditRow{
		ID: strconv.FormatInt(e.ID, 10), At: fmtTime(e.At), Actor: auditActor(e), ActorTitle: e.ActorID,
		Action: e.Action, Resource: e.ResourceType + " " + e.ResourceToken, Outcome: string(e.Outcome),
		RequestID: e.RequestID,
	}
	if e.ResourceName != "" {
		row.Resource, row.ResourceTitle = e.ResourceType+" "+e.ResourceName, e.ResourceToken
	}
	if e.IP.IsValid() {
		row.IP = e.IP.String()
	}
	switch e.Outcome {
	case emi.OutcomeSuccess:
		row.OutcomeTone = "ok"
	case emi.OutcomeDenied, emi.OutcomeFailure:
		row.OutcomeTone = "bad"
	}
	if e.ActorType == emi.ActorStaff && canDo(r, emi.PermViewStaff) {
		row.ActorHref = "/backoffice/staff/" + e.ActorID
	}
	switch e.ResourceType {
	case "partner":
		row.ResourceHref = "/backoffice/partners/" + e.ResourceToken
	case "staff_user":
		row.ResourceHref = "/backoffice/staff/" + e.ResourceToken
	case "user":
		row.ResourceHref = "/backoffice/users/" + e.ResourceToken
	case "aml_check":
		row.ResourceHref = "/backoffice/aml/" + e.ResourceToken
	case "kyc_session":
		row.ResourceHref = "/backoffice/kyc/" + e.ResourceToken
	case "application":
		row.ResourceHref = "/backoffice/applications/" + e.ResourceToken
	case "account":
		row.ResourceHref = "/backoffice/accounts/" + e.ResourceToken
	case "card":
		if e.ResourceToken != "" {
			row.ResourceHref = cardHref(e.ResourceToken)
		}
	case "program":
		row.ResourceHref = programHref(e.ResourceToken)
	case "transfer":
		row.ResourceHref = transferHref(e.ResourceToken)
	case "watchlist_entry":
		row.ResourceHref = "/backoffice/watchlist"
	case "partner_key":
		if e.PartnerID != "" {
			row.ResourceHref = "/backoffice/partners/" + e.PartnerID
		}
	}
	if len(e.Changes) > 0 {
		b, _ := json.Marshal(e.Changes)
		row.Changes = string(b)
	}
	return row
}

// uuidInJSON is a whole id inside an audit entry's changes.
var uuidInJSON = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// nameAuditIDs writes the names of staff members and partners in place of
// their ids in the rows' changes ({"mentions":["Sandbox Compliance"]}),
// and keeps the changes as recorded, ids and all, on hover (issue 23: no
// partner or staff id where a name exists). Ids of other things stay: they
// have no name. The names are looked up only when a row has an id.
func (p *Portal) nameAuditIDs(r *http.Request, rows []pages.AuditRow) {
	var staff, partners map[string]string
	for i := range rows {
		if !uuidInJSON.MatchString(rows[i].Changes) {
			continue
		}
		if staff == nil {
			staff, partners = p.staffNames(r), p.partnerNames(r)
		}
		named := nameIDsIn(rows[i].Changes, staff, partners)
		if named != rows[i].Changes {
			rows[i].ChangesTitle, rows[i].Changes = rows[i].Changes, named
		}
	}
}

// nameIDsIn replaces the whole ids in changes (JSON) that names has, the
// first map first, by the names, escaped for a JSON string. Other ids stay.
func nameIDsIn(changes string, names ...map[string]string) string {
	return uuidInJSON.ReplaceAllStringFunc(changes, func(id string) string {
		for _, m := range names {
			if n, ok := m[id]; ok {
				return jsonStringContent(n)
			}
		}
		return id
	})
}

// jsonStringContent is s as it reads inside a JSON string, without the
// quotes.
func jsonStringContent(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// auditActor names an audit row's actor.
func auditActor(e emi.AuditEntry) string {
	switch {
	case e.ActorType == emi.ActorSystem:
		return "system (" + e.ActorID + ")"
	case e.ActorName == "":
		return string(e.ActorType) + " " + e.ActorID // a deleted actor: the id is all there is
	case e.ActorType == emi.ActorPartnerKey:
		return "API key of " + e.ActorName
	}
	return e.ActorName
}

// account (GET /account) is the signed-in user's own page.
func (p *Portal) account(w http.ResponseWriter, r *http.Request) {
	p.renderAccount(w, r, http.StatusOK, nil)
}

func (p *Portal) renderAccount(w http.ResponseWriter, r *http.Request, status int, errs map[string]string) {
	u := current(r)
	roles := make([]string, len(u.Roles))
	for i, role := range u.Roles {
		roles[i] = string(role)
	}
	p.render(w, r, status, "Your account", pages.Account(u.Name, u.Email, strings.Join(roles, ", "), errs))
}

// changePassword (POST /account/password).
func (p *Portal) changePassword(w http.ResponseWriter, r *http.Request) {
	u := current(r)
	err := p.d.Staff.ChangePassword(r.Context(), u.ID, r.PostFormValue("current_password"), r.PostFormValue("password"))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.serverError(w, r, err)
			return
		}
		errs, banner := fieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"current_password": banner}
		}
		p.renderAccount(w, r, http.StatusUnprocessableEntity, errs)
		return
	}
	p.flash(r.Context(), "ok", "Your password was changed.")
	redirect(w, r, "/backoffice/account")
}

// regenerateCodes (POST /account/recovery-codes) needs a fresh TOTP code.
func (p *Portal) regenerateCodes(w http.ResponseWriter, r *http.Request) {
	u := current(r)
	codes, err := p.d.Staff.RegenerateRecoveryCodes(r.Context(), u.ID, strings.TrimSpace(r.PostFormValue("code")))
	if err != nil {
		if emi.AsError(err).Kind == emi.KindInternal {
			p.serverError(w, r, err)
			return
		}
		p.renderAccount(w, r, http.StatusUnprocessableEntity, map[string]string{"code": Message(emi.AsError(err))})
		return
	}
	p.render(w, r, http.StatusOK, "Recovery codes", auth.RecoveryCodes(codes, "/backoffice/account"))
}

// signOutEverywhere (POST /account/signout-everywhere) ends every session
// of the user, this one included.
func (p *Portal) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	if err := p.d.Staff.RevokeSessions(r.Context(), current(r).ID); err != nil {
		p.renderError(w, r, err)
		return
	}
	_ = p.sessions.Destroy(r.Context())
	redirect(w, r, "/backoffice/signin")
}

func param(r *http.Request, name string) string { return chi.URLParam(r, name) }

// dateRange reads the from and to filters (YYYY-MM-DD, UTC) as a half-open
// range [from, to+1 day), so "to" includes the whole day. An empty date
// leaves that end open. A date that does not parse, or a range that ends
// before it starts, is refused (issue 23: it used to be ignored silently,
// so the page listed everything while the form showed a filter): errs then
// holds the message for the field, and the caller answers 422 with the form.
func dateRange(q url.Values) (from, to time.Time, errs map[string]string) {
	errs = map[string]string{}
	parse := func(field string) time.Time {
		v := strings.TrimSpace(q.Get(field))
		if v == "" {
			return time.Time{}
		}
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			errs[field] = "is not a date: write it as YYYY-MM-DD, e.g. 2026-03-31"
		}
		return t
	}
	from, to = parse("from"), parse("to")
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		errs["to"] = "is before the start date"
	}
	if len(errs) > 0 {
		return time.Time{}, time.Time{}, errs
	}
	if !to.IsZero() {
		to = to.AddDate(0, 0, 1)
	}
	return from, to, nil
}
