package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/partners"
)

// deliveryEnv is a partner whose endpoint has failed deliveries: n
// webhook.test events, each delivered once and given up on (no workers
// run, so nothing consumes a replay request during the test).
type deliveryEnv struct {
	env        *apptest.Env
	partnerID  string
	endpointID string
	failed     []string
	log        string
}

func newDeliveryEnv(t *testing.T, n int) *deliveryEnv {
	t.Helper()
	env := apptest.New(t, apptest.Options{})
	env.SeedStaff(t)
	pt := env.NewPartner(t, emi.PartnerCreate{Name: "Deliveries Partner", WebhookURL: "http://127.0.0.1:9/hooks"})
	d := &deliveryEnv{env: env, partnerID: pt.ID, log: "/backoffice/partners/" + pt.ID + "/events"}
	if err := env.App.DB.Get(&d.endpointID, `SELECT id FROM webhook_endpoints WHERE partner_id = $1`, pt.ID); err != nil {
		t.Fatal(err)
	}
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	for range n {
		if _, err := env.App.Webhooks.SendTest(ctx, pt.ID, d.endpointID); err != nil {
			t.Fatal(err)
		}
	}
	// The deliveries were attempted once and given up on, as the delivery
	// job leaves them (state failed, no next attempt, its job finished).
	db := env.App.DB
	if _, err := db.Exec(`UPDATE webhook_deliveries SET state = 'failed', attempts = 1, schedule_step = 1, last_status = 500,
		next_attempt_at = NULL WHERE endpoint_id = $1`, d.endpointID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE kind = $1`, kernel.JobWebhookDeliver); err != nil {
		t.Fatal(err)
	}
	if err := db.Select(&d.failed, `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id`, d.endpointID); err != nil {
		t.Fatal(err)
	}
	return d
}

// replaysAsked counts the deliveries with a replay asked for and the
// delivery jobs waiting.
func (d *deliveryEnv) replaysAsked(t *testing.T) (asked, jobs int) {
	t.Helper()
	if err := d.env.App.DB.Get(&asked, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND replay_requested_at IS NOT NULL`,
		d.endpointID); err != nil {
		t.Fatal(err)
	}
	if err := d.env.App.DB.Get(&jobs, `SELECT count(*) FROM jobs WHERE kind = $1 AND state = 'available'`, kernel.JobWebhookDeliver); err != nil {
		t.Fatal(err)
	}
	return asked, jobs
}

func doc(t *testing.T, body string) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDeliveryLogStatusFilterAndNextRetry: the delivery log filters by
// delivery status, shows when a pending delivery's next retry is due, and
// refuses an unknown status or event type beside the field (422) instead of
// ignoring it. The old log had no status filter and no retry time: this
// test failed there.
func TestDeliveryLogStatusFilterAndNextRetry(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, 2)
	next := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	if _, err := d.env.App.DB.Exec(`UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $2 WHERE id = $1`,
		d.failed[0], next); err != nil {
		t.Fatal(err)
	}
	au := d.env.NewBrowser()
	au.SignIn(t, apptest.AuditorEmail)

	for status, want := range map[string]int{"": 2, "failed": 1, "pending": 1, "succeeded": 0, "canceled": 0} {
		p := au.Get(t, d.log+"?status="+status)
		if p.Status != http.StatusOK {
			t.Fatalf("status=%s: HTTP %d", status, p.Status)
		}
		page := doc(t, p.Body)
		if n := page.Find(`[data-testid="event"]`).Length(); n != want {
			t.Errorf("status=%s: %d events, want %d", status, n, want)
		}
		if status != "" {
			if sel := page.Find(`[data-testid="status-filter"] option[selected]`).AttrOr("value", ""); sel != status {
				t.Errorf("status=%s: the filter shows %q", status, sel)
			}
			page.Find(`[data-testid="delivery"]`).Each(func(_ int, s *goquery.Selection) {
				if s.AttrOr("data-state", "") != status {
					t.Errorf("status=%s lists a %s delivery", status, s.AttrOr("data-state", ""))
				}
			})
		}
	}
	p := doc(t, au.Get(t, d.log+"?status=pending").Body)
	if got := strings.TrimSpace(p.Find(`[data-testid="next-retry"]`).Text()); got != "next retry 2031-05-06 07:08:09 UTC" {
		t.Errorf("next retry shown as %q", got)
	}

	for _, q := range []string{"status=gone", "status=" + url.QueryEscape("' OR 1=1 --"), "type=card.exploded"} {
		r := au.Get(t, d.log+"?"+q+"&resource=kept-token")
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%s: HTTP %d, want 422", q, r.Status)
		}
		page := doc(t, r.Body)
		field := "status"
		if strings.HasPrefix(q, "type=") {
			field = "type"
		}
		sel := page.Find(`[data-testid="events-filter"] select[name="` + field + `"]`)
		if sel.AttrOr("aria-invalid", "") != "true" || sel.AttrOr("aria-describedby", "") != field+"-error" {
			t.Errorf("%s: the %s select is not marked invalid", q, field)
		}
		if msg := page.Find("#" + field + "-error").Text(); msg == "" {
			t.Errorf("%s: no message beside %s", q, field)
		}
		if v := page.Find(`input[name="resource"]`).AttrOr("value", ""); v != "kept-token" {
			t.Errorf("%s: the resource filter was not kept (%q)", q, v)
		}
	}
}

