package portal_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/staff"
	"emi/internal/testwait"
)

// newStaff creates a staff user with the sandbox password and an enrolled
// TOTP secret, so apptest's Browser.SignIn signs them in like the sandbox
// users. It returns the user's id.
func newStaff(t testing.TB, env *apptest.Env, email, name string, roles ...emi.Role) string {
	t.Helper()
	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	created, err := env.App.Staff.Create(sys, emi.StaffCreate{Email: email, Name: name, Roles: roles, Password: staff.SandboxStaffPassword})
	if err != nil {
		t.Fatal(err)
	}
	u := created.User
	en, err := env.App.Staff.BeginEnrollment(sys, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCodeCustom(en.Secret, env.Clock.Now(),
		totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Staff.ConfirmEnrollment(sys, u.ID, code); err != nil {
		t.Fatal(err)
	}
	return u.ID
}

func staffID(t testing.TB, env *apptest.Env, email string) string {
	t.Helper()
	var id string
	if err := env.App.DB.Get(&id, `SELECT id FROM staff_users WHERE email = $1`, email); err != nil {
		t.Fatal(err)
	}
	return id
}

// queuedApplication creates an application (changed by mutate) and waits
// until it waits for an underwriter.
func queuedApplication(t *testing.T, env *apptest.Env, p *apptest.Partner, mutate func(map[string]any)) string {
	t.Helper()
	body := sandboxApplication(p)
	if mutate != nil {
		mutate(body)
	}
	app, _ := createApplication(t, env, p, body)
	waitStatus(t, env, app, emi.AppInReview)
	return app
}

// highRisk makes an application High risk (gambling, simplified due
// diligence): approval takes two underwriters.
func highRisk(b map[string]any) {
	b["company"].(map[string]any)["description_of_activity"] = "Online casino and betting"
	b["due_diligence"] = "SDD"
}

// sanctioned makes the UBO a person on the sandbox sanctions lists.
func sanctioned(b map[string]any) {
	m := b["members"].([]map[string]any)[0]
	m["first_name"], m["last_name"], m["birthday"], m["nationality"], m["unique_identifier"] = "Kim", "Jong Un", "1984-01-08", "KP", "KP1"
}

// stampIn returns the evidence stamp of the page's decision forms.
func stampIn(t *testing.T, body string) string {
	t.Helper()
	stamp, ok := dom(t, apptest.Page{Body: body}).Find(`input[name="stamp"]`).First().Attr("value")
	if !ok {
		t.Fatal("the page has no decision form with a stamp")
	}
	return stamp
}

// flashes returns the flash texts of a page, joined by " | ".
func flashes(p apptest.Page) string {
	d, err := goquery.NewDocumentFromReader(strings.NewReader(p.Body))
	if err != nil {
		return ""
	}
	var out []string
	d.Find("div.flash[role]").Each(func(_ int, s *goquery.Selection) { out = append(out, s.Text()) })
	return strings.Join(out, " | ")
}

// after posts a form, expects a redirect and returns the page it leads to
// (with the flash).
func after(t *testing.T, b *apptest.Browser, path string, form url.Values) apptest.Page {
	t.Helper()
	r := b.Post(t, path, form)
	if r.Status != http.StatusSeeOther {
		t.Fatalf("POST %s: HTTP %d, want 303: %s (request %s)", path, r.Status, flashes(r), r.Header.Get("x-request-id"))
	}
	return b.Get(t, r.Location)
}

// formValues reads the form marked by marker, an attribute such as
// data-testid="hit-form" or action="/backoffice/...": the form with it,
// else the first form inside the element with it, as a browser would
// submit it.
func formValues(t *testing.T, body, marker string) url.Values {
	t.Helper()
	s := dom(t, apptest.Page{Body: body}).Find("[" + marker + "]").First()
	if !s.Is("form") {
		s = s.Find("form").First()
	}
	if s.Length() == 0 {
		t.Fatalf("no form %s", marker)
	}
	return formOf(s)
}

// rowsOf returns the application tokens of the queue page, in order.
func rowsOf(p apptest.Page) []string {
	d, err := goquery.NewDocumentFromReader(strings.NewReader(p.Body))
	if err != nil {
		return nil
	}
	var out []string
	d.Find(`[data-testid="queue-row"]`).Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("data-token", "")) })
	return out
}

