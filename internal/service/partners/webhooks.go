package partners

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/worker"
)

// WebhookDeliverer makes one delivery attempt: a signed POST of msg. It never
// fails with a Go error; the result says what happened. webhook.Client
// implements it.
type WebhookDeliverer interface {
	Deliver(ctx context.Context, msg emi.WebhookMessage) emi.WebhookResult
}

// URLChecker decides whether a URL may be registered as a webhook endpoint
// (https, public addresses; the sandbox rule is its business). Its error's
// message is shown next to the field. webhook.Guard implements it.
type URLChecker interface {
	CheckURL(ctx context.Context, url string) error
}

// RetryPolicy decides what follows a failed scheduled attempt: failed counts
// the scheduled attempts that failed so far (1 after the first), elapsed is
// the time since the first one started. giveUp ends the delivery as failed;
// otherwise the next attempt is made delay from now. webhook.DelayAfter
// implements it (the Standard Webhooks schedule, about 3 days, 410 gives
// up, Retry-After respected).
type RetryPolicy func(res emi.WebhookResult, failed int, elapsed time.Duration) (delay time.Duration, giveUp bool)

// WebhookStore keeps endpoints, deliveries and attempts (and, through
// EventStore, the events).
type WebhookStore interface {
	kernel.EventStore
	// PartnerExists reports whether the partner exists.
	PartnerExists(ctx context.Context, id string) (bool, error)
	// LockPartnerEndpoints holds, until the transaction ends, the lock
	// that makes the endpoint changes of one partner that are counted
	// against its limits run one at a time, and reports whether the
	// partner exists.
	LockPartnerEndpoints(ctx context.Context, partnerID string) (bool, error)
	// ActiveEndpointURLs returns the URL of each of the partner's enabled,
	// not deleted endpoints, by id.
	ActiveEndpointURLs(ctx context.Context, partnerID string) (map[string]string, error)
	InsertEndpoint(ctx context.Context, ep kernel.StoredEndpoint) error
	// EndpointForUpdate locks the endpoint row.
	// Returns emi.ErrWebhookEndpointNotFound.
	EndpointForUpdate(ctx context.Context, id string) (kernel.StoredEndpoint, error)
	// UpdateEndpoint writes every mutable column of ep.
	UpdateEndpoint(ctx context.Context, ep kernel.StoredEndpoint) error
	// ClearEndpointFailing clears failing_since when it is set (and takes no
	// lock when it is not).
	ClearEndpointFailing(ctx context.Context, id string, at time.Time) error
	// Endpoints returns the partner's endpoints that are not deleted, oldest
	// first (a page of them), with their health counted from since.
	Endpoints(ctx context.Context, partnerID string, since time.Time, page EndpointPage) ([]emi.WebhookEndpoint, error)
	// CancelPendingDeliveries cancels the endpoint's pending deliveries but
	// except ("" for none) and returns how many.
	CancelPendingDeliveries(ctx context.Context, endpointID, except, reason string, at time.Time) (int64, error)
	// DeliveryWork returns what an attempt needs: the delivery, its
	// endpoint with secrets and its event with body.
	// Returns emi.ErrWebhookDeliveryNotFound.
	DeliveryWork(ctx context.Context, id string) (DeliveryWork, error)
	// DeliveryFor returns the id of the delivery of an event to an
	// endpoint. Returns emi.ErrWebhookDeliveryNotFound.
	DeliveryFor(ctx context.Context, eventID, endpointID string) (string, error)
	// DeliveryForUpdate locks the delivery row.
	// Returns emi.ErrWebhookDeliveryNotFound.
	DeliveryForUpdate(ctx context.Context, id string) (kernel.StoredDelivery, error)
	// SaveDelivery writes every mutable column of d.
	SaveDelivery(ctx context.Context, d kernel.StoredDelivery) error
	InsertAttempt(ctx context.Context, endpointID string, a emi.WebhookAttempt) error
	// HurryJob makes the waiting job with the unique key due now.
	HurryJob(ctx context.Context, uniqueKey string) error
	// ClockRetries returns up to limit pending deliveries to partnerID's
	// endpoints that wait for a retry (an attempt failed) due at or
	// before until, the earliest first, after the one given (nil: from
	// the first; a test clock's advance).
	ClockRetries(ctx context.Context, partnerID string, until time.Time, after *kernel.StoredDelivery, limit int) ([]kernel.StoredDelivery, error)
	// EventLog returns a page of events, newest first, with their
	// deliveries and attempts.
	EventLog(ctx context.Context, f emi.EventLogFilter) (emi.EventLog, error)
	// Delivery returns a delivery with its attempts.
	// Returns emi.ErrWebhookDeliveryNotFound.
	Delivery(ctx context.Context, id string) (emi.WebhookDelivery, error)
	// FailedDeliveriesForReplay locks and returns up to limit failed
	// deliveries of f's partner (f.Type, f.From and f.To narrow them) to
	// enabled endpoints with no replay asked for, oldest first, skipping
	// rows another transaction has locked.
	FailedDeliveriesForReplay(ctx context.Context, f emi.EventLogFilter, limit int) ([]kernel.StoredDelivery, error)
}

// DeliveryWork is what one attempt needs.
type DeliveryWork struct {
	Delivery kernel.StoredDelivery
	Endpoint kernel.StoredEndpoint
	Event    emi.StoredEvent
}

// WebhooksConfig holds the webhook rules that come from configuration.
type WebhooksConfig struct {
	// SecretOverlap is how long a rotated secret keeps signing (24 h).
	SecretOverlap time.Duration
	// DisableAfter is how long an endpoint may fail in a row before it is
	// disabled (5 days).
	DisableAfter time.Duration
	// MaxEndpoints is how many enabled endpoints a partner may have, and
	// MaxEndpointsPerHost how many of them may share a host name (10 and
	// 3): see checkLimits.
	MaxEndpoints        int
	MaxEndpointsPerHost int
}

// Defaults of WebhooksConfig.
const (
	DefaultWebhookSecretOverlap = 24 * time.Hour
	DefaultWebhookDisableAfter  = 5 * 24 * time.Hour
	DefaultMaxEndpoints         = 10
	DefaultMaxEndpointsPerHost  = 3
)

// Limits of the back office's webhook screens.
const (
	maxEndpointURL         = 2000
	maxEndpointDescription = 200
	defaultEventLogLimit   = 50
	maxAttemptExcerpt      = 1024
	maxAttemptError        = 2048
)