// TestBulkReplayOfFailedDeliveries: staff who may replay one delivery
// replay the partner's failed ones at once (narrowed by event type),
// audited once with the count; a second submit replays nothing more; a role
// that may only view the log is refused (403) and changes nothing; a bad
// filter is refused beside its field. The old log had no bulk replay: this
// test failed there.
func TestBulkReplayOfFailedDeliveries(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, 3)
	replay := d.log[:strings.LastIndex(d.log, "/")] + "/deliveries/replay-failed"

	t.Run("a viewer cannot replay, even by posting the form", func(t *testing.T) {
		for _, who := range []string{apptest.AuditorEmail, apptest.CSEmail, apptest.ComplianceEmail} {
			b := d.env.NewBrowser()
			b.SignIn(t, who)
			if p := b.Post(t, replay, url.Values{}); p.Status != http.StatusForbidden {
				t.Errorf("%s: HTTP %d, want 403", who, p.Status)
			}
			if who == apptest.AuditorEmail && strings.Contains(b.Get(t, d.log).Body, `data-testid="bulk-replay"`) {
				t.Error("the auditor is offered the bulk replay")
			}
		}
		if asked, _ := d.replaysAsked(t); asked != 0 {
			t.Fatalf("refused replays asked for %d", asked)
		}
	})
	admin := d.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	t.Run("a bad filter is refused beside the field and replays nothing", func(t *testing.T) {
		for field, v := range map[string]string{"type": "card.exploded", "from": "31/12/2026"} {
			p := admin.Post(t, replay, url.Values{field: {v}})
			if p.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%s=%s: HTTP %d", field, v, p.Status)
			}
			if doc(t, p.Body).Find("#"+field+"-error").Text() == "" {
				t.Errorf("%s=%s: no message beside the field", field, v)
			}
		}
		if asked, _ := d.replaysAsked(t); asked != 0 {
			t.Fatalf("refused replays asked for %d", asked)
		}
	})
	t.Run("another event type matches nothing", func(t *testing.T) {
		p := admin.Post(t, replay, url.Values{"type": {string(emi.EventCardActivated)}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("HTTP %d", p.Status)
		}
		if asked, _ := d.replaysAsked(t); asked != 0 {
			t.Fatalf("a card.activated replay asked for %d webhook.test deliveries", asked)
		}
	})
	t.Run("the failed deliveries are replayed once, audited with the count", func(t *testing.T) {
		p := admin.Post(t, replay, url.Values{"type": {string(emi.EventWebhookTest)}})
		if p.Status != http.StatusSeeOther || !strings.Contains(p.Location, "status=failed") {
			t.Fatalf("HTTP %d to %q", p.Status, p.Location)
		}
		if flash := admin.Get(t, p.Location).Body; !strings.Contains(flash, "New attempts were queued for 3 failed deliveries.") {
			t.Error("the page does not say how many were replayed")
		}
		if asked, jobs := d.replaysAsked(t); asked != 3 || jobs != 3 {
			t.Fatalf("%d replays asked, %d jobs, want 3 and 3", asked, jobs)
		}
		var counts []int
		if err := d.env.App.DB.Select(&counts, `SELECT (changes->>'count')::int FROM audit_log
			WHERE action = 'webhook_delivery.bulk_replay' AND resource_token = $1`, d.partnerID); err != nil {
			t.Fatal(err)
		}
		if len(counts) != 1 || counts[0] != 3 {
			t.Fatalf("audited counts %v, want [3]", counts)
		}
		p = admin.Post(t, replay, url.Values{})
		if p.Status != http.StatusSeeOther || !strings.Contains(admin.Get(t, p.Location).Body, "No failed deliveries to replay") {
			t.Fatalf("the second submit: HTTP %d", p.Status)
		}
		if asked, jobs := d.replaysAsked(t); asked != 3 || jobs != 3 {
			t.Fatalf("after a second submit: %d replays asked, %d jobs", asked, jobs)
		}
	})
}

