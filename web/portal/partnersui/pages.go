// Package partnersui is the back office's partner screens: partners and
// their API keys, webhook endpoints and the events log with replays, and
// each partner's request validator configuration.
package partnersui

import (
	"context"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/web/portal/frame"
)

// WebhookService is what the partner pages need of the webhook service.
type WebhookService interface {
	AddEndpoint(ctx context.Context, partnerID, url, description string, types []emi.EventType) (emi.WebhookEndpoint, string, error)
	// The endpoint and delivery operations name the partner of the page
	// ({id}): another partner's endpoint or delivery is not found.
	SetEndpointEnabled(ctx context.Context, partnerID, endpointID string, enabled bool) error
	RotateEndpointSecret(ctx context.Context, partnerID, endpointID string) (string, time.Time, error)
	Endpoints(ctx context.Context, partnerID string) ([]emi.WebhookEndpoint, error)
	SendTest(ctx context.Context, partnerID, endpointID string) (emi.Event, error)
	Replay(ctx context.Context, partnerID, deliveryID string) error
	ReplayFailed(ctx context.Context, f emi.EventLogFilter) (int, error)
	EventsLog(ctx context.Context, f emi.EventLogFilter) (emi.EventLog, error)
}

// Pages are the partner screens.
type Pages struct {
	frame      *frame.Frame
	partners   *partners.Partners
	webhooks   WebhookService
	validators *onboarding.Onboarding // the request validator's configurations
}

// New returns the partner pages.
func New(f *frame.Frame, pt *partners.Partners, webhooks WebhookService, validators *onboarding.Onboarding) *Pages {
	return &Pages{frame: f, partners: pt, webhooks: webhooks, validators: validators}
}

// Nav is the partner screens' navigation link.
func Nav() frame.NavEntry {
	return frame.NavEntry{Href: "/backoffice/partners", Label: "Partners", Op: partners.View}
}

// Routes maps the partner screens.
func (p *Pages) Routes(r chi.Router) {
	g := p.frame.Guard
	r.With(g(partners.View)).Get("/partners", p.partnerList)
	r.With(g(partners.Manage)).Get("/partners/new", p.partnerNew)
	r.With(g(partners.Manage)).Post("/partners", p.partnerCreate)
	r.With(g(partners.View)).Get("/partners/{id}", p.partnerDetail)
	r.With(g(partners.Manage)).Post("/partners/{id}/processing", p.partnerProcessing)
	r.With(g(partners.Manage)).Post("/partners/{id}/keys", p.partnerKeyCreate)
	r.With(g(partners.Manage)).Post("/partners/{id}/keys/{key}/rotate", p.partnerKeyRotate)
	r.With(g(partners.Manage)).Post("/partners/{id}/keys/{key}/revoke", p.partnerKeyRevoke)
	r.With(g(partners.Manage)).Post("/partners/{id}/keys/{key}/signature-version", p.partnerKeySignatureVersion)

	r.With(g(partners.ManageWebhooks)).Post("/partners/{id}/webhooks", p.webhookAdd)
	r.With(g(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/test", p.webhookTest)
	r.With(g(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/rotate", p.webhookRotate)
	r.With(g(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/enable", p.webhookEnable)
	r.With(g(partners.ManageWebhooks)).Post("/partners/{id}/webhooks/{ep}/disable", p.webhookDisable)
	r.With(g(partners.ViewWebhooks)).Get("/partners/{id}/events", p.eventsLog)
	r.With(g(partners.ManageWebhooks)).Post("/partners/{id}/deliveries/{delivery}/replay", p.replayDelivery)
	r.With(g(partners.ManageWebhooks)).Post("/partners/{id}/deliveries/replay-failed", p.replayFailed)

	r.With(g(onboarding.ConfigureValidator)).Post("/partners/{id}/validator-config", p.validatorSave)
	r.With(g(onboarding.ConfigureValidator)).Post("/partners/{id}/validator-config/remove", p.validatorRemove)
}