// Webhooks manages the partners' webhook endpoints (back office), makes the
// delivery attempts (the JobWebhookDeliver job) and shows the delivery log
// with replay.
//
// Delivery is at least once. Each delivery has one job at a time (unique
// key), so its attempts do not run side by side; the job is retried when its
// worker dies (lease), and a delivery that already succeeded is never sent
// again when its job runs once more, unless a replay was asked for. Disabled
// endpoints get nothing: their pending deliveries are canceled when the
// endpoint is disabled (by staff, after 410 Gone, or after failing for
// DisableAfter), and events emitted while an endpoint is disabled get no
// delivery to it; a partner reconciles them with events_list, and staff can
// replay a canceled delivery once the endpoint is enabled again.
type Webhooks struct {
	tx        kernel.TxRunner
	store     WebhookStore
	events    *kernel.Events
	jobs      kernel.Enqueuer
	sealer    kernel.Sealer
	audit     *kernel.Auditor
	deliverer WebhookDeliverer
	urls      URLChecker
	retry     RetryPolicy
	cfg       WebhooksConfig
	clocks    kernel.ClockReader
	now       kernel.Clock
}

// WebhooksDeps is what Webhooks needs; NewWebhooks checks that none is nil.
type WebhooksDeps struct {
	Tx        kernel.TxRunner
	Store     WebhookStore
	Events    *kernel.Events
	Jobs      kernel.Enqueuer
	Sealer    kernel.Sealer
	Audit     *kernel.Auditor
	Deliverer WebhookDeliverer
	URLs      URLChecker
	Retry     RetryPolicy
	Config    WebhooksConfig
	// Clocks tells which partners run on a test clock (sandbox); nil: none
	// does.
	Clocks kernel.ClockReader `deps:"optional"`
	Now    kernel.Clock
}

// NewWebhooks returns the webhooks service. Zero durations in cfg take the
// defaults.
func NewWebhooks(d WebhooksDeps) *Webhooks {
	kernel.MustHave("Webhooks", d)
	if d.Config.SecretOverlap <= 0 {
		d.Config.SecretOverlap = DefaultWebhookSecretOverlap
	}
	if d.Config.DisableAfter <= 0 {
		d.Config.DisableAfter = DefaultWebhookDisableAfter
	}
	if d.Config.MaxEndpoints <= 0 {
		d.Config.MaxEndpoints = DefaultMaxEndpoints
	}
	if d.Config.MaxEndpointsPerHost <= 0 {
		d.Config.MaxEndpointsPerHost = DefaultMaxEndpointsPerHost
	}
	return &Webhooks{tx: d.Tx, store: d.Store, events: d.Events, jobs: d.Jobs, sealer: d.Sealer, audit: d.Audit,
		deliverer: d.Deliverer, urls: d.URLs, retry: d.Retry, cfg: d.Config, clocks: d.Clocks, now: d.Now}
}

// endpointInput is a checked endpoint form.
type endpointInput struct {
	url, description string
	types            []emi.EventType
}

// checkEndpoint trims and checks an endpoint's fields. Returns
// emi.ErrWebhookValidation naming url, description or event_types[i].
func (s *Webhooks) checkEndpoint(ctx context.Context, rawURL, description string, types []emi.EventType) (endpointInput, error) {
	var in endpointInput
	var fields []emi.FieldError
	var err error
	if in.url, fields, err = s.checkEndpointURL(ctx, rawURL, fields); err != nil {
		return in, err
	}
	in.description, fields = checkEndpointDescription(description, fields)
	in.types, fields = checkEndpointTypes(types, fields)
	if len(fields) > 0 {
		return in, emi.ErrWebhookValidation.WithFields(fields...)
	}
	return in, nil
}

// checkEndpointURL trims and checks an endpoint's URL (the URL checker
// decides: https to a public address, the sandbox's loopback rule),
// appending a problem on url to fields. err is only a cancelled ctx.
func (s *Webhooks) checkEndpointURL(ctx context.Context, raw string, fields []emi.FieldError) (string, []emi.FieldError, error) {
	u := strings.TrimSpace(raw)
	switch {
	case u == "":
		fields = append(fields, emi.FieldError{Field: "url", Message: "is required"})
	case len(u) > maxEndpointURL:
		fields = append(fields, emi.FieldError{Field: "url", Message: fmt.Sprintf("must be at most %d characters", maxEndpointURL)})
	default:
		if err := s.urls.CheckURL(ctx, u); err != nil {
			if ctx.Err() != nil {
				return u, fields, err
			}
			fields = append(fields, emi.FieldError{Field: "url", Message: err.Error()})
		}
	}
	return u, fields, nil
}

// checkEndpointDescription trims and checks an endpoint's description.
func checkEndpointDescription(raw string, fields []emi.FieldError) (string, []emi.FieldError) {
	d := strings.TrimSpace(raw)
	if utf8.RuneCountInString(d) > maxEndpointDescription || !utf8.ValidString(d) {
		fields = append(fields, emi.FieldError{Field: "description", Message: fmt.Sprintf("must be at most %d characters of text", maxEndpointDescription)})
	}
	return d, fields
}

// checkEndpointTypes checks an event-type filter and returns it trimmed
// and without repeats (never nil: empty is every type). webhook.test
// cannot be listed: webhook_endpoint_test always sends it.
func checkEndpointTypes(types []emi.EventType, fields []emi.FieldError) ([]emi.EventType, []emi.FieldError) {
	out := []emi.EventType{}
	for i, t := range types {
		t = emi.EventType(strings.TrimSpace(string(t)))
		switch {
		case t == emi.EventWebhookTest || !emi.ValidEventType(t):
			fields = append(fields, emi.FieldError{Field: fmt.Sprintf("event_types[%d]", i), Message: "must be one of: " + strings.Join(deliverableEventTypeNames(), ", ")})
		case !slices.Contains(out, t):
			out = append(out, t)
		}
	}
	return out, fields
}

// deliverableEventTypeNames are the catalogue's types but webhook.test: what
// a filter may list and what the sandbox can trigger.
func deliverableEventTypeNames() []string {
	return slices.DeleteFunc(emi.EventTypeNames(), func(n string) bool { return n == string(emi.EventWebhookTest) })
}

// endpointHost is the host name a limit counts endpoints by: the URL's
// host in lower case without a trailing dot, an IP address in its
// canonical form (so [::ffff:10.0.0.1] is 10.0.0.1), whatever the scheme,
// port, path or query. "" for a URL that does not parse (checkEndpoint
// refused it already).
func endpointHost(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.WithZone("").Unmap().String()
	}
	return h
}

