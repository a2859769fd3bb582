package emi

// Webhook management errors (back office). Like the other back-office
// errors they never reach the partner API, whose events_list answers
// ErrValidation (11001) for a bad filter.
var (
	ErrWebhookValidation       = def(20040, "portal.webhooks.validation", KindInvalid)
	ErrWebhookEndpointNotFound = def(20041, "portal.webhooks.endpoint_not_found", KindNotFound)
	ErrWebhookDeliveryNotFound = def(20042, "portal.webhooks.delivery_not_found", KindNotFound)
	ErrWebhookEndpointDisabled = def(20043, "portal.webhooks.endpoint_disabled", KindConflict)
	// ErrWebhookEndpointLimit and ErrWebhookHostLimit: adding (or enabling,
	// or moving to another host) an endpoint would give the partner more
	// enabled endpoints than allowed, in all or on one host name; the
	// field error on url says the limit. The API answers 15005 and 15006.
	ErrWebhookEndpointLimit = def(20044, "portal.webhooks.endpoint_limit", KindConflict)
	ErrWebhookHostLimit     = def(20045, "portal.webhooks.host_limit", KindConflict)
)

// WebhookCatalogue lists the webhook management errors, for the portal's
// messages.
func WebhookCatalogue() []*Error {
	return []*Error{ErrWebhookValidation, ErrWebhookEndpointNotFound, ErrWebhookDeliveryNotFound, ErrWebhookEndpointDisabled,
		ErrWebhookEndpointLimit, ErrWebhookHostLimit}
}