func readCSV(t *testing.T, p apptest.Page) [][]string {
	t.Helper()
	if p.Status != http.StatusOK {
		t.Fatalf("CSV: HTTP %d", p.Status)
	}
	if ct := p.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("CSV content type %q", ct)
	}
	if cd := p.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment; filename=") || !strings.HasSuffix(cd, `.csv"`) {
		t.Fatalf("CSV disposition %q", cd)
	}
	rows, err := csv.NewReader(strings.NewReader(p.Body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// eventsOf returns the data of the events of a type about an application.
func eventsOf(t *testing.T, env *apptest.Env, typ emi.EventType, app string) []map[string]any {
	t.Helper()
	var bodies [][]byte
	if err := env.App.DB.Select(&bodies, `SELECT body FROM events WHERE type = $1 AND resource_token = $2 ORDER BY seq`, typ, app); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, b := range bodies {
		var ev struct {
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal(b, &ev)
		out = append(out, ev.Data)
	}
	return out
}

func assigneeOf(t *testing.T, env *apptest.Env, app string) string {
	t.Helper()
	var a *string
	if err := env.App.DB.Get(&a, `SELECT assignee::text FROM applications WHERE token = $1`, app); err != nil {
		t.Fatal(err)
	}
	if a == nil {
		return ""
	}
	return *a
}

func statusOf(t *testing.T, env *apptest.Env, app string) emi.ApplicationStatus {
	t.Helper()
	var st string
	if err := env.App.DB.Get(&st, `SELECT status FROM applications WHERE token = $1`, app); err != nil {
		t.Fatal(err)
	}
	return emi.ApplicationStatus(st)
}

// waitStamp waits until the application is back in review with another
// evidence stamp than old.
func waitStamp(t *testing.T, env *apptest.Env, app, old string) {
	t.Helper()
	ctx := staffCtx(t, env, apptest.AuditorEmail)
	testwait.For(t, "application "+app+" back in review with new evidence (status)", func() (emi.ApplicationStatus, bool) {
		a, stamp, _, _, err := env.App.Review.Evidence(ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		return a.Status, stamp != old && a.Status == emi.AppInReview
	})
}

// secondUnderwriter is the email of the underwriter newReviewDesk adds
// beside the sandbox's: four-eyes decisions and colleagues' claims take two.
const secondUnderwriter = "second.underwriter@review.test"

// reviewDesk is one test's review queue: a fresh emi (apptest.Env) whose
// workers run (the automatic checks put the applications in the queue), a
// partner with semi-automatic processing and another one, the sandbox
// staff and a second underwriter. It has no application until the test
// asks for one.
type reviewDesk struct {
	env          *apptest.Env
	p, other     *apptest.Partner
	uw1ID, uw2ID string
	browsers     map[string]*apptest.Browser
}

func newReviewDesk(t *testing.T) *reviewDesk {
	t.Helper()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	startWorkers(t, env)
	t.Cleanup(func() {
		if t.Failed() { // the server's errors, beyond the tail apptest prints
			for _, l := range strings.Split(env.Logs.String(), "\n") {
				if strings.Contains(l, `"error"`) {
					t.Log(l)
				}
			}
		}
	})
	d := &reviewDesk{env: env, browsers: map[string]*apptest.Browser{}}
	d.p = env.NewPartner(t, emi.PartnerCreate{Name: "Review Partner", Processing: emi.ProcessingSemiAutomatic})
	d.other = env.NewPartner(t, emi.PartnerCreate{Name: "Other Partner", Processing: emi.ProcessingSemiAutomatic})
	d.uw2ID = newStaff(t, env, secondUnderwriter, "Second Underwriter", emi.RoleUnderwriter)
	d.uw1ID = staffID(t, env, apptest.UnderwriterEmail)
	return d
}

// as returns the browser of the staff member with email, signed in the
// first time it is asked for.
func (d *reviewDesk) as(t *testing.T, email string) *apptest.Browser {
	t.Helper()
	b, ok := d.browsers[email]
	if !ok {
		b = d.env.NewBrowser()
		b.SignIn(t, email)
		d.browsers[email] = b
	}
	return b
}

// The applications of the queue, each made through the partner API and
// returned once it waits for an underwriter.

// low is an ordinary application of the partner.
func (d *reviewDesk) low(t *testing.T) string { return queuedApplication(t, d.env, d.p, nil) }

// high is a High-risk application: its approval takes two underwriters.
func (d *reviewDesk) high(t *testing.T) string { return queuedApplication(t, d.env, d.p, highRisk) }

// kim is an application whose UBO is on the sanctions lists.
func (d *reviewDesk) kim(t *testing.T) string { return queuedApplication(t, d.env, d.p, sanctioned) }

// otherApp is the other partner's application, for account opening only.
func (d *reviewDesk) otherApp(t *testing.T) string {
	return queuedApplication(t, d.env, d.other, func(b map[string]any) { b["products"] = []string{"account-opening"} })
}

// evil is an application whose company name is a spreadsheet formula,
// with a second member, Oskar Berg, its CEO.
func (d *reviewDesk) evil(t *testing.T) string {
	return queuedApplication(t, d.env, d.p, func(b map[string]any) {
		b["company"].(map[string]any)["legal_name"] = `=HYPERLINK("http://evil.example","Click")`
		oskar := elinUBO()
		oskar["first_name"], oskar["last_name"], oskar["unique_identifier"], oskar["type"] = "Oskar", "Berg", "OB1", []string{"ceo"}
		delete(oskar, "ownership")
		delete(oskar, "ownership_percentage")
		b["members"] = append(b["members"].([]map[string]any), oskar)
	})
}

// fullQueue makes the five applications, oldest first.
func (d *reviewDesk) fullQueue(t *testing.T) (low, high, kim, otherApp, evil string) {
	t.Helper()
	return d.low(t), d.high(t), d.kim(t), d.otherApp(t), d.evil(t)
}

// claim has the staff member with email claim app, through the service.
func (d *reviewDesk) claim(t *testing.T, email, app string) {
	t.Helper()
	if err := d.env.App.Review.Claim(staffCtx(t, d.env, email), app); err != nil {
		t.Fatalf("%s claims %s: %v", email, app, err)
	}
}

// decide has the staff member with email claim app and record dec on its
// evidence as it is now, through the service: the state a test of a later
// step starts from, without the screens of the earlier ones.
func (d *reviewDesk) decide(t *testing.T, email, app string, dec emi.ReviewDecision) emi.Application {
	t.Helper()
	ctx := staffCtx(t, d.env, email)
	d.claim(t, email, app)
	_, stamp, _, _, err := d.env.App.Review.Evidence(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	dec.Stamp = stamp
	a, err := d.env.App.Review.Decide(ctx, app, dec)
	if err != nil {
		t.Fatalf("%s decides %s on %s: %v", email, dec.Action, app, err)
	}
	return a
}

// reject has the sandbox underwriter reject app.
func (d *reviewDesk) reject(t *testing.T, app string) {
	t.Helper()
	if a := d.decide(t, apptest.UnderwriterEmail, app, emi.ReviewDecision{Action: "reject", ReasonCode: "prohibited_activity",
		Text: "Sells replica weapons"}); a.Status != emi.AppRejected {
		t.Fatalf("rejected %s is %s", app, a.Status)
	}
}

// approveByTwo has the second underwriter give app the first approval
// and the sandbox underwriter the second.
func (d *reviewDesk) approveByTwo(t *testing.T, app string) {
	t.Helper()
	d.decide(t, secondUnderwriter, app, emi.ReviewDecision{Action: "approve", Text: "Licensed operator, Malta licence checked"})
	if a := d.decide(t, apptest.UnderwriterEmail, app, emi.ReviewDecision{Action: "approve"}); a.Status != emi.AppApproved {
		t.Fatalf("approved by two, %s is %s", app, a.Status)
	}
}

// requestInformation has the sandbox underwriter ask p, the partner of
// app, for information, and p answer with a change: app is back in the
// queue.
func (d *reviewDesk) requestInformation(t *testing.T, p *apptest.Partner, app string) {
	t.Helper()
	d.decide(t, apptest.UnderwriterEmail, app, emi.ReviewDecision{Action: "request_information", Text: "Please send a recent register extract"})
	if r := api(t, d.env, p, http.MethodPut, "/v3/applications/"+app+"/companies", "company_update",
		map[string]any{"city": "Leeds"}); r.Status != http.StatusOK {
		t.Fatalf("company_update: %s", r)
	}
	waitStatus(t, d.env, app, emi.AppInReview)
}

// TestReviewQueueAndDecisions: the underwriters' queue and decisions in
// the back office. Each behaviour is a subtest with its own emi, staff and
// applications (newReviewDesk), the earlier decisions it builds on made
// through the services rather than by the subtests before it, so one that
// fails does not fail the others, and any of them runs alone
// (-run 'TestReviewQueueAndDecisions/notes').
func TestReviewQueueAndDecisions(t *testing.T) {
	t.Parallel()
	t.Run("the queue has tabs with counts, filters kept in the URL and the navigation count", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		other := d.other
		low, high, kim, otherApp, evil := d.fullQueue(t)
		all := []string{low, high, kim, otherApp, evil}
		uw1 := d.as(t, apptest.UnderwriterEmail)
		link := func(app string) string { return `href="/backoffice/applications/` + app + `"` }

		q := uw1.Get(t, "/backoffice/review")
		contains(t, "the queue", q, "In review (5)", "Information requested (0)", "Checking (0)", "Review Partner", "Other Partner", ">on time<")
		hasTestIDs(t, "the queue", q, "next-application", "queue-csv")
		for _, app := range all {
			contains(t, "the queue", q, link(app))
		}
		if got := rowsOf(q); len(got) != 5 || got[0] != low {
			t.Errorf("rows %v, want the 5 applications oldest first", got)
		}
		if !regexp.MustCompile(`href="/backoffice/review"[^>]*>\s*Review queue\s*<span class="nav-count" data-testid="nav-count">5</span>`).MatchString(q.Body) {
			t.Error("the navigation does not show the review queue with its count")
		}
		lacksTestIDs(t, "the underwriter's queue", q, "bulk-form")
		for _, c := range []struct {
			query     string
			want, not []string
		}{
			{"partner=" + other.ID, []string{otherApp}, []string{low, high, kim, evil}},
			{"risk=High", []string{high}, []string{low}},
			{"product=card-issuing", []string{low, high, kim, evil}, []string{otherApp}},
			{"hit=1", []string{kim}, []string{low, high, otherApp, evil}},
			{"assignee=none", all, nil},
			{"assignee=me", nil, all},
			{"tab=checking", nil, all},
			{"tab=information_requested", nil, all},
			// Unknown values are dropped, not an error.
			{"risk=Extreme&partner=x&age=forever&assignee=%27or1&sort=sideways", all, nil},
		} {
			pg := uw1.Get(t, "/backoffice/review?"+c.query)
			if pg.Status != http.StatusOK {
				t.Fatalf("%s: HTTP %d", c.query, pg.Status)
			}
			got := strings.Join(rowsOf(pg), " ")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s: %s missing", c.query, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("%s: %s shown", c.query, n)
				}
			}
		}
		// Sorted by risk, the one with an undecided sanctions hit comes
		// first (the screening makes it High above any other factor), then
		// the High one.
		if got := rowsOf(uw1.Get(t, "/backoffice/review?sort=risk")); len(got) < 2 || got[0] != kim || got[1] != high {
			t.Errorf("by risk: %v, want %s (sanctioned) then %s first", got, kim, high)
		}
		if got := strings.Join(rowsOf(uw1.Get(t, "/backoffice/review?risk=High")), " "); !strings.Contains(got, kim) {
			t.Errorf("risk=High: %s lacks the sanctioned application", got)
		}
		// The tabs keep the filters.
		pg := uw1.Get(t, "/backoffice/review?risk=High&hit=1")
		contains(t, "filtered queue", pg, `href="/backoffice/review?hit=1&amp;risk=High&amp;tab=checking"`,
			`<option value="High" selected>`, `name="hit" value="1" checked`)
		// The filter travels with "next" and the CSV.
		contains(t, "filtered queue", pg, `<input type="hidden" name="risk" value="High">`, `href="/backoffice/review.csv?hit=1&amp;risk=High"`)
	})

	t.Run("the CSV export is the filtered queue with formulas defused", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		other := d.other
		_, _, _, otherApp, evil := d.fullQueue(t)
		uw1 := d.as(t, apptest.UnderwriterEmail)

		rows := readCSV(t, uw1.Get(t, "/backoffice/review.csv"))
		if len(rows) != 6 || rows[0][0] != "application" || rows[0][1] != "company" {
			t.Fatalf("CSV rows %d: %v", len(rows), rows)
		}
		found := false
		for _, row := range rows[1:] {
			for _, cell := range row {
				if cell != "" && strings.ContainsRune("=+-@", rune(cell[0])) {
					t.Errorf("cell %q would run as a formula", cell)
				}
			}
			if row[0] == evil {
				found = row[1] == `'=HYPERLINK("http://evil.example","Click")`
			}
		}
		if !found {
			t.Error("the formula in the company name is not escaped with an apostrophe")
		}
		if rows := readCSV(t, uw1.Get(t, "/backoffice/review.csv?partner="+other.ID)); len(rows) != 2 || rows[1][0] != otherApp {
			t.Errorf("filtered CSV: %v", rows)
		}
	})

	t.Run("saved views belong to their user", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env := d.env
		low, high, _, _, _ := d.fullQueue(t)
		uw1, uw2 := d.as(t, apptest.UnderwriterEmail), d.as(t, secondUnderwriter)

		pg := after(t, uw1, "/backoffice/review/views", url.Values{"name": {"High risk"}, "query": {"risk=High&after=x&bogus=1"}})
		contains(t, "after saving", pg, "View “High risk” saved", `data-testid="saved-view"`, `href="/backoffice/review?risk=High"`,
			`aria-current="true"`)
		if got := strings.Join(rowsOf(pg), " "); !strings.Contains(got, high) || strings.Contains(got, low) {
			t.Errorf("the saved view does not show its filter: %v", got)
		}
		lacks(t, "another underwriter's views", uw2.Get(t, "/backoffice/review"), "High risk")
		// Refused, the queue answers again (422) with the reason beside the
		// name.
		if r := uw1.Post(t, "/backoffice/review/views", url.Values{"name": {""}, "query": {"risk=High"}}); r.Status != http.StatusUnprocessableEntity ||
			!strings.Contains(dom(t, r).Find("#name-error").Text(), "name") {
			t.Errorf("a view without a name: HTTP %d", r.Status)
		}
		var id string
		_ = env.App.DB.Get(&id, `SELECT id FROM saved_views WHERE name = 'High risk'`)
		pg = after(t, uw1, "/backoffice/review/views/"+id+"/delete", url.Values{})
		contains(t, "after deleting", pg, "The saved view was deleted")
		lacksTestIDs(t, "after deleting", pg, "saved-view")
	})

	t.Run("next claims the oldest unclaimed application, with the queue's filters", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env, other, uw1ID, uw2ID := d.env, d.other, d.uw1ID, d.uw2ID
		low, high, _, _, _ := d.fullQueue(t)
		uw1, uw2 := d.as(t, apptest.UnderwriterEmail), d.as(t, secondUnderwriter)

		r := uw1.Post(t, "/backoffice/review/next", url.Values{})
		if r.Status != http.StatusSeeOther || r.Location != "/backoffice/applications/"+low {
			t.Fatalf("next: HTTP %d to %q, want %s", r.Status, r.Location, low)
		}
		pg := uw1.Get(t, r.Location)
		if f := flashes(pg); !strings.Contains(f, "This application is yours now") {
			t.Errorf("claim flash %q", f)
		}
		textHas(t, "the claimed application", pg, "review-holder", "Sandbox Underwriter (you)")
		hasTestIDs(t, "the claimed application", pg, "approve-form", "reject-form", "request-info-form", "release")
		r = uw2.Post(t, "/backoffice/review/next", url.Values{"risk": {"High"}})
		if r.Location != "/backoffice/applications/"+high {
			t.Fatalf("next with risk=High: %q, want %s", r.Location, high)
		}
		if assigneeOf(t, env, low) != uw1ID || assigneeOf(t, env, high) != uw2ID {
			t.Fatal("next did not claim")
		}
		mine := uw1.Get(t, "/backoffice/review?assignee=me")
		if got := rowsOf(mine); len(got) != 1 || got[0] != low {
			t.Errorf("assigned to me: %v", got)
		}
		contains(t, "assigned to me", mine, ">you<")
		contains(t, "the others' queue", uw2.Get(t, "/backoffice/review"), "Sandbox Underwriter")
		// Nothing matches: a message, no claim.
		r = uw2.Post(t, "/backoffice/review/next", url.Values{"risk": {"High"}, "partner": {other.ID}})
		if r.Location != "/backoffice/review?partner="+other.ID+"&risk=High" || !strings.Contains(flashes(uw2.Get(t, r.Location)), "No unclaimed application") {
			t.Errorf("next without a match: %q", r.Location)
		}
	})

	t.Run("a colleague's claim is refused with the holder's name", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env, uw1ID := d.env, d.uw1ID
		low := d.low(t)
		d.claim(t, apptest.UnderwriterEmail, low)
		uw2 := d.as(t, secondUnderwriter)

		pg := uw2.Get(t, "/backoffice/applications/"+low)
		textHas(t, "a colleague's application", pg, "review-holder", "Sandbox Underwriter")
		textHas(t, "a colleague's application", pg, "decide-hint", "Claim this application to decide it")
		lacksTestIDs(t, "a colleague's application", pg, "claim", "approve-form", "release")
		pg = after(t, uw2, "/backoffice/review/"+low+"/claim", url.Values{})
		if f := flashes(pg); !strings.Contains(f, "Sandbox Underwriter holds this application, so it was not claimed") {
			t.Errorf("claim conflict flash %q", f)
		}
		if assigneeOf(t, env, low) != uw1ID {
			t.Fatal("the claim moved")
		}
		// Deciding without the claim is refused too.
		pg = after(t, uw2, "/backoffice/review/"+low+"/decide", url.Values{"action": {"approve"}, "stamp": {"x"}})
		if f := flashes(pg); !strings.Contains(f, "Only the underwriter who holds this application can decide it") {
			t.Errorf("decision without the claim: %q", f)
		}
	})

	t.Run("a decision on stale evidence is refused with a reload message", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env, p := d.env, d.p
		low := d.low(t)
		d.claim(t, apptest.UnderwriterEmail, low)
		uw1 := d.as(t, apptest.UnderwriterEmail)

		pg := uw1.Get(t, "/backoffice/applications/"+low)
		old := stampIn(t, pg.Body)
		if n := strings.Count(pg.Body, `name="stamp" value="`+old+`"`); n != 3 {
			t.Errorf("%d decision forms carry the stamp, want 3", n)
		}
		if r := api(t, env, p, http.MethodPost, "/v3/applications/"+low+"/companies/documents", "company_add_document",
			map[string]any{"file": pdfB64(), "file_type": "pdf", "document_type": "bill"}); r.Status != http.StatusCreated {
			t.Fatalf("company_add_document: %s", r)
		}
		waitStamp(t, env, low, old)
		r := uw1.Post(t, "/backoffice/review/"+low+"/decide", url.Values{"action": {"approve"}, "stamp": {old}, "text": {"looks fine"}})
		if r.Status != http.StatusConflict {
			t.Fatalf("stale decision: HTTP %d, want 409", r.Status)
		}
		contains(t, "the refused decision", apptest.Page{Status: 200, Body: r.Body}, "Reload the page and decide on what is there now",
			">looks fine</textarea>")
		if stampIn(t, r.Body) == old {
			t.Error("the page shown after the refusal carries the old stamp")
		}
		if statusOf(t, env, low) != emi.AppInReview {
			t.Fatal("the stale decision was recorded")
		}
	})

	t.Run("reject needs a reason code and text, then the page is read-only", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env := d.env
		low := d.low(t)
		d.claim(t, apptest.UnderwriterEmail, low)
		uw1 := d.as(t, apptest.UnderwriterEmail)

		stamp := stampIn(t, uw1.Get(t, "/backoffice/applications/"+low).Body)
		r := uw1.Post(t, "/backoffice/review/"+low+"/decide", url.Values{"action": {"reject"}, "stamp": {stamp}, "reason_code": {""}, "text": {""}})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("reject without reason: HTTP %d", r.Status)
		}
		contains(t, "the refused rejection", apptest.Page{Status: 200, Body: r.Body}, `id="reason_code-error"`, `id="text-error"`,
			"choose a reason from the list", "explain the rejection")
		pg := after(t, uw1, "/backoffice/review/"+low+"/decide", url.Values{"action": {"reject"}, "stamp": {stamp},
			"reason_code": {"prohibited_activity"}, "text": {"Sells replica weapons"}})
		contains(t, "the rejected application", pg, "Rejected: the partner is told")
		hasTestIDs(t, "the rejected application", pg, "read-only", "snapshot")
		textHas(t, "the rejected application", pg, "decisions-history", "rejected", "prohibited activity", "Sells replica weapons")
		textHas(t, "the rejected application", pg, "snapshot", `"risk_score"`)
		lacksTestIDs(t, "the rejected application", pg, "approve-form", "reject-form", "claim", "note-form", "hit-form", "release")
		if evs := eventsOf(t, env, emi.EventApplicationRejected, low); len(evs) != 1 || evs[0]["reason"] != "prohibited_activity: Sells replica weapons" {
			t.Fatalf("application.rejected: %v", evs)
		}
	})

	t.Run("four-eyes: the first approval waits for a second underwriter, who sees why", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env := d.env
		high := d.high(t)
		d.claim(t, secondUnderwriter, high)
		uw1, uw2 := d.as(t, apptest.UnderwriterEmail), d.as(t, secondUnderwriter)

		pg := uw2.Get(t, "/backoffice/applications/"+high)
		hasTestIDs(t, "the High-risk application", pg, "four-eyes")
		textIs(t, "the High-risk application", pg, "approve", "Approve (first of two)")
		textHas(t, "the High-risk application", pg, "approve-form", "the second approver reads it")
		pg = after(t, uw2, "/backoffice/review/"+high+"/decide", url.Values{"action": {"approve"}, "stamp": {stampIn(t, pg.Body)},
			"text": {"Licensed operator, Malta licence checked"}})
		contains(t, "after the first approval", pg, "First approval recorded", `data-testid="awaiting-second"`,
			"Second Underwriter (you)", "Licensed operator, Malta licence checked", ">first approval<")
		if statusOf(t, env, high) != emi.AppInReview || assigneeOf(t, env, high) != "" {
			t.Fatal("the first approval decided the application or kept the claim")
		}
		contains(t, "the queue", uw1.Get(t, "/backoffice/review?risk=High"), "awaiting second approval")
		// The first approver may not approve again, even holding it.
		pg = after(t, uw2, "/backoffice/review/"+high+"/claim", url.Values{})
		textHas(t, "the first approver's page", pg, "first-approval-mine", "You gave the first approval")
		lacksTestIDs(t, "the first approver's page", pg, "approve-form")
		pg = after(t, uw2, "/backoffice/review/"+high+"/decide", url.Values{"action": {"approve"}, "stamp": {stampIn(t, pg.Body)}})
		if f := flashes(pg); !strings.Contains(f, "You already took part in this decision") {
			t.Errorf("second approval by the same underwriter: %q", f)
		}
		after(t, uw2, "/backoffice/review/"+high+"/release", url.Values{})
		pg = after(t, uw1, "/backoffice/review/"+high+"/claim", url.Values{})
		contains(t, "the second reviewer's page", pg, "Licensed operator, Malta licence checked")
		hasTestIDs(t, "the second reviewer's page", pg, "awaiting-second", "approve-form")
		if got := textOf(t, "the second reviewer's page", pg, "first-approver"); got != "Second Underwriter" {
			t.Errorf("first approver %q", got)
		}
		pg = after(t, uw1, "/backoffice/review/"+high+"/decide", url.Values{"action": {"approve"}, "stamp": {stampIn(t, pg.Body)}})
		contains(t, "the approved application", pg, "Approved: the merchant is onboarded")
		hasTestIDs(t, "the approved application", pg, "read-only")
		if statusOf(t, env, high) != emi.AppApproved || len(eventsOf(t, env, emi.EventApplicationApproved, high)) != 1 {
			t.Fatal("the second approval did not approve or send application.approved")
		}
	})

	t.Run("request information, the partner's change brings it back", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env, other := d.env, d.other
		otherApp := d.otherApp(t)
		uw1 := d.as(t, apptest.UnderwriterEmail)

		pg := after(t, uw1, "/backoffice/review/"+otherApp+"/claim", url.Values{})
		stamp := stampIn(t, pg.Body)
		r := uw1.Post(t, "/backoffice/review/"+otherApp+"/decide", url.Values{"action": {"request_information"}, "stamp": {stamp}, "text": {" "}})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "write the message to the partner") {
			t.Fatalf("request without a message: HTTP %d", r.Status)
		}
		pg = after(t, uw1, "/backoffice/review/"+otherApp+"/decide", url.Values{"action": {"request_information"}, "stamp": {stamp},
			"text": {"Please send a recent register extract"}})
		contains(t, "after the request", pg, "Information requested: the partner has the message", ">paused<")
		if evs := eventsOf(t, env, emi.EventApplicationInfoRequested, otherApp); len(evs) != 1 || evs[0]["message"] != "Please send a recent register extract" {
			t.Fatalf("application.information_requested: %v", evs)
		}
		tab := uw1.Get(t, "/backoffice/review?tab=information_requested")
		if got := rowsOf(tab); len(got) != 1 || got[0] != otherApp {
			t.Fatalf("information requested tab: %v", got)
		}
		contains(t, "information requested tab", tab, "Information requested (1)", ">paused<")
		// Deciding while the partner is asked is refused with the reason
		// the review service wrote (emi.Error's public detail; the page
		// used to ask the onboarding service for the status itself).
		pg = after(t, uw1, "/backoffice/review/"+otherApp+"/decide", url.Values{"action": {"approve"}, "stamp": {stamp}})
		if f := flashes(pg); !strings.Contains(f, "The application is information requested, not waiting for a decision: nothing was recorded.") {
			t.Errorf("decision on an application not in review: %q", f)
		}
		if evs := eventsOf(t, env, emi.EventApplicationApproved, otherApp); len(evs) != 0 {
			t.Fatalf("approved while information was requested: %v", evs)
		}
		if r := api(t, env, other, http.MethodPut, "/v3/applications/"+otherApp+"/companies", "company_update",
			map[string]any{"city": "Leeds"}); r.Status != http.StatusOK {
			t.Fatalf("company_update: %s", r)
		}
		waitStatus(t, env, otherApp, emi.AppInReview)
		if got := rowsOf(uw1.Get(t, "/backoffice/review?partner="+other.ID)); len(got) != 1 || got[0] != otherApp {
			t.Fatalf("not back in the queue: %v", got)
		}
	})

	t.Run("notes are threaded and mentions highlighted", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env := d.env
		evil := d.evil(t)
		uw1, uw2, cs, auditor := d.as(t, apptest.UnderwriterEmail), d.as(t, secondUnderwriter), d.as(t, apptest.CSEmail), d.as(t, apptest.AuditorEmail)

		pg := after(t, uw1, "/backoffice/review/"+evil+"/notes", url.Values{"body": {"@second.underwriter@review.test please look at the name"}})
		contains(t, "after the note", pg, "Note added; 1 colleague(s) mentioned.")
		var id int64
		if err := env.App.DB.Get(&id, `SELECT id FROM application_notes WHERE application = $1`, evil); err != nil {
			t.Fatal(err)
		}
		pg = uw2.Get(t, "/backoffice/applications/"+evil)
		contains(t, "the mentioned colleague's page", pg, "mentions you", `id="note-`+strconv.FormatInt(id, 10)+`"`, "please look at the name")
		if got := textsOf(t, pg, "mention"); !slices.Contains(got, "@second.underwriter@review.test") {
			t.Errorf("the page's mentions %q lack the note's", got)
		}
		after(t, uw2, "/backoffice/review/"+evil+"/notes", url.Values{"parent": {strconv.FormatInt(id, 10)},
			"body": {"@underwriter@sandbox.emi it is a formula: reject?"}})
		// The reply sits in the thread under its note, and mentions the first
		// underwriter.
		pg = uw1.Get(t, "/backoffice/applications/"+evil)
		i, j := strings.Index(pg.Body, `id="note-`+strconv.FormatInt(id, 10)+`"`), strings.Index(pg.Body, "it is a formula: reject?")
		if i < 0 || j < i || !strings.Contains(pg.Body[i:j], `<ul class="thread">`) {
			t.Error("the reply is not threaded under its note")
		}
		contains(t, "the first underwriter's page", pg, "mentions you")
		if got := textsOf(t, pg, "mention"); !slices.Contains(got, "@underwriter@sandbox.emi") {
			t.Errorf("the page's mentions %q lack the reply's", got)
		}
		// A note without a mention.
		r := uw1.Post(t, "/backoffice/review/"+evil+"/notes", url.Values{"body": {"Plain note without a mention"}})
		if r.Status != http.StatusSeeOther {
			t.Errorf("a note without a mention: HTTP %d", r.Status)
		}
		r = uw1.Post(t, "/backoffice/review/"+evil+"/notes", url.Values{"body": {"  "}})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="body-error"`) {
			t.Errorf("an empty note: HTTP %d", r.Status)
		}
		if r := uw1.Post(t, "/backoffice/review/"+evil+"/notes", url.Values{"parent": {"999999"}, "body": {"orphan"}}); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("a reply to another application's note: HTTP %d", r.Status)
		}
		au := auditor.Get(t, "/backoffice/applications/"+evil)
		contains(t, "the auditor's page", au, "please look at the name", "application.note")
		hasTestIDs(t, "the auditor's page", au, "application-audit")
		lacksTestIDs(t, "the auditor's page", au, "note-form", "reply-form", "claim")
		if r := cs.Post(t, "/backoffice/review/"+evil+"/notes", url.Values{"body": {"hello"}}); r.Status != http.StatusForbidden {
			t.Errorf("customer service's note: HTTP %d", r.Status)
		}
	})

	t.Run("each sanctions hit gets a decision with a reason", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env := d.env
		kim := d.kim(t)
		uw1, compliance := d.as(t, apptest.UnderwriterEmail), d.as(t, apptest.ComplianceEmail)

		pg := uw1.Get(t, "/backoffice/applications/"+kim)
		hasTestIDs(t, "the sanctioned application", pg, "sanction-hits", "hit-form")
		n := testID(dom(t, pg), "hit-form").Length()
		key := formValues(t, pg.Body, `data-testid="hit-form"`).Get("key")
		if key == "" || !strings.Contains(key, "|") {
			t.Fatalf("hit key %q", key)
		}
		r := uw1.Post(t, "/backoffice/review/"+kim+"/hits", url.Values{"key": {key}, "decision": {"false_positive"}, "reason": {""}})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="reason-error"`) {
			t.Fatalf("a hit decision without reason: HTTP %d", r.Status)
		}
		pg = after(t, uw1, "/backoffice/review/"+kim+"/hits", url.Values{"key": {key}, "decision": {"false_positive"},
			"reason": {"Different person: born 1990, passport seen"}})
		// A false positive inside an application is proposed by one person
		// and confirmed by a second from compliance.
		contains(t, "after the hit decision", pg, "False positive recorded. It takes two people", `data-testid="hit-decision"`,
			">false positive proposed: needs a second person (compliance)<", "Different person: born 1990, passport seen", "Sandbox Underwriter (you)")
		// The proposer may still record a true match on it (the stricter
		// outcome takes one person), never confirm their own false
		// positive: the form offers no false positive and says why, in the
		// decision engine's words.
		if got := testID(dom(t, pg), "hit-form").Length(); got != n {
			t.Errorf("%d hit forms for the proposer, want %d", got, n)
		}
		contains(t, "the proposer's form", pg, `data-testid="hit-no-false-positive"`, "You already took part in this decision")
		if f := formValues(t, pg.Body, `data-testid="hit-form"`); f.Get("key") == key && strings.Contains(pg.Body, `value="false_positive"`) &&
			testID(dom(t, pg), "hit-form").Length() == 1 {
			t.Error("the proposer is offered to confirm their own false positive")
		}
		pg = compliance.Get(t, "/backoffice/applications/"+kim)
		contains(t, "compliance's page", pg, "Second person: confirm the false positive")
		pg = after(t, compliance, "/backoffice/review/"+kim+"/hits", url.Values{"key": {key}, "decision": {"false_positive"}, "reason": {"agree: born 1990"}})
		contains(t, "after the confirmation", pg, ">false positive<", "confirmed by Sandbox Compliance Officer (you)")
		pg = after(t, compliance, "/backoffice/review/"+kim+"/hits", url.Values{"key": {key}, "decision": {"true_match"}, "reason": {"second thoughts"}})
		if f := flashes(pg); !strings.Contains(f, "already has a decision") {
			t.Errorf("a second decision on a hit: %q", f)
		}
		var ds []string
		_ = env.App.DB.Select(&ds, `SELECT decision FROM application_hit_decisions WHERE application = $1`, kim)
		if len(ds) != 1 || ds[0] != "false_positive" {
			t.Errorf("hit decisions %v", ds)
		}
		if r := uw1.Post(t, "/backoffice/review/"+kim+"/hits", url.Values{"key": {"no|such|hit|x"}, "decision": {"true_match"}, "reason": {"xyz"}}); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("an unknown hit: HTTP %d", r.Status)
		}
	})

	t.Run("compliance corrects the company and suspends a member, audited", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env := d.env
		low, evil := d.low(t), d.evil(t)
		d.reject(t, low) // a decided application, which takes no correction
		uw1, compliance := d.as(t, apptest.UnderwriterEmail), d.as(t, apptest.ComplianceEmail)

		lacksTestIDs(t, "the underwriter's page", uw1.Get(t, "/backoffice/applications/"+evil), "company-edit-form")
		pg := compliance.Get(t, "/backoffice/applications/"+evil)
		hasTestIDs(t, "compliance's page", pg, "company-edit-form", "member-edit-form")
		form := formValues(t, pg.Body, `data-testid="company-edit-form"`)
		if form.Get("city") != "London" || form.Get("legal_name") != `=HYPERLINK("http://evil.example","Click")` || form.Get("is_sie") != "no" {
			t.Fatalf("the form does not hold the current values: %v", form)
		}
		bad := cloneValues(form)
		bad.Set("country", "XX")
		r := compliance.Post(t, "/backoffice/review/"+evil+"/company", bad)
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="country-error"`) || !strings.Contains(r.Body, `value="XX"`) {
			t.Fatalf("an invalid correction: HTTP %d", r.Status)
		}
		form.Set("city", "York")
		form.Set("legal_name", "Evil Formulas Ltd")
		pg = after(t, compliance, "/backoffice/review/"+evil+"/company", form)
		contains(t, "after the correction", pg, "Company corrected (city, legal_name)")
		var changes string
		if err := env.App.DB.Get(&changes, `SELECT changes::text FROM audit_log WHERE action = 'company.staff_edit' AND resource_token = $1`, evil); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{`"city": "London"`, `"city": "York"`, `"legal_name": "Evil Formulas Ltd"`} {
			if !strings.Contains(changes, w) {
				t.Errorf("audit %s lacks %s", changes, w)
			}
		}
		if strings.Contains(changes, "uic") {
			t.Errorf("unchanged fields were sent: %s", changes)
		}
		waitStatus(t, env, evil, emi.AppInReview) // the checks ran again
		pg = compliance.Get(t, "/backoffice/applications/"+evil)
		ceo := memberNamed(t, env, evil, "Oskar")
		m := formValues(t, pg.Body, `action="/backoffice/review/`+evil+`/members/`+ceo+`"`)
		if m.Get("first_name") != "Oskar" || m.Get("status") != "active" {
			t.Fatalf("the member's form: %v", m)
		}
		// The member rule is the partner API's (company_member_update),
		// answered with the back office's validation error: a status
		// other than active or inactive is refused and nothing changes.
		wrong := cloneValues(m)
		wrong.Set("status", "deleted")
		if r := compliance.Post(t, "/backoffice/review/"+evil+"/members/"+ceo, wrong); r.Status != http.StatusUnprocessableEntity ||
			!strings.Contains(r.Body, "must be one of: active, inactive") {
			t.Fatalf("a member with status deleted: HTTP %d", r.Status)
		}
		if n := auditCount(t, env, "member.staff_edit", evil); n != 0 {
			t.Fatalf("a refused member edit was audited (%d rows)", n)
		}
		// A person's names cannot be blanked from the back office either: a
		// person without a name is never screened (the partner API's rule).
		// The back office skipped it: this step failed.
		blank := cloneValues(m)
		blank.Set("first_name", "")
		if r := compliance.Post(t, "/backoffice/review/"+evil+"/members/"+ceo, blank); r.Status != http.StatusUnprocessableEntity ||
			!strings.Contains(r.Body, "a person is screened by name") {
			t.Fatalf("a member's first name blanked: HTTP %d", r.Status)
		}
		if n := auditCount(t, env, "member.staff_edit", evil); n != 0 {
			t.Fatalf("a refused member edit was audited (%d rows)", n)
		}
		m.Set("status", "inactive")
		pg = after(t, compliance, "/backoffice/review/"+evil+"/members/"+ceo, m)
		contains(t, "after the suspension", pg, "Member suspended (status)")
		waitStatus(t, env, evil, emi.AppInReview)
		_ = env.App.DB.Get(&changes, `SELECT changes::text FROM audit_log WHERE action = 'member.staff_edit' AND resource_token = $1`, evil)
		if !strings.Contains(changes, `"inactive"`) || !strings.Contains(changes, `"active"`) {
			t.Errorf("member audit %s", changes)
		}
		if r := uw1.Post(t, "/backoffice/review/"+evil+"/company", form); r.Status != http.StatusForbidden {
			t.Errorf("an underwriter's correction: HTTP %d", r.Status)
		}
		if r := compliance.Post(t, "/backoffice/review/"+evil+"/members/00000000-0000-4000-8000-000000000000", m); r.Status != http.StatusNotFound {
			t.Errorf("an unknown member: HTTP %d", r.Status)
		}
		// A decided application takes no correction.
		if r := compliance.Post(t, "/backoffice/review/"+low+"/company", url.Values{"city": {"Bath"}}); r.Status != http.StatusSeeOther ||
			!strings.Contains(flashes(compliance.Get(t, r.Location)), "decided") {
			t.Errorf("a correction of a decided application: HTTP %d", r.Status)
		}
		lacksTestIDs(t, "a decided application", compliance.Get(t, "/backoffice/applications/"+low), "company-edit-form")
	})

	t.Run("admins and underwriters assign with a reason", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env, uw2ID := d.env, d.uw2ID
		evil := d.evil(t)
		uw1, uw2, admin := d.as(t, apptest.UnderwriterEmail), d.as(t, secondUnderwriter), d.as(t, apptest.AdminEmail)

		hasTestIDs(t, "the underwriter's page", uw1.Get(t, "/backoffice/applications/"+evil), "assign-form")
		pg := admin.Get(t, "/backoffice/applications/"+evil)
		contains(t, "the admin's page", pg, "Second Underwriter &lt;second.underwriter@review.test&gt;")
		hasTestIDs(t, "the admin's page", pg, "assign-form")
		lacksTestIDs(t, "the admin's page", pg, "claim", "approve-form")
		r := admin.Post(t, "/backoffice/review/"+evil+"/assign", url.Values{"to": {uw2ID}, "reason": {""}})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="reason-error"`) {
			t.Fatalf("assign without reason: HTTP %d", r.Status)
		}
		pg = after(t, admin, "/backoffice/review/"+evil+"/assign", url.Values{"to": {uw2ID}, "reason": {"knows this partner"}})
		contains(t, "after assigning", pg, "Assigned", "Second Underwriter")
		if assigneeOf(t, env, evil) != uw2ID {
			t.Fatal("not assigned")
		}
		hasTestIDs(t, "the assignee's page", uw2.Get(t, "/backoffice/applications/"+evil), "approve-form")
		after(t, admin, "/backoffice/review/"+evil+"/release", url.Values{})
		if assigneeOf(t, env, evil) != "" {
			t.Fatal("the admin's release did not release")
		}
	})

	t.Run("admins reassign and release in bulk", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env, uw1ID := d.env, d.uw1ID
		kim, evil := d.kim(t), d.evil(t)
		uw1, admin := d.as(t, apptest.UnderwriterEmail), d.as(t, apptest.AdminEmail)

		q := admin.Get(t, "/backoffice/review")
		contains(t, "the admin's queue", q, `name="application" value="`+kim+`" form="bulk"`)
		hasTestIDs(t, "the admin's queue", q, "bulk-form")
		pg := after(t, admin, "/backoffice/review/bulk", url.Values{"application": {kim, evil}, "to": {uw1ID}, "reason": {"holiday cover"},
			"op": {"reassign"}, "back": {"hit=1"}})
		contains(t, "after reassigning", pg, "2 application(s) reassigned")
		if assigneeOf(t, env, kim) != uw1ID || assigneeOf(t, env, evil) != uw1ID {
			t.Fatal("not reassigned")
		}
		// Refused: the queue again (422) with the applications still ticked
		// and the reason beside its field.
		pg = admin.Post(t, "/backoffice/review/bulk", url.Values{"application": {kim, evil}, "op": {"release"}, "reason": {""}})
		if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(flashes(pg), "Nothing was reassigned") || assigneeOf(t, env, kim) != uw1ID {
			t.Errorf("release without reason: HTTP %d, %q", pg.Status, flashes(pg))
		}
		if why := dom(t, pg).Find("#reason-error").Text(); !strings.Contains(why, "say why") {
			t.Errorf("beside the reason: %q", why)
		}
		if bulk := dom(t, pg).Find(`form[data-testid="bulk-form"] [name="reason"]`); bulk.AttrOr("aria-invalid", "") != "true" {
			t.Error("the reason is not marked refused")
		}
		if n := dom(t, pg).Find(`input[name="application"][checked]`).Length(); n != 2 {
			t.Errorf("%d applications still ticked, want 2", n)
		}
		after(t, admin, "/backoffice/review/bulk", url.Values{"application": {kim, evil}, "op": {"release"}, "reason": {"back to the pool"}})
		if assigneeOf(t, env, kim) != "" || assigneeOf(t, env, evil) != "" {
			t.Fatal("not released")
		}
		if r := uw1.Post(t, "/backoffice/review/bulk", url.Values{"application": {kim}, "op": {"release"}, "reason": {"mine"}}); r.Status != http.StatusForbidden {
			t.Errorf("an underwriter's bulk action: HTTP %d", r.Status)
		}
	})

	t.Run("customer service neither sees nor decides", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		env, uw1ID := d.env, d.uw1ID
		kim := d.kim(t)
		cs := d.as(t, apptest.CSEmail)

		for _, path := range []string{"/backoffice/review", "/backoffice/applications/" + kim, "/backoffice/review/metrics", "/backoffice/review.csv"} {
			if pg := cs.Get(t, path); pg.Status != http.StatusForbidden {
				t.Errorf("%s: HTTP %d", path, pg.Status)
			}
		}
		for _, action := range []string{"claim", "decide", "release", "assign", "hits", "company"} {
			r := cs.Post(t, "/backoffice/review/"+kim+"/"+action, url.Values{"action": {"approve"}, "stamp": {"x"}, "to": {uw1ID}, "reason": {"x y z"}})
			if r.Status != http.StatusForbidden || testID(dom(t, apptest.Page{Body: r.Body}), "error-403").Length() == 0 {
				t.Errorf("customer service %s: HTTP %d", action, r.Status)
			}
		}
		if r := cs.Post(t, "/backoffice/review/next", url.Values{}); r.Status != http.StatusForbidden {
			t.Errorf("customer service next: HTTP %d", r.Status)
		}
		lacks(t, "customer service's navigation", cs.Get(t, "/backoffice/"), `href="/backoffice/review"`)
		if statusOf(t, env, kim) != emi.AppInReview || assigneeOf(t, env, kim) != "" {
			t.Fatal("customer service changed the application")
		}
	})

	t.Run("the metrics page draws SVG charts with tables, and decisions export as CSV", func(t *testing.T) {
		t.Parallel()
		desk := newReviewDesk(t)
		// The queue after a day's work: one rejection, one approval by
		// two underwriters, one information request the partner answered;
		// three applications in review.
		low, high, _, otherApp, _ := desk.fullQueue(t)
		desk.reject(t, low)
		desk.approveByTwo(t, high)
		desk.requestInformation(t, desk.other, otherApp)
		uw1 := desk.as(t, apptest.UnderwriterEmail)

		pg := uw1.Get(t, "/backoffice/review/metrics")
		contains(t, "metrics", pg, `data-testid="tile-In review"`, `data-testid="tile-SLA breaches"`,
			`data-testid="tile-Median time to decision (30 days)"`, `data-testid="chart-ageing"`, `data-testid="chart-decisions"`,
			`data-testid="chart-underwriters"`, `<svg viewBox=`, `role="img"`, `<title id="chart-ageing-title">`, `<desc id="chart-decisions-desc">`,
			`class="bar-approved"`, `class="bar-rejected"`, `class="bar-info"`, `class="bar-age"`, `class="bar-staff"`,
			`data-testid="chart-ageing-table"`, "Sandbox Underwriter", "Second Underwriter")
		if n := strings.Count(pg.Body, "<rect "); n < 5+3+2 {
			t.Errorf("%d bars", n)
		}
		if got := squash(testID(dom(t, pg), "tile-In review").Find(".n").Text()); got != "3" {
			t.Error("the in-review tile is not 3")
		}
		rows := readCSV(t, uw1.Get(t, "/backoffice/review/decisions.csv"))
		got := map[string]int{}
		for _, row := range rows[1:] {
			got[row[2]]++
		}
		if rows[0][0] != "decided_at_utc" || got["rejected"] != 1 || got["first_approval"] != 1 || got["approved"] != 1 || got["information_requested"] != 1 {
			t.Errorf("decisions CSV %v", got)
		}
		d := uw1.Get(t, "/backoffice/")
		hasTestIDs(t, "the dashboard", d, "tile-Review SLA breaches")
	})

	t.Run("the review pages have no inline script or style (CSP)", func(t *testing.T) {
		t.Parallel()
		d := newReviewDesk(t)
		high, kim, evil := d.high(t), d.kim(t), d.evil(t)
		d.approveByTwo(t, high) // a decided application's page too
		uw1, admin, compliance := d.as(t, apptest.UnderwriterEmail), d.as(t, apptest.AdminEmail), d.as(t, apptest.ComplianceEmail)

		after(t, uw1, "/backoffice/review/"+kim+"/claim", url.Values{})
		for what, pg := range map[string]apptest.Page{
			"queue (admin)":               admin.Get(t, "/backoffice/review"),
			"application (underwriter)":   uw1.Get(t, "/backoffice/applications/"+kim),
			"application (compliance)":    compliance.Get(t, "/backoffice/applications/"+evil),
			"application (admin)":         admin.Get(t, "/backoffice/applications/"+evil),
			"metrics":                     uw1.Get(t, "/backoffice/review/metrics"),
			"decided application (admin)": admin.Get(t, "/backoffice/applications/"+high),
		} {
			if pg.Status != http.StatusOK {
				t.Errorf("%s: HTTP %d", what, pg.Status)
			}
			if inlineScript.MatchString(pg.Body) {
				t.Errorf("%s: inline script or style %q", what, inlineScript.FindString(pg.Body))
			}
		}
	})
}

