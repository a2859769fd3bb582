package peopleui

import (
	"net/http"
	"strings"
	"time"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/views/components"
	"emi/views/peopleview"
)

// kycTabs are the tabs of the KYC screen; the first is the queue.
var kycTabs = []struct {
	status emi.KYCStatus
	label  string
}{
	{emi.KYCSubmitted, "Waiting for review"},
	{emi.KYCPending, "Waiting for the person"},
	{emi.KYCApproved, "Approved"},
	{emi.KYCRejected, "Rejected"},
	{emi.KYCExpired, "Expired"},
	{"", "All"},
}

// kycQueue (GET /kyc) lists sessions: by default those submitted and
// waiting for review, oldest submission first; ?status= shows the others,
// newest started first. The store sorts (?sort=, emi.KYCSortKeys) and
// pages (?after=, the last session seen), listPageSize a page.
func (p *Pages) kycQueue(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("status")
	if want == "" {
		want = string(emi.KYCSubmitted)
	}
	f := emi.KYCFilter{Limit: frame.ListPageSize}
	var tabs []components.Tab
	found := false
	for _, s := range kycTabs {
		key := string(s.status)
		if key == "" {
			key = "all"
		}
		active := key == want
		if active {
			f.Status, found = s.status, true
		}
		tabs = append(tabs, components.Tab{Label: s.label, Href: "/backoffice/kyc?status=" + key, Active: active})
	}
	if !found {
		f.Status, tabs[0].Active = emi.KYCSubmitted, true
	}
	empty := "No sessions with this status."
	key, dir := "started", "desc"
	if f.Status == emi.KYCSubmitted {
		empty, key, dir = "No identification waits for review.", "submitted", "asc" // the queue: oldest first
	}
	sort := frame.ReadSort(r, key, dir, emi.KYCSortKeys...)
	f.After = frame.ReadAfter(r, &sort)
	f.Sort = sort.Order()
	sessions, err := p.kyc.List(r.Context(), f)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	rows := make([]peopleview.KYCRow, len(sessions))
	last := ""
	for i, s := range sessions {
		rows[i], last = kycRow(s, p.frame.Now()), s.Token
	}
	first, next := frame.AfterLinks(r, f.After, len(sessions) == f.Limit, last)
	p.frame.RenderPrivate(w, r, sort.Status(), "KYC reviews", peopleview.KYCQueue(tabs, rows, empty, sort.View(r), first, next))
}

func kycRow(s emi.KYCSession, now time.Time) peopleview.KYCRow {
	row := peopleview.KYCRow{Token: s.Token, Partner: s.PartnerName, User: strings.TrimSpace(s.UserName), UserHref: "/backoffice/users/" + s.UserToken,
		Created: frame.FmtTime(s.CreatedAt), Kind: kindLabel(s.DocumentKind), Status: string(s.Status), StatusTone: frame.KYCTone(s.Status)}
	if row.User == "" {
		row.User = s.UserToken
	}
	if s.SubmittedAt != nil {
		row.Submitted = frame.FmtTime(*s.SubmittedAt)
		if s.Status == emi.KYCSubmitted {
			row.Age = frame.Age(now, *s.SubmittedAt)
		}
	}
	return row
}

func kindLabel(k string) string {
	switch k {
	case "passport":
		return "passport"
	case "idcard":
		return "ID card"
	}
	return k
}

// kycSession (GET /kyc/{session}) is the review page of one session.
func (p *Pages) kycSession(w http.ResponseWriter, r *http.Request) {
	p.renderKYCSession(w, r, http.StatusOK, emi.KYCDecision{}, nil)
}

