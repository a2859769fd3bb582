package onboardingui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/views/components"
	"emi/views/onboardingview"
)

// The underwriters' review queue: tabs, filters kept in the URL, keyset
// pages, "next application", saved views, CSV export and the admins' bulk
// reassignment. The rules (who may claim, decide, reassign) are the
// service's; these handlers only read forms and lay out answers.

// queueTabs are the queue's tabs, the default first.
var queueTabs = []struct {
	status emi.ApplicationStatus
	label  string
}{
	{emi.AppInReview, "In review"},
	{emi.AppInfoRequested, "Information requested"},
	{emi.AppChecking, "Checking"},
}

// ageOptions are the "waiting longer than" choices.
var ageOptions = []struct {
	value, label string
	d            time.Duration
}{
	{"4h", "over 4 hours", 4 * time.Hour},
	{"24h", "over 1 day", 24 * time.Hour},
	{"72h", "over 3 days", 72 * time.Hour},
	{"168h", "over 7 days", 168 * time.Hour},
}

// nearSLA is how close to its due time an application is "near breach"
// (the store's near-SLA filter uses the same 4 hours).
const nearSLA = 4 * time.Hour

// queuePageSize is the rows of one queue page.
const queuePageSize = 50

// queueParams is the queue's filter as the URL carries it.
type queueParams struct {
	Tab                                         emi.ApplicationStatus
	Partner, Risk, Product, Age, Assignee, Sort string
	Hit, NearSLA                                bool
	After                                       string
}

// readQueue reads the filter from a URL query or a form. Values the queue
// does not know are dropped, so a hand-edited URL shows the queue without
// that filter rather than an error.
func readQueue(q url.Values) queueParams {
	var qp queueParams
	qp.Tab = emi.AppInReview
	for _, t := range queueTabs {
		if string(t.status) == q.Get("tab") {
			qp.Tab = t.status
		}
	}
	if v := q.Get("partner"); frame.LooksLikeToken(v) {
		qp.Partner = v
	}
	if v := q.Get("risk"); slices.Contains(emi.RiskScores, v) {
		qp.Risk = v
	}
	if v := q.Get("product"); slices.Contains(emi.Products, v) {
		qp.Product = v
	}
	for _, a := range ageOptions {
		if a.value == q.Get("age") {
			qp.Age = a.value
		}
	}
	if v := q.Get("assignee"); v == "me" || v == "none" || frame.LooksLikeToken(v) {
		qp.Assignee = v
	}
	if q.Get("sort") == "risk" {
		qp.Sort = "risk"
	}
	qp.Hit = q.Get("hit") == "1"
	qp.NearSLA = q.Get("near_sla") == "1"
	if v := q.Get("after"); len(v) <= 100 {
		qp.After = v
	}
	return qp
}

// filter is the service's filter of the parameters.
func (qp queueParams) filter() emi.QueueFilter {
	f := emi.QueueFilter{Tab: qp.Tab, PartnerID: qp.Partner, Risk: qp.Risk, Product: qp.Product, Assignee: qp.Assignee,
		HasSanctionsHit: qp.Hit, NearSLA: qp.NearSLA, Sort: qp.Sort, Limit: queuePageSize, After: qp.After}
	for _, a := range ageOptions {
		if a.value == qp.Age {
			f.AgeOver = a.d
		}
	}
	return f
}

// values is the filter as a query, without the page cursor and without
// defaults, so equal filters have equal URLs (and saved views compare).
func (qp queueParams) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	if qp.Tab != emi.AppInReview {
		v.Set("tab", string(qp.Tab))
	}
	set("partner", qp.Partner)
	set("risk", qp.Risk)
	set("product", qp.Product)
	set("age", qp.Age)
	set("assignee", qp.Assignee)
	set("sort", qp.Sort)
	if qp.Hit {
		v.Set("hit", "1")
	}
	if qp.NearSLA {
		v.Set("near_sla", "1")
	}
	return v
}

func queueHref(v url.Values) string {
	if len(v) == 0 {
		return "/backoffice/review"
	}
	return "/backoffice/review?" + v.Encode()
}

// slaState is a queue row's SLA badge: paused while information is
// requested, breached after the due time, near breach in its last 4 hours.
func slaState(status emi.ApplicationStatus, due *time.Time, now time.Time) (string, string) {
	switch {
	case status == emi.AppInfoRequested:
		return "paused", ""
	case due == nil:
		return "", ""
	case !now.Before(*due):
		return "breached", "bad"
	case due.Sub(now) < nearSLA:
		return "near breach", "warn"
	}
	return "on time", "ok"
}