// checkLimits is the rule that keeps one partner from multiplying emi's
// webhook traffic (one event is one delivery per endpoint, each retried for
// days, so 120 endpoints aimed at a third party's host made emi an
// amplifier): a partner has at most MaxEndpoints enabled endpoints, and at
// most MaxEndpointsPerHost of them on one host name (see endpointHost). It
// runs inside the transaction of every change that adds an enabled endpoint
// or moves one (AddEndpoint from the API, the back office and `emi partner
// create`; enabling; a new URL), after LockPartnerEndpoints: the count and
// the change that follows it are then one step per partner, so N concurrent
// additions at the limit minus one make exactly one endpoint. except is the
// endpoint being enabled or moved, not counted as one of the others ("" for
// a new one). Disabled and deleted endpoints do not count: they get no
// events. Returns emi.ErrPartnerNotFound, and emi.ErrWebhookEndpointLimit
// or emi.ErrWebhookHostLimit with a message on url that says the limit.
func (s *Webhooks) checkLimits(ctx context.Context, partnerID, rawURL, except string) error {
	ok, err := s.store.LockPartnerEndpoints(ctx, partnerID)
	if err != nil {
		return err
	}
	if !ok {
		return emi.ErrPartnerNotFound
	}
	active, err := s.store.ActiveEndpointURLs(ctx, partnerID)
	if err != nil {
		return err
	}
	delete(active, except)
	if len(active) >= s.cfg.MaxEndpoints {
		return emi.ErrWebhookEndpointLimit.Field("url", fmt.Sprintf(
			"the partner already has %d enabled webhook endpoints, the most allowed: delete or disable one that is no longer used first", len(active)))
	}
	host, same := endpointHost(rawURL), 0
	for _, u := range active {
		if endpointHost(u) == host {
			same++
		}
	}
	if same >= s.cfg.MaxEndpointsPerHost {
		return emi.ErrWebhookHostLimit.Field("url", fmt.Sprintf(
			"the partner already has %d enabled webhook endpoints on %s, the most allowed on one host (whatever the port or path): send every event type to one endpoint there, or delete or disable one first", same, host))
	}
	return nil
}

// AddEndpoint registers a webhook endpoint for the partner
// (emi.PermManageWebhooks) and returns it with its signing secret,
// "whsec_" + base64 of 32 random bytes: the only clear copy that will ever
// exist. types filters the events sent (empty: every type; webhook.test is
// always sent by SendTest and cannot be listed). Returns
// emi.ErrWebhookValidation naming url (the URL checker's reason),
// description or event_types[i], emi.ErrWebhookEndpointLimit and
// emi.ErrWebhookHostLimit (see checkLimits), and emi.ErrPartnerNotFound.
func (s *Webhooks) AddEndpoint(ctx context.Context, partnerID, url, description string, types []emi.EventType) (emi.WebhookEndpoint, string, error) {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return emi.WebhookEndpoint{}, "", err
	}
	in, err := s.checkEndpoint(ctx, url, description, types)
	if err != nil {
		return emi.WebhookEndpoint{}, "", err
	}
	now := s.now.At(ctx).UTC()
	ep := kernel.StoredEndpoint{WebhookEndpoint: emi.WebhookEndpoint{ID: kernel.NewToken(), PartnerID: partnerID, URL: in.url,
		Description: in.description, EventTypes: in.types, Enabled: true, CreatedAt: now, UpdatedAt: now}}
	whsec, raw := newWebhookSecret()
	if ep.SecretEnc, err = s.sealer.Seal(raw, WebhookSecretContext(ep.ID)); err != nil {
		return emi.WebhookEndpoint{}, "", emi.Internal(err)
	}
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.checkLimits(ctx, partnerID, ep.URL, ""); err != nil {
			return err
		}
		if err := s.store.InsertEndpoint(ctx, ep); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "webhook_endpoint.create", ResourceType: "webhook_endpoint",
			ResourceToken: ep.ID, PartnerID: partnerID,
			Changes: map[string]any{"url": ep.URL, "description": ep.Description, "event_types": ep.EventTypes}})
	})
	if err != nil {
		return emi.WebhookEndpoint{}, "", err
	}
	return ep.WebhookEndpoint, whsec, nil
}

// UpdateEndpoint changes the URL, description and event-type filter of
// the partner's endpoint (emi.PermManageWebhooks), with the checks of
// AddEndpoint (a new host counts against the limit per host). Returns
// emi.ErrWebhookValidation, emi.ErrWebhookHostLimit and
// emi.ErrWebhookEndpointNotFound (also for another partner's endpoint).
func (s *Webhooks) UpdateEndpoint(ctx context.Context, partnerID, endpointID, url, description string, types []emi.EventType) (emi.WebhookEndpoint, error) {
	return s.updateEndpoint(ctx, partnerID, endpointID, emi.WebhookEndpointUpdate{URL: &url, Description: &description, EventTypes: &types})
}

// updateEndpoint changes the fields in (a nil one keeps its value) of the
// partner's endpoint, each checked as AddEndpoint checks it, every
// problem reported at once and nothing changed then. The checks run
// before the endpoint's row is locked (the URL check may resolve the host
// name); the fields are then set on the locked row, so two updates of
// different fields both land. A move to another host of an enabled
// endpoint counts against the limit per host (checkLimits). An update that
// changes nothing saves and audits nothing.
func (s *Webhooks) updateEndpoint(ctx context.Context, partnerID, endpointID string, in emi.WebhookEndpointUpdate) (emi.WebhookEndpoint, error) {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return emi.WebhookEndpoint{}, err
	}
	var fields []emi.FieldError
	var url, description string
	var types []emi.EventType
	if in.URL != nil {
		var err error
		if url, fields, err = s.checkEndpointURL(ctx, *in.URL, fields); err != nil {
			return emi.WebhookEndpoint{}, err
		}
	}
	if in.Description != nil {
		description, fields = checkEndpointDescription(*in.Description, fields)
	}
	if in.EventTypes != nil {
		types, fields = checkEndpointTypes(*in.EventTypes, fields)
	}
	if len(fields) > 0 {
		return emi.WebhookEndpoint{}, emi.ErrWebhookValidation.WithFields(fields...)
	}
	var out emi.WebhookEndpoint
	err := s.changeEndpoint(ctx, partnerID, endpointID, func(ctx context.Context, ep *kernel.StoredEndpoint) (string, map[string]any, error) {
		changes := map[string]any{}
		if in.URL != nil && ep.URL != url {
			changes["url"] = map[string]any{"from": ep.URL, "to": url}
			if ep.Enabled && endpointHost(ep.URL) != endpointHost(url) {
				if err := s.checkLimits(ctx, ep.PartnerID, url, ep.ID); err != nil {
					return "", nil, err
				}
			}
			ep.URL = url
		}
		if in.Description != nil && ep.Description != description {
			changes["description"] = map[string]any{"from": ep.Description, "to": description}
			ep.Description = description
		}
		if in.EventTypes != nil && !slices.Equal(ep.EventTypes, types) {
			changes["event_types"] = map[string]any{"from": ep.EventTypes, "to": types}
			ep.EventTypes = types
		}
		out = ep.WebhookEndpoint
		if len(changes) == 0 {
			return "", nil, nil
		}
		return "webhook_endpoint.update", changes, nil
	})
	return out, err
}

