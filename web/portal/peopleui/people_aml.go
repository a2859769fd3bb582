package peopleui

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/views/components"
	"emi/views/peopleview"
)

// amlStatuses are the tabs of the AML screen; the first is the queue.
var amlStatuses = []struct {
	status emi.AMLStatus
	label  string
}{
	{emi.AMLMatch, "Waiting for review"},
	{emi.AMLCleared, "Cleared"},
	{emi.AMLConfirmed, "Confirmed"},
	{emi.AMLClear, "Clear"},
	{"", "All"},
}

// amlQueue (GET /aml) lists checks: by default those with hits waiting for
// a decision, oldest first; ?status= shows the others, newest first. The
// store sorts (?sort=, emi.AMLSortKeys) and pages (?after=, the last
// check seen), listPageSize a page.
func (p *Pages) amlQueue(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("status")
	if want == "" {
		want = string(emi.AMLMatch)
	}
	f := emi.AMLFilter{Limit: frame.ListPageSize}
	var tabs []components.Tab
	label := ""
	for _, s := range amlStatuses {
		key := string(s.status)
		if key == "" {
			key = "all"
		}
		active := key == want
		if active {
			f.Status, label = s.status, s.label
		}
		tabs = append(tabs, components.Tab{Label: s.label, Href: "/backoffice/aml?status=" + key, Active: active})
	}
	if label == "" { // unknown status: the queue
		f.Status, tabs[0].Active = emi.AMLMatch, true
	}
	empty := "No checks with this status."
	dir := "desc"
	if f.Status == emi.AMLMatch {
		empty, dir = "No check waits for review.", "asc" // the queue: oldest first
	}
	sort := frame.ReadSort(r, "created", dir, emi.AMLSortKeys...)
	f.After = frame.ReadAfter(r, &sort)
	f.Sort = sort.Order()
	checks, err := p.aml.List(r.Context(), f)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	rows := make([]peopleview.AMLRow, len(checks))
	last := ""
	for i, c := range checks {
		rows[i], last = amlRow(c, p.frame.Now()), c.Token
	}
	first, next := frame.AfterLinks(r, f.After, len(checks) == f.Limit, last)
	p.frame.RenderPrivate(w, r, sort.Status(), "AML reviews", peopleview.AMLQueue(tabs, rows, empty, sort.View(r), first, next))
}

func amlRow(c emi.AMLCheck, now time.Time) peopleview.AMLRow {
	return peopleview.AMLRow{Token: c.Token, Created: frame.FmtTime(c.CreatedAt), Age: frame.Age(now, c.CreatedAt), Partner: c.PartnerName,
		Person: strings.TrimSpace(c.FirstName + " " + c.LastName), Birthday: c.Birthday, Nationality: c.Nationality,
		Source: sourceOf(c), Status: string(c.Status), StatusTone: frame.AMLTone(c.Status), Hits: len(c.Hits), Open: c.OpenHits()}
}

// amlCheck (GET /aml/{check}) is the review page of one check.
func (p *Pages) amlCheck(w http.ResponseWriter, r *http.Request) {
	p.renderAMLCheck(w, r, http.StatusOK, 0, "", nil)
}

// renderAMLCheck shows the check; for a refused decision, hit n keeps the
// typed reason and shows the field errors.
func (p *Pages) renderAMLCheck(w http.ResponseWriter, r *http.Request, status, n int, reason string, errs map[string]string) {
	c, err := p.aml.Get(r.Context(), frame.Param(r, "check"))
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := peopleview.AMLCheckView{Token: c.Token, Status: string(c.Status), StatusTone: frame.AMLTone(c.Status),
		FirstName: c.FirstName, LastName: c.LastName, Birthday: c.Birthday, Nationality: c.Nationality,
		Partner: c.PartnerName, Source: c.Source, User: c.UserToken, ListVersion: c.ListVersion, Created: frame.FmtTime(c.CreatedAt),
		ReviewedBy: frame.Who(r, c.ReviewedBy, c.ReviewedByName)}
	if frame.CanDo(r, partners.View) {
		v.PartnerHref = "/backoffice/partners/" + c.PartnerID
	}
	if c.UserToken != "" {
		v.UserHref = "/backoffice/users/" + c.UserToken
	}
	if c.ReviewedAt != nil {
		v.Reviewed = frame.FmtTime(*c.ReviewedAt)
	}
	v.Merchant = merchantKVs(r, c)
	caps := p.aml.HitCapabilities(r.Context(), c)
	for _, h := range c.Hits {
		hv := hitView(h)
		hc := caps[h.N]
		hv.CanDecide, hv.CanFalsePositive, hv.WhyNot = hc.Decide, hc.FalsePositive, hc.WhyNot
		hv.DecidedBy = frame.Who(r, h.DecidedBy, h.DecidedByName)
		if h.ConfirmedBy != "" {
			hv.DecidedBy += ", confirmed by " + frame.Who(r, h.ConfirmedBy, h.ConfirmedByName)
		}
		if h.N == n {
			hv.FormReason, hv.Errors = reason, errs
		}
		v.Hits = append(v.Hits, hv)
	}
	if frame.CanDo(r, people.ReviewAML) {
		v.NextCase = p.nextAMLCheck(r, c.Token)
	}
	p.frame.RenderPrivate(w, r, status, "AML check · "+strings.TrimSpace(c.FirstName+" "+c.LastName), peopleview.AMLCheck(v))
}

