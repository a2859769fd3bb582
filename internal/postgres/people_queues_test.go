package postgres_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// queueRow is what the expected order of a queue row is computed from.
type queueRow struct {
	token, person, partner, status string
	created, submitted             time.Time // submitted: zero when not submitted
}

// seedQueues adds 250 AML checks and 250 KYC sessions (each of its own
// person) over three partners, five names, the statuses in turn and 50
// creation times, so every order has many ties. Names and partners are
// chosen so that their lower-case order is the same under any collation.
func seedQueues(t *testing.T, db *postgres.DB) (checks, sessions []queueRow) {
	t.Helper()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	partners := []string{"Beta Ltd", "alpha Ltd", "Gamma Ltd"}
	ids := make([]string, len(partners))
	merchants := make([]string, len(partners))
	for i, name := range partners {
		ids[i], merchants[i] = uuid.NewString(), uuid.NewString()
		exec(`INSERT INTO partners (id, name, master_merchant) VALUES ($1, $2, $3)`, ids[i], name, merchants[i])
		exec(`INSERT INTO merchants (token, partner_id, kind, name) VALUES ($1, $2, 'master', $3)`, merchants[i], ids[i], name)
	}
	firsts := []string{"Eve", "ana", "Cid", "Bob", "Dan"}
	amlStatuses := []string{"match", "clear", "cleared", "confirmed"}
	kycStatuses := []string{"submitted", "pending", "approved", "rejected", "expired"}
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range 250 {
		p := (i * 7) % 3
		first := firsts[(i*3)%5]
		created := base.Add(time.Duration((i*13)%50) * time.Minute)
		c := queueRow{token: uuid.NewString(), person: strings.ToLower(first + " Ng"), partner: strings.ToLower(partners[p]),
			status: amlStatuses[i%4], created: created}
		exec(`INSERT INTO aml_checks (token, partner_id, first_name, last_name, person_key, status, list_version, created_at)
			VALUES ($1, $2, $3, 'Ng', '\x00', $4, 'v1', $5)`, c.token, ids[p], first, c.status, c.created)
		checks = append(checks, c)

		user := uuid.NewString()
		exec(`INSERT INTO users (token, partner_id, master_merchant, merchant, email, first_name, last_name)
			VALUES ($1, $2, $3, $3, $4, $5, 'Ng')`, user, ids[p], merchants[p], fmt.Sprintf("q%d@example.com", i), first)
		s := queueRow{token: uuid.NewString(), person: c.person, partner: c.partner, status: kycStatuses[i%5], created: created}
		var submitted *time.Time
		if s.status != "pending" {
			s.submitted = created.Add(time.Duration((i*11)%20) * time.Hour)
			submitted = &s.submitted
		}
		exec(`INSERT INTO kyc_sessions (token, partner_id, user_token, secret_hash, secret_enc, status, submitted_at, expires_at, created_at)
			VALUES ($1, $2, $3, $4, '\x00', $5, $6, $7, $7)`, s.token, ids[p], user, []byte(s.token), s.status, submitted, created)
		sessions = append(sessions, s)
	}
	return checks, sessions
}

// wantOrder is rows with status (all for "") in the order of key, ties
// broken by the token, both in the direction of o.
func wantOrder(rows []queueRow, status string, o emi.SortOrder, key func(queueRow) string) []string {
	var sel []queueRow
	for _, r := range rows {
		if status == "" || r.status == status {
			sel = append(sel, r)
		}
	}
	slices.SortFunc(sel, func(a, b queueRow) int {
		c := cmp.Or(strings.Compare(key(a), key(b)), strings.Compare(a.token, b.token))
		if o.Desc {
			return -c
		}
		return c
	})
	out := make([]string, len(sel))
	for i, r := range sel {
		out[i] = r.token
	}
	return out
}

// pageAll reads pages of 40 tokens, each after the last of the previous,
// until one is not full (at most 20).
func pageAll(t *testing.T, page func(after string) ([]string, error)) []string {
	t.Helper()
	var all []string
	after := ""
	for range 20 {
		got, err := page(after)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
		if len(got) < 40 {
			break
		}
		after = got[len(got)-1]
	}
	return all
}

func timeKey(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// TestQueuesPageInEveryOrder (the AML and KYC review screens): paging
// through 250 checks and 250 sessions, 40 a page, in every order both
// ways and by default, on a status tab and on all, returns every row
// exactly once and in the order, ties (many share a name, a partner, a
// status, a time) broken by the token. The old store had no cursor and
// sorted the first 100 in memory: the pages repeated the first 40, and
// this test failed there.
func TestQueuesPageInEveryOrder(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()
	store := postgres.NewPeopleStore(db)
	checks, sessions := seedQueues(t, db)

	amlKeys := map[string]func(queueRow) string{
		"person":  func(r queueRow) string { return r.person },
		"partner": func(r queueRow) string { return r.partner },
		"status":  func(r queueRow) string { return r.status },
		"created": func(r queueRow) string { return timeKey(r.created) },
	}
	for _, status := range []string{"match", ""} {
		orders := []emi.SortOrder{{}} // the tab's default
		for _, k := range emi.AMLSortKeys {
			orders = append(orders, emi.SortOrder{Key: k}, emi.SortOrder{Key: k, Desc: true})
		}
		for _, o := range orders {
			want := o
			if o.Key == "" { // the queue oldest first, all newest first
				want = emi.SortOrder{Key: "created", Desc: status == ""}
			}
			got := pageAll(t, func(after string) ([]string, error) {
				page, err := store.AMLChecks(ctx, emi.AMLFilter{Status: emi.AMLStatus(status), Sort: o, After: after, Limit: 40})
				out := make([]string, len(page))
				for i, c := range page {
					out[i] = c.Token
				}
				return out, err
			})
			if w := wantOrder(checks, status, want, amlKeys[want.Key]); !slices.Equal(got, w) {
				t.Errorf("AML checks, tab %q, order %+v: %d rows, want %d in order", status, o, len(got), len(w))
			}
		}
	}

	kycKeys := map[string]func(queueRow) string{
		"person":    func(r queueRow) string { return r.person },
		"partner":   func(r queueRow) string { return r.partner },
		"status":    func(r queueRow) string { return r.status },
		"started":   func(r queueRow) string { return timeKey(r.created) },
		"submitted": func(r queueRow) string { return timeKey(r.submitted) }, // never submitted: first
	}
	for _, status := range []string{"submitted", ""} {
		orders := []emi.SortOrder{{}}
		for _, k := range emi.KYCSortKeys {
			orders = append(orders, emi.SortOrder{Key: k}, emi.SortOrder{Key: k, Desc: true})
		}
		for _, o := range orders {
			want := o
			if o.Key == "" { // the queue oldest submission first, all newest started first
				want = emi.SortOrder{Key: "submitted"}
				if status == "" {
					want = emi.SortOrder{Key: "started", Desc: true}
				}
			}
			got := pageAll(t, func(after string) ([]string, error) {
				page, err := store.KYCSessions(ctx, emi.KYCFilter{Status: emi.KYCStatus(status), Sort: o, After: after, Limit: 40})
				out := make([]string, len(page))
				for i, k := range page {
					out[i] = k.Token
				}
				return out, err
			})
			if w := wantOrder(sessions, status, want, kycKeys[want.Key]); !slices.Equal(got, w) {
				t.Errorf("KYC sessions, tab %q, order %+v: %d rows, want %d in order", status, o, len(got), len(w))
			}
		}
	}
}
