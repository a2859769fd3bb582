package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"emi/internal/emi"
)

// JobWebhookDeliver is the kind of the job that makes the attempts of one
// webhook delivery (payload {"delivery": id}); Webhooks.Deliver handles it.
const JobWebhookDeliver = "webhook.deliver"

// deliveryJobMaxAttempts bounds the runs of one delivery job. The retry
// schedule (Webhooks' RetryPolicy) decides when a delivery gives up and ends
// its job itself; this is only a backstop well above the schedule's length
// plus replays and lost leases.
const deliveryJobMaxAttempts = 1000

// maxEventBody bounds the serialised event. Standard Webhooks asks for small
// payloads (< 20 kB); a bigger event is a bug in its caller.
const maxEventBody = 64 << 10

// Events list limits (events_list).
const (
	MaxEventsPerPage = 100
	MaxEventsPage    = math.MaxInt32
)

// EventStore keeps the outbox: events, deliveries and the endpoints they go
// to. Every method runs on the transaction in ctx.
type EventStore interface {
	// InTransaction reports whether ctx carries a transaction.
	InTransaction(ctx context.Context) bool
	// LockPartnerEvents holds, until the transaction ends, the lock that
	// orders the event-writing transactions of one partner, so that seq
	// order is commit order per partner.
	LockPartnerEvents(ctx context.Context, partnerID string) error
	// InsertEvent stores e (its Seq is assigned) and returns the seq.
	InsertEvent(ctx context.Context, e emi.StoredEvent) (int64, error)
	// EventEndpoints returns the ids of the partner's enabled, not deleted
	// endpoints whose filter is empty or holds typ.
	EventEndpoints(ctx context.Context, partnerID string, typ emi.EventType) ([]string, error)
	// Endpoint returns an endpoint with its sealed secrets.
	// Returns emi.ErrWebhookEndpointNotFound.
	Endpoint(ctx context.Context, id string) (StoredEndpoint, error)
	// InsertDelivery stores a new pending delivery.
	InsertDelivery(ctx context.Context, d StoredDelivery) error
	// EventSeq returns the seq of the partner's event id; ok is false when
	// the partner has no such event.
	EventSeq(ctx context.Context, partnerID, eventID string) (seq int64, ok bool, err error)
	// PartnerEvents returns the bodies of the partner's events of type typ
	// ("" for all) with seq > afterSeq, ascending by seq when ascending and
	// newest first otherwise, skipping offset and returning at most limit,
	// with the number of matching events.
	PartnerEvents(ctx context.Context, partnerID string, typ emi.EventType, afterSeq int64, ascending bool, offset int64, limit int) ([]json.RawMessage, int64, error)
}

// StoredEndpoint is a webhook endpoint as stored: metadata plus sealed
// secrets (both sealed under WebhookSecretContext(ID)).
type StoredEndpoint struct {
	emi.WebhookEndpoint
	SecretEnc         []byte
	PreviousSecretEnc []byte
	Deleted           bool
}

// StoredDelivery is a delivery as stored, with the bookkeeping the back
// office does not show.
type StoredDelivery struct {
	emi.WebhookDelivery
	// ScheduleStep counts the scheduled (not replayed) attempts made.
	ScheduleStep int
	// FirstAttemptAt is when the first scheduled attempt started.
	FirstAttemptAt *time.Time
	// ReplayRequestedAt and ReplayRequestedBy record a replay asked for
	// in the back office and not yet made.
	ReplayRequestedAt *time.Time
	ReplayRequestedBy string
}

// Events is the outbox: the one way to emit an event, and the partner's
// read of its own events (events_list).
type Events struct {
	tx    TxRunner
	store EventStore
	jobs  Enqueuer
	now   Clock
}

// EventsDeps is what Events needs; NewEvents checks that none is nil.
type EventsDeps struct {
	Tx    TxRunner
	Store EventStore
	Jobs  Enqueuer
	Now   Clock
}