// colleagues are the active staff users who may decide applications, for
// the assign and bulk-reassign selects (underwriters and admins).
func (p *Pages) colleagues(r *http.Request, selected string) ([]components.Option, error) {
	if !frame.CanDo(r, onboarding.Oversee) {
		return nil, nil
	}
	list, err := p.review.Assignees(r.Context())
	if err != nil {
		return nil, err
	}
	var out []components.Option
	for _, u := range list {
		out = append(out, components.Option{Value: u.ID, Label: u.Name + " <" + u.Email + ">", Selected: u.ID == selected})
	}
	slices.SortFunc(out, func(a, b components.Option) int {
		return strings.Compare(strings.ToLower(a.Label), strings.ToLower(b.Label))
	})
	return out, nil
}

// reviewQueue (GET /review) is the underwriters' queue.
func (p *Pages) reviewQueue(w http.ResponseWriter, r *http.Request) {
	p.renderReviewQueue(w, r, http.StatusOK, r.URL.Query(), nil, nil)
}

// renderReviewQueue renders the queue with the filters of query; kept, when
// set, is a refused form shown again, so nothing typed is lost: a bulk
// action ("bulk": colleague and reason as typed, the chosen applications
// still ticked) or a saved view ("view": its name, the section open), each
// reason beside its field.
func (p *Pages) renderReviewQueue(w http.ResponseWriter, r *http.Request, status int, query url.Values, kept *components.Form, chosen []string) {
	var bulk *components.Form
	if kept.Is("bulk") {
		bulk = kept
	}
	ctx := r.Context()
	qp := readQueue(query)
	page, err := p.review.Queue(ctx, qp.filter())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	now := p.frame.Now()
	me := frame.Me(r).ID
	base := qp.values()
	v := onboardingview.QueueView{Query: base.Encode(), CSVHref: "/backoffice/review.csv", CanNext: frame.CanDo(r, onboarding.Decide),
		MetricsHref: "/backoffice/review/metrics", Paged: qp.After != ""}
	if len(base) > 0 {
		v.CSVHref += "?" + base.Encode()
	}
	for _, t := range queueTabs {
		tq := frame.CloneQuery(base)
		tq.Del("tab")
		if t.status != emi.AppInReview {
			tq.Set("tab", string(t.status))
		}
		v.Tabs = append(v.Tabs, components.Tab{Label: t.label + " (" + strconv.FormatInt(page.Counts[t.status], 10) + ")",
			Href: queueHref(tq), Active: t.status == qp.Tab})
	}
	v.Filter = onboardingview.QueueFilterView{Tab: string(qp.Tab), Partner: qp.Partner, Hit: qp.Hit, NearSLA: qp.NearSLA}
	if frame.CanDo(r, partners.View) {
		list, err := p.partners.List(ctx)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		v.Filter.Partners = []components.Option{}
		for _, pt := range list {
			v.Filter.Partners = append(v.Filter.Partners, components.Option{Value: pt.ID, Label: pt.Name, Selected: pt.ID == qp.Partner})
		}
	}
	for _, s := range emi.RiskScores {
		v.Filter.Risks = append(v.Filter.Risks, components.Option{Value: s, Label: s, Selected: s == qp.Risk})
	}
	for _, s := range emi.Products {
		v.Filter.Products = append(v.Filter.Products, components.Option{Value: s, Label: s, Selected: s == qp.Product})
	}
	for _, a := range ageOptions {
		v.Filter.Ages = append(v.Filter.Ages, components.Option{Value: a.value, Label: a.label, Selected: a.value == qp.Age})
	}
	v.Filter.Assignees = []components.Option{{Value: "me", Label: "assigned to me", Selected: qp.Assignee == "me"},
		{Value: "none", Label: "unassigned", Selected: qp.Assignee == "none"}}
	v.Filter.Sorts = []components.Option{{Value: "age", Label: "oldest first", Selected: qp.Sort == ""},
		{Value: "risk", Label: "highest risk first", Selected: qp.Sort == "risk"}}
	if frame.CanDo(r, onboarding.Reassign) {
		cs, err := p.colleagues(r, "")
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		for _, c := range cs {
			v.Filter.Assignees = append(v.Filter.Assignees, components.Option{Value: c.Value, Label: "held by " + c.Label, Selected: c.Value == qp.Assignee})
		}
		v.Bulk = &onboardingview.BulkView{Colleagues: cs, Back: base.Encode(), Kept: bulk}
		if to := bulk.Value("to"); to != "" {
			for i := range v.Bulk.Colleagues {
				v.Bulk.Colleagues[i].Selected = v.Bulk.Colleagues[i].Value == to
			}
		}
	}
	for _, row := range page.Rows {
		qr := queueRow(row, me, now)
		qr.Chosen = slices.Contains(chosen, row.Token)
		v.Rows = append(v.Rows, qr)
	}
	if page.Next != "" {
		nq := frame.CloneQuery(base)
		nq.Set("after", page.Next)
		v.NextHref = queueHref(nq)
	}
	if qp.After != "" {
		v.FirstHref = queueHref(base)
	}
	v.Empty = "No application matches these filters."
	if len(base) == 0 || (len(base) == 1 && base.Get("tab") != "") {
		v.Empty = "Nothing waits here."
	}
	// "Next application" takes the filters that narrow what comes next.
	nf := qp.values()
	nf.Del("tab")
	nf.Del("assignee")
	nf.Del("sort")
	for _, k := range []string{"partner", "risk", "product", "age", "hit", "near_sla"} {
		if val := nf.Get(k); val != "" {
			v.NextFields = append(v.NextFields, onboardingview.Hidden{Name: k, Value: val})
		}
	}
	views, err := p.review.Views(ctx)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	for _, sv := range views {
		q, _ := url.ParseQuery(sv.Query)
		v.Views = append(v.Views, onboardingview.SavedViewRow{ID: sv.ID, Name: sv.Name, Href: queueHref(readQueue(q).values()),
			Active: readQueue(q).values().Encode() == base.Encode()})
	}
	if kept.Is("view") {
		v.ViewForm = kept
	}
	r = frame.WithNavCount(r, "/backoffice/review", page.Counts[emi.AppInReview])
	p.frame.RenderPrivate(w, r, status, "Review queue", onboardingview.Queue(v))
}