// Who disables an endpoint by hand: the reason the endpoint shows and its
// canceled deliveries carry.
const (
	disabledByStaff   = "disabled by staff"
	disabledByPartner = "disabled by the partner through the API"
)

// SetEndpointEnabled enables or disables the partner's endpoint
// (emi.PermManageWebhooks). Disabling cancels its pending deliveries;
// enabling clears the reason and the failure streak. Setting the current
// state again changes nothing. Enabling is refused with
// emi.ErrWebhookEndpointLimit or emi.ErrWebhookHostLimit when the endpoint
// would be one too many (checkLimits). Returns
// emi.ErrWebhookEndpointNotFound (also for another partner's endpoint).
func (s *Webhooks) SetEndpointEnabled(ctx context.Context, partnerID, endpointID string, enabled bool) error {
	_, err := s.setEndpointEnabled(ctx, partnerID, endpointID, enabled, disabledByStaff)
	return err
}

// setEndpointEnabled is SetEndpointEnabled, with the reason a disabling
// records, and returns the endpoint as it is afterwards. Enabling does not
// deliver again what was canceled or not sent while the endpoint was
// disabled: webhook_delivery_replay (or the back office's replay) does,
// one event at a time, and events_list lists what was missed.
func (s *Webhooks) setEndpointEnabled(ctx context.Context, partnerID, endpointID string, enabled bool, reason string) (emi.WebhookEndpoint, error) {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return emi.WebhookEndpoint{}, err
	}
	var out emi.WebhookEndpoint
	err := s.changeEndpoint(ctx, partnerID, endpointID, func(ctx context.Context, ep *kernel.StoredEndpoint) (string, map[string]any, error) {
		out = ep.WebhookEndpoint
		if ep.Enabled == enabled {
			return "", nil, nil
		}
		if enabled {
			if err := s.checkLimits(ctx, ep.PartnerID, ep.URL, ep.ID); err != nil {
				return "", nil, err
			}
			changes := map[string]any{"previous_reason": ep.DisabledReason}
			ep.Enabled, ep.DisabledReason, ep.FailingSince = true, "", nil
			out = ep.WebhookEndpoint
			return "webhook_endpoint.enable", changes, nil
		}
		ep.Enabled, ep.DisabledReason = false, reason
		out = ep.WebhookEndpoint
		n, err := s.store.CancelPendingDeliveries(ctx, ep.ID, "", "endpoint "+reason, s.now.At(ctx).UTC())
		return "webhook_endpoint.disable", map[string]any{"reason": reason, "canceled_deliveries": n}, err
	})
	return out, err
}

// RotateEndpointSecret gives the partner's endpoint a new signing secret and returns
// it (shown once) with the time until which the previous secret keeps
// signing too: every message then carries two signatures, so the partner
// can deploy the new secret without missing an event
// (emi.PermManageWebhooks). Rotating again during the overlap replaces
// only the new secret: the previous one keeps signing until the same time
// and the replaced one stops at once. Returns
// emi.ErrWebhookEndpointNotFound (also for another partner's endpoint).
func (s *Webhooks) RotateEndpointSecret(ctx context.Context, partnerID, endpointID string) (string, time.Time, error) {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return "", time.Time{}, err
	}
	var whsec string
	var until time.Time
	err := s.changeEndpoint(ctx, partnerID, endpointID, func(ctx context.Context, ep *kernel.StoredEndpoint) (string, map[string]any, error) {
		secret, raw := newWebhookSecret()
		enc, err := s.sealer.Seal(raw, WebhookSecretContext(ep.ID))
		if err != nil {
			return "", nil, emi.Internal(err)
		}
		now := s.now.At(ctx).UTC()
		if ep.PreviousSecretEnc != nil && ep.PreviousValidUntil != nil && now.Before(*ep.PreviousValidUntil) {
			// A second rotation inside the overlap: the previous secret
			// is the one the partner's receiver still verifies with (a
			// rotation is followed by a deployment that takes hours), and
			// the secret being replaced was shown once minutes ago, most
			// likely lost or exposed, which is why it is rotated again.
			// So the previous secret stays, with its end unchanged (a
			// chain of rotations must not keep an old secret alive), and
			// the replaced one stops signing at once. The audit row says
			// so in keys without "secret" in their names: the auditor
			// redacts the value of such keys, which hid the marker.
			until = *ep.PreviousValidUntil
			ep.SecretEnc = enc
			whsec = secret
			return "webhook_endpoint.rotate_secret", map[string]any{"previous_valid_until": until, "during_overlap": true, "replaced_current": true}, nil
		}
		// The current secret becomes the previous one; it is sealed under
		// this endpoint's context, so it moves as it is.
		until = now.Add(s.cfg.SecretOverlap)
		ep.PreviousSecretEnc, ep.PreviousValidUntil, ep.SecretEnc = ep.SecretEnc, &until, enc
		whsec = secret
		return "webhook_endpoint.rotate_secret", map[string]any{"previous_valid_until": until}, nil
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return whsec, until, nil
}

// DeleteEndpoint removes the partner's endpoint (emi.PermManageWebhooks):
// it gets no more events and leaves the listings, its pending deliveries
// are canceled, and its delivery history stays in the log. Returns
// emi.ErrWebhookEndpointNotFound (also for another partner's endpoint).
func (s *Webhooks) DeleteEndpoint(ctx context.Context, partnerID, endpointID string) error {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return err
	}
	return s.changeEndpoint(ctx, partnerID, endpointID, func(ctx context.Context, ep *kernel.StoredEndpoint) (string, map[string]any, error) {
		ep.Deleted, ep.Enabled, ep.DisabledReason = true, false, "deleted"
		n, err := s.store.CancelPendingDeliveries(ctx, ep.ID, "", "endpoint deleted", s.now.At(ctx).UTC())
		return "webhook_endpoint.delete", map[string]any{"url": ep.URL, "canceled_deliveries": n}, err
	})
}

