package portal_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// queueEnv is a partner with n checks waiting for review and n submitted
// identifications (each of its own person), named "Queue NNN" and created
// (submitted) a minute apart in that order, straight in the tables (the
// API is not what is tested here). checks and sessions are their tokens,
// oldest first.
type queueEnv struct {
	env              *apptest.Env
	cs               *apptest.Browser
	checks, sessions []string
}

func newQueueEnv(t *testing.T, n int) *queueEnv {
	t.Helper()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Queue Partner"})
	q := &queueEnv{env: env}
	var master string
	if err := env.App.DB.Get(&master, `SELECT master_merchant FROM partners WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Duration(n+10) * time.Minute)
	for i := range n {
		at := base.Add(time.Duration(i) * time.Minute)
		check, user, session := uuid.NewString(), uuid.NewString(), uuid.NewString()
		name := fmt.Sprintf("%03d", i)
		for _, stmt := range []struct {
			q    string
			args []any
		}{
			{`INSERT INTO aml_checks (token, partner_id, first_name, last_name, person_key, status, list_version, created_at)
				VALUES ($1, $2, 'Queue', $3, '\x00', 'match', 'v1', $4)`, []any{check, p.ID, name, at}},
			{`INSERT INTO users (token, partner_id, master_merchant, merchant, email, first_name, last_name)
				VALUES ($1, $2, $3, $3, $4, 'Queue', $5)`, []any{user, p.ID, master, uniqueEmail("queue"), name}},
			{`INSERT INTO kyc_sessions (token, partner_id, user_token, secret_hash, secret_enc, status, submitted_at, expires_at, created_at)
				VALUES ($1, $2, $3, $4, '\x00', 'submitted', $5::timestamptz, $5::timestamptz + interval '7 days', $5::timestamptz)`, []any{session, p.ID, user, []byte(session), at}},
		} {
			if _, err := env.App.DB.Exec(stmt.q, stmt.args...); err != nil {
				t.Fatal(err)
			}
		}
		q.checks, q.sessions = append(q.checks, check), append(q.sessions, session)
	}
	q.cs = env.NewBrowser()
	q.cs.SignIn(t, apptest.ComplianceEmail)
	return q
}

// queuePage reads a page of a queue: the tokens of its rows (linked at
// /backoffice/<kind>/<token>) and its next- and first-page links.
func queuePage(t *testing.T, b *apptest.Browser, path, kind string) (tokens []string, next, first string, page *goquery.Document) {
	t.Helper()
	p := b.Get(t, path)
	if p.Status != http.StatusOK {
		t.Fatalf("%s: HTTP %d", path, p.Status)
	}
	page = doc(t, p.Body)
	page.Find(`[data-testid="` + kind + `-table"] tbody tr td:first-child > a`).Each(func(_ int, s *goquery.Selection) {
		tokens = append(tokens, strings.TrimPrefix(s.AttrOr("href", ""), "/backoffice/"+kind+"/"))
	})
	next = html.UnescapeString(page.Find(`nav.pager [data-testid="pager-next"]`).AttrOr("href", ""))
	first = html.UnescapeString(page.Find(`nav.pager [data-testid="pager-prev"]`).AttrOr("href", ""))
	return tokens, next, first, page
}

// TestQueuesPageBeyondTheFirstHundred (the AML and KYC review screens):
// with 120 checks and 120 identifications waiting, the queue tab shows 50
// (the page size of the other sorted lists), oldest first, and a pager
// whose next page goes on where the last ended: page 2 holds the 51st to
// the 100th, page 3 the 101st onwards and no next link; every page but
// the first links back to it. Paging keeps an asked order (by person,
// newest name first) and its tab. The old screens showed the first 100
// and no pager, so the 101st could not be reached: this test failed there.
func TestQueuesPageBeyondTheFirstHundred(t *testing.T) {
	t.Parallel()
	q := newQueueEnv(t, 120)
	for _, c := range []struct {
		kind, path string
		want       []string
	}{
		{"aml", "/backoffice/aml", q.checks},
		{"kyc", "/backoffice/kyc", q.sessions},
	} {
		path := c.path
		var all []string
		for n := 1; path != "" && n <= 5; n++ {
			got, next, first, _ := queuePage(t, q.cs, path, c.kind)
			lo, hi := (n-1)*50, min(n*50, len(c.want))
			if !slices.Equal(got, c.want[lo:hi]) {
				t.Errorf("%s page %d: %d rows, want the %dth to the %dth, oldest first", c.kind, n, len(got), lo+1, hi)
			}
			if (n == 1) != (first == "") {
				t.Errorf("%s page %d: first-page link %q", c.kind, n, first)
			}
			if n == 3 && (len(got) == 0 || got[0] != c.want[100]) {
				t.Errorf("%s page 3 does not start with the 101st", c.kind)
			}
			all = append(all, got...)
			path = next
		}
		if !slices.Equal(all, c.want) {
			t.Errorf("%s: the pages hold %d rows, want all %d once, oldest first", c.kind, len(all), len(c.want))
		}
	}

	// By person, descending: the newest names first, over three pages.
	desc := slices.Clone(q.checks)
	slices.Reverse(desc)
	var all []string
	path := "/backoffice/aml?status=match&sort=person&dir=desc"
	for range 5 {
		got, next, _, page := queuePage(t, q.cs, path, "aml")
		all = append(all, got...)
		if th := page.Find(`th[aria-sort]`); th.AttrOr("data-sort", "") != "person" || th.AttrOr("aria-sort", "") != "descending" {
			t.Errorf("%s: aria-sort on %q", path, th.AttrOr("data-sort", ""))
		}
		if h := page.Find(`[data-testid="sort-created"]`).AttrOr("href", ""); strings.Contains(h, "after=") || !strings.Contains(h, "status=match") {
			t.Errorf("%s: a header links to %q: want the tab kept, the first page", path, h)
		}
		if next == "" {
			break
		}
		if u, _ := url.Parse(next); u.Query().Get("sort") != "person" || u.Query().Get("dir") != "desc" || u.Query().Get("status") != "match" {
			t.Errorf("the next page %q drops the order or the tab", next)
		}
		path = next
	}
	if !slices.Equal(all, desc) {
		t.Errorf("AML queue by person, descending: %d rows, want all %d in order", len(all), len(desc))
	}
}

// TestQueuesRefuseABrokenPageLink (the AML and KYC review screens): a
// cursor that is not a token (hand-edited, or an injection attempt) is
// answered 422 with a message above the first page, never a 500 and never
// SQL; a cursor with a refused order is dropped too (it belongs to another
// order). A well-formed cursor naming nothing is an empty page with the
// way back to the first. The service refuses the same input from any
// other caller. The old screens ignored ?after=: this test failed there.
func TestQueuesRefuseABrokenPageLink(t *testing.T) {
	t.Parallel()
	q := newQueueEnv(t, 60)
	for _, path := range []string{
		"/backoffice/aml?after=not-a-token",
		"/backoffice/aml?after=" + url.QueryEscape("' OR 1=1 --"),
		"/backoffice/aml?status=all&sort=person&after=" + url.QueryEscape(q.checks[3]+"'"),
		"/backoffice/kyc?after=12",
		"/backoffice/kyc?status=all&sort=started&dir=desc&after=" + url.QueryEscape("(SELECT pg_sleep(5))"),
		"/backoffice/aml?sort=hits&after=" + q.checks[55],
		"/backoffice/kyc?sort=document&after=" + q.sessions[55],
	} {
		p := q.cs.Get(t, path)
		if p.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: HTTP %d, want 422", path, p.Status)
			continue
		}
		page := doc(t, p.Body)
		if msg := page.Find(`[data-testid="sort-error"]`).Text(); msg == "" {
			t.Errorf("%s: no message", path)
		}
		rows := page.Find(`tbody tr td:first-child > a`)
		if rows.Length() != 50 || page.Find(`[data-testid="pager-prev"]`).Length() != 0 {
			t.Errorf("%s: %d rows shown, want the first page (50)", path, rows.Length())
		}
	}
	// A token that is no check: an empty page, and the first page linked.
	got, next, first, page := queuePage(t, q.cs, "/backoffice/aml?after="+uuid.NewString(), "aml")
	if len(got) != 0 || next != "" || first == "" || page.Find(`.empty`).Length() == 0 {
		t.Errorf("a cursor naming no check: %d rows, next %q, first %q", len(got), next, first)
	}
	// An upper-case token is the same row.
	if got, _, _, _ := queuePage(t, q.cs, "/backoffice/aml?after="+strings.ToUpper(q.checks[49]), "aml"); !slices.Equal(got, q.checks[50:]) {
		t.Errorf("an upper-case cursor: %d rows, want the 51st onwards", len(got))
	}

	ctx := staffCtx(t, q.env, apptest.ComplianceEmail)
	if _, err := q.env.App.AML.List(ctx, emi.AMLFilter{Sort: emi.SortOrder{Key: "c.token; DROP TABLE aml_checks"}, After: "x"}); !hasFields(err, "sort", "after") {
		t.Errorf("the AML service takes an unknown order and a bad cursor: %v", err)
	}
	if _, err := q.env.App.KYC.List(ctx, emi.KYCFilter{Sort: emi.SortOrder{Key: "secret_enc"}, After: strings.ToUpper(q.sessions[0])}); !hasFields(err, "sort", "after") {
		t.Errorf("the KYC service takes an unknown order and a bad cursor: %v", err)
	}
	// The permission comes first, as before: a partner's API key, with a
	// good order and cursor, is refused.
	partner := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: "k", PartnerID: uuid.NewString()})
	if _, err := q.env.App.AML.List(partner, emi.AMLFilter{Sort: emi.SortOrder{Key: "person"}, After: q.checks[0]}); emi.AsError(err).Kind != emi.KindForbidden {
		t.Errorf("a partner lists AML checks: %v", err)
	}
}

// hasFields reports whether err is a validation error naming every field.
func hasFields(err error, fields ...string) bool {
	e := emi.AsError(err)
	if err == nil || e.Kind != emi.KindInvalid {
		return false
	}
	for _, f := range fields {
		if !slices.ContainsFunc(e.Fields, func(fe emi.FieldError) bool { return fe.Field == f }) {
			return false
		}
	}
	return true
}