func memberNamed(t *testing.T, env *apptest.Env, app, first string) string {
	t.Helper()
	var m string
	if err := env.App.DB.Get(&m, `SELECT token FROM company_members WHERE application = $1 AND first_name = $2`, app, first); err != nil {
		t.Fatal(err)
	}
	return m
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

func pdfB64() string {
	return "JVBERi0xLjQKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZy9QYWdlcyAyIDAgUj4+ZW5kb2JqCjIgMCBvYmo8PC9UeXBlL1BhZ2VzL0NvdW50IDAvS2lkc1tdPj5lbmRvYmoKdHJhaWxlcjw8L1Jvb3QgMSAwIFI+PgolJUVPRgo="
}

// TestReviewQueuePagingSLAAndAge runs the queue on generated
// applications: keyset pages, the SLA badges and filter, the age filter,
// and a CSV export of every page.
func TestReviewQueuePagingSLAAndAge(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Generated Partner", Processing: emi.ProcessingSemiAutomatic})
	if err := env.App.OnboardingStore.GenerateApplications(context.Background(), p.ID, p.Merchant, 700); err != nil {
		t.Fatal(err)
	}
	count := func(where string, args ...any) int {
		t.Helper()
		var n int
		if err := env.App.DB.Get(&n, `SELECT count(*) FROM applications WHERE status = 'in_review' AND `+where, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	now := env.Clock.Now()
	total := count("true")
	if total <= 50 || total > 100 {
		t.Fatalf("%d generated applications in review, want 51 to 100", total)
	}
	uw := env.NewBrowser()
	uw.SignIn(t, apptest.UnderwriterEmail)

	first := uw.Get(t, "/backoffice/review")
	contains(t, "the first page", first, "In review ("+strconv.Itoa(total)+")", ">breached<")
	hasTestIDs(t, "the first page", first, "queue-next-page")
	one := rowsOf(first)
	if len(one) != 50 {
		t.Fatalf("first page: %d rows", len(one))
	}
	next := attrsOf(t, first, "queue-next-page", "href")
	if len(next) != 1 {
		t.Fatalf("%d next-page links", len(next))
	}
	second := uw.Get(t, next[0])
	two := rowsOf(second)
	contains(t, "the second page", second, "← First page")
	lacksTestIDs(t, "the second page", second, "queue-next-page")
	if len(one)+len(two) != total {
		t.Fatalf("%d + %d rows, want %d", len(one), len(two), total)
	}
	seen := map[string]bool{}
	for _, tok := range append(one, two...) {
		if seen[tok] {
			t.Fatalf("%s on both pages", tok)
		}
		seen[tok] = true
	}
	// Near or past the SLA: every row is breached or near breach.
	near := uw.Get(t, "/backoffice/review.csv?near_sla=1")
	rows := readCSV(t, near)
	if want := count("sla_due_at < $1", now.Add(4*time.Hour)); len(rows)-1 != want {
		t.Errorf("near SLA: %d rows, want %d", len(rows)-1, want)
	}
	for _, row := range rows[1:] {
		if row[9] != "breached" && row[9] != "near breach" {
			t.Errorf("near SLA row with SLA %q", row[9])
		}
	}
	if rows := readCSV(t, uw.Get(t, "/backoffice/review.csv?age=168h")); len(rows)-1 != count("coalesce(queued_at, created_at) < $1", now.Add(-168*time.Hour)) {
		t.Errorf("older than 7 days: %d rows", len(rows)-1)
	}
	if rows := readCSV(t, uw.Get(t, "/backoffice/review.csv?hit=1")); len(rows)-1 != count("has_sanctions_hit") {
		t.Errorf("with a sanctions hit: %d rows", len(rows)-1)
	}
	if rows := readCSV(t, uw.Get(t, "/backoffice/review.csv")); len(rows)-1 != total {
		t.Errorf("the export has %d rows, want every page (%d)", len(rows)-1, total)
	}
	byRisk := rowsOf(uw.Get(t, "/backoffice/review?sort=risk"))
	var top int
	_ = env.App.DB.Get(&top, `SELECT max(risk_points) FROM applications WHERE status = 'in_review'`)
	var firstPts int
	_ = env.App.DB.Get(&firstPts, `SELECT risk_points FROM applications WHERE token = $1`, byRisk[0])
	if firstPts != top {
		t.Errorf("sorted by risk, the first has %d points, want %d", firstPts, top)
	}
	breaches := count("sla_due_at < $1", now)
	d := uw.Get(t, "/backoffice/")
	if got := squash(testID(dom(t, d), "tile-Review SLA breaches").Find(".n").Text()); got != strconv.Itoa(breaches) {
		t.Errorf("the dashboard does not show %d SLA breaches", breaches)
	}
	if got := textOf(t, "the dashboard", d, "nav-count"); got != strconv.Itoa(total) {
		t.Errorf("the navigation does not count %d in review", total)
	}
}

// auditCount counts the audit rows of action on resource.
func auditCount(t *testing.T, env *apptest.Env, action, resource string) int {
	t.Helper()
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action = $1 AND resource_token = $2`, action, resource); err != nil {
		t.Fatal(err)
	}
	return n
}
