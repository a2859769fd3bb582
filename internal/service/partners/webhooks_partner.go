package partners

import (
	"context"
	"errors"
	"fmt"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// The partner's own webhook endpoints through the API, so a partner need
// not ask staff to change them: the back office's operations (AddEndpoint,
// RotateEndpointSecret, SendTest, Replay), scoped to the calling partner,
// another partner's endpoint being reported as unknown. They run as the
// system (the partner's key is the audit row's requester, in the request
// metadata and the changes), and the back office's errors become the
// partner catalogue's 15001-15004.

// partnerEndpoint returns the caller and checks that endpointID is one of
// its endpoints. Returns emi.ErrAPIWebhookEndpointNotFound.
func (s *Webhooks) partnerEndpoint(ctx context.Context, endpointID string) (emi.Principal, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || !p.IsPartner() {
		return emi.Principal{}, emi.ErrAPIWebhookEndpointNotFound
	}
	if endpointID == "" {
		return p, nil
	}
	ep, err := s.store.Endpoint(ctx, endpointID)
	if errors.Is(err, emi.ErrWebhookEndpointNotFound) || err == nil && (ep.PartnerID != p.PartnerID || ep.Deleted) {
		return emi.Principal{}, emi.ErrAPIWebhookEndpointNotFound
	}
	return p, err
}

// asPartnerSystem runs a back-office operation for the partner's own
// endpoint as the system, naming the key in the principal's id.
func asPartnerSystem(ctx context.Context, p emi.Principal) context.Context {
	return emi.WithPrincipal(ctx, emi.Principal{Type: emi.ActorSystem, ActorID: p.ActorID})
}

// partnerWebhookError maps the back office's webhook errors to the
// partner catalogue's.
func partnerWebhookError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, emi.ErrWebhookValidation):
		return emi.ErrAPIWebhookValidation.WithFields(emi.AsError(err).Fields...)
	case errors.Is(err, emi.ErrWebhookEndpointNotFound):
		return emi.ErrAPIWebhookEndpointNotFound
	case errors.Is(err, emi.ErrWebhookDeliveryNotFound):
		return emi.ErrAPIWebhookDeliveryNotFound
	case errors.Is(err, emi.ErrWebhookEndpointDisabled):
		return emi.ErrAPIWebhookEndpointDisabled
	case errors.Is(err, emi.ErrWebhookEndpointLimit):
		return emi.ErrAPIWebhookEndpointLimit.WithFields(emi.AsError(err).Fields...)
	case errors.Is(err, emi.ErrWebhookHostLimit):
		return emi.ErrAPIWebhookHostLimit.WithFields(emi.AsError(err).Fields...)
	}
	return err
}

// MaxEndpointsPage bounds a page of webhook_endpoints_list.
const MaxEndpointsPage = 100

// EndpointList is what webhook_endpoints_list asks: a cursor (the last
// endpoint of the previous page; "" from the first) and a page size, 1 to
// MaxEndpointsPage, or nil for every endpoint (the list's answer before it
// took a cursor).
type EndpointList struct {
	StartingAfter string
	Limit         *int
}

