package emi

import "time"

// EventType names a webhook event (contract §9). The catalogue below is the
// one place event types are declared; openapi.yaml documents each data shape.
type EventType string

// Event types of contract §9, plus webhook.test for "send test event".
const (
	EventApplicationChecksCompleted EventType = "application.checks_completed"
	EventApplicationInReview        EventType = "application.in_review"
	EventApplicationInfoRequested   EventType = "application.information_requested"
	EventApplicationApproved        EventType = "application.approved"
	EventApplicationRejected        EventType = "application.rejected"
	EventUserKYCUpdated             EventType = "user.kyc_updated"
	EventAMLCheckReviewed           EventType = "aml_check.reviewed"
	EventAccountStatusChanged       EventType = "account.status_changed"
	EventCardStatusChanged          EventType = "card.status_changed"
	EventCardActivated              EventType = "card.activated"
	EventCardConverted              EventType = "card.converted"
	// EventCardReplaced: staff issued a replacement for a terminated card
	// (lost, stolen...); data names the new card and the card it replaces,
	// so the partner can link the two.
	EventCardReplaced      EventType = "card.replaced"
	EventTransferCompleted EventType = "transfer.completed"
	EventTransferReturned  EventType = "transfer.returned"
	// EventTransferHeldForReview: the transfer waits for a review by emi
	// before the money moves on; transfer.completed (internal) or
	// transfer.returned follows. Only the sending partner receives it.
	EventTransferHeldForReview EventType = "transfer.held_for_review"
	// Card payments: the decision on an authorization, then its
	// end: cleared (the money moved), reversed (the merchant cancelled) or
	// expired (never cleared; the hold is released).
	EventAuthorizationDecided  EventType = "authorization.decided"
	EventAuthorizationCleared  EventType = "authorization.cleared"
	EventAuthorizationReversed EventType = "authorization.reversed"
	EventAuthorizationExpired  EventType = "authorization.expired"
	EventWebhookTest           EventType = "webhook.test"
	// EventInformationRequestCreated: emi asks the partner about a
	// customer (a routine review's questions); the partner answers with
	// information_request_answer.
	EventInformationRequestCreated EventType = "information_request.created"
)

// EventTypes lists every event type, in documentation order.
func EventTypes() []EventType {
	return []EventType{EventApplicationChecksCompleted, EventApplicationInReview, EventApplicationInfoRequested,
		EventApplicationApproved, EventApplicationRejected, EventUserKYCUpdated, EventAMLCheckReviewed,
		EventAccountStatusChanged, EventCardStatusChanged, EventCardActivated, EventCardConverted, EventCardReplaced, EventTransferCompleted,
		EventTransferReturned, EventTransferHeldForReview, EventAuthorizationDecided, EventAuthorizationCleared, EventAuthorizationReversed, EventAuthorizationExpired, EventInformationRequestCreated, EventWebhookTest}
}

// Event is one event of a partner: `{"id", "type", "created_at", "data"}`
// on the wire. data names the resource's token under the resource's name
// (application, user, aml_check, account, card) beside the event's fields.
type Event struct {
	ID        string         `json:"id" db:"id"`
	PartnerID string         `json:"-" db:"partner_id"`
	Type      EventType      `json:"type" db:"type"`
	CreatedAt time.Time      `json:"created_at" db:"created_at"`
	Data      map[string]any `json:"data" db:"-"`
}

// WebhookMessage is one delivery attempt to make: the exact body bytes are
// signed and sent as they are (never re-serialised).
type WebhookMessage struct {
	// ID is the event id, sent as webhook-id (the same on every retry).
	ID string
	// Timestamp is sent as webhook-timestamp (UNIX seconds) and signed.
	Timestamp time.Time
	URL       string
	Body      []byte
	// Secrets are the raw signing keys (decoded from whsec_…); during a
	// rotation two, giving two signatures in webhook-signature.
	Secrets [][]byte
}

// WebhookResult is what one attempt got.
type WebhookResult struct {
	// Status is the HTTP status, 0 when no answer arrived.
	Status  int
	Latency time.Duration
	// Body is at most the first 1 KiB of the answer.
	Body []byte
	// Error describes a failure without an HTTP answer (timeout, refused,
	// blocked address, redirect…), "" otherwise.
	Error string
	// RetryAfter is the delay a 429 or 503 asked for (0 when none).
	RetryAfter time.Duration
}

// OK reports whether the attempt succeeded (any 2xx).
func (r WebhookResult) OK() bool { return r.Status >= 200 && r.Status < 300 && r.Error == "" }

// Gone reports whether the endpoint asked never to be called again (410).
func (r WebhookResult) Gone() bool { return r.Status == 410 }
