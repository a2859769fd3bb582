package portal_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// receiver is a loopback webhook endpoint that counts what it gets.
type receiver struct {
	*httptest.Server
	hits   atomic.Int32
	status atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.status.Store(http.StatusOK)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("webhook-signature") == "" || r.Header.Get("webhook-id") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.hits.Add(1)
		w.WriteHeader(int(rc.status.Load()))
		_, _ = w.Write([]byte("received"))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// runWorkers runs the app's job pool until the test ends.
func runWorkers(t *testing.T, env *apptest.Env) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = env.App.Pool().Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestWebhookScreens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rc := newReceiver(t)
	runWorkers(t, f.env)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	partnerPage := "/backoffice/partners/" + f.partner.ID

	var epID string
	t.Run("adding an endpoint shows its signing secret once", func(t *testing.T) {
		p := admin.Post(t, partnerPage+"/webhooks", url.Values{"url": {rc.URL + "/hooks"}, "event_types": {"card.activated, account.status_changed"}})
		m := regexp.MustCompile(`data-testid="webhook-secret">(whsec_[A-Za-z0-9+/=]+)<`).FindStringSubmatch(p.Body)
		if p.Status != http.StatusOK || m == nil {
			errs := regexp.MustCompile(`class="field-error"[^>]*>([^<]+)<|class="flash bad"[^>]*>([^<]+)<`).FindAllString(p.Body, -1)
			t.Fatalf("add endpoint: HTTP %d, no secret; errors %v", p.Status, errs)
		}
		if strings.Contains(p.Body, `data-testid="api-secret"`) {
			t.Fatal("the page shows an empty API secret row")
		}
		if strings.Contains(admin.Get(t, partnerPage).Body, m[1]) {
			t.Fatal("the webhook secret is shown again on the partner page")
		}
		if err := f.env.App.DB.Get(&epID, `SELECT id FROM webhook_endpoints WHERE url = $1`, rc.URL+"/hooks"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a bad URL or event type re-renders the page with the error", func(t *testing.T) {
		p := admin.Post(t, partnerPage+"/webhooks", url.Values{"url": {"ftp://example.com"}})
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `id="url-error"`) {
			t.Fatalf("bad URL: HTTP %d", p.Status)
		}
		p = admin.Post(t, partnerPage+"/webhooks", url.Values{"url": {rc.URL + "/x"}, "event_types": {"card.exploded"}})
		if p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("bad event type: HTTP %d", p.Status)
		}
	})
	t.Run("send test event is delivered and shown in the delivery log with its attempt", func(t *testing.T) {
		before := rc.hits.Load()
		p := admin.Post(t, partnerPage+"/webhooks/"+epID+"/test", url.Values{})
		if p.Status != http.StatusSeeOther || !strings.Contains(p.Location, "/events") {
			t.Fatalf("send test: HTTP %d to %q", p.Status, p.Location)
		}
		testwait.Until(t, "the test event to arrive", func() bool { return rc.hits.Load() > before })
		testwait.Until(t, "the attempt to be logged", func() bool {
			return strings.Contains(admin.Get(t, partnerPage+"/events?type=webhook.test").Body, ">received<")
		})
		log := admin.Get(t, partnerPage+"/events?type=webhook.test")
		if !strings.Contains(log.Body, ">succeeded<") || !strings.Contains(log.Body, ">200<") {
			t.Fatal("the delivery log does not show the succeeded attempt with its status")
		}
	})
	t.Run("replay makes a new attempt marked replay and is audited", func(t *testing.T) {
		var deliveryID string
		if err := f.env.App.DB.Get(&deliveryID, `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at LIMIT 1`, epID); err != nil {
			t.Fatal(err)
		}
		before := rc.hits.Load()
		p := admin.Post(t, partnerPage+"/deliveries/"+deliveryID+"/replay", url.Values{})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("replay: HTTP %d", p.Status)
		}
		testwait.Until(t, "the replayed delivery", func() bool { return rc.hits.Load() > before })
		testwait.Until(t, "the replay attempt to be logged", func() bool {
			return strings.Contains(admin.Get(t, partnerPage+"/events?type=webhook.test").Body, ">replay<")
		})
		var n int
		_ = f.env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action LIKE '%replay%' AND actor_type = 'staff'`)
		if n == 0 {
			t.Fatal("no audit row for the replay")
		}
	})
	t.Run("disabling and enabling the endpoint shows on the partner page", func(t *testing.T) {
		admin.Post(t, partnerPage+"/webhooks/"+epID+"/disable", url.Values{})
		if !strings.Contains(admin.Get(t, partnerPage).Body, ">disabled") {
			t.Fatal("the endpoint is not shown disabled")
		}
		admin.Post(t, partnerPage+"/webhooks/"+epID+"/enable", url.Values{})
		var enabled bool
		_ = f.env.App.DB.Get(&enabled, `SELECT enabled FROM webhook_endpoints WHERE id = $1`, epID)
		if !enabled {
			t.Fatal("enable did not enable")
		}
	})
	t.Run("the auditor sees the log but no replay or management buttons", func(t *testing.T) {
		au := f.env.NewBrowser()
		au.SignIn(t, apptest.AuditorEmail)
		log := au.Get(t, partnerPage+"/events")
		if log.Status != http.StatusOK || strings.Contains(log.Body, `data-testid="replay"`) {
			t.Fatalf("auditor log: HTTP %d, replay button shown: %v", log.Status, strings.Contains(log.Body, `data-testid="replay"`))
		}
		if pg := au.Get(t, partnerPage); strings.Contains(pg.Body, `data-testid="send-test"`) || strings.Contains(pg.Body, `data-testid="endpoint-form"`) {
			t.Fatal("the auditor gets endpoint management controls")
		}
	})
}

// TestWebhookRoutesAreScopedToTheirPartner: the back office's endpoint and
// delivery buttons name the partner in their URL
// (/backoffice/partners/{id}/…), and the endpoint or delivery must be that
// partner's. An administrator (who holds webhooks.manage) using partner A's
// URLs with partner B's endpoint or delivery id gets "not found", and B's
// endpoint, delivery, events and audit trail are unchanged; the same
// requests under B's own URL work, so the refusal is the scoping and not a
// broken route. The old handlers took only the endpoint or delivery id:
// every one of these requests changed partner B.
func TestWebhookRoutesAreScopedToTheirPartner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := f.env
	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	a := env.NewPartner(t, emi.PartnerCreate{Name: "Scope A", WebhookURL: "http://127.0.0.1:9/a"})
	b := env.NewPartner(t, emi.PartnerCreate{Name: "Scope B", WebhookURL: "http://127.0.0.1:9/b"})
	var bEndpoint, bDelivery string
	if err := env.App.DB.Get(&bEndpoint, `SELECT id FROM webhook_endpoints WHERE partner_id = $1`, b.ID); err != nil {
		t.Fatal(err)
	}
	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	if _, err := env.App.Webhooks.SendTest(sys, b.ID, bEndpoint); err != nil {
		t.Fatal(err)
	}
	if err := env.App.DB.Get(&bDelivery, `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1`, bEndpoint); err != nil {
		t.Fatal(err)
	}
	type state struct {
		Enabled  bool   `db:"enabled"`
		Secret   []byte `db:"secret_enc"`
		Rotating bool   `db:"rotating"`
		Replay   bool   `db:"replay"`
		Events   int    `db:"events"`
		Audit    int    `db:"audit"`
	}
	snapshot := func() state {
		t.Helper()
		var s state
		if err := env.App.DB.Get(&s, `SELECT e.enabled, e.secret_enc, e.previous_secret_enc IS NOT NULL AS rotating,
			(SELECT replay_requested_at IS NOT NULL FROM webhook_deliveries WHERE id = $2) AS replay,
			(SELECT count(*) FROM events WHERE partner_id = e.partner_id) AS events,
			(SELECT count(*) FROM audit_log WHERE resource_token IN (e.id::text, $2::text) AND actor_type = 'staff') AS audit
			FROM webhook_endpoints e WHERE e.id = $1`, bEndpoint, bDelivery); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	aPage, bPage := "/backoffice/partners/"+a.ID, "/backoffice/partners/"+b.ID
	routes := []string{"/webhooks/" + bEndpoint + "/test", "/webhooks/" + bEndpoint + "/rotate",
		"/webhooks/" + bEndpoint + "/disable", "/webhooks/" + bEndpoint + "/enable", "/deliveries/" + bDelivery + "/replay"}
	for _, route := range routes {
		p := admin.Post(t, aPage+route, url.Values{})
		if p.Status != http.StatusNotFound {
			t.Errorf("POST %s under partner A with partner B's id: HTTP %d, want 404", route, p.Status)
		}
		if strings.Contains(p.Body, "whsec_") {
			t.Errorf("POST %s under partner A shows a webhook secret", route)
		}
	}
	if after := snapshot(); !reflect.DeepEqual(after, before) {
		t.Fatalf("partner B's endpoint changed through partner A's URLs: before %+v, after %+v", before, after)
	}
	// Under B's own URL the same buttons work (the disable first, so the
	// enable that follows changes something too).
	for _, route := range []string{routes[0], routes[1], routes[2], routes[3], routes[4]} {
		if p := admin.Post(t, bPage+route, url.Values{}); p.Status != http.StatusSeeOther && p.Status != http.StatusOK {
			t.Errorf("POST %s under partner B: HTTP %d", route, p.Status)
		}
	}
	after := snapshot()
	if after.Audit != before.Audit+5 || !after.Rotating || !after.Replay || after.Events != before.Events+1 {
		t.Fatalf("the buttons under partner B's own URL did not act: before %+v, after %+v", before, after)
	}
}