// changeEndpoint runs change on the locked endpoint in a transaction, then
// saves it and audits the action change returns ("" saves nothing). The
// endpoint must be partnerID's: the back office names the partner in the
// URL (/partners/{id}/webhooks/{ep}/…), and an endpoint of another partner
// is reported exactly as an unknown one, so a page of partner A can never
// act on partner B's endpoint.
func (s *Webhooks) changeEndpoint(ctx context.Context, partnerID, id string, change func(ctx context.Context, ep *kernel.StoredEndpoint) (string, map[string]any, error)) error {
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		ep, err := s.store.EndpointForUpdate(ctx, id)
		if err != nil {
			return err
		}
		if ep.Deleted || ep.PartnerID != partnerID {
			return emi.ErrWebhookEndpointNotFound
		}
		action, changes, err := change(ctx, &ep)
		if err != nil || action == "" {
			return err
		}
		ep.UpdatedAt = s.now.At(ctx).UTC()
		if err := s.store.UpdateEndpoint(ctx, ep); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "webhook_endpoint",
			ResourceToken: ep.ID, PartnerID: ep.PartnerID, Changes: changes})
	})
}

// EndpointPage is a page of a partner's endpoints, oldest first: those
// after the endpoint After ("" from the first), at most Limit (0: all).
type EndpointPage struct {
	After string
	Limit int
}

// Endpoints returns the partner's endpoints (not the deleted ones), oldest
// first, each with its health over the last 24 hours
// (emi.PermViewWebhooks). Returns emi.ErrPartnerNotFound.
func (s *Webhooks) Endpoints(ctx context.Context, partnerID string) ([]emi.WebhookEndpoint, error) {
	return s.endpoints(ctx, partnerID, EndpointPage{})
}

// endpoints is Endpoints, a page of them.
func (s *Webhooks) endpoints(ctx context.Context, partnerID string, page EndpointPage) ([]emi.WebhookEndpoint, error) {
	if err := ViewWebhooks.Require(ctx); err != nil {
		return nil, err
	}
	ok, err := s.store.PartnerExists(ctx, partnerID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, emi.ErrPartnerNotFound
	}
	return s.store.Endpoints(ctx, partnerID, s.now.At(ctx).UTC().Add(-24*time.Hour), page)
}

// Endpoint returns one endpoint with its health (emi.PermViewWebhooks).
// Returns emi.ErrWebhookEndpointNotFound, also for a deleted one.
func (s *Webhooks) Endpoint(ctx context.Context, endpointID string) (emi.WebhookEndpoint, error) {
	if err := ViewWebhooks.Require(ctx); err != nil {
		return emi.WebhookEndpoint{}, err
	}
	ep, err := s.store.Endpoint(ctx, endpointID)
	if err != nil {
		return emi.WebhookEndpoint{}, err
	}
	all, err := s.store.Endpoints(ctx, ep.PartnerID, s.now.At(ctx).UTC().Add(-24*time.Hour), EndpointPage{})
	if err != nil {
		return emi.WebhookEndpoint{}, err
	}
	for _, e := range all {
		if e.ID == endpointID {
			return e, nil
		}
	}
	return emi.WebhookEndpoint{}, emi.ErrWebhookEndpointNotFound
}

// SendTest emits a webhook.test event to this endpoint of the partner
// only, whatever its filter, also when it is disabled (to check a fix
// before enabling it), and audits it (emi.PermManageWebhooks). A test
// delivery gets one attempt and does not count towards the endpoint's
// failure streak. Returns the event, or emi.ErrWebhookEndpointNotFound
// (also for another partner's endpoint).
func (s *Webhooks) SendTest(ctx context.Context, partnerID, endpointID string) (emi.Event, error) {
	return s.sendTest(ctx, partnerID, endpointID, TestFromBackOffice, "A test event sent from the emi back office by emi staff.")
}

// Where a webhook.test event was asked for: its data's source.
const (
	TestFromBackOffice = "back_office"
	TestFromAPI        = "api"
)

// sendTest is SendTest with the event's wording: source (TestFromAPI or
// TestFromBackOffice) and the message for a person reading the receiver's
// log, both in data beside the endpoint.
func (s *Webhooks) sendTest(ctx context.Context, partnerID, endpointID, source, message string) (emi.Event, error) {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return emi.Event{}, err
	}
	var ev emi.Event
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		ep, err := s.store.Endpoint(ctx, endpointID)
		if err != nil {
			return err
		}
		if ep.Deleted || ep.PartnerID != partnerID {
			return emi.ErrWebhookEndpointNotFound
		}
		ev, err = s.events.Emit(ctx, ep.PartnerID, emi.EventWebhookTest, emi.EventWebhookTest.Resource(), ep.ID,
			map[string]any{"message": message, "source": source})
		if err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "webhook_endpoint.send_test", ResourceType: "webhook_endpoint",
			ResourceToken: ep.ID, PartnerID: ep.PartnerID, Changes: map[string]any{"event": ev.ID, "source": source}})
	})
	return ev, err
}

// Replay asks for a new attempt of one of the partner's deliveries now,
// whatever its state (succeeded, failed, canceled or still retrying), and
// audits it (emi.PermManageWebhooks). The attempt is made by the
// delivery's job and logged as a replay by the caller. A failed replay of
// a delivery that is still retrying leaves its schedule as it was; a
// failed replay of a finished delivery leaves it finished. Returns
// emi.ErrWebhookDeliveryNotFound (also for another partner's delivery,
// before anything about it is looked at), and
// emi.ErrWebhookEndpointDisabled when the endpoint is disabled or deleted
// (enable it first).
func (s *Webhooks) Replay(ctx context.Context, partnerID, deliveryID string) error {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		w, err := s.store.DeliveryWork(ctx, deliveryID)
		if err != nil {
			return err
		}
		if w.Event.PartnerID != partnerID || w.Endpoint.PartnerID != partnerID {
			return emi.ErrWebhookDeliveryNotFound
		}
		if w.Endpoint.Deleted || (!w.Endpoint.Enabled && w.Event.Type != emi.EventWebhookTest) {
			return emi.ErrWebhookEndpointDisabled
		}
		d, err := s.store.DeliveryForUpdate(ctx, deliveryID)
		if err != nil {
			return err
		}
		if err := s.requestReplay(ctx, partnerID, d); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "webhook_delivery.replay", ResourceType: "webhook_delivery",
			ResourceToken: d.ID, PartnerID: w.Event.PartnerID,
			Changes: map[string]any{"event": d.EventID, "endpoint": d.EndpointID, "state": d.State}})
	})
}

// requestReplay records a replay request on a locked delivery of
// partnerID and makes its job due now.
func (s *Webhooks) requestReplay(ctx context.Context, partnerID string, d kernel.StoredDelivery) error {
	p, _ := emi.PrincipalFrom(ctx)
	now := s.now.At(ctx).UTC()
	d.ReplayRequestedAt, d.ReplayRequestedBy, d.UpdatedAt = &now, p.ActorID, now
	if err := s.store.SaveDelivery(ctx, d); err != nil {
		return err
	}
	if _, created, err := s.jobs.Enqueue(ctx, kernel.DeliveryJobSpec(d.ID, partnerID)); err != nil {
		return err
	} else if !created {
		// The delivery's job is waiting for its next retry (or running:
		// then it makes the replay as soon as its attempt ends).
		return s.store.HurryJob(ctx, kernel.DeliveryJobKey(d.ID))
	}
	return nil
}

