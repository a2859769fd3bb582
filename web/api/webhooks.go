package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/partners"
)

// A partner's webhook endpoints, so a partner need not ask staff to change
// them: the back office's operations, signed like every other.

type webhookEndpointResponse struct {
	// Token is the endpoint's token, as every other resource of the API
	// names its own; ID is the same value under the name this resource
	// had first, kept for the life of /v2 (deprecated, see the
	// WebhookEndpoint schema).
	Token          string          `json:"token"`
	ID             string          `json:"id"`
	URL            string          `json:"url"`
	Description    string          `json:"description"`
	EventTypes     []emi.EventType `json:"event_types"`
	Enabled        bool            `json:"enabled"`
	DisabledReason string          `json:"disabled_reason"`
	FailingSince   *time.Time      `json:"failing_since"`
	CreatedAt      time.Time       `json:"created_at"`
	// Secret is in webhook_endpoint_create's answer only.
	Secret string `json:"secret,omitempty"`
}

func newWebhookEndpointResponse(ep emi.WebhookEndpoint) webhookEndpointResponse {
	types := ep.EventTypes
	if types == nil {
		types = []emi.EventType{}
	}
	return webhookEndpointResponse{Token: ep.ID, ID: ep.ID, URL: ep.URL, Description: ep.Description, EventTypes: types, Enabled: ep.Enabled,
		DisabledReason: ep.DisabledReason, FailingSince: ep.FailingSince, CreatedAt: ep.CreatedAt}
}

type webhookEndpointsResponse struct {
	Items   []webhookEndpointResponse `json:"items"`
	HasMore bool                      `json:"has_more"`
}

// webhookEndpointsListFilters are the query parameters
// webhook_endpoints_list accepts.
var webhookEndpointsListFilters = []string{"limit", "starting_after"}

// webhookEndpointsList (GET /v2/webhooks): every endpoint, or a page of
// limit, after a cursor (starting_after: the last token of the previous
// page).
func (a *API) webhookEndpointsList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, webhookEndpointsListFilters, emi.ErrAPIWebhookValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	in := partners.EndpointList{StartingAfter: q.Get("starting_after")}
	if n, given := queryLimit(q); given {
		in.Limit = &n
	}
	eps, more, err := a.d.Webhooks.PartnerEndpoints(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := webhookEndpointsResponse{Items: []webhookEndpointResponse{}, HasMore: more}
	for _, ep := range eps {
		resp.Items = append(resp.Items, newWebhookEndpointResponse(ep))
	}
	writeData(w, r, http.StatusOK, resp)
}

// webhookEndpointDetails (GET /v2/webhooks/{endpoint}): one endpoint as
// the list shows it.
func (a *API) webhookEndpointDetails(w http.ResponseWriter, r *http.Request) {
	ep, err := a.d.Webhooks.PartnerEndpoint(r.Context(), chi.URLParam(r, "endpoint"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newWebhookEndpointResponse(ep))
}

// webhookEndpointCreate (POST /v2/webhooks).
func (a *API) webhookEndpointCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.WebhookEndpointCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	ep, secret, err := a.d.Webhooks.PartnerAddEndpoint(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := newWebhookEndpointResponse(ep)
	resp.Secret = secret
	writeData(w, r, http.StatusCreated, resp)
}

type webhookSecretResponse struct {
	Secret             string    `json:"secret"`
	PreviousValidUntil time.Time `json:"previous_valid_until"`
}

// webhookEndpointRotateSecret (POST /v2/webhooks/{endpoint}/rotate).
func (a *API) webhookEndpointRotateSecret(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	secret, until, err := a.d.Webhooks.PartnerRotateEndpointSecret(r.Context(), chi.URLParam(r, "endpoint"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, webhookSecretResponse{Secret: secret, PreviousValidUntil: until})
}

// webhookEndpointTest (POST /v2/webhooks/{endpoint}/test).
func (a *API) webhookEndpointTest(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	ev, err := a.d.Webhooks.PartnerSendTest(r.Context(), chi.URLParam(r, "endpoint"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusAccepted, map[string]string{"event": ev.ID})
}

// webhookEndpointDelete (POST /v2/webhooks/{endpoint}/delete).
func (a *API) webhookEndpointDelete(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	id := chi.URLParam(r, "endpoint")
	if err := a.d.Webhooks.PartnerDeleteEndpoint(r.Context(), id); err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, webhookEndpointDeleted{Token: id, ID: id, Deleted: true})
}

// webhookEndpointDeleted is the answer of webhook_endpoint_delete.
type webhookEndpointDeleted struct {
	Token string `json:"token"`
	// ID is Token under its deprecated name.
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// webhookEndpointUpdate (PUT /v2/webhooks/{endpoint}).
func (a *API) webhookEndpointUpdate(w http.ResponseWriter, r *http.Request) {
	var in emi.WebhookEndpointUpdate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	ep, err := a.d.Webhooks.PartnerUpdateEndpoint(r.Context(), chi.URLParam(r, "endpoint"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newWebhookEndpointResponse(ep))
}

// webhookEndpointDisable (POST /v2/webhooks/{endpoint}/disable).
func (a *API) webhookEndpointDisable(w http.ResponseWriter, r *http.Request) {
	a.webhookEndpointSetEnabled(w, r, false)
}

// webhookEndpointEnable (POST /v2/webhooks/{endpoint}/enable).
func (a *API) webhookEndpointEnable(w http.ResponseWriter, r *http.Request) {
	a.webhookEndpointSetEnabled(w, r, true)
}

func (a *API) webhookEndpointSetEnabled(w http.ResponseWriter, r *http.Request, enabled bool) {
	var in struct{}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	ep, err := a.d.Webhooks.PartnerSetEndpointEnabled(r.Context(), chi.URLParam(r, "endpoint"), enabled)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newWebhookEndpointResponse(ep))
}

// sandboxEventTrigger (POST /v2/sandbox/events): a sample event of the
// type asked for, to the caller's endpoints (sandbox only).
func (a *API) sandboxEventTrigger(w http.ResponseWriter, r *http.Request) {
	var in emi.SandboxEventTrigger
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	ev, err := a.d.Webhooks.PartnerTriggerEvent(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, map[string]string{"event": ev.ID, "type": string(ev.Type)})
}

// webhookDeliveryReplay (POST /v2/webhooks/{endpoint}/replay).
func (a *API) webhookDeliveryReplay(w http.ResponseWriter, r *http.Request) {
	var in emi.WebhookReplay
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	id, err := a.d.Webhooks.PartnerReplay(r.Context(), chi.URLParam(r, "endpoint"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusAccepted, map[string]string{"delivery": id, "event": in.Event})
}
