package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pb33f/libopenapi-validator/schema_validation"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
)

// TestSandboxTriggerEmitsEveryTypeAsDocumented: sandbox_event_trigger
// emits, for every type of the catalogue but webhook.test, an event whose
// stored body (the bytes every delivery sends) validates against the
// type's entry in openapi.yaml's webhooks section, names its resource and
// says sandbox_sample; it goes to the endpoints whose filter takes it,
// as a real event does, and to no other. webhook.test and unknown types
// are 15001 on type; in production the route is 404 / 10004.
func TestSandboxTriggerEmitsEveryTypeAsDocumented(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	rc := &pathReceiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Trigger Happy"})
	cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{
		"url": srv.URL + "/cards", "event_types": []string{string(emi.EventCardStatusChanged)}})
	apptest.Expect(t, "create", cr, 0, http.StatusCreated)
	endpoint := cr.Data["token"].(string)

	m := openAPIModel(t)
	sv := schema_validation.NewSchemaValidator()
	var cardEvent string
	for _, typ := range emi.EventTypes() {
		if typ == emi.EventWebhookTest {
			continue
		}
		ev := triggerEvent(t, env, p, typ)
		if typ == emi.EventCardStatusChanged {
			cardEvent = ev
		}
		var body []byte
		if err := env.App.DB.Get(&body, `SELECT body FROM events WHERE id = $1 AND partner_id = $2 AND type = $3`, ev, p.ID, typ); err != nil {
			t.Fatalf("%s: the event %s is not stored as the partner's: %v", typ, ev, err)
		}
		item := m.Webhooks.GetOrZero(string(typ))
		if item == nil || item.Post == nil || item.Post.RequestBody == nil {
			t.Fatalf("%s is not in openapi.yaml's webhooks section", typ)
		}
		schema := item.Post.RequestBody.Content.GetOrZero("application/json").Schema.Schema()
		if ok, errs := sv.ValidateSchemaBytes(schema, body); !ok {
			t.Errorf("%s: the sample does not match its documented shape: %s\n%s", typ, validationErrors(errs), body)
		}
		data := eventBodyData(t, body)
		if data[typ.Resource()] == nil || data["sandbox_sample"] != true {
			t.Errorf("%s: data names no %s, or is not marked sandbox_sample: %s", typ, typ.Resource(), body)
		}
		_, addressed := deliveryOf(t, env, ev, endpoint)
		if addressed != (typ == emi.EventCardStatusChanged) {
			t.Errorf("%s: addressed to the endpoint filtered on card.status_changed: %v", typ, addressed)
		}
	}
	rc.waitReceived(t, cardEvent, 1)

	for _, typ := range []string{"webhook.test", "card.exploded", ""} {
		r := call(t, env, p, http.MethodPost, "/v2/sandbox/events", "sandbox_event_trigger", map[string]any{"type": typ})
		apptest.Expect(t, "trigger "+typ, r, emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
		apptest.ExpectField(t, "trigger "+typ, r, "type")
	}

	prod := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	pp := prod.NewPartner(t, emi.PartnerCreate{Name: "Live"})
	r := call(t, prod, pp, http.MethodPost, "/v2/sandbox/events", "sandbox_event_trigger", map[string]any{"type": "card.activated"})
	apptest.Expect(t, "trigger in production", r, emi.ErrRouteNotFound.Code, http.StatusNotFound)
	var n int
	if err := prod.App.DB.Get(&n, `SELECT count(*) FROM events WHERE partner_id = $1`, pp.ID); err != nil || n != 0 {
		t.Fatalf("production emitted %d events (%v)", n, err)
	}
}

// eventBodyData returns the data of an event body.
func eventBodyData(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var ev struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Data
}
