package emi

import "time"

// SandboxKYCDecision is the request of sandbox_kyc_decide: the outcome a
// compliance officer would give the user's open identification session,
// and the reason sent to the partner in user.kyc_updated.
type SandboxKYCDecision struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// SandboxAMLReview is the request of sandbox_aml_review: every open hit a
// false positive (cleared) or a true match (confirmed).
type SandboxAMLReview struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// SandboxApplicationDecision is the request of sandbox_application_decide:
// an underwriter's decision (approved, rejected with reason_code and text,
// information_requested with text, the message for the partner).
type SandboxApplicationDecision struct {
	Outcome    string `json:"outcome"`
	ReasonCode string `json:"reason_code"`
	Text       string `json:"text"`
}

// WebhookEndpointCreate is the request of webhook_endpoint_create.
type WebhookEndpointCreate struct {
	URL         string      `json:"url"`
	Description string      `json:"description"`
	EventTypes  []EventType `json:"event_types"`
}

// WebhookEndpointUpdate is the request of webhook_endpoint_update: the
// fields sent are changed, a field left out keeps its value (as
// card_groups and user_update); null is refused by the decoder. An empty
// event_types list means every event type, as at creation.
type WebhookEndpointUpdate struct {
	URL         *string      `json:"url"`
	Description *string      `json:"description"`
	EventTypes  *[]EventType `json:"event_types"`
}

// SandboxEventTrigger is the request of sandbox_event_trigger: the type of
// the sample event the sandbox emits to the partner's endpoints.
type SandboxEventTrigger struct {
	Type EventType `json:"type"`
}

// WebhookReplay is the request of webhook_delivery_replay: the event whose
// delivery to the endpoint is attempted again.
type WebhookReplay struct {
	Event string `json:"event"`
}

// SandboxReset is what sandbox_reset did: when, and how many rows of each
// kind left the partner's sandbox (by table; kinds with none are absent).
type SandboxReset struct {
	ResetAt time.Time        `json:"reset_at"`
	Moved   map[string]int64 `json:"moved"`
}

// TestClock is a sandbox partner's test clock (sandbox_test_clock_*): the
// time every request and every piece of work of the partner reads while
// the clock exists. Status is ready, or advancing while an advance runs
// what became due (AdvancingTo is then where it goes).
type TestClock struct {
	Token       string     `json:"token"`
	Name        string     `json:"name"`
	FrozenTime  time.Time  `json:"frozen_time"`
	Status      string     `json:"status"`
	AdvancingTo *time.Time `json:"advancing_to"`
	CreatedAt   time.Time  `json:"created_at"`
	// AdvancingSince is when the running advance started (not answered:
	// an advance older than a few minutes is taken as crashed).
	AdvancingSince *time.Time `json:"-"`
}

// Test clock states.
const (
	TestClockReady     = "ready"
	TestClockAdvancing = "advancing"
)

// TestClockCreate is the request of sandbox_test_clock_create: the time
// the clock starts at (now when left out) and a name for the partner's own
// use.
type TestClockCreate struct {
	FrozenTime *time.Time `json:"frozen_time"`
	Name       string     `json:"name"`
}

// TestClockAdvance is the request of sandbox_test_clock_advance: the time
// the clock moves to, later than its own.
type TestClockAdvance struct {
	FrozenTime time.Time `json:"frozen_time"`
}

// TestClockAdvanced is what an advance did: the clock afterwards, and how
// much of each kind of work became due and ran, in time order (kinds with
// none are absent): hold_expired, kyc_session_expired, webhook_attempt.
type TestClockAdvanced struct {
	Clock TestClock      `json:"clock"`
	Ran   map[string]int `json:"ran"`
}