// PartnerEndpoints lists the caller's endpoints with their health
// (webhook_endpoints_list), oldest first: after q.StartingAfter when it is
// set (one of the caller's endpoints, a deleted one too: a walk goes on
// when the last endpoint it read was deleted since), at most *q.Limit,
// and whether more follow. 15001 for a bad query, every problem at once.
func (s *Webhooks) PartnerEndpoints(ctx context.Context, q EndpointList) ([]emi.WebhookEndpoint, bool, error) {
	p, err := s.partnerEndpoint(ctx, "")
	if err != nil {
		return nil, false, err
	}
	var bad kernel.Problems
	page := EndpointPage{After: q.StartingAfter}
	if q.Limit != nil {
		if *q.Limit < 1 || *q.Limit > MaxEndpointsPage {
			bad.Add("limit", fmt.Sprintf("must be a whole number from 1 to %d", MaxEndpointsPage))
		}
		// One more than the page tells whether more follow.
		page.Limit = *q.Limit + 1
	}
	if q.StartingAfter != "" {
		ep, err := s.store.Endpoint(ctx, q.StartingAfter)
		switch {
		case errors.Is(err, emi.ErrWebhookEndpointNotFound) || err == nil && ep.PartnerID != p.PartnerID:
			bad.Add("starting_after", "is not one of your webhook endpoints")
		case err != nil:
			return nil, false, err
		}
	}
	if len(bad) > 0 {
		return nil, false, emi.ErrAPIWebhookValidation.WithFields(bad...)
	}
	eps, err := s.endpoints(asPartnerSystem(ctx, p), p.PartnerID, page)
	if err != nil {
		return nil, false, partnerWebhookError(err)
	}
	if q.Limit != nil && len(eps) > *q.Limit {
		return eps[:*q.Limit], true, nil
	}
	return eps, false, nil
}

// PartnerEndpoint returns one of the caller's endpoints with its health
// (webhook_endpoint_details), as PartnerEndpoints lists it. Another
// partner's endpoint, a deleted one or an unknown id is
// emi.ErrAPIWebhookEndpointNotFound.
func (s *Webhooks) PartnerEndpoint(ctx context.Context, endpointID string) (emi.WebhookEndpoint, error) {
	if endpointID == "" {
		return emi.WebhookEndpoint{}, emi.ErrAPIWebhookEndpointNotFound
	}
	p, err := s.partnerEndpoint(ctx, endpointID)
	if err != nil {
		return emi.WebhookEndpoint{}, err
	}
	eps, err := s.Endpoints(asPartnerSystem(ctx, p), p.PartnerID)
	if err != nil {
		return emi.WebhookEndpoint{}, partnerWebhookError(err)
	}
	for _, ep := range eps {
		if ep.ID == endpointID {
			return ep, nil
		}
	}
	return emi.WebhookEndpoint{}, emi.ErrAPIWebhookEndpointNotFound
}

// PartnerAddEndpoint registers an endpoint for the caller and returns it
// with its signing secret, shown this once.
func (s *Webhooks) PartnerAddEndpoint(ctx context.Context, in emi.WebhookEndpointCreate) (emi.WebhookEndpoint, string, error) {
	p, err := s.partnerEndpoint(ctx, "")
	if err != nil {
		return emi.WebhookEndpoint{}, "", err
	}
	ep, secret, err := s.AddEndpoint(asPartnerSystem(ctx, p), p.PartnerID, in.URL, in.Description, in.EventTypes)
	return ep, secret, partnerWebhookError(err)
}

// PartnerRotateEndpointSecret gives the caller's endpoint a new secret
// (the previous one signs too until the returned time).
func (s *Webhooks) PartnerRotateEndpointSecret(ctx context.Context, endpointID string) (string, time.Time, error) {
	p, err := s.partnerEndpoint(ctx, endpointID)
	if err != nil {
		return "", time.Time{}, err
	}
	secret, until, err := s.RotateEndpointSecret(asPartnerSystem(ctx, p), p.PartnerID, endpointID)
	return secret, until, partnerWebhookError(err)
}

// PartnerDeleteEndpoint deletes the caller's endpoint: it gets no more
// events, its pending deliveries are canceled, and it no longer counts
// against the endpoint limits (15005, 15006), which is what a partner at
// the limit does before adding another.
func (s *Webhooks) PartnerDeleteEndpoint(ctx context.Context, endpointID string) error {
	p, err := s.partnerEndpoint(ctx, endpointID)
	if err != nil {
		return err
	}
	return partnerWebhookError(s.DeleteEndpoint(asPartnerSystem(ctx, p), p.PartnerID, endpointID))
}

