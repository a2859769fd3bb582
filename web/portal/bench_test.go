package portal_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/kernel"
	"emi/internal/testwait"
)

// BenchmarkAuditLog100k renders the first audit-log page (50 rows, newest
// first) as an admin with 100,000 rows in the table, and a filtered page
// (by action), and reports the median server time of each.
func BenchmarkAuditLog100k(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	env.SeedStaff(b)
	if _, err := env.App.DB.Exec(`INSERT INTO audit_log (actor_type, actor_id, action, resource_type, resource_token, request_id, ip, changes, at)
		SELECT 'partner_key', 'key-' || (g % 97), CASE WHEN g % 10 = 0 THEN 'partner.create' ELSE 'card.status' END,
		       'card', md5(g::text), md5((g * 7)::text), '203.0.113.9', jsonb_build_object('status', 'active', 'n', g),
		       now() - (g || ' seconds')::interval
		  FROM generate_series(1, 100000) g`); err != nil {
		b.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`ANALYZE audit_log`); err != nil {
		b.Fatal(err)
	}
	browser := env.NewBrowser()
	browser.SignIn(b, apptest.AdminEmail)
	cookie := browser.SessionCookie()
	for _, c := range []struct{ name, path string }{
		{"first page", "/backoffice/audit"},
		{"filtered by action", "/backoffice/audit?action=partner.create"},
		{"filtered by resource", "/backoffice/audit?resource_type=card&resource_token=" + "c4ca4238a0b923820dcc509a6f75849b"},
	} {
		b.Run(c.name, func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(http.MethodGet, c.path, nil)
				req.AddCookie(cookie)
				rec := httptest.NewRecorder()
				t0 := time.Now()
				env.Handler.ServeHTTP(rec, req)
				times = append(times, time.Since(t0))
				if rec.Code != http.StatusOK {
					b.Fatalf("HTTP %d", rec.Code)
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkReviewPages100k renders the review queue with each single
// filter, and an application's evidence page, as a signed-in admin (the
// role that sees the most: bulk actions, the staff list, the audit trail)
// with 100,000 generated applications (1,000,000 check results), and
// reports the median and 95th percentile server time of each. Goals: p95
// under 100 ms for the queue, under 150 ms for the application page.
//
//	go test ./web/portal/ -run '^$' -bench BenchmarkReviewPages100k -benchtime 200x -timeout 30m
func BenchmarkReviewPages100k(b *testing.B) {
	env := apptest.New(b, apptest.Options{})
	env.SeedStaff(b)
	p := env.NewPartner(b, emi.PartnerCreate{Name: "Bench Partner", Processing: emi.ProcessingSemiAutomatic})
	t0 := time.Now()
	if err := env.App.OnboardingStore.GenerateApplications(context.Background(), p.ID, p.Merchant, 100_000); err != nil {
		b.Fatal(err)
	}
	b.Logf("100,000 applications generated in %s", time.Since(t0).Round(time.Millisecond))
	var app string
	if err := env.App.DB.Get(&app, `SELECT token FROM applications WHERE status = 'in_review' AND has_sanctions_hit
		ORDER BY queued_at LIMIT 1`); err != nil {
		b.Fatal(err)
	}
	browser := env.NewBrowser()
	browser.SignIn(b, apptest.AdminEmail)
	cookie := browser.SessionCookie()
	for _, c := range []struct{ name, path string }{
		{"queue", "/backoffice/review"},
		{"queue tab", "/backoffice/review?tab=information_requested"},
		{"queue partner", "/backoffice/review?partner=" + p.ID},
		{"queue risk", "/backoffice/review?risk=High"},
		{"queue product", "/backoffice/review?product=card-issuing"},
		{"queue age", "/backoffice/review?age=168h"},
		{"queue assignee", "/backoffice/review?assignee=none"},
		{"queue sanctions hit", "/backoffice/review?hit=1"},
		{"queue near SLA", "/backoffice/review?near_sla=1"},
		{"queue sort risk", "/backoffice/review?sort=risk"},
		{"application", "/backoffice/applications/" + app},
	} {
		b.Run(c.name, func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(http.MethodGet, c.path, nil)
				req.AddCookie(cookie)
				rec := httptest.NewRecorder()
				t0 := time.Now()
				env.Handler.ServeHTTP(rec, req)
				times = append(times, time.Since(t0))
				if rec.Code != http.StatusOK {
					b.Fatalf("HTTP %d", rec.Code)
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

// BenchmarkBackOfficeListsUnderWriteLoad renders back-office list pages as
// an auditor while partners open accounts on the primary (8 clients,
// account_create through the API, without pause), once with the pages on a
// streaming replica (EMI_READ_DATABASE_URL) and once on the primary alone:
// one private primary and standby (.ci/postgres.sh), one database of 50,000
// accounts and 100,000 audit rows, the same write load for both. It
// reports each page's median and 95th percentile server time, the share
// of its lag-tolerant reads the replica served, and the writes per second
// the load achieved meanwhile.
//
//	go test ./web/portal/ -run '^$' -bench BenchmarkBackOfficeListsUnderWriteLoad -benchtime 200x -timeout 30m
func BenchmarkBackOfficeListsUnderWriteLoad(b *testing.B) {
	primary := pgtest.NewCluster(b)
	standby := primary.Standby(b)
	adm, err := sql.Open("postgres", primary.Admin)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := adm.Exec(`CREATE DATABASE bench`); err != nil {
		b.Fatal(err)
	}
	_ = adm.Close()
	dbURL := func(port string) string { return "postgres://postgres@127.0.0.1:" + port + "/bench?sslmode=disable" }
	env := apptest.New(b, apptest.Options{DatabaseURL: dbURL(primary.Port), Configure: func(c *config.Config) {
		c.ReadDatabaseURLs = []string{dbURL(standby.Port)}
	}})
	env.SeedStaff(b)
	p := env.NewPartner(b, emi.PartnerCreate{Name: "Bench Partner"})
	if err := env.App.AccountStore.GenerateAccounts(context.Background(), p.ID, p.Merchant, 50_000); err != nil {
		b.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`INSERT INTO audit_log (actor_type, actor_id, action, resource_type, resource_token, request_id, ip, changes, at)
		SELECT 'partner_key', 'key-' || (g % 97), 'card.status', 'card', md5(g::text), md5((g * 7)::text), '203.0.113.9',
		       jsonb_build_object('status', 'active', 'n', g), now() - (g || ' seconds')::interval
		  FROM generate_series(1, 100000) g`); err != nil {
		b.Fatal(err)
	}
	if _, err := env.App.DB.Exec(`ANALYZE`); err != nil {
		b.Fatal(err)
	}
	onPrimary := apptest.AttachWith(b, env, func(c *config.Config) { c.ReadDatabaseURLs = nil })
	newStaff(b, env, "auditor2@bench.test", "Second Auditor", emi.RoleAuditor)
	readers := map[string]*apptest.Env{"replica": env, "primary": onPrimary}
	cookies := map[string]*http.Cookie{}
	for where, e := range readers {
		br := e.NewBrowser()
		br.SignIn(b, map[string]string{"replica": apptest.AuditorEmail, "primary": "auditor2@bench.test"}[where])
		cookies[where] = br.SessionCookie()
	}
	user := p.Do(b, apptest.Request{Method: http.MethodPost, Path: "/v2/users", Operation: "user_create",
		JSON: map[string]any{"email": uniqueEmail("bench"), "first_name": "Bench", "last_name": "Writer"}})
	if user.Status != http.StatusCreated {
		b.Fatalf("user_create: %s", user)
	}

	// The write load, until the benchmark ends.
	var writes, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req := p.HTTPRequest(b, apptest.Request{Method: http.MethodPost, Path: "/v2/accounts", Operation: "account_create",
					JSON: map[string]any{"program": "account_eur", "user": user.Data["token"]}, SignatureVersion: emi.SignatureV2,
					Nonce: kernel.NewToken()})
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if res.StatusCode == http.StatusCreated {
					writes.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	started := time.Now()
	defer func() {
		close(stop)
		wg.Wait()
		b.Logf("write load: %d accounts opened in %s (%.0f/s), %d failed", writes.Load(), time.Since(started).Round(time.Millisecond),
			float64(writes.Load())/time.Since(started).Seconds(), failed.Load())
	}()
	// The load under way: the first accounts opened (a condition, not a
	// pause that a busy machine could outlast).
	testwait.Until(b, "the write load's first 10 accounts", func() bool {
		if failed.Load() > 100 {
			b.Fatalf("the write load fails: %d failures, %d writes", failed.Load(), writes.Load())
		}
		return writes.Load() >= 10
	})
	for _, page := range []struct{ name, path string }{
		{"accounts", "/backoffice/accounts"},
		{"audit log", "/backoffice/audit"},
		{"users", "/backoffice/users"},
	} {
		for _, where := range []string{"replica", "primary"} {
			e := readers[where]
			b.Run(page.name+" on the "+where, func(b *testing.B) {
				before, w0, t0 := e.App.DB.ReplicaStats(), writes.Load(), time.Now()
				times := make([]time.Duration, 0, b.N)
				for i := 0; i < b.N; i++ {
					req := httptest.NewRequest(http.MethodGet, page.path, nil)
					req.AddCookie(cookies[where])
					rec := httptest.NewRecorder()
					t1 := time.Now()
					e.Handler.ServeHTTP(rec, req)
					times = append(times, time.Since(t1))
					if rec.Code != http.StatusOK {
						b.Fatalf("HTTP %d", rec.Code)
					}
				}
				after := e.App.DB.ReplicaStats()
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
				b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
				if n := (after.Replica - before.Replica) + (after.Primary - before.Primary); n > 0 {
					b.ReportMetric(float64(after.Replica-before.Replica)/float64(n), "replica-share")
				}
				b.ReportMetric(float64(writes.Load()-w0)/time.Since(t0).Seconds(), "writes/s")
			})
		}
	}
}
