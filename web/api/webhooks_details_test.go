package api_test

import (
	"net/http"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// TestWebhookEndpointDetails: a partner reads one of its endpoints as the
// list shows it; another partner's, a deleted one and an unknown one are
// 404 / 15002 alike.
func TestWebhookEndpointDetails(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p, q := env.NewPartner(t, emi.PartnerCreate{Name: "Hooks"}), env.NewPartner(t, emi.PartnerCreate{Name: "Other hooks"})
	ep := webhookEndpoint(t, env, p)
	r := call(t, env, p, http.MethodGet, "/v2/webhooks/"+ep, "webhook_endpoint_details", nil)
	apptest.Expect(t, "webhook_endpoint_details", r, 0, http.StatusOK)
	list := call(t, env, p, http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil)
	items, _ := list.Data["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("list: %s", list)
	}
	listed := items[0].(map[string]any)
	for _, k := range []string{"token", "id", "url", "status"} {
		if r.Data[k] != listed[k] {
			t.Errorf("%s: details %v, list %v", k, r.Data[k], listed[k])
		}
	}
	if _, secret := r.Data["secret"]; secret {
		t.Errorf("details show the secret: %s", r)
	}
	apptest.Expect(t, "another partner's endpoint", call(t, env, q, http.MethodGet, "/v2/webhooks/"+ep, "webhook_endpoint_details", nil),
		emi.ErrAPIWebhookEndpointNotFound.Code, http.StatusNotFound)
	apptest.Expect(t, "an unknown endpoint", call(t, env, p, http.MethodGet, "/v2/webhooks/"+kernel.NewToken(), "webhook_endpoint_details", nil),
		emi.ErrAPIWebhookEndpointNotFound.Code, http.StatusNotFound)
	apptest.Expect(t, "delete", call(t, env, p, http.MethodDelete, "/v2/webhooks/"+ep, "webhook_endpoint_delete", nil), 0, http.StatusOK)
	apptest.Expect(t, "a deleted endpoint", call(t, env, p, http.MethodGet, "/v2/webhooks/"+ep, "webhook_endpoint_details", nil),
		emi.ErrAPIWebhookEndpointNotFound.Code, http.StatusNotFound)
}