func queueRow(row emi.QueueRow, me string, now time.Time) onboardingview.QueueRow {
	queued := row.CreatedAt
	if row.QueuedAt != nil {
		queued = *row.QueuedAt
	}
	out := onboardingview.QueueRow{Token: row.Token, Href: applicationHref(row.Token), Company: frame.FirstNonEmpty(row.LegalName, "(no company yet)"),
		Partner: row.PartnerName, Products: strings.Join(row.Products, ", "), Risk: row.RiskScore, RiskTone: frame.RiskTone(row.RiskScore),
		Points: strconv.Itoa(row.RiskPoints), Queued: frame.FmtTime(queued), Age: frame.Age(now, queued), AwaitingSecond: row.AwaitingSecond,
		Hit: row.HasSanctionsHit, Status: string(row.Status)}
	out.SLA, out.SLATone = slaState(row.Status, row.SLADueAt, now)
	if row.SLADueAt != nil {
		out.SLADue = frame.FmtTime(*row.SLADueAt)
	}
	if row.Claimed {
		out.Assignee = frame.FirstNonEmpty(row.AssigneeName, row.Assignee)
		out.Mine = row.Assignee == me
	}
	return out
}

// csvMaxRows bounds a queue export (the tabs hold far fewer).
const csvMaxRows = 100_000

