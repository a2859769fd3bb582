package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
)

// uuidInExample finds a token in an example: a placeholder for one of the
// reader's own (an event id to replay), which cannot run as written.
var uuidInExample = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestWebhookReferenceExamplesRunAgainstTheSandbox: every request example
// openapi.yaml gives the webhook operations (/v2/webhooks…, and
// /v2/sandbox/events) is sent as written to a sandbox configured as `make
// run` configures it (loopback delivery on EMI_ADDR's port + 1 and 9999
// only, no other port, no DNS needed), and succeeds; a path's {endpoint} is
// an endpoint registered just before. Examples naming a token (an event
// id to replay) are placeholders for the reader's own and are left out,
// but at least one example of every write operation must run. Partners
// paste these examples first: "hooks.example.com" in them made the very
// first call fail.
func TestWebhookReferenceExamplesRunAgainstTheSandbox(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) {
		c.SandboxWebhookPorts = []config.PortRange{{From: 8081, To: 8081}, {From: 9999, To: 9999}}
	}})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Copy Paster"})
	ran := map[string]int{}
	for _, o := range documentedOperations(t, openAPIModel(t)) {
		if !strings.HasPrefix(o.path, "/v2/webhooks") && o.path != "/v2/sandbox/events" {
			continue
		}
		if o.op.RequestBody == nil {
			continue
		}
		mt := o.op.RequestBody.Content.GetOrZero("application/json")
		if mt == nil || mt.Examples == nil {
			continue
		}
		for name, ex := range mt.Examples.FromOldest() {
			body := exampleJSON(t, ex.Value)
			if uuidInExample.Match(body) {
				continue
			}
			path, endpoint := o.path, ""
			if strings.Contains(path, "{endpoint}") {
				cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "http://127.0.0.1:8081/webhooks"})
				apptest.Expect(t, "an endpoint for "+o.name, cr, 0, http.StatusCreated)
				endpoint = cr.Data["token"].(string)
				path = strings.ReplaceAll(path, "{endpoint}", endpoint)
			}
			r := call(t, env, p, o.method, path, o.name, rawJSON(body))
			if r.Status >= 300 || r.Code != 0 {
				t.Errorf("%s %s example %q %s, as written: %s", o.method, o.path, name, body, r)
			}
			ran[o.name]++
			// Leave room under the endpoint limits for the next example.
			if endpoint == "" && r.Data != nil {
				endpoint, _ = r.Data["token"].(string)
			}
			if endpoint != "" {
				call(t, env, p, http.MethodDelete, "/v2/webhooks/"+endpoint, "webhook_endpoint_delete", nil)
			}
		}
	}
	for _, op := range []string{"webhook_endpoint_create", "webhook_endpoint_update", "webhook_endpoint_disable", "webhook_endpoint_enable",
		"webhook_endpoint_delete", "webhook_endpoint_rotate_secret", "webhook_endpoint_test", "sandbox_event_trigger"} {
		if ran[op] == 0 {
			t.Errorf("no request example of %s ran", op)
		}
	}
	// The rule the examples follow is the sandbox's: a port make run
	// does not allow is refused, so the examples are not passing by luck.
	r := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "http://127.0.0.1:9998/webhooks"})
	apptest.Expect(t, "a port make run does not allow", r, emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
}
