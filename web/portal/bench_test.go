package portal_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"emi/internal/app/apptest"
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