// NewEvents returns the events service.
func NewEvents(d EventsDeps) *Events {
	MustHave("Events", d)
	return &Events{tx: d.Tx, store: d.Store, jobs: d.Jobs, now: d.Now}
}

// DeliveryJob is the payload of a JobWebhookDeliver job.
type DeliveryJob struct {
	Delivery string `json:"delivery"`
}

// DeliveryJobSpec returns the job that makes the attempts of delivery id,
// one of partnerID's. The unique key keeps one pending job per delivery, so
// its attempts never run side by side; a replay reuses (and hurries) that
// job. The concurrency key is the partner's: a worker pool runs only a few
// deliveries of one partner at once (EMI_WEBHOOK_PARTNER_CONCURRENCY), and
// the rest wait in the queue, untouched, while other partners' deliveries
// go through (one partner's fan-out of many endpoints and many events could
// take every worker).
func DeliveryJobSpec(id, partnerID string) emi.JobSpec {
	return emi.JobSpec{Kind: JobWebhookDeliver, Payload: DeliveryJob{Delivery: id},
		MaxAttempts: deliveryJobMaxAttempts, UniqueKey: DeliveryJobKey(id), ConcurrencyKey: DeliveryConcurrencyKey(partnerID)}
}

// DeliveryConcurrencyKey is the concurrency key of a partner's delivery
// jobs (migration 00092 gives it to the jobs queued before it).
func DeliveryConcurrencyKey(partnerID string) string { return "partner:" + partnerID }

// DeliveryJobKey is the unique key of a delivery's job.
func DeliveryJobKey(id string) string { return JobWebhookDeliver + ":" + id }

