package onboardingui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/views/components"
	"emi/views/onboardingview"
)

// The application page is the one evidence page: what onboarding.go lays
// out (company, members, checks, risk, documents, events) and, here, the
// review: claim, release and assignment, the decision forms with the
// evidence stamp, four-eyes, per-hit sanctions decisions, internal notes,
// the decisions with their snapshots, compliance's corrections and the
// audit trail. Decided applications show no form.

// formState keeps a refused form's input and errors for the re-rendered
// page: which form, and its key (the hit, member or note it is about).
type formState struct {
	which  string
	key    string
	values url.Values
	errs   map[string]string
}

func (st *formState) is(which, key string) bool {
	return st != nil && st.which == which && st.key == key
}

func (st *formState) value(name string) string {
	if st == nil {
		return ""
	}
	return st.values.Get(name)
}

// reviewBase is where an application's review actions are posted.
func reviewBase(token string) string { return "/backoffice/review/" + token }

// renderApplication renders an application's page. The evidence (and its
// stamp) is read first: whatever is read after it and changed since makes
// the stamp stale, so a decision is never made on evidence the page did
// not show.
func (p *Pages) renderApplication(w http.ResponseWriter, r *http.Request, status int, st *formState) {
	ctx := r.Context()
	token := frame.Param(r, "application")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrApplicationNotFound)
		return
	}
	a, stamp, decisions, notes, err := p.review.Evidence(ctx, token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	_, docs, err := p.onboarding.Get(ctx, a.Token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	history, err := p.onboarding.CheckHistory(ctx, a.Token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v, err := p.applicationView(r, a, docs, history)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	now := p.frame.Now()
	if hasSanctionHits(v.Checks) {
		hd, err := p.review.HitDecisions(ctx, a.Token)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		caps := p.review.HitCapabilities(ctx, a, hd)
		for i := range v.Checks {
			for j := range v.Checks[i].SanctionHits {
				h := &v.Checks[i].SanctionHits[j]
				h.Action = reviewBase(a.Token) + "/hits"
				hc := caps[h.Key]
				h.CanDecide = h.Key != "" && hc.Decide
				h.CanFalsePositive, h.FalsePositiveWhyNot, h.Pending = hc.FalsePositive, hc.WhyNot, hc.Pending
				if d, ok := hd[h.Key]; ok {
					h.DecisionReason, h.DecidedBy, h.DecidedAt = d.Reason, frame.Who(r, d.StaffID, d.StaffName), frame.FmtTime(d.At)
					switch {
					case d.Decision == emi.HitTrueMatch:
						h.Decision, h.DecisionTone = "true match", "bad"
					case d.Final():
						h.Decision, h.DecisionTone = "false positive", "ok"
						h.DecidedBy += ", confirmed by " + frame.Who(r, d.ConfirmedBy, d.ConfirmedByName)
					default:
						// A proposal waits for a second person from
						// compliance.
						h.Decision, h.DecisionTone = "false positive proposed: needs a second person (compliance)", "warn"
					}
				}
				if st.is("hit", h.Key) {
					h.FormDecision, h.FormReason, h.Errors = st.value("decision"), st.value("reason"), st.errs
				}
			}
		}
	}
	v.Compare = compareRows(a)
	caps := p.review.ApplicationCapabilities(ctx, a)
	rp, err := p.reviewPanel(r, a, caps, stamp, now, st)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v.Review = rp
	for _, d := range decisions {
		v.Decisions = append(v.Decisions, decisionRow(r, d))
	}
	v.Notes = noteTree(r, notes)
	v.NotesShown = true
	if caps.Annotate {
		v.NoteForm = &onboardingview.NoteForm{Action: reviewBase(a.Token) + "/notes"}
		if st.is("note", "") {
			v.NoteForm.Body, v.NoteForm.Errors = st.value("body"), st.errs
		}
		v.ReplyAction = v.NoteForm.Action
		if st != nil && st.which == "note" && st.key != "" {
			v.ReplyTo, v.ReplyBody, v.ReplyErrors = st.key, st.value("body"), st.errs
		}
	}
	if caps.Correct {
		v.Edit = editView(a, st)
	}
	if frame.CanDo(r, onboarding.View) {
		entries, err := p.review.AuditTrail(ctx, a.Token)
		if err != nil {
			p.frame.RenderError(w, r, err)
			return
		}
		v.ShowAudit = true
		if frame.CanDo(r, kernel.ViewAudit) {
			v.AuditHref = "/backoffice/audit?resource_type=application&resource_token=" + url.QueryEscape(a.Token)
		}
		for _, e := range entries {
			v.Audit = append(v.Audit, frame.AuditRow(r, e))
		}
	}
	p.frame.NameAuditIDs(r, v.Audit)
	p.frame.RenderPrivate(w, r, status, "Application · "+v.CompanyName, onboardingview.ApplicationDetail(v))
}

func hasSanctionHits(cs []onboardingview.CheckView) bool {
	for _, c := range cs {
		if len(c.SanctionHits) > 0 {
			return true
		}
	}
	return false
}

// reviewPanel is the review's state and the actions the signed-in user may
// take.
func (p *Pages) reviewPanel(r *http.Request, a emi.Application, caps onboarding.ApplicationCapability, stamp string, now time.Time,
	st *formState) (*onboardingview.ReviewPanel, error) {
	rs := a.Review
	open := !a.Status.Decided()
	v := &onboardingview.ReviewPanel{Action: reviewBase(a.Token), Stamp: stamp, Status: string(a.Status), Open: open,
		InReview: a.Status == emi.AppInReview, FourEyes: onboarding.NeedsFourEyes(a)}
	if rs.QueuedAt != nil {
		v.Queued = frame.FmtTime(*rs.QueuedAt) + " (" + frame.Age(now, *rs.QueuedAt) + " ago)"
	}
	if open {
		v.SLA, v.SLATone = slaState(a.Status, rs.SLADueAt, now)
		if rs.SLADueAt != nil {
			v.SLADue = frame.FmtTime(*rs.SLADueAt)
		}
		if a.Status == emi.AppInfoRequested && rs.SLALeft > 0 {
			v.SLALeft = fmtDuration(rs.SLALeft) + " of business time left when it returns"
		}
	}
	if rs.Claimed(now) {
		v.Held = true
		v.Holder = frame.Who(r, rs.Assignee, rs.AssigneeName)
		if rs.ClaimedAt != nil {
			v.HeldSince = frame.FmtTime(*rs.ClaimedAt)
		}
	}
	if rs.FirstApprovalBy != "" && a.Status == emi.AppInReview {
		v.FirstApproval = true
		v.FirstBy = frame.Who(r, rs.FirstApprovalBy, rs.FirstApprovalByName)
		v.FirstReason = rs.FirstApprovalReason
		if rs.FirstApprovalAt != nil {
			v.FirstAt = frame.FmtTime(*rs.FirstApprovalAt)
		}
	}
	if !open {
		return v, nil
	}
	v.CanClaim, v.CanRelease = caps.Claim, caps.Release
	if caps.Assign {
		cs, err := p.colleagues(r, st.value("to"))
		if err != nil {
			return nil, err
		}
		v.Colleagues, v.CanAssign = cs, len(cs) > 0
		if st.is("assign", "") {
			v.AssignReason, v.AssignErrors = st.value("reason"), st.errs
		}
	}
	v.CanDecide, v.CanApprove, v.DecideHint, v.ApproveHint = caps.Decide, caps.Approve, caps.WhyNotDecide, caps.WhyNotApprove
	if v.CanDecide {
		for _, c := range emi.RejectReasons {
			v.RejectReasons = append(v.RejectReasons, components.Option{Value: c, Label: strings.ReplaceAll(c, "_", " "),
				Selected: st.is("decide", "reject") && st.value("reason_code") == c})
		}
		if st != nil && st.which == "decide" {
			v.Form = onboardingview.DecisionForm{Action: st.key, ReasonCode: st.value("reason_code"), Text: st.value("text"), Errors: st.errs}
		}
	}
	return v, nil
}

var decisionLabels = map[string]struct{ label, tone string }{
	"first_approval":        {"first approval", "warn"},
	"approved":              {"approved", "ok"},
	"rejected":              {"rejected", "bad"},
	"information_requested": {"information requested", "warn"},
}

func decisionRow(r *http.Request, d emi.DecisionRecord) onboardingview.DecisionRow {
	l, ok := decisionLabels[d.Action]
	if !ok {
		l.label = d.Action
	}
	row := onboardingview.DecisionRow{ID: strconv.FormatInt(d.ID, 10), At: frame.FmtTime(d.At), Who: frame.Who(r, d.StaffID, d.StaffName),
		Action: l.label, Tone: l.tone, ReasonCode: strings.ReplaceAll(d.ReasonCode, "_", " "), Text: d.Text}
	var buf bytes.Buffer
	if len(d.Snapshot) > 0 && json.Indent(&buf, d.Snapshot, "", "  ") == nil {
		row.Snapshot = buf.String()
	}
	return row
}

// mentionRe finds @e-mail mentions (the service records those of
// colleagues).
var mentionRe = regexp.MustCompile(`@[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)

// noteSegments splits a note's text around its mentions.
func noteSegments(body string) []onboardingview.NoteSegment {
	var out []onboardingview.NoteSegment
	last := 0
	for _, m := range mentionRe.FindAllStringIndex(body, -1) {
		if m[0] > last {
			out = append(out, onboardingview.NoteSegment{Text: body[last:m[0]]})
		}
		out = append(out, onboardingview.NoteSegment{Text: body[m[0]:m[1]], Mention: true})
		last = m[1]
	}
	if last < len(body) {
		out = append(out, onboardingview.NoteSegment{Text: body[last:]})
	}
	return out
}

// noteTree arranges notes as threads: replies under their parent, oldest
// first.
func noteTree(r *http.Request, notes []emi.Note) []onboardingview.NoteView {
	me := frame.Me(r).ID
	children := map[int64][]emi.Note{}
	var roots []emi.Note
	ids := map[int64]bool{}
	for _, n := range notes {
		ids[n.ID] = true
	}
	for _, n := range notes {
		if n.ParentID != nil && ids[*n.ParentID] {
			children[*n.ParentID] = append(children[*n.ParentID], n)
		} else {
			roots = append(roots, n)
		}
	}
	var build func(ns []emi.Note, depth int) []onboardingview.NoteView
	build = func(ns []emi.Note, depth int) []onboardingview.NoteView {
		out := make([]onboardingview.NoteView, 0, len(ns))
		for _, n := range ns {
			nv := onboardingview.NoteView{ID: strconv.FormatInt(n.ID, 10), Author: frame.Who(r, n.Author, n.AuthorName), At: frame.FmtTime(n.CreatedAt),
				Segments: noteSegments(n.Body), MentionsMe: slices.Contains(n.Mentions, me), Mentions: len(n.Mentions)}
			if depth < 20 {
				nv.Replies = build(children[n.ID], depth+1)
			}
			out = append(out, nv)
		}
		return out
	}
	return build(roots, 0)
}

// compareRows set the company as submitted beside the trade register's
// record, differences marked.
func compareRows(a emi.Application) []onboardingview.CompareRow {
	if a.Company == nil {
		return nil
	}
	var d checkDetails
	found := false
	for _, c := range a.Checks {
		if c.Name == emi.CheckTradeRegister {
			d, found = decodeDetails(c.Details), true
		}
	}
	if !found || (d.RegisteredName == "" && d.Register == "") {
		return nil
	}
	co := a.Company
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	row := func(field, sub, reg string, same bool) onboardingview.CompareRow {
		cr := onboardingview.CompareRow{Field: field, Submitted: sub, Register: reg, State: "same", Tone: "ok"}
		switch {
		case sub == "":
			cr.State, cr.Tone = "not submitted", ""
		case reg == "":
			cr.State, cr.Tone = "not in the register", ""
		case !same:
			cr.State, cr.Tone, cr.Differs = "differs", "bad", true
		}
		return cr
	}
	addr := strings.Join(slices.DeleteFunc([]string{co.Address1, co.City, co.Zip}, func(s string) bool { return s == "" }), ", ")
	addrSame := true
	for _, part := range []string{co.Address1, co.City, co.Zip} {
		if part != "" && !strings.Contains(norm(d.Address), norm(part)) {
			addrSame = false
		}
	}
	return []onboardingview.CompareRow{
		row("Legal name", co.LegalName, d.RegisteredName, norm(co.LegalName) == norm(d.RegisteredName)),
		row("Company number", co.UIC, d.UIC, norm(co.UIC) == norm(d.UIC)),
		row("Incorporated", co.IncorporationDate, d.IncorporatedOn, co.IncorporationDate == d.IncorporatedOn),
		row("Address", addr, d.Address, addrSame),
	}
}

// editField is one input of compliance's correction forms, by JSON name.
type editField struct {
	name, label, kind string
}

var companyEditFields = []editField{
	{"legal_name", "Legal name", "text"}, {"trade_name", "Trade name", "text"}, {"uic", "Company number (uic)", "text"},
	{"incorporation_date", "Incorporated (YYYY-MM-DD)", "text"}, {"country", "Country (ISO code)", "text"},
	{"county", "County", "text"}, {"city", "City", "text"}, {"zip", "Postcode", "text"}, {"address1", "Address", "text"},
	{"address2", "Address line 2", "text"}, {"correspondence_address", "Correspondence address", "text"},
	{"address_of_shop", "Address of the shop", "text"}, {"website", "Website", "text"},
	{"contact_email", "Contact e-mail", "text"}, {"phone", "Phone", "text"}, {"mobile_phone", "Mobile phone", "text"},
	{"business_activity", "Business activity", "text"}, {"description_of_activity", "Description of the activity", "text"},
	{"is_sie", "Declared on a sanctions list (is_sie)", "bool"},
}

var memberEditFields = []editField{
	{"first_name", "First name", "text"}, {"last_name", "Last name", "text"}, {"legal_name", "Legal name", "text"},
	{"legal_form", "Legal form", "legal_form"}, {"country", "Country (ISO code)", "text"},
	{"country_of_residence", "Country of residence", "text"}, {"county", "County", "text"}, {"city", "City", "text"},
	{"zip", "Postcode", "text"}, {"address1", "Address", "text"}, {"address2", "Address line 2", "text"},
	{"contact_email", "E-mail", "text"}, {"phone", "Phone", "text"}, {"mobile_phone", "Mobile phone", "text"},
	{"ownership", "Owner", "bool"}, {"ownership_percentage", "Ownership (%)", "number"},
	{"pep_declaration", "PEP", "bool"}, {"pep_related_declaration", "Related to a PEP", "bool"},
	{"is_sip", "On a sanctions list (is_sip)", "bool"},
}

// formValues are a struct's fields as form values, by JSON name: booleans
// as yes or no, absent values as "".
func formValues(v any) map[string]string {
	raw, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	out := map[string]string{}
	for k, x := range m {
		switch x := x.(type) {
		case string:
			out[k] = x
		case bool:
			out[k] = map[bool]string{true: "yes", false: "no"}[x]
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		}
	}
	return out
}

// editInputs are the inputs of a correction form: the current values, or
// the refused input.
func editInputs(fields []editField, cur map[string]string, st *formState, which, key string) []onboardingview.FormField {
	out := make([]onboardingview.FormField, 0, len(fields))
	for _, f := range fields {
		ff := onboardingview.FormField{Name: f.name, Label: f.label, Kind: f.kind, Value: cur[f.name]}
		if st.is(which, key) {
			ff.Value, ff.Error = st.value(f.name), st.errs[f.name]
		}
		switch f.kind {
		case "bool":
			ff.Kind = "select"
			ff.Options = []components.Option{{Value: "", Label: "not declared"}, {Value: "yes", Label: "yes"}, {Value: "no", Label: "no"}}
		case "legal_form":
			ff.Kind = "select"
			ff.Options = []components.Option{{Value: "", Label: "not given"}}
			for _, lf := range emi.LegalForms {
				ff.Options = append(ff.Options, components.Option{Value: lf, Label: lf})
			}
		}
		for i := range ff.Options {
			ff.Options[i].Selected = ff.Options[i].Value == ff.Value
		}
		out = append(out, ff)
	}
	return out
}

func editView(a emi.Application, st *formState) *onboardingview.EditView {
	v := &onboardingview.EditView{}
	if a.Company != nil {
		v.CompanyAction = reviewBase(a.Token) + "/company"
		v.Company = editInputs(companyEditFields, formValues(*a.Company), st, "company", "")
		if st.is("company", "") {
			v.CompanyErrors = true
		}
	}
	for _, m := range a.Members {
		me := onboardingview.MemberEdit{Token: m.Token, Name: frame.FirstNonEmpty(m.DisplayName(), "(no name)"), Status: m.Status,
			Action: reviewBase(a.Token) + "/members/" + m.Token,
			Fields: editInputs(memberEditFields, formValues(m.MemberFields), st, "member", m.Token),
			Open:   st.is("member", m.Token)}
		status := m.Status
		if me.Open {
			status, me.StatusError = st.value("status"), st.errs["status"]
		}
		for _, s := range []string{"active", "inactive"} {
			me.Statuses = append(me.Statuses, components.Option{Value: s, Label: s, Selected: s == status})
		}
		v.Members = append(v.Members, me)
	}
	return v
}

// patchOf compares a correction form with the current values: the fields
// that changed as a JSON object (booleans and numbers converted) and their
// names; errs holds values that cannot be converted.
func patchOf(fields []editField, cur map[string]string, form url.Values) (map[string]any, map[string]bool, map[string]string) {
	patch, present, errs := map[string]any{}, map[string]bool{}, map[string]string{}
	for _, f := range fields {
		val := strings.TrimSpace(form.Get(f.name))
		if val == cur[f.name] {
			continue
		}
		present[f.name] = true
		switch {
		case val == "" && f.kind != "text" && f.kind != "legal_form":
			patch[f.name] = nil
		case f.kind == "bool":
			if val != "yes" && val != "no" {
				errs[f.name] = "must be yes, no or not declared"
			}
			patch[f.name] = val == "yes"
		case f.kind == "number":
			n, err := strconv.Atoi(val)
			if err != nil {
				errs[f.name] = "must be a whole number"
			}
			patch[f.name] = n
		default:
			patch[f.name] = val
		}
	}
	return patch, present, errs
}

// decode fills out from a JSON object.
func decode(m map[string]any, out any) {
	raw, _ := json.Marshal(m)
	_ = json.Unmarshal(raw, out)
}

// --- actions ---

// reviewToken is the application of an action, or "" after answering 404.
func (p *Pages) reviewToken(w http.ResponseWriter, r *http.Request) string {
	token := frame.Param(r, "application")
	if !frame.LooksLikeToken(token) {
		p.frame.RenderError(w, r, emi.ErrApplicationNotFound)
		return ""
	}
	return token
}

// reviewRefused answers a refused action: a form's validation errors go
// back to the page with the input kept (422); rule errors are a flash on
// the page.
func (p *Pages) reviewRefused(w http.ResponseWriter, r *http.Request, err error, st *formState, back string) {
	if emi.AsError(err).Kind == emi.KindInvalid && st != nil {
		errs, banner := frame.FieldErrors(err)
		st.errs = errs
		if len(errs) == 0 {
			st.errs = map[string]string{"": banner}
		}
		p.frame.Flash(r.Context(), "bad", banner)
		p.renderApplication(w, r, http.StatusUnprocessableEntity, st)
		return
	}
	p.frame.FlashError(w, r, err, back)
}

// reviewClaim (POST /review/{application}/claim). Claim and release are
// buttons, nothing typed: a refusal is a flash.
func (p *Pages) reviewClaim(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	back := applicationHref(token)
	err := p.review.Claim(r.Context(), token)
	if err != nil {
		p.frame.FlashError(w, r, err, back)
		return
	}
	p.frame.Flash(r.Context(), "ok", "You hold this application now: nobody else can decide it while you work on it.")
	frame.Redirect(w, r, back)
}

// reviewRelease (POST /review/{application}/release).
func (p *Pages) reviewRelease(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	if err := p.review.Release(r.Context(), token); err != nil {
		p.frame.FlashError(w, r, err, applicationHref(token))
		return
	}
	p.frame.Flash(r.Context(), "ok", "Released: the application is back in the queue for anyone to claim.")
	frame.Redirect(w, r, applicationHref(token))
}

// reviewAssign (POST /review/{application}/assign).
func (p *Pages) reviewAssign(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	_ = r.ParseForm()
	err := p.review.Assign(r.Context(), token, r.PostForm.Get("to"), r.PostForm.Get("reason"))
	if err != nil {
		p.reviewRefused(w, r, err, &formState{which: "assign", values: r.PostForm}, applicationHref(token))
		return
	}
	p.frame.Flash(r.Context(), "ok", "Assigned: the colleague holds the application now.")
	frame.Redirect(w, r, applicationHref(token))
}

// reviewDecide (POST /review/{application}/decide) records approve,
// reject or request_information with the page's evidence stamp.
func (p *Pages) reviewDecide(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	_ = r.ParseForm()
	f := r.PostForm
	d := emi.ReviewDecision{Action: f.Get("action"), ReasonCode: f.Get("reason_code"), Text: f.Get("text"), Stamp: f.Get("stamp")}
	st := &formState{which: "decide", key: d.Action, values: f}
	a, err := p.review.Decide(r.Context(), token, d)
	switch {
	case frame.ErrorIs(err, emi.ErrReviewStale):
		// The page is shown again with the evidence as it is now (and its
		// new stamp); the typed text is kept for a decision on it.
		p.frame.Flash(r.Context(), "bad", frame.Message(emi.AsError(err)))
		p.renderApplication(w, r, http.StatusConflict, st)
		return
	case frame.ErrorIs(err, emi.ErrReviewClosed):
		// The service says why when the application is still open.
		p.frame.Flash(r.Context(), "bad", frame.Message(emi.AsError(err)))
		frame.Redirect(w, r, applicationHref(token))
		return
	case err != nil:
		p.reviewRefused(w, r, err, st, applicationHref(token))
		return
	}
	msg := ""
	switch {
	case a.Status == emi.AppApproved:
		msg = "Approved: the merchant is onboarded and the partner is told (application.approved)."
	case a.Status == emi.AppRejected:
		msg = "Rejected: the partner is told (application.rejected)."
	case a.Status == emi.AppInfoRequested:
		msg = "Information requested: the partner has the message; the application returns to the queue when they change it."
	case a.Review.FirstApprovalBy != "":
		msg = "First approval recorded. This application needs a second approval by another underwriter; it is back in the queue."
	default:
		msg = "Decision recorded."
	}
	if f.Get("then") == "next" {
		// The next case is claimed, as "Take next" on the queue does, so
		// two underwriters never work on the same one.
		// The service never hands back an application whose first
		// approval is this person's.
		next, err := p.review.Next(r.Context(), queueParams{Tab: emi.AppInReview}.filter())
		if err != nil || next == "" {
			p.frame.TakeNext(w, r, msg, "", "/backoffice/review", "No unclaimed application in review is left.")
			return
		}
		p.frame.TakeNext(w, r, msg, applicationHref(next), "", "")
		return
	}
	p.frame.Flash(r.Context(), "ok", msg)
	frame.Redirect(w, r, applicationHref(token))
}

// reviewNote (POST /review/{application}/notes) adds a note or a reply.
func (p *Pages) reviewNote(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	_ = r.ParseForm()
	var parent int64
	if s := r.PostForm.Get("parent"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			p.frame.Flash(r.Context(), "bad", "The note to reply to does not exist.")
			frame.Redirect(w, r, applicationHref(token)+"#notes")
			return
		}
		parent = n
	}
	st := &formState{which: "note", values: r.PostForm}
	if parent != 0 {
		st.key = strconv.FormatInt(parent, 10)
	}
	n, err := p.review.AddNote(r.Context(), token, parent, r.PostForm.Get("body"))
	if err != nil {
		p.reviewRefused(w, r, err, st, applicationHref(token)+"#notes")
		return
	}
	msg := "Note added."
	if len(n.Mentions) > 0 {
		msg = "Note added; " + strconv.Itoa(len(n.Mentions)) + " colleague(s) mentioned."
	}
	p.frame.Flash(r.Context(), "ok", msg)
	frame.Redirect(w, r, applicationHref(token)+"#note-"+strconv.FormatInt(n.ID, 10))
}

// reviewHit (POST /review/{application}/hits) records a decision on one
// sanctions hit.
func (p *Pages) reviewHit(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	_ = r.ParseForm()
	key := r.PostForm.Get("key")
	err := p.review.DecideHit(r.Context(), token, key, r.PostForm.Get("decision"), r.PostForm.Get("reason"))
	if frame.ErrorIs(err, emi.ErrReviewClosed) {
		p.frame.Flash(r.Context(), "bad", "This hit already has a decision (or the application is decided): nothing was changed.")
		frame.Redirect(w, r, applicationHref(token)+"#check-sanctions")
		return
	}
	if err != nil {
		p.reviewRefused(w, r, err, &formState{which: "hit", key: key, values: r.PostForm}, applicationHref(token)+"#check-sanctions")
		return
	}
	msg := "Hit marked as a true match: the application can no longer be approved."
	if r.PostForm.Get("decision") == emi.HitFalsePositive {
		msg = "False positive recorded. It takes two people: once a second person from compliance confirms it, it is remembered for this person and list entry."
	}
	p.frame.Flash(r.Context(), "ok", msg)
	frame.Redirect(w, r, applicationHref(token)+"#check-sanctions")
}

// reviewEditCompany (POST /review/{application}/company): compliance
// corrects the company's data; the fields that changed are sent.
func (p *Pages) reviewEditCompany(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	_ = r.ParseForm()
	a, _, err := p.onboarding.Get(r.Context(), token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	back := applicationHref(token) + "#corrections"
	if a.Company == nil {
		p.frame.Flash(r.Context(), "bad", "The partner has not sent the company yet: there is nothing to correct.")
		frame.Redirect(w, r, back)
		return
	}
	st := &formState{which: "company", values: r.PostForm}
	patch, present, errs := patchOf(companyEditFields, formValues(*a.Company), r.PostForm)
	if len(errs) > 0 {
		st.errs = errs
		p.frame.Flash(r.Context(), "bad", "Please correct the marked fields.")
		p.renderApplication(w, r, http.StatusUnprocessableEntity, st)
		return
	}
	if len(present) == 0 {
		p.frame.Flash(r.Context(), "info", "Nothing was changed.")
		frame.Redirect(w, r, back)
		return
	}
	var in emi.CompanyFields
	decode(patch, &in)
	if _, err := p.onboarding.EditCompany(r.Context(), token, in, present); err != nil {
		p.reviewRefused(w, r, err, st, back)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Company corrected ("+strings.Join(sortedKeys(present), ", ")+"): the change is audited and the checks run again.")
	frame.Redirect(w, r, back)
}

// reviewEditMember (POST /review/{application}/members/{member}):
// compliance corrects a member's data or suspends it.
func (p *Pages) reviewEditMember(w http.ResponseWriter, r *http.Request) {
	token := p.reviewToken(w, r)
	if token == "" {
		return
	}
	_ = r.ParseForm()
	a, _, err := p.onboarding.Get(r.Context(), token)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	id := frame.Param(r, "member")
	i := slices.IndexFunc(a.Members, func(m emi.Member) bool { return m.Token == id })
	if i < 0 {
		p.frame.RenderError(w, r, emi.ErrMemberNotFound)
		return
	}
	m := a.Members[i]
	back := applicationHref(token) + "#corrections"
	st := &formState{which: "member", key: m.Token, values: r.PostForm}
	patch, present, errs := patchOf(memberEditFields, formValues(m.MemberFields), r.PostForm)
	mp := emi.MemberPatch{Present: present}
	if s := r.PostForm.Get("status"); s != "" && s != m.Status {
		mp.Status, present["status"] = s, true
	}
	if len(errs) > 0 {
		st.errs = errs
		p.frame.Flash(r.Context(), "bad", "Please correct the marked fields.")
		p.renderApplication(w, r, http.StatusUnprocessableEntity, st)
		return
	}
	if len(present) == 0 {
		p.frame.Flash(r.Context(), "info", "Nothing was changed.")
		frame.Redirect(w, r, back)
		return
	}
	decode(patch, &mp.Fields)
	if _, err := p.onboarding.EditMember(r.Context(), token, m.Token, mp); err != nil {
		p.reviewRefused(w, r, err, st, back)
		return
	}
	what := "Member corrected"
	if mp.Status == "inactive" {
		what = "Member suspended"
	}
	p.frame.Flash(r.Context(), "ok", what+" ("+strings.Join(sortedKeys(present), ", ")+"): the change is audited and the checks run again.")
	frame.Redirect(w, r, back)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