// PartnerUpdateEndpoint changes the fields of the caller's endpoint that
// in carries (url, description, event_types; the others keep their
// values), each checked as webhook_endpoint_create checks it, and returns
// the endpoint. The secret does not change (rotate does that). Deliveries
// still pending stay pending: their next attempt goes to the new URL (an
// attempt reads the endpoint when it is made), while a narrower filter
// applies to events emitted after the update. The ownership check
// comes first, so another partner's endpoint is 15002 whatever the body.
// Returns emi.ErrAPIWebhookValidation, emi.ErrAPIWebhookHostLimit and
// emi.ErrAPIWebhookEndpointNotFound.
func (s *Webhooks) PartnerUpdateEndpoint(ctx context.Context, endpointID string, in emi.WebhookEndpointUpdate) (emi.WebhookEndpoint, error) {
	p, err := s.partnerEndpoint(ctx, endpointID)
	if err != nil {
		return emi.WebhookEndpoint{}, err
	}
	ep, err := s.updateEndpoint(asPartnerSystem(ctx, p), p.PartnerID, endpointID, in)
	return ep, partnerWebhookError(err)
}

// PartnerSetEndpointEnabled disables or enables the caller's endpoint and
// returns it. A disabled endpoint gets nothing: its pending deliveries
// (those waiting for a retry included) are canceled, and events emitted
// while it is disabled get no delivery to it. Enabling sends nothing of
// what was missed (webhook_delivery_replay does, one event at a time;
// events_list lists them), and is refused with 15005 or 15006 when the
// endpoint would be one too many. Disabling a disabled endpoint, or
// enabling an enabled one, changes nothing. Returns
// emi.ErrAPIWebhookEndpointNotFound too.
func (s *Webhooks) PartnerSetEndpointEnabled(ctx context.Context, endpointID string, enabled bool) (emi.WebhookEndpoint, error) {
	p, err := s.partnerEndpoint(ctx, endpointID)
	if err != nil {
		return emi.WebhookEndpoint{}, err
	}
	ep, err := s.setEndpointEnabled(asPartnerSystem(ctx, p), p.PartnerID, endpointID, enabled, disabledByPartner)
	return ep, partnerWebhookError(err)
}

// PartnerSendTest sends a webhook.test event to the caller's endpoint,
// worded for the API: its data says it was asked for through the API, with
// which key.
func (s *Webhooks) PartnerSendTest(ctx context.Context, endpointID string) (emi.Event, error) {
	p, err := s.partnerEndpoint(ctx, endpointID)
	if err != nil {
		return emi.Event{}, err
	}
	ev, err := s.sendTest(asPartnerSystem(ctx, p), p.PartnerID, endpointID, TestFromAPI,
		"A test event sent through the emi API (webhook_endpoint_test) by API key id "+p.ActorID+".")
	return ev, partnerWebhookError(err)
}

// PartnerReplay attempts the delivery of one of the caller's events to one
// of its endpoints again now (a failed one, typically, once the receiver
// is fixed). Returns emi.ErrAPIWebhookValidation for a malformed event id,
// emi.ErrAPIWebhookEndpointNotFound, emi.ErrAPIWebhookDeliveryNotFound and
// emi.ErrAPIWebhookEndpointDisabled.
func (s *Webhooks) PartnerReplay(ctx context.Context, endpointID string, in emi.WebhookReplay) (string, error) {
	if !kernel.ValidToken(in.Event) {
		return "", emi.ErrAPIWebhookValidation.Field("event", "must be an event id (events_list)")
	}
	p, err := s.partnerEndpoint(ctx, endpointID)
	if err != nil {
		return "", err
	}
	id, err := s.store.DeliveryFor(ctx, in.Event, endpointID)
	if err != nil {
		return "", partnerWebhookError(err)
	}
	return id, partnerWebhookError(s.Replay(asPartnerSystem(ctx, p), p.PartnerID, id))
}