// reviewQueueCSV (GET /review.csv) exports the filtered queue, every page.
func (p *Pages) reviewQueueCSV(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	qp := readQueue(r.URL.Query())
	qp.After = ""
	f := qp.filter()
	f.Limit = 200
	now := p.frame.Now()
	var rows []emi.QueueRow
	for len(rows) < csvMaxRows {
		page, err := p.review.Queue(ctx, f)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		rows = append(rows, page.Rows...)
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	name := "review-queue-" + string(qp.Tab) + "-" + now.UTC().Format("20060102-1504") + ".csv"
	out := [][]string{{"application", "company", "partner", "products", "risk", "risk_points", "status", "queued_at_utc",
		"sla_due_at_utc", "sla", "assignee", "awaiting_second_approval", "sanctions_hit"}}
	for _, row := range rows {
		queued := row.CreatedAt
		if row.QueuedAt != nil {
			queued = *row.QueuedAt
		}
		sla, _ := slaState(row.Status, row.SLADueAt, now)
		due := ""
		if row.SLADueAt != nil {
			due = frame.FmtTime(*row.SLADueAt)
		}
		assignee := ""
		if row.Claimed {
			assignee = frame.FirstNonEmpty(row.AssigneeName, row.Assignee)
		}
		out = append(out, []string{row.Token, row.LegalName, row.PartnerName, strings.Join(row.Products, " "), row.RiskScore,
			strconv.Itoa(row.RiskPoints), string(row.Status), frame.FmtTime(queued), due, sla, assignee,
			strconv.FormatBool(row.AwaitingSecond), strconv.FormatBool(row.HasSanctionsHit)})
	}
	frame.WriteCSV(w, name, out)
}

// reviewNext (POST /review/next) claims the oldest unclaimed application in
// review that matches the form's filter and opens it. A button (the
// filters are the queue's own, hidden): a refusal is a flash.
func (p *Pages) reviewNext(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		p.frame.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	qp := readQueue(r.PostForm)
	qp.Tab, qp.After, qp.Assignee, qp.Sort = emi.AppInReview, "", "", ""
	token, err := p.review.Next(r.Context(), qp.filter())
	if err != nil {
		p.frame.FlashError(w, r, err, queueHref(qp.values()))
		return
	}
	if token == "" {
		p.frame.Flash(r.Context(), "info", "No unclaimed application in review matches these filters.")
		frame.Redirect(w, r, queueHref(qp.values()))
		return
	}
	p.frame.Flash(r.Context(), "ok", "This application is yours now: nobody else can decide it while you work on it.")
	frame.Redirect(w, r, applicationHref(token))
}

// reviewSaveView (POST /review/views) saves the current filter under a
// name.
func (p *Pages) reviewSaveView(w http.ResponseWriter, r *http.Request) {
	q, _ := url.ParseQuery(r.PostFormValue("query"))
	back := queueHref(readQueue(q).values())
	form := components.KeepForm("view", r.PostForm, "name")
	v, err := p.review.SaveView(r.Context(), form.Value("name"), readQueue(q).values().Encode())
	if err != nil {
		if e := emi.AsError(err); e.Kind != emi.KindInvalid && e.Kind != emi.KindConflict {
			p.frame.RenderError(w, r, err)
			return
		}
		// The queue again (422) with the name as typed beside the reason.
		banner := frame.KeepErrors(form, err, nil)
		if !form.Invalid("name") {
			form.Errs["name"] = banner
		}
		p.frame.Flash(r.Context(), "bad", "The view was not saved: "+form.Errs["name"])
		p.renderReviewQueue(w, r, http.StatusUnprocessableEntity, q, form, nil)
		return
	}
	p.frame.Flash(r.Context(), "ok", "View “"+v.Name+"” saved.")
	frame.Redirect(w, r, back)
}

// reviewDeleteView (POST /review/views/{view}/delete). A button: a
// refusal is a flash.
func (p *Pages) reviewDeleteView(w http.ResponseWriter, r *http.Request) {
	if err := p.review.DeleteView(r.Context(), frame.Param(r, "view")); err != nil {
		p.frame.FlashError(w, r, err, "/backoffice/review")
		return
	}
	p.frame.Flash(r.Context(), "ok", "The saved view was deleted.")
	frame.Redirect(w, r, "/backoffice/review")
}

// reviewBulk (POST /review/bulk) reassigns or releases the chosen
// applications (admins).
func (p *Pages) reviewBulk(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		p.frame.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	q, _ := url.ParseQuery(r.PostForm.Get("back"))
	back := queueHref(readQueue(q).values())
	var tokens []string
	for _, t := range r.PostForm["application"] {
		if frame.LooksLikeToken(t) && !slices.Contains(tokens, t) {
			tokens = append(tokens, t)
		}
	}
	form := components.KeepForm("bulk", r.PostForm, "to", "reason", "application")
	to := ""
	if r.PostForm.Get("op") != "release" {
		to = form.Value("to")
		if to == "" {
			form.Refuse("to", "choose the colleague to give the applications to, or release them")
		}
	}
	var n int
	var err error
	if !form.Refused() {
		n, err = p.review.BulkReassign(r.Context(), tokens, to, form.Value("reason"))
	}
	if form.Refused() || err != nil {
		// A refused bulk action answers the queue again (422) with what was
		// chosen and typed kept; a forbidden one its page.
		if e := emi.AsError(err); err != nil && e.Kind != emi.KindInvalid && e.Kind != emi.KindConflict {
			p.frame.RenderError(w, r, err)
			return
		}
		banner := "Choose the colleague to give the applications to, or release them."
		if err != nil {
			banner = frame.KeepErrors(form, err, func(f string) string {
				if f == "applications" {
					return "application"
				}
				return f
			})
		}
		p.frame.Flash(r.Context(), "bad", "Nothing was reassigned: "+banner)
		p.renderReviewQueue(w, r, http.StatusUnprocessableEntity, q, form, tokens)
		return
	}
	msg := strconv.Itoa(n) + " application(s) released."
	if to != "" {
		msg = strconv.Itoa(n) + " application(s) reassigned."
	}
	if skipped := len(tokens) - n; skipped > 0 {
		msg += " " + strconv.Itoa(skipped) + " already decided were left as they are."
	}
	p.frame.Flash(r.Context(), "ok", msg)
	frame.Redirect(w, r, back)
}