// Emit records an event of the partner in the transaction carried by ctx,
// and a delivery (with its job) for each of the partner's enabled endpoints
// whose event-type filter is empty or holds typ; so the event, its
// deliveries and their jobs exist if and only if the caller's change
// commits. A webhook.test event goes only to the endpoint named by
// resourceToken (whatever its filter and enabled state).
//
// data is fields with sensitive values redacted (see Redact) plus
// {resourceName: resourceToken}; resourceName must be typ.Resource(). The
// event is serialised once, here; every attempt and events_list send those
// exact bytes.
//
// Emit takes a per-partner lock that is held until the transaction ends, so
// the events of one partner commit in seq order (events_list's `after` then
// never skips one): call it late in the transaction.
//
// Returns an internal error when ctx carries no transaction, for an unknown
// type, a resource name that does not match the type, an empty token or a
// body over 64 KiB (all bugs of the caller), and
// emi.ErrWebhookEndpointNotFound for a test event to an endpoint the partner
// does not have.
func (e *Events) Emit(ctx context.Context, partnerID string, typ emi.EventType, resourceName, resourceToken string, fields map[string]any) (emi.Event, error) {
	if !e.store.InTransaction(ctx) {
		return emi.Event{}, emi.Internal(fmt.Errorf("emit %s: no transaction in the context: an event must commit with the change that causes it", typ))
	}
	if !emi.ValidEventType(typ) {
		return emi.Event{}, emi.Internal(fmt.Errorf("emit: unknown event type %q", typ))
	}
	if resourceName != typ.Resource() || resourceToken == "" {
		return emi.Event{}, emi.Internal(fmt.Errorf("emit %s: data must name the %s token, got %q = %q", typ, typ.Resource(), resourceName, resourceToken))
	}
	data := Redact(fields)
	if data == nil {
		data = map[string]any{}
	}
	data[resourceName] = resourceToken
	ev := emi.Event{ID: NewToken(), PartnerID: partnerID, Type: typ, CreatedAt: e.now.At(ctx).UTC().Truncate(time.Millisecond), Data: data}
	body, err := json.Marshal(ev)
	if err != nil {
		return emi.Event{}, emi.Internal(fmt.Errorf("emit %s: marshal: %w", typ, err))
	}
	if len(body) > maxEventBody {
		return emi.Event{}, emi.Internal(fmt.Errorf("emit %s: body of %d bytes is over %d", typ, len(body), maxEventBody))
	}
	stored := emi.StoredEvent{Event: ev, ResourceToken: resourceToken, Body: body}
	// A savepoint: a failed emit leaves nothing behind even when the caller
	// goes on with its transaction.
	err = e.tx.InTx(ctx, func(ctx context.Context) error {
		var targets []string
		if typ == emi.EventWebhookTest {
			ep, err := e.store.Endpoint(ctx, resourceToken)
			if err != nil {
				return err
			}
			if ep.PartnerID != partnerID || ep.Deleted {
				return emi.ErrWebhookEndpointNotFound
			}
			targets, stored.EndpointID = []string{ep.ID}, ep.ID
		} else {
			if targets, err = e.store.EventEndpoints(ctx, partnerID, typ); err != nil {
				return err
			}
		}
		if err := e.store.LockPartnerEvents(ctx, partnerID); err != nil {
			return err
		}
		if _, err := e.store.InsertEvent(ctx, stored); err != nil {
			return err
		}
		now := e.now.At(ctx).UTC()
		for _, epID := range targets {
			d := StoredDelivery{WebhookDelivery: emi.WebhookDelivery{ID: NewToken(), EventID: ev.ID, EndpointID: epID,
				State: emi.DeliveryPending, NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now}}
			if err := e.store.InsertDelivery(ctx, d); err != nil {
				return err
			}
			if _, _, err := e.jobs.Enqueue(ctx, DeliveryJobSpec(d.ID, partnerID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return emi.Event{}, err
	}
	return ev, nil
}

// List returns a page of the calling partner's events, each exactly the
// body its webhooks carry (events_list). Without After the newest come
// first; with After only the events after that one come, oldest first, so a
// partner can page forward from the last event it processed.
// Returns emi.ErrForbidden when the principal is not a partner, and
// emi.ErrValidation (11001) naming page, limit, type or after: page below 1,
// limit outside 1..100, a type not in the catalogue, or an after that is not
// one of the caller's events (a foreign event id is reported exactly like an
// unknown one).
func (e *Events) List(ctx context.Context, in emi.EventList) (emi.EventPage, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || !p.IsPartner() {
		return emi.EventPage{}, emi.ErrForbidden.WithDetail("events_list needs a partner")
	}
	var fields []emi.FieldError
	if in.Page < 1 || in.Page > MaxEventsPage {
		fields = append(fields, emi.FieldError{Field: "page", Message: fmt.Sprintf("must be a whole number from 1 to %d", MaxEventsPage)})
	}
	if in.Limit < 1 || in.Limit > MaxEventsPerPage {
		fields = append(fields, emi.FieldError{Field: "limit", Message: fmt.Sprintf("must be a whole number from 1 to %d", MaxEventsPerPage)})
	}
	if in.Type != "" && !emi.ValidEventType(in.Type) {
		fields = append(fields, emi.FieldError{Field: "type", Message: "must be one of: " + strings.Join(emi.EventTypeNames(), ", ")})
	}
	var afterSeq int64
	if in.After != "" {
		seq, found, err := e.store.EventSeq(ctx, p.PartnerID, in.After)
		if err != nil {
			return emi.EventPage{}, err
		}
		if !found {
			fields = append(fields, emi.FieldError{Field: "after", Message: "must be the id of one of your events"})
		}
		afterSeq = seq
	}
	if len(fields) > 0 {
		return emi.EventPage{}, emi.ErrValidation.WithFields(fields...)
	}
	items, total, err := e.store.PartnerEvents(ctx, p.PartnerID, in.Type, afterSeq, in.After != "",
		int64(in.Page-1)*int64(in.Limit), in.Limit)
	if err != nil {
		return emi.EventPage{}, err
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	return emi.EventPage{Items: items, Page: in.Page, Limit: in.Limit, Total: total}, nil
}
