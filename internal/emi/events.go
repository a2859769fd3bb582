package emi

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// ValidEventType reports whether t is in the catalogue (EventTypes).
func ValidEventType(t EventType) bool { return slices.Contains(EventTypes(), t) }

// Resource returns the name under which an event's data carries the token
// of the resource it is about (contract §9): the part of the type before the
// dot (application, user, aml_check, account, card), and "endpoint" for
// webhook.test, whose resource is the endpoint it is sent to.
func (t EventType) Resource() string {
	if t == EventWebhookTest {
		return "endpoint"
	}
	r, _, _ := strings.Cut(string(t), ".")
	return r
}

// EventTypeNames returns the catalogue as strings, for messages.
func EventTypeNames() []string {
	ts := EventTypes()
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// StoredEvent is an event as kept in the outbox: the event, the token of
// the resource it is about, its position in the partner's stream and the
// exact bytes every delivery sends (and events_list returns).
type StoredEvent struct {
	Event
	ResourceToken string
	// Seq orders events stably; per partner it is also commit order.
	Seq int64
	// Body is the JSON body `{"id","type","created_at","data"}` as
	// serialised once at emit time.
	Body json.RawMessage
	// EndpointID is the only target of a webhook.test event ("" otherwise).
	EndpointID string
}

// EventList is the input of events_list: a partner reading its own events.
type EventList struct {
	// Page starts at 1; Limit is 1..100.
	Page  int
	Limit int
	// Type keeps only events of that type ("" for all).
	Type EventType
	// After, an event id of the caller's, keeps only the events after it,
	// oldest first, so a partner can page forward to reconcile.
	After string
}

// EventPage is one page of a partner's events: the exact webhook bodies.
type EventPage struct {
	Items []json.RawMessage
	Page  int
	Limit int
	Total int64
}

// WebhookEndpoint is a partner's webhook endpoint, without its secrets.
type WebhookEndpoint struct {
	ID          string
	PartnerID   string
	URL         string
	Description string
	// EventTypes filters what is sent; empty means every type.
	EventTypes []EventType
	Enabled    bool
	// DisabledReason says why a disabled endpoint is disabled (staff, 410
	// Gone, failing for 5 days); "" while enabled.
	DisabledReason string
	// FailingSince is the first failed attempt of the current run of
	// failures (nil after a success).
	FailingSince *time.Time
	// PreviousValidUntil is when the secret replaced by the last rotation
	// stops signing (nil when there is no previous secret).
	PreviousValidUntil *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// Health is filled by the endpoint listing only.
	Health EndpointHealth
}

// EndpointHealth sums up an endpoint's recent attempts.
type EndpointHealth struct {
	// Attempts and Succeeded count the attempts of the last 24 hours.
	Attempts  int
	Succeeded int
	// LastAttemptAt, LastStatus (0: no answer) and LastError describe the
	// newest attempt; LastAttemptAt is nil when there was none.
	LastAttemptAt *time.Time
	LastStatus    int
	LastError     string
	// Pending counts the deliveries still waiting for an attempt.
	Pending int
}

// SuccessRate returns the share of the last 24 hours' attempts that
// succeeded, in [0, 1], and false when there were none.
func (h EndpointHealth) SuccessRate() (float64, bool) {
	if h.Attempts == 0 {
		return 0, false
	}
	return float64(h.Succeeded) / float64(h.Attempts), true
}

// DeliveryState is where the delivery of one event to one endpoint is.
type DeliveryState string

// Delivery states.
const (
	// DeliveryPending: an attempt is due or running.
	DeliveryPending DeliveryState = "pending"
	// DeliverySucceeded: an attempt got a 2xx. Never sent again, unless
	// replayed.
	DeliverySucceeded DeliveryState = "succeeded"
	// DeliveryFailed: gave up (retry schedule exhausted, 410 Gone, endpoint
	// disabled after failing for days, or a test event's one attempt).
	DeliveryFailed DeliveryState = "failed"
	// DeliveryCanceled: the endpoint was disabled or deleted first.
	DeliveryCanceled DeliveryState = "canceled"
)

// DeliveryStates are the delivery states, in the order a delivery goes
// through them (the back office's status filter lists them so).
var DeliveryStates = []DeliveryState{DeliveryPending, DeliverySucceeded, DeliveryFailed, DeliveryCanceled}

// WebhookDelivery is one event's delivery to one endpoint, with its attempts
// (oldest first) when listed in the events log.
type WebhookDelivery struct {
	ID          string
	EventID     string
	EndpointID  string
	EndpointURL string
	State       DeliveryState
	// Attempts counts every attempt, replays included.
	Attempts int
	// NextAttemptAt is when the next scheduled attempt is due (pending only).
	NextAttemptAt *time.Time
	// LastStatus is the HTTP status of the last attempt (0: none or no
	// answer); LastError its error.
	LastStatus int
	LastError  string
	// ReplayRequested is set between a replay request and its attempt.
	ReplayRequested bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
	SucceededAt     *time.Time
	AttemptLog      []WebhookAttempt
}

// WebhookAttempt is one HTTP attempt of a delivery.
type WebhookAttempt struct {
	ID         int64
	DeliveryID string
	// Attempt numbers the attempts of the delivery from 1.
	Attempt   int
	StartedAt time.Time
	// Status is the HTTP status, 0 when no answer arrived.
	Status  int
	Latency time.Duration
	// ResponseExcerpt is at most the first 1 KiB of the answer, as valid
	// UTF-8 (invalid bytes replaced).
	ResponseExcerpt string
	// Error describes a failure without an HTTP answer.
	Error string
	// Replay marks an attempt asked for in the back office; ReplayedBy is
	// the staff user's id.
	Replay     bool
	ReplayedBy string
}

// OK reports whether the attempt succeeded (any 2xx).
func (a WebhookAttempt) OK() bool { return a.Status >= 200 && a.Status < 300 && a.Error == "" }

// EventLogFilter selects events for the back office's delivery log. Zero
// fields match everything; Page starts at 1 and Limit is 1..100 (default 50).
type EventLogFilter struct {
	PartnerID     string
	Type          EventType
	ResourceToken string
	// State keeps the events with a delivery in that state ("" any).
	State    DeliveryState
	From, To time.Time
	Page     int
	Limit    int
}

// EventLogEntry is one event with its deliveries and their attempts.
type EventLogEntry struct {
	StoredEvent
	Deliveries []WebhookDelivery
}

// EventLog is one page of the back office's delivery log, newest first.
type EventLog struct {
	Items []EventLogEntry
	Page  int
	Limit int
	Total int64
}