// MaxBulkReplay bounds one bulk replay: the oldest failed deliveries first,
// this many per request; staff replay again for the rest.
const MaxBulkReplay = 100

// ReplayFailed asks for a new attempt of the partner's failed deliveries
// (after an outage of the partner's endpoint, so staff need not replay them
// one by one), optionally only those of one event type and of events
// created in [From, To), oldest first and at most MaxBulkReplay, and audits
// it once with the count and the deliveries (emi.PermManageWebhooks, as
// Replay). Deliveries to disabled or deleted endpoints are left (enable the
// endpoint first, as for one replay), and so are deliveries whose replay is
// already asked for: two bulk replays at once, or one submitted twice, ask
// for each delivery's replay once (the rows are locked and skipped by the
// other). Returns the number asked for (0: none to replay, nothing
// audited), and emi.ErrWebhookValidation naming type, and
// emi.ErrPartnerNotFound.
func (s *Webhooks) ReplayFailed(ctx context.Context, f emi.EventLogFilter) (int, error) {
	if err := ManageWebhooks.Require(ctx); err != nil {
		return 0, err
	}
	if f.Type != "" && !emi.ValidEventType(f.Type) {
		return 0, emi.ErrWebhookValidation.WithFields(emi.FieldError{Field: "type", Message: "must be one of: " + strings.Join(emi.EventTypeNames(), ", ")})
	}
	if ok, err := s.store.PartnerExists(ctx, f.PartnerID); err != nil {
		return 0, err
	} else if !ok {
		return 0, emi.ErrPartnerNotFound
	}
	var n int
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		ds, err := s.store.FailedDeliveriesForReplay(ctx, f, MaxBulkReplay)
		if err != nil || len(ds) == 0 {
			return err
		}
		ids := make([]string, len(ds))
		for i, d := range ds {
			if err := s.requestReplay(ctx, f.PartnerID, d); err != nil {
				return err
			}
			ids[i] = d.ID
		}
		n = len(ds)
		changes := map[string]any{"count": n, "deliveries": ids}
		if f.Type != "" {
			changes["type"] = f.Type
		}
		if !f.From.IsZero() {
			changes["from"] = f.From
		}
		if !f.To.IsZero() {
			changes["to"] = f.To
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "webhook_delivery.bulk_replay", ResourceType: "partner",
			ResourceToken: f.PartnerID, PartnerID: f.PartnerID, Changes: changes})
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// EventsLog returns a page of events for the back office's delivery log,
// newest first, each with its deliveries and their attempts
// (emi.PermViewWebhooks). An empty PartnerID means every partner; Page 0
// means 1 and Limit 0 means 50. Returns emi.ErrWebhookValidation naming
// page, limit or type.
func (s *Webhooks) EventsLog(ctx context.Context, f emi.EventLogFilter) (emi.EventLog, error) {
	if err := ViewWebhooks.Require(ctx); err != nil {
		return emi.EventLog{}, err
	}
	if f.Page == 0 {
		f.Page = 1
	}
	if f.Limit == 0 {
		f.Limit = defaultEventLogLimit
	}
	f.ResourceToken = strings.TrimSpace(f.ResourceToken)
	var fields []emi.FieldError
	if f.Page < 1 || f.Page > kernel.MaxEventsPage {
		fields = append(fields, emi.FieldError{Field: "page", Message: "must be at least 1"})
	}
	if f.Limit < 1 || f.Limit > kernel.MaxEventsPerPage {
		fields = append(fields, emi.FieldError{Field: "limit", Message: fmt.Sprintf("must be from 1 to %d", kernel.MaxEventsPerPage)})
	}
	if f.Type != "" && !emi.ValidEventType(f.Type) {
		fields = append(fields, emi.FieldError{Field: "type", Message: "must be one of: " + strings.Join(emi.EventTypeNames(), ", ")})
	}
	if f.State != "" && !slices.Contains(emi.DeliveryStates, f.State) {
		fields = append(fields, emi.FieldError{Field: "status", Message: "must be one of: pending, succeeded, failed, canceled"})
	}
	if len(fields) > 0 {
		return emi.EventLog{}, emi.ErrWebhookValidation.WithFields(fields...)
	}
	return s.store.EventLog(ctx, f)
}

// Delivery returns one delivery with its attempts (emi.PermViewWebhooks).
// Returns emi.ErrWebhookDeliveryNotFound.
func (s *Webhooks) Delivery(ctx context.Context, deliveryID string) (emi.WebhookDelivery, error) {
	if err := ViewWebhooks.Require(ctx); err != nil {
		return emi.WebhookDelivery{}, err
	}
	return s.store.Delivery(ctx, deliveryID)
}

// Deliver is the handler of the JobWebhookDeliver job: it makes one attempt
// of the delivery and records it.
//
//   - A delivery that is no longer pending is not sent again (a job that
//     runs twice after a success, e.g. because its worker died before
//     reporting), unless a replay was asked for.
//   - A delivery to a deleted endpoint, or to a disabled one (test events
//     excepted), is canceled without an attempt.
//   - A success marks the delivery succeeded and ends the endpoint's
//     failure streak.
//   - A failure of a scheduled attempt asks the retry policy: the job is
//     retried after its delay (worker.RetryAfter), or the delivery is marked
//     failed when it gives up. The first failure starts the endpoint's
//     failure streak; a 410 Gone, or a streak of DisableAfter, disables the
//     endpoint and cancels its other pending deliveries.
//
// An attempt cut short because ctx was cancelled (a shutdown) is recorded,
// but is not the endpoint's fault: it counts neither towards the schedule
// nor the failure streak, and the job runs again at once elsewhere. Returns a permanent error for a
// job whose payload or delivery does not exist.
func (s *Webhooks) Deliver(ctx context.Context, job emi.Job) error {
	var p kernel.DeliveryJob
	if err := json.Unmarshal(job.Payload, &p); err != nil || p.Delivery == "" {
		return worker.Permanent(fmt.Errorf("webhook delivery job %d: bad payload %s", job.ID, job.Payload))
	}
	err := s.deliver(ctx, p.Delivery)
	if errors.Is(err, emi.ErrWebhookDeliveryNotFound) {
		return worker.Permanent(fmt.Errorf("webhook delivery job %d: %w", job.ID, err))
	}
	return err
}