func hitView(h emi.AMLHit) peopleview.AMLHitView {
	b := h.Breakdown
	hv := peopleview.AMLHitView{N: h.N, List: h.List, EntryID: h.EntryID, EntryType: h.EntryType, Name: h.Name,
		MatchedName: h.MatchedName, Alias: h.Alias, Score: frame.Score(h.Score), Fields: strings.Join(h.Fields, ", "),
		NameScore: frame.Score(b.NameScore), Birthday: orUnknown(b.Birthday), BirthdayAdjust: adjust(b.BirthdayAdjust),
		Nationality: orUnknown(b.Nationality), NationalityAdjust: adjust(b.NationalityAdjust), TypeAdjust: adjust(b.TypeAdjust),
		Notes: b.Notes, Suppressed: h.Suppressed, Open: h.Open() && !h.Pending(), Pending: h.Pending(),
		Decision: h.Decision, Reason: h.Reason, DecidedBy: h.DecidedBy}
	for _, t := range b.Tokens {
		row := peopleview.TokenRow{Query: t.Query, Entry: t.Entry, Similarity: frame.Score(t.Similarity), How: t.Note}
		if t.Weight > 0 {
			row.Weight = strconv.FormatFloat(t.Weight, 'f', -1, 64)
		}
		hv.Tokens = append(hv.Tokens, row)
	}
	switch e := h.Entry; {
	case h.List == emi.WatchlistListName:
		// emi's own watch list: entries are compared by name alone, so the
		// name score is the hit's score, and the entry is on the watch-list
		// page, not in the sanctions lists.
		hv.NameScore = hv.Score
		hv.EntryNote = "An entry of emi's own watch list, compared by name only: its category, note and source are on the Watch list page."
	case e == nil:
		hv.EntryNote = "This entry is no longer on the loaded lists."
	default:
		hv.EntryBirthdates = orNone(strings.Join(e.Birthdates, ", "))
		hv.EntryNationalities = orNone(strings.Join(e.Nationalities, ", "))
		hv.EntryPrograms = orNone(strings.Join(e.Programs, ", "))
		aliases := e.Aliases
		if len(aliases) > 12 {
			aliases = append(aliases[:12:12], fmt.Sprintf("and %d more", len(e.Aliases)-12))
		}
		hv.EntryAliases = orNone(strings.Join(aliases, "; "))
		if e.Fingerprint != h.Fingerprint {
			hv.EntryNote = "The list entry has changed since this check was made; what is shown is the entry as it is now."
		}
	}
	switch {
	case h.Pending():
		// A hit scoring 0.9 or more takes two people (a false positive on a
		// strong match needs a second person).
		hv.Decision, hv.DecisionTone = "false positive proposed: needs a second person", "warn"
	case h.Decision == emi.HitFalsePositive && h.ConfirmedBy != "":
		hv.Decision, hv.DecisionTone = "false positive (two people)", "ok"
	case h.Decision == emi.HitFalsePositive:
		hv.Decision, hv.DecisionTone = "false positive", "ok"
	case h.Decision == emi.HitTrueMatch:
		hv.Decision, hv.DecisionTone = "true match", "bad"
	}
	if h.DecidedAt != nil {
		hv.DecidedAt = frame.FmtTime(*h.DecidedAt)
	}
	return hv
}

// adjust writes a score adjustment with its sign ("" for none).
func adjust(f float64) string {
	if f == 0 {
		return "±0"
	}
	s := strconv.FormatFloat(f, 'f', 3, 64)
	if f > 0 {
		s = "+" + s
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "not compared"
	}
	return strings.ReplaceAll(s, "_", " ")
}

// amlDecide (POST /aml/{check}/decide) records a decision on one hit. The
// form uses HitDecision's JSON names: n, decision, reason.
func (p *Pages) amlDecide(w http.ResponseWriter, r *http.Request) {
	token := frame.Param(r, "check")
	n, _ := strconv.Atoi(r.PostFormValue("n"))
	reason := r.PostFormValue("reason") // the service trims and checks it
	d := emi.HitDecision{N: n, Decision: r.PostFormValue("decision"), Reason: reason}
	c, err := p.aml.Decide(r.Context(), token, d)
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			p.frame.FlashError(w, r, err, "/backoffice/aml/"+token)
			return
		}
		errs, banner := frame.FieldErrors(err)
		if len(errs) == 0 {
			errs = map[string]string{"reason": banner}
		}
		p.frame.Flash(r.Context(), "bad", banner)
		p.renderAMLCheck(w, r, http.StatusUnprocessableEntity, n, reason, errs)
		return
	}
	msg := "Hit " + strconv.Itoa(n) + " recorded."
	if c.Status != emi.AMLMatch {
		msg = "Hit " + strconv.Itoa(n) + " recorded; the check is now " + string(c.Status) + " and the partner was notified."
	}
	if r.PostFormValue("then") == "next" && c.Status != emi.AMLMatch {
		p.frame.TakeNext(w, r, msg, p.nextAMLCheck(r, token), "/backoffice/aml", "No other AML check waits for a review.")
		return
	}
	p.frame.Flash(r.Context(), "ok", msg)
	frame.Redirect(w, r, "/backoffice/aml/"+token+"#hit-"+strconv.Itoa(n))
}

// nextAMLCheck is the page of the first check of the AML queue (hits to
// review, in the queue's order) other than token, or "": of the
// queue's first two, one is not token.
func (p *Pages) nextAMLCheck(r *http.Request, token string) string {
	checks, err := p.aml.List(r.Context(), emi.AMLFilter{Status: emi.AMLMatch, Limit: 2})
	if err != nil {
		return ""
	}
	for _, c := range checks {
		if c.Token != token {
			return "/backoffice/aml/" + c.Token
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none stated"
	}
	return s
}
