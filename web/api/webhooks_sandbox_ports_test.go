package api_test

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
	"emi/web/api"
)

// TestSandboxWebhooksNeverReachEmiOrTheDatabase: the sandbox delivers to
// loopback, and a hosted sandbox's loopback is also emi itself and its
// database. apptest allows every loopback port
// (EMI_SANDBOX_WEBHOOK_PORTS=1-65535, explicitly), and still emi's own
// listening port and the database's port are refused: at registration (API,
// back office) beside the url field, and at delivery for an endpoint that
// points there anyway (one registered before the rule, or under another
// configuration): the attempt is blocked before connecting, and emi's own
// route behind that port is never called. An endpoint on an allowed port is
// delivered to, so the refusals are the rule's.
func TestSandboxWebhooksNeverReachEmiOrTheDatabase(t *testing.T) {
	t.Parallel()
	var emiHits atomic.Int32
	env := apptest.New(t, apptest.Options{NoSanctions: true, Routes: func(r chi.Router, _ *api.API) {
		r.Post("/test/webhook-sink", func(w http.ResponseWriter, _ *http.Request) { emiHits.Add(1) })
	}})
	startWorkers(t, env)
	env.SeedStaff(t)
	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	_, emiPort, _ := net.SplitHostPort(env.Server.Listener.Addr().String())
	dbURL, err := url.Parse(env.DBURL)
	if err != nil || dbURL.Port() == "" {
		t.Fatalf("database URL %q names no port", env.DBURL)
	}
	dbPort := dbURL.Port()
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Port Scanner"})
	refused := []struct{ url, why string }{
		{"http://127.0.0.1:" + emiPort + "/test/webhook-sink", "it is emi's own port"},
		{"http://localhost:" + emiPort + "/test/webhook-sink", "it is emi's own port"},
		{"http://[::ffff:127.0.0.1]:" + emiPort + "/", "it is emi's own port"},
		{"http://127.0.0.1:" + dbPort + "/", "it is the database's port (DATABASE_URL)"},
		{"http://127.0.0.9:5432/", "it is the PostgreSQL port"},
	}
	for _, c := range refused {
		r := createEndpoint(t, env, p, c.url)
		apptest.Expect(t, "registering "+c.url, r, emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
		apptest.ExpectField(t, "registering "+c.url, r, "url")
		if !strings.Contains(string(r.Raw), c.why) || !strings.Contains(string(r.Raw), "blocked address") {
			t.Errorf("registering %s: %s, want the reason %q", c.url, r.Raw, c.why)
		}
		pg := admin.Post(t, "/backoffice/partners/"+p.ID+"/webhooks", url.Values{"url": {c.url}})
		if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, `id="url-error"`) {
			t.Errorf("back office registering %s: HTTP %d", c.url, pg.Status)
		}
	}
	if n := enabledEndpoints(t, env, p.ID); n != 0 {
		t.Fatalf("%d endpoints were registered", n)
	}

	// At delivery: endpoints registered on an allowed port, then pointed at
	// emi's port and the database's behind the registration check.
	sink := &receiver{}
	srv := newLoopbackServer(t, sink)
	var ids []string
	for _, u := range []string{srv + "/to-emi", srv + "/to-db", srv + "/fine"} {
		r := createEndpoint(t, env, p, u)
		apptest.Expect(t, "registering "+u, r, 0, http.StatusCreated)
		ids = append(ids, r.Data["id"].(string))
	}
	for i, u := range []string{"http://127.0.0.1:" + emiPort + "/test/webhook-sink", "http://localhost:" + dbPort + "/"} {
		if _, err := env.App.DB.Exec(`UPDATE webhook_endpoints SET url = $2 WHERE id = $1`, ids[i], u); err != nil {
			t.Fatal(err)
		}
	}
	events := map[string]string{}
	for _, id := range ids {
		r := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/test", "webhook_endpoint_test", nil)
		apptest.Expect(t, "test event", r, 0, http.StatusAccepted)
		events[id] = r.Data["event"].(string)
	}
	sink.wait(t, events[ids[2]], 1)
	for i, want := range []string{"it is emi's own port", "it is the database's port"} {
		var attempt struct {
			Status *int   `db:"status"`
			Error  string `db:"error"`
		}
		testwait.Try(func() bool {
			return env.App.DB.Get(&attempt, `SELECT a.status, a.error FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
				WHERE d.endpoint_id = $1`, ids[i]) == nil
		})
		if attempt.Status != nil || !strings.Contains(attempt.Error, "blocked address") || !strings.Contains(attempt.Error, want) {
			t.Errorf("the attempt to %s: status %v, error %q; want blocked: %s", ids[i], attempt.Status, attempt.Error, want)
		}
	}
	if n := emiHits.Load(); n != 0 {
		t.Fatalf("emi's own route got %d webhook requests", n)
	}
}

// newLoopbackServer serves h on 127.0.0.1 and returns its base URL.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