func (p *Pages) renderKYCSession(w http.ResponseWriter, r *http.Request, status int, form emi.KYCDecision, errs map[string]string) {
	ctx := r.Context()
	s, docs, err := p.kyc.Get(ctx, frame.Param(r, "session"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	u, _, err := p.users.Get(ctx, s.UserToken)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := peopleview.KYCSessionView{Token: s.Token, Status: string(s.Status), StatusTone: frame.KYCTone(s.Status), Name: u.FullName(),
		Docs: DocViews(docs), ReviewedBy: frame.Who(r, s.ReviewedBy, s.ReviewedByName), Reason: s.Reason, InternalNote: s.InternalNote,
		CanDecide: people.CanDecideKYC(r.Context(), s), FormReason: form.Reason, FormNote: form.InternalNote,
		Errors: errs}
	if s.ReviewedAt != nil {
		v.Reviewed = frame.FmtTime(*s.ReviewedAt)
	}
	v.Person = []components.KV{
		{Label: "Name", Value: u.FullName(), Href: "/backoffice/users/" + u.Token},
		{Label: "Birthday", Value: u.Birthday, Mono: true},
		{Label: "Place of birth", Value: u.PlaceOfBirth},
		{Label: "Nationality", Value: u.Nationality},
		{Label: "Country", Value: u.Country},
		{Label: "Address", Value: strings.Trim(strings.Join([]string{u.Address1, u.Zip + " " + u.City}, ", "), ", ")},
		{Label: "Proof of identity", Value: u.ProofOfIdentityType},
		{Label: "Document number", Value: u.IDPassportNumber, Mono: true},
		{Label: "Issuing country", Value: u.CountryIssuingIDCard},
		{Label: "Issued", Value: u.IDIssueDate, Mono: true},
		{Label: "Valid until", Value: u.IDPassportValidity, Mono: true},
		{Label: "Unique identifier", Value: u.UniqueIdentifier, Mono: true},
	}
	v.Session = []components.KV{
		{Label: "Session", Value: s.Token, Mono: true},
		{Label: "Partner", Value: s.PartnerName},
		{Label: "Document", Value: kindLabel(s.DocumentKind)},
		{Label: "Started (UTC)", Value: frame.FmtTime(s.CreatedAt), Mono: true},
		{Label: "Consent (UTC)", Value: frame.FmtTimeOrEmpty(s.ConsentAt), Mono: true},
		{Label: "Submitted (UTC)", Value: frame.FmtTimeOrEmpty(s.SubmittedAt), Mono: true},
		{Label: "Link valid until (UTC)", Value: frame.FmtTime(s.ExpiresAt), Mono: true},
	}
	if frame.CanDo(r, partners.View) {
		v.Session[1].Href = "/backoffice/partners/" + s.PartnerID
	}
	if frame.CanDo(r, people.ReviewKYC) {
		v.NextCase = p.nextKYCSession(r, s.Token)
	}
	p.frame.RenderPrivate(w, r, status, "KYC · "+u.FullName(), peopleview.KYCSession(v))
}

// kycDecide (POST /kyc/{session}/decide) approves or rejects a submitted
// session (decision approve or reject) with a reason for the partner and an
// internal note for staff.
func (p *Pages) kycDecide(w http.ResponseWriter, r *http.Request) {
	token := frame.Param(r, "session")
	d := emi.KYCDecision{Reason: r.PostFormValue("reason"), InternalNote: r.PostFormValue("internal_note")}
	switch r.PostFormValue("decision") {
	case "approve":
		d.Approve = true
	case "reject":
	default:
		err := emi.ErrReviewValidation.Field("decision", "choose approve or reject")
		errs, banner := frame.FieldErrors(err)
		p.frame.Flash(r.Context(), "bad", banner)
		p.renderKYCSession(w, r, http.StatusUnprocessableEntity, d, errs)
		return
	}
	s, err := p.kyc.Decide(r.Context(), token, d)
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			p.frame.FlashError(w, r, err, "/backoffice/kyc/"+token)
			return
		}
		errs, banner := frame.FieldErrors(err)
		p.frame.Flash(r.Context(), "bad", banner)
		p.renderKYCSession(w, r, http.StatusUnprocessableEntity, d, errs)
		return
	}
	msg := "The identification is " + string(s.Status) + "; the partner was notified."
	if r.PostFormValue("then") == "next" {
		p.frame.TakeNext(w, r, msg, p.nextKYCSession(r, token), "/backoffice/kyc", "No other identification waits for a review.")
		return
	}
	p.frame.Flash(r.Context(), "ok", msg)
	frame.Redirect(w, r, "/backoffice/kyc/"+token)
}

// nextKYCSession is the page of the first submitted identification of the
// KYC queue other than token, or "".
func (p *Pages) nextKYCSession(r *http.Request, token string) string {
	list, err := p.kyc.List(r.Context(), emi.KYCFilter{Status: emi.KYCSubmitted, Limit: 2})
	if err != nil {
		return ""
	}
	for _, s := range list {
		if s.Token != token {
			return "/backoffice/kyc/" + s.Token
		}
	}
	return ""
}