// TestConcurrentBulkReplaysAskOnce: bulk replays submitted at the same
// moment (a double click, or two colleagues) ask for each failed delivery's
// replay once between them: the counts they audit add up to the number of
// failed deliveries, and each delivery has one job.
func TestConcurrentBulkReplaysAskOnce(t *testing.T) {
	t.Parallel()
	const n = 40
	d := newDeliveryEnv(t, n)
	replay := d.log[:strings.LastIndex(d.log, "/")] + "/deliveries/replay-failed"
	// One session submitting four times at once: a double (or quadruple)
	// click, as two colleagues' tabs would.
	admin := d.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	browsers := []*apptest.Browser{admin, admin, admin, admin}

	var wg sync.WaitGroup
	start := make(chan struct{})
	statuses := make([]int, len(browsers))
	for i, b := range browsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = b.Post(t, replay, url.Values{}).Status
		}()
	}
	close(start)
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusSeeOther {
			t.Fatalf("replay %d: HTTP %d", i, s)
		}
	}
	asked, jobs := d.replaysAsked(t)
	if asked != n || jobs != n {
		t.Fatalf("%d replays asked, %d jobs, want %d each", asked, jobs, n)
	}
	var total int
	if err := d.env.App.DB.Get(&total, `SELECT coalesce(sum((changes->>'count')::int), 0) FROM audit_log
		WHERE action = 'webhook_delivery.bulk_replay' AND resource_token = $1`, d.partnerID); err != nil {
		t.Fatal(err)
	}
	if total != n {
		t.Fatalf("the replays audited %d deliveries between them, want %d (each once)", total, n)
	}
	var twice int
	if err := d.env.App.DB.Get(&twice, `SELECT count(*) FROM (SELECT d FROM audit_log, jsonb_array_elements_text(changes->'deliveries') d
		WHERE action = 'webhook_delivery.bulk_replay' AND resource_token = $1 GROUP BY d HAVING count(*) > 1) x`, d.partnerID); err != nil {
		t.Fatal(err)
	}
	if twice != 0 {
		t.Fatalf("%d deliveries were replayed twice", twice)
	}
}

// TestBulkReplayIsBounded: one bulk replay asks for at most
// service.MaxBulkReplay deliveries, the oldest first, and says so; the next
// one takes the rest.
func TestBulkReplayIsBounded(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, partners.MaxBulkReplay+3)
	replay := d.log[:strings.LastIndex(d.log, "/")] + "/deliveries/replay-failed"
	admin := d.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	if body := admin.Get(t, d.log+"?status=failed").Body; !strings.Contains(body, "at most 100 per click") {
		t.Error("the page does not say how many one replay takes")
	}
	p := admin.Post(t, replay, url.Values{})
	if !strings.Contains(admin.Get(t, p.Location).Body, "Replay again for the rest") {
		t.Error("a bounded replay does not say there are more")
	}
	if asked, _ := d.replaysAsked(t); asked != partners.MaxBulkReplay {
		t.Fatalf("the first replay asked for %d", asked)
	}
	admin.Post(t, replay, url.Values{})
	if asked, _ := d.replaysAsked(t); asked != partners.MaxBulkReplay+3 {
		t.Fatalf("the second replay left %d asked", asked)
	}
}