// deliver makes one attempt of the delivery (Deliver), at the time of the
// partner's test clock when it runs on one: the attempt's time and the
// retry schedule are the clock's, and a failed attempt's retry waits for
// the clock to reach it (RetryDue) instead of the job queue. The signature
// carries the wall-clock time, which is what the receiver checks its
// tolerance against.
func (s *Webhooks) deliver(ctx context.Context, id string) error {
	w, err := s.store.DeliveryWork(ctx, id)
	if err != nil {
		return err
	}
	replay := w.Delivery.ReplayRequestedAt != nil
	switch {
	case !replay && w.Delivery.State != emi.DeliveryPending:
		return nil
	case w.Endpoint.Deleted:
		return s.cancel(ctx, w.Delivery.ID, "endpoint deleted")
	case !w.Endpoint.Enabled && w.Event.Type != emi.EventWebhookTest:
		return s.cancel(ctx, w.Delivery.ID, "endpoint disabled: "+w.Endpoint.DisabledReason)
	}
	if ctx, err = kernel.OnPartnerClock(ctx, s.clocks, w.Endpoint.PartnerID); err != nil {
		return err
	}
	start := s.now.At(ctx).UTC()
	signed := s.now().UTC()
	secrets, err := s.secrets(w.Endpoint, signed)
	if err != nil {
		return err
	}
	res := s.deliverer.Deliver(ctx, emi.WebhookMessage{ID: w.Event.ID, Timestamp: signed, URL: w.Endpoint.URL,
		Body: w.Event.Body, Secrets: secrets})
	interrupted := ctx.Err() != nil && !res.OK()
	return s.record(context.WithoutCancel(ctx), w, start, res, interrupted)
}

// NextRetry returns when the earliest retry of partnerID's deliveries is
// due, at or before until (a test clock's advance).
func (s *Webhooks) NextRetry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error) {
	ds, err := s.store.ClockRetries(ctx, partnerID, until, nil, 1)
	if err != nil || len(ds) == 0 {
		return time.Time{}, false, err
	}
	return ds[0].NextAttemptAt.UTC(), true, nil
}

// RetryDue makes the retries of partnerID's deliveries due at the time of
// ctx (its test clock), the earliest first, one attempt each, and returns
// how many it made. A failed one is scheduled again by the clock's time.
func (s *Webhooks) RetryDue(ctx context.Context, partnerID string) (int, error) {
	ds, err := s.store.ClockRetries(ctx, partnerID, s.now.At(ctx).UTC(), nil, 100)
	if err != nil {
		return 0, err
	}
	for i, d := range ds {
		if err := s.deliver(ctx, d.ID); err != nil && !worker.IsRetryAfter(err) {
			return i, err
		}
	}
	return len(ds), nil
}

// ResumeRetries hands the retries of partnerID's deliveries back to the
// job queue when its test clock goes: each waits what it had left to wait
// by the clock (frozen is the clock's last time).
func (s *Webhooks) ResumeRetries(ctx context.Context, partnerID string, frozen time.Time) (int, error) {
	// Every retry, however far ahead of the clock (the schedule ends 3
	// days after the first attempt; a clock is never past 2099).
	const page = 500
	until := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	now := s.now().UTC()
	n := 0
	var after *kernel.StoredDelivery
	for {
		ds, err := s.store.ClockRetries(ctx, partnerID, until, after, page)
		if err != nil {
			return n, err
		}
		for _, d := range ds {
			spec := kernel.DeliveryJobSpec(d.ID, partnerID)
			spec.RunAt = now.Add(max(d.NextAttemptAt.Sub(frozen), 0))
			if _, _, err := s.jobs.Enqueue(ctx, spec); err != nil {
				return n, err
			}
		}
		n += len(ds)
		if len(ds) < page {
			return n, nil
		}
		after = &ds[len(ds)-1]
	}
}

// secrets opens the endpoint's signing keys: the current one, and the
// previous one while its overlap lasts.
func (s *Webhooks) secrets(ep kernel.StoredEndpoint, now time.Time) ([][]byte, error) {
	cur, err := s.sealer.Open(ep.SecretEnc, WebhookSecretContext(ep.ID))
	if err != nil {
		return nil, emi.Internal(fmt.Errorf("open secret of webhook endpoint %s: %w", ep.ID, err))
	}
	out := [][]byte{cur}
	if ep.PreviousSecretEnc != nil && ep.PreviousValidUntil != nil && now.Before(*ep.PreviousValidUntil) {
		prev, err := s.sealer.Open(ep.PreviousSecretEnc, WebhookSecretContext(ep.ID))
		if err != nil {
			return nil, emi.Internal(fmt.Errorf("open previous secret of webhook endpoint %s: %w", ep.ID, err))
		}
		out = append(out, prev)
	}
	return out, nil
}

// cancel marks a pending delivery canceled without an attempt (and drops a
// replay request, which Replay would have refused).
func (s *Webhooks) cancel(ctx context.Context, id, reason string) error {
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		d, err := s.store.DeliveryForUpdate(ctx, id)
		if err != nil {
			return err
		}
		now := s.now.At(ctx).UTC()
		if d.State == emi.DeliveryPending {
			d.State, d.NextAttemptAt, d.LastError = emi.DeliveryCanceled, nil, cleanText(reason, maxAttemptError)
		}
		d.ReplayRequestedAt, d.ReplayRequestedBy, d.UpdatedAt = nil, "", now
		return s.store.SaveDelivery(ctx, d)
	})
}

