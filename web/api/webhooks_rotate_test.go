package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// A partner's integration fires the rotate call several times at once
// (a retry loop, two deploy jobs) while an administrator rotates the same
// endpoint's secret in the back office. Through the real router and
// database: every call succeeds, and the next message verifies with the
// secret the receiver had before the race and with exactly one of the
// secrets handed out (the last one), never with a superseded one; the
// audit trail has one rotation that started the overlap and one
// "replaced_current" row per superseding rotation. The service-level
// version with the stored state is TestConcurrentWebhookSecretRotationsStayConsistent
// (internal/service/servicetest); it failed on the old code, whose audit
// rows said "[redacted]" instead of the marker.
func TestConcurrentWebhookRotationsThroughTheAPI(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Rotating"})
	cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": srv.URL + "/hooks"})
	apptest.Expect(t, "create", cr, 0, http.StatusCreated)
	id, original := cr.Data["id"].(string), cr.Data["secret"].(string)

	const apiCalls, staffCalls = 4, 2
	secrets := make([]string, apiCalls+staffCalls)
	responses := make([]apptest.Response, apiCalls)
	staffErrs := make([]error, staffCalls)
	admin := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(), StaffRoles: []string{string(emi.RoleAdmin)}})
	env.Clock.Advance(time.Second)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range apiCalls + staffCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i < apiCalls {
				// Distinct nonces: the same request signed twice in one
				// second would be a replay.
				responses[i] = p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/webhooks/" + id + "/rotate",
					Operation: "webhook_endpoint_rotate_secret", JSON: map[string]any{}, SignatureVersion: emi.SignatureV2,
					Nonce: fmt.Sprintf("rotate-race-%d", i)})
				return
			}
			secrets[i], _, staffErrs[i-apiCalls] = env.App.Webhooks.RotateEndpointSecret(admin, p.ID, id)
		}()
	}
	close(start)
	wg.Wait()
	for i, r := range responses {
		apptest.Expect(t, fmt.Sprintf("rotation %d through the API", i), r, 0, http.StatusOK)
		secrets[i] = r.Data["secret"].(string)
	}
	for i, err := range staffErrs {
		if err != nil {
			t.Fatalf("staff rotation %d: %v", i, err)
		}
	}

	ts := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/test", "webhook_endpoint_test", nil)
	apptest.Expect(t, "test", ts, 0, http.StatusAccepted)
	h, body := rc.wait(t, ts.Data["event"].(string), 1)
	verifies := func(secret string) bool {
		w, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		return w.Verify([]byte(body), h) == nil
	}
	if !verifies(original) {
		t.Fatal("after the race the message does not verify with the secret the receiver had before it")
	}
	n := 0
	for _, s := range secrets {
		if verifies(s) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the message verifies with %d of the %d secrets handed out, want exactly one (the last)", n, len(secrets))
	}

	var rows []struct {
		Overlap  bool `db:"overlap"`
		Replaced bool `db:"replaced"`
	}
	if err := env.App.DB.Select(&rows, `SELECT coalesce((changes->>'during_overlap')::bool, false) AS overlap,
		coalesce((changes->>'replaced_current')::bool, false) AS replaced
		FROM audit_log WHERE action = 'webhook_endpoint.rotate_secret' AND resource_token = $1 ORDER BY id`, id); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(secrets) {
		t.Fatalf("%d audit rows for %d rotations", len(rows), len(secrets))
	}
	for i, r := range rows {
		if r.Overlap != (i > 0) || r.Replaced != (i > 0) {
			t.Fatalf("audit row %d: %+v; want the first to start the overlap and every later one to say it replaced the current secret", i, r)
		}
	}
}
