package partners

import (
	"context"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Sample events for the sandbox (sandbox_event_trigger, `emi webhooks
// trigger`): a partner building its receiver makes the sandbox emit an
// event of any type without driving the flow behind it (an application
// through review, a card through customer service). The event goes
// through the outbox as a real one does: to every enabled endpoint whose
// filter takes its type, signed, retried, in events_list. Its data has
// the shape the catalogue documents for the type (openapi.yaml's webhooks
// section; TestSandboxTriggerEmitsEveryTypeAsDocumented checks every type
// against it), with fresh tokens that name no resource of the partner (a
// details call on them answers not found) and sandbox_sample: true, so a
// receiver can tell a sample from a real event. The API answers the
// operation only in a sandbox (sandboxOnly).

// SandboxSampleField marks a sample event's data.
const SandboxSampleField = "sandbox_sample"

// PartnerTriggerEvent emits a sample event of type typ to the caller's
// endpoints and audits it. Returns emi.ErrAPIWebhookValidation naming type
// for a type outside the catalogue, or webhook.test (webhook_endpoint_test
// sends that one, to one endpoint).
func (s *Webhooks) PartnerTriggerEvent(ctx context.Context, in emi.SandboxEventTrigger) (emi.Event, error) {
	typ := emi.EventType(strings.TrimSpace(string(in.Type)))
	if typ == "" || typ == emi.EventWebhookTest || !emi.ValidEventType(typ) {
		msg := "must be one of: " + strings.Join(deliverableEventTypeNames(), ", ")
		if typ == emi.EventWebhookTest {
			msg = "webhook.test is sent to one endpoint by webhook_endpoint_test; " + msg
		}
		return emi.Event{}, emi.ErrAPIWebhookValidation.Field("type", msg)
	}
	p, err := s.partnerEndpoint(ctx, "")
	if err != nil {
		return emi.Event{}, err
	}
	ctx = asPartnerSystem(ctx, p)
	if err := ManageWebhooks.Require(ctx); err != nil {
		return emi.Event{}, err
	}
	token, data := sampleEventData(typ, s.now().UTC())
	data[SandboxSampleField] = true
	var ev emi.Event
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		var err error
		if ev, err = s.events.Emit(ctx, p.PartnerID, typ, typ.Resource(), token, data); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "webhook_event.sandbox_trigger", ResourceType: "partner",
			ResourceToken: p.PartnerID, PartnerID: p.PartnerID, Changes: map[string]any{"event": ev.ID, "type": typ}})
	})
	return ev, err
}

// sampleEventData returns a fresh token for the event's resource and the
// rest of its data, as the code that emits the type for real fills it.
func sampleEventData(typ emi.EventType, now time.Time) (string, map[string]any) {
	tok := kernel.NewToken
	authorization := func(status, decision, reason, held string) map[string]any {
		return map[string]any{"card": tok(), "account": tok(), "status": status, "decision": decision, "reason_code": reason,
			"amount": "12.50", "currency": "EUR", "channel": "pos", "mcc": "5411", "merchant_name": "SANDBOX GROCER",
			"merchant_country": "BG", "held": held}
	}
	transfer := func(status string) map[string]any {
		return map[string]any{"type": "outgoing", "status": status, "amount": "250.00", "currency": "EUR",
			"reference": "Invoice 2026-014", "source_account": tok(), "source_balance": tok(), "source_iban": "BG80BNBG96611020345678",
			"destination_name": "Sandbox Supplier Ltd", "destination_iban": "DE89370400440532013000"}
	}
	checks := []map[string]any{
		{"name": "risk", "status": "passed", "details": map[string]any{"score": "Low"}},
		{"name": "trade_register", "status": "passed", "details": map[string]any{"uic": "100000001", "legal_name": "Sandbox Trading Ltd"}},
		{"name": "sanctions", "status": "passed", "details": map[string]any{"hits": []any{}}},
		{"name": "adverse_media", "status": "passed", "details": map[string]any{"hits": []any{}}},
	}
	var data map[string]any
	switch typ {
	case emi.EventApplicationChecksCompleted:
		data = map[string]any{"status": "checking", "risk_score": "Low", "checks": checks}
	case emi.EventApplicationInReview:
		data = map[string]any{"status": "in_review"}
	case emi.EventApplicationInfoRequested:
		data = map[string]any{"status": "information_requested",
			"message": "Please send the company's latest annual accounts."}
	case emi.EventApplicationApproved:
		data = map[string]any{"status": "approved", "merchant": tok()}
	case emi.EventApplicationRejected:
		data = map[string]any{"status": "rejected", "reason": "The company's activity is outside our risk appetite."}
	case emi.EventUserKYCUpdated:
		data = map[string]any{"kyc_status": "approved", "kyc_session": tok(), "reason": "Identity verified."}
	case emi.EventAMLCheckReviewed:
		data = map[string]any{"status": "cleared", "user": tok(), "hits": []map[string]any{
			{"list": "eu", "entry_id": "EU.1234.56", "decision": "false_positive"}}}
	case emi.EventAccountStatusChanged:
		data = map[string]any{"status": "blocked", "previous_status": "active"}
	case emi.EventCardStatusChanged:
		data = map[string]any{"status": "inactive", "previous_status": "active", "reason_code": "lost"}
	case emi.EventCardActivated:
		data = map[string]any{}
	case emi.EventCardConverted:
		data = map[string]any{"type": "plastic", "expiry": now.AddDate(3, 0, 0).Format("01/06")}
	case emi.EventCardReplaced:
		data = map[string]any{"replaces": tok(), "type": "virtual", "status": "active", "activated": true,
			"masked_pan": "539994******1234", "expiry": now.AddDate(3, 0, 0).Format("01/06"), "reason_code": "stolen"}
	case emi.EventTransferCompleted:
		data = transfer("completed")
	case emi.EventTransferReturned:
		data = transfer("returned")
		data["return_reason"] = "AC04 account closed"
	case emi.EventTransferHeldForReview:
		data = transfer("pending")
	case emi.EventAuthorizationDecided:
		data = authorization("approved", "approved", "00", "12.50")
	case emi.EventAuthorizationCleared:
		data = authorization("cleared", "approved", "00", "0.00")
		data["cleared"] = "12.50"
	case emi.EventAuthorizationReversed:
		data = authorization("released", "approved", "00", "0.00")
	case emi.EventAuthorizationExpired:
		data = authorization("expired", "approved", "00", "0.00")
	case emi.EventInformationRequestCreated:
		data = map[string]any{"user": tok(), "topic": "source_of_funds",
			"topic_description": "the origin of the funds received on the customer's accounts",
			"question":          "Please describe where the funds received on 3 March come from.",
			"status":            "open", "requested_at": now, "due_at": now.AddDate(0, 0, 14)}
	default:
		// A type added to the catalogue without a sample here still
		// triggers, with its resource's token only;
		// TestSandboxTriggerEmitsEveryTypeAsDocumented fails until it
		// has one.
		data = map[string]any{}
	}
	return tok(), data
}