// record stores the attempt and what follows from it, and returns what the
// job queue should do: nil (done) or a worker.RetryAfter. interrupted marks
// an attempt cut short by the worker itself.
func (s *Webhooks) record(ctx context.Context, w DeliveryWork, start time.Time, res emi.WebhookResult, interrupted bool) error {
	test := w.Event.Type == emi.EventWebhookTest
	replay := w.Delivery.ReplayRequestedAt != nil
	_, onClock := kernel.FrozenTime(ctx)
	var outcome error
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		outcome = nil
		now := s.now.At(ctx).UTC()
		// The endpoint row before the delivery row: the order every path
		// takes, so two transactions never wait for each other in a circle.
		disabled := ""
		if !test && !interrupted {
			var err error
			if disabled, err = s.endpointResult(ctx, w.Endpoint.ID, w.Delivery.ID, res, now); err != nil {
				return err
			}
		}
		d, err := s.store.DeliveryForUpdate(ctx, w.Delivery.ID)
		if err != nil {
			return err
		}
		d.Attempts++
		a := emi.WebhookAttempt{DeliveryID: d.ID, Attempt: d.Attempts, StartedAt: start, Status: res.Status,
			Latency: max(res.Latency, 0), ResponseExcerpt: excerpt(res.Body), Error: cleanText(res.Error, maxAttemptError)}
		if replay {
			a.Replay, a.ReplayedBy = true, w.Delivery.ReplayRequestedBy
		}
		if err := s.store.InsertAttempt(ctx, w.Endpoint.ID, a); err != nil {
			return err
		}
		// The request this attempt answered is done; one made while it
		// ran stays, and is made next.
		if replay && d.ReplayRequestedAt != nil && d.ReplayRequestedAt.Equal(*w.Delivery.ReplayRequestedAt) {
			d.ReplayRequestedAt, d.ReplayRequestedBy = nil, ""
		}
		scheduled := !replay && !interrupted && d.State == emi.DeliveryPending
		if scheduled {
			d.ScheduleStep++
			if d.FirstAttemptAt == nil {
				d.FirstAttemptAt = &start
			}
		}
		d.LastStatus, d.LastError, d.UpdatedAt = res.Status, attemptError(res), now
		switch {
		case res.OK():
			d.State, d.SucceededAt, d.NextAttemptAt, d.LastError = emi.DeliverySucceeded, &now, nil, ""
		case interrupted:
			// The request this attempt answered stays asked for.
			if replay && d.ReplayRequestedAt == nil {
				d.ReplayRequestedAt, d.ReplayRequestedBy = w.Delivery.ReplayRequestedAt, w.Delivery.ReplayRequestedBy
			}
			outcome = worker.RetryAfter(0, fmt.Errorf("webhook delivery %s: attempt interrupted: %s", d.ID, d.LastError))
		case d.State != emi.DeliveryPending:
			// A replay of a finished delivery failed, or the delivery was
			// canceled while the attempt ran: it stays as it is.
		case test:
			d.State, d.NextAttemptAt = emi.DeliveryFailed, nil // a test event gets one attempt
		case disabled != "":
			d.State, d.NextAttemptAt = emi.DeliveryFailed, nil
			d.LastError = cleanText(joinText(d.LastError, "endpoint disabled: "+disabled), maxAttemptError)
		case !scheduled:
			// A replay of a delivery that is still retrying failed: its
			// schedule goes on as planned (at once when it was due).
			delay := time.Duration(0)
			if d.NextAttemptAt != nil {
				delay = max(d.NextAttemptAt.Sub(now), 0)
			}
			if !onClock {
				outcome = worker.RetryAfter(delay, fmt.Errorf("webhook delivery %s: replay failed: %s", d.ID, d.LastError))
			}
		default:
			delay, giveUp := s.retry(res, d.ScheduleStep, now.Sub(*d.FirstAttemptAt))
			if giveUp {
				d.State, d.NextAttemptAt = emi.DeliveryFailed, nil
				d.LastError = cleanText(joinText(d.LastError, fmt.Sprintf("gave up after %d attempts", d.ScheduleStep)), maxAttemptError)
				break
			}
			next := now.Add(delay)
			d.NextAttemptAt = &next
			// A partner on a test clock gets the retry when its clock
			// reaches next (RetryDue), not from the job queue.
			if !onClock {
				outcome = worker.RetryAfter(delay, fmt.Errorf("webhook delivery %s: attempt %d failed: %s", d.ID, d.ScheduleStep, d.LastError))
			}
		}
		if d.ReplayRequestedAt != nil {
			outcome = worker.RetryAfter(0, fmt.Errorf("webhook delivery %s: a replay was asked for during an attempt", d.ID))
		}
		return s.store.SaveDelivery(ctx, d)
	})
	if err != nil {
		return err
	}
	return outcome
}

// endpointResult updates the endpoint's failure streak after a (non-test)
// attempt of deliveryID and returns why it disabled the endpoint ("" when it
// did not). Disabling cancels the endpoint's other pending deliveries.
func (s *Webhooks) endpointResult(ctx context.Context, id, deliveryID string, res emi.WebhookResult, now time.Time) (string, error) {
	if res.OK() {
		return "", s.store.ClearEndpointFailing(ctx, id, now)
	}
	ep, err := s.store.EndpointForUpdate(ctx, id)
	if err != nil {
		return "", err
	}
	if ep.Deleted || !ep.Enabled {
		return "", nil
	}
	if ep.FailingSince == nil {
		ep.FailingSince = &now
	}
	reason := ""
	switch {
	case res.Gone():
		reason = "the endpoint answered 410 Gone"
	case now.Sub(*ep.FailingSince) >= s.cfg.DisableAfter:
		reason = fmt.Sprintf("failing since %s, for %s", ep.FailingSince.Format(time.RFC3339), now.Sub(*ep.FailingSince).Round(time.Minute))
	}
	ep.UpdatedAt = now
	if reason == "" {
		return "", s.store.UpdateEndpoint(ctx, ep)
	}
	ep.Enabled, ep.DisabledReason = false, reason
	if err := s.store.UpdateEndpoint(ctx, ep); err != nil {
		return "", err
	}
	n, err := s.store.CancelPendingDeliveries(ctx, ep.ID, deliveryID, "endpoint disabled: "+reason, now)
	if err != nil {
		return "", err
	}
	sys := emi.WithPrincipal(ctx, emi.SystemPrincipal("webhooks"))
	return reason, s.audit.Record(sys, emi.AuditEntry{Action: "webhook_endpoint.auto_disable", ResourceType: "webhook_endpoint",
		ResourceToken: ep.ID, PartnerID: ep.PartnerID, Changes: map[string]any{"reason": reason, "canceled_deliveries": n}})
}

// attemptError is what the delivery shows as its last error.
func attemptError(res emi.WebhookResult) string {
	switch {
	case res.OK():
		return ""
	case res.Error != "":
		return cleanText(res.Error, maxAttemptError)
	default:
		return fmt.Sprintf("HTTP %d", res.Status)
	}
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// excerpt returns at most the first 1 KiB of an answer as text PostgreSQL
// accepts: valid UTF-8 (invalid bytes replaced by U+FFFD), no NUL bytes,
// and still at most 1 KiB after the replacements.
func excerpt(b []byte) string {
	return cleanText(string(b[:min(len(b), maxAttemptExcerpt)]), maxAttemptExcerpt)
}

// cleanText makes s valid UTF-8 without NUL bytes, at most n bytes long (cut
// at a character boundary).
func cleanText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// ApplicationEvents returns the events sent about an application, newest
// first, with their deliveries, for the staff who review applications
// (emi.PermViewApps: underwriters and compliance see what the partner was
// told without the webhook administration permission).
func (s *Webhooks) ApplicationEvents(ctx context.Context, token string) (emi.EventLog, error) {
	if err := ViewApplicationEvents.Require(ctx); err != nil {
		return emi.EventLog{}, err
	}
	return s.store.EventLog(ctx, emi.EventLogFilter{ResourceToken: strings.TrimSpace(token), Page: 1, Limit: kernel.MaxEventsPerPage})
}
