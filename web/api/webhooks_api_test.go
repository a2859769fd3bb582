package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// receiver records the webhooks it gets; it answers 500 while failing.
type receiver struct {
	mu      sync.Mutex
	failing bool
	got     []http.Header
	bodies  []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.got = append(rc.got, r.Header.Clone())
	rc.bodies = append(rc.bodies, string(b))
	if rc.failing {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

// wait returns the headers and body of the n-th (1-based) request that
// contains want.
func (rc *receiver) wait(t *testing.T, want string, n int) (http.Header, string) {
	t.Helper()
	var h http.Header
	var body string
	testwait.Until(t, fmt.Sprintf("delivery %d containing %s", n, want), func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		seen := 0
		for i, b := range rc.bodies {
			if strings.Contains(b, want) {
				seen++
				if seen == n {
					h, body = rc.got[i], b
					return true
				}
			}
		}
		return false
	})
	return h, body
}

// TestPartnerManagesItsWebhookEndpoints: through the signed API a partner
// registers an endpoint (secret shown once), lists it, sends a test event
// (verified with the Standard Webhooks library), rotates the secret (two
// signatures during the overlap) and replays a delivery that failed;
// another partner's endpoint is unknown.
func TestPartnerManagesItsWebhookEndpoints(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Hooks"})

	bad := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "ftp://x", "event_types": []string{"nope"}})
	apptest.Expect(t, "a bad endpoint", bad, emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
	apptest.ExpectField(t, "a bad endpoint", bad, "url")
	apptest.ExpectField(t, "a bad endpoint", bad, "event_types[0]")

	cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": srv.URL + "/hooks", "description": "test receiver"})
	apptest.Expect(t, "create", cr, 0, http.StatusCreated)
	id, secret := cr.Data["id"].(string), cr.Data["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("create: %s", cr)
	}
	l := call(t, env, p, http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil)
	apptest.Expect(t, "list", l, 0, http.StatusOK)
	if items := l.Data["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id || strings.Contains(string(l.Raw), secret) {
		t.Fatalf("list: %s", l)
	}

	ts := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/test", "webhook_endpoint_test", nil)
	apptest.Expect(t, "test", ts, 0, http.StatusAccepted)
	ev := ts.Data["event"].(string)
	h, body := rc.wait(t, ev, 1)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify([]byte(body), h); err != nil {
		t.Fatalf("the test event does not verify with the secret: %v", err)
	}

	rot := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/rotate", "webhook_endpoint_rotate_secret", map[string]any{})
	apptest.Expect(t, "rotate", rot, 0, http.StatusOK)
	newSecret := rot.Data["secret"].(string)
	ev2 := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/test", "webhook_endpoint_test", nil).Data["event"].(string)
	h, body = rc.wait(t, ev2, 1)
	for _, s := range []string{secret, newSecret} {
		w, _ := standardwebhooks.NewWebhook(s)
		if err := w.Verify([]byte(body), h); err != nil {
			t.Fatalf("during the overlap, a message verifies with either secret: %v", err)
		}
	}

	// A delivery that fails, replayed once the receiver is fixed.
	rc.mu.Lock()
	rc.failing = true
	rc.mu.Unlock()
	u := createUser(t, env, p, validUser(p))
	apptest.Expect(t, "kyc_init", call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": u}), 0, http.StatusCreated)
	_, failed := rc.wait(t, `"user.kyc_updated"`, 1)
	evID := failed[strings.Index(failed, `"id":"`)+6:][:36]
	rc.mu.Lock()
	rc.failing = false
	rc.mu.Unlock()
	rp := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/replay", "webhook_delivery_replay", map[string]any{"event": evID})
	apptest.Expect(t, "replay", rp, 0, http.StatusAccepted)
	rc.wait(t, evID, 2)

	other := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	for _, c := range []struct{ path, op string }{{"/test", "webhook_endpoint_test"}, {"/rotate", "webhook_endpoint_rotate_secret"}} {
		apptest.Expect(t, "another partner's endpoint", call(t, env, other, http.MethodPost, "/v2/webhooks/"+id+c.path, c.op, nil),
			emi.ErrAPIWebhookEndpointNotFound.Code, http.StatusNotFound)
	}
	apptest.Expect(t, "another partner's event", call(t, env, other, http.MethodPost, "/v2/webhooks/"+id+"/replay", "webhook_delivery_replay",
		map[string]any{"event": evID}), emi.ErrAPIWebhookEndpointNotFound.Code, http.StatusNotFound)
}
