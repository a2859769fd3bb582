package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/partners"
)

// WebhookStore implements kernel.EventStore and partners.WebhookStore over
// the tables events, webhook_endpoints, webhook_deliveries and
// webhook_attempts (migration 00004).
type WebhookStore struct {
	db *DB
}

// NewWebhookStore returns the webhook store.
func NewWebhookStore(db *DB) *WebhookStore { return &WebhookStore{db: db} }

var (
	_ partners.WebhookStore = (*WebhookStore)(nil)
	// partners.WebhookStore embeds it: the kernel's event outbox writes
	// into the webhook tables.
	_ kernel.EventStore = (*WebhookStore)(nil)
)

// partnerEventsLock is the first key of the two-key advisory lock that
// orders one partner's event-writing transactions (the second key is a hash
// of the partner id). No other code uses this key.
const partnerEventsLock = 0x45564E54 // "EVNT"

// InTransaction reports whether ctx carries a transaction.
func (s *WebhookStore) InTransaction(ctx context.Context) bool { return InTransaction(ctx) }

// LockPartnerEvents takes the partner's event lock until the transaction
// ends: event-writing transactions of one partner then get their seq in
// commit order (the next one gets its seq only after the previous one has
// committed and released the lock), so a reader paging with `after` never
// sees a later seq before an earlier one.
func (s *WebhookStore) LockPartnerEvents(ctx context.Context, partnerID string) error {
	if !InTransaction(ctx) {
		return emi.Internal(errors.New("lock partner events outside a transaction"))
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `SELECT pg_advisory_xact_lock($1::int4, hashtext($2))`, partnerEventsLock, partnerID)
	return Translate(err)
}

// InsertEvent stores e and returns its seq.
func (s *WebhookStore) InsertEvent(ctx context.Context, e emi.StoredEvent) (int64, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return 0, emi.Internal(fmt.Errorf("insert event %s: marshal data: %w", e.ID, err))
	}
	var seq int64
	err = sqlx.GetContext(ctx, s.db.Ext(ctx), &seq, `
		INSERT INTO events (id, partner_id, type, resource_token, data, body, endpoint_id, created_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6, NULLIF($7, '')::uuid, $8)
		RETURNING seq`,
		e.ID, e.PartnerID, e.Type, e.ResourceToken, string(data), []byte(e.Body), e.EndpointID, e.CreatedAt)
	if err != nil {
		return 0, Translate(fmt.Errorf("insert event %s: %w", e.ID, err))
	}
	return seq, nil
}

// EventEndpoints returns the ids of the partner's enabled, not deleted
// endpoints whose filter is empty or holds typ.
func (s *WebhookStore) EventEndpoints(ctx context.Context, partnerID string, typ emi.EventType) ([]string, error) {
	var ids []string
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ids, `
		SELECT id FROM webhook_endpoints
		WHERE partner_id = $1 AND enabled AND deleted_at IS NULL
		  AND (cardinality(event_types) = 0 OR $2 = ANY (event_types))
		ORDER BY created_at, id`, partnerID, typ)
	return ids, Translate(err)
}

// endpointColumns is what every query returning endpoints selects.
const endpointColumns = `e.id, e.partner_id, e.url, e.description, e.event_types, e.enabled, e.disabled_reason,
	e.failing_since, e.secret_enc, e.previous_secret_enc, e.previous_valid_until, e.created_at, e.updated_at, e.deleted_at`

type endpointRow struct {
	ID                 string         `db:"id"`
	PartnerID          string         `db:"partner_id"`
	URL                string         `db:"url"`
	Description        string         `db:"description"`
	EventTypes         pq.StringArray `db:"event_types"`
	Enabled            bool           `db:"enabled"`
	DisabledReason     string         `db:"disabled_reason"`
	FailingSince       sql.NullTime   `db:"failing_since"`
	SecretEnc          []byte         `db:"secret_enc"`
	PreviousSecretEnc  []byte         `db:"previous_secret_enc"`
	PreviousValidUntil sql.NullTime   `db:"previous_valid_until"`
	CreatedAt          time.Time      `db:"created_at"`
	UpdatedAt          time.Time      `db:"updated_at"`
	DeletedAt          sql.NullTime   `db:"deleted_at"`
}

func (r endpointRow) endpoint() emi.WebhookEndpoint {
	types := make([]emi.EventType, len(r.EventTypes))
	for i, t := range r.EventTypes {
		types[i] = emi.EventType(t)
	}
	return emi.WebhookEndpoint{ID: r.ID, PartnerID: r.PartnerID, URL: r.URL, Description: r.Description,
		EventTypes: types, Enabled: r.Enabled, DisabledReason: r.DisabledReason, FailingSince: timePtr(r.FailingSince),
		PreviousValidUntil: timePtr(r.PreviousValidUntil), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func (r endpointRow) stored() kernel.StoredEndpoint {
	return kernel.StoredEndpoint{WebhookEndpoint: r.endpoint(), SecretEnc: r.SecretEnc,
		PreviousSecretEnc: r.PreviousSecretEnc, Deleted: r.DeletedAt.Valid}
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time
	return &v
}

func eventTypes(ts []emi.EventType) pq.StringArray {
	out := make(pq.StringArray, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// Endpoint returns an endpoint with its sealed secrets, deleted ones
// included. Returns emi.ErrWebhookEndpointNotFound.
func (s *WebhookStore) Endpoint(ctx context.Context, id string) (kernel.StoredEndpoint, error) {
	return s.endpoint(ctx, id, "")
}

// EndpointForUpdate is Endpoint with the row locked until the transaction
// ends.
func (s *WebhookStore) EndpointForUpdate(ctx context.Context, id string) (kernel.StoredEndpoint, error) {
	return s.endpoint(ctx, id, "FOR UPDATE")
}

func (s *WebhookStore) endpoint(ctx context.Context, id, lock string) (kernel.StoredEndpoint, error) {
	if !validUUID(id) {
		return kernel.StoredEndpoint{}, emi.ErrWebhookEndpointNotFound
	}
	var r endpointRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+endpointColumns+` FROM webhook_endpoints e WHERE e.id = $1 `+lock, id)
	if err != nil {
		return kernel.StoredEndpoint{}, NotFound(err, emi.ErrWebhookEndpointNotFound)
	}
	return r.stored(), nil
}

// PartnerExists reports whether the partner exists.
func (s *WebhookStore) PartnerExists(ctx context.Context, id string) (bool, error) {
	if !validUUID(id) {
		return false, nil
	}
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok, `SELECT EXISTS (SELECT 1 FROM partners WHERE id = $1)`, id)
	return ok, Translate(err)
}

// LockPartnerEndpoints locks the partner's row until the transaction ends
// and reports whether the partner exists. FOR NO KEY UPDATE: two endpoint
// changes of one partner wait for each other, while rows that merely
// refer to the partner (events, keys: FOR KEY SHARE) are not held up.
func (s *WebhookStore) LockPartnerEndpoints(ctx context.Context, partnerID string) (bool, error) {
	if !InTransaction(ctx) {
		return false, emi.Internal(errors.New("lock partner endpoints outside a transaction"))
	}
	if !validUUID(partnerID) {
		return false, nil
	}
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok, `SELECT true FROM partners WHERE id = $1 FOR NO KEY UPDATE`, partnerID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return ok, Translate(err)
}

// ActiveEndpointURLs returns the URL of each of the partner's enabled,
// not deleted endpoints, by id.
func (s *WebhookStore) ActiveEndpointURLs(ctx context.Context, partnerID string) (map[string]string, error) {
	var rows []struct {
		ID  string `db:"id"`
		URL string `db:"url"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `
		SELECT id, url FROM webhook_endpoints WHERE partner_id = $1 AND enabled AND deleted_at IS NULL`, partnerID); err != nil {
		return nil, Translate(fmt.Errorf("active webhook endpoints: %w", err))
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.URL
	}
	return out, nil
}

// InsertEndpoint stores a new endpoint.
func (s *WebhookStore) InsertEndpoint(ctx context.Context, ep kernel.StoredEndpoint) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `
		INSERT INTO webhook_endpoints (id, partner_id, url, description, secret_enc, event_types, enabled, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		ep.ID, ep.PartnerID, ep.URL, ep.Description, ep.SecretEnc, eventTypes(ep.EventTypes), ep.Enabled, ep.CreatedAt, ep.UpdatedAt)
	return Translate(err)
}

// UpdateEndpoint writes every mutable column of ep. deleted_at keeps the time
// of the first deletion.
func (s *WebhookStore) UpdateEndpoint(ctx context.Context, ep kernel.StoredEndpoint) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE webhook_endpoints
		SET url = $2, description = $3, event_types = $4, enabled = $5, disabled_reason = $6, failing_since = $7,
		    secret_enc = $8, previous_secret_enc = $9, previous_valid_until = $10, updated_at = $11,
		    deleted_at = CASE WHEN $12 THEN COALESCE(deleted_at, $11) END
		WHERE id = $1`,
		ep.ID, ep.URL, ep.Description, eventTypes(ep.EventTypes), ep.Enabled, ep.DisabledReason, ep.FailingSince,
		ep.SecretEnc, ep.PreviousSecretEnc, ep.PreviousValidUntil, ep.UpdatedAt, ep.Deleted)
	return Translate(err)
}

// ClearEndpointFailing clears failing_since when it is set. The condition is
// in the WHERE clause, so the common case (a healthy endpoint) updates and
// locks nothing.
func (s *WebhookStore) ClearEndpointFailing(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE webhook_endpoints SET failing_since = NULL, updated_at = $2
		WHERE id = $1 AND failing_since IS NOT NULL`, id, at)
	return Translate(err)
}

// Endpoints returns the partner's endpoints that are not deleted, oldest
// first (a page of them), with their health: attempts and successes since
// since, the newest attempt, and the pending deliveries.
func (s *WebhookStore) Endpoints(ctx context.Context, partnerID string, since time.Time, page partners.EndpointPage) ([]emi.WebhookEndpoint, error) {
	if !validUUID(partnerID) {
		return nil, nil
	}
	// The page comes first, one range of webhook_endpoints_partner_order
	// (after the cursor, an endpoint of the partner checked by the
	// service), and only its endpoints' health is counted.
	args := []any{partnerID, since}
	where := `p.partner_id = $1 AND p.deleted_at IS NULL`
	if page.After != "" {
		args = append(args, page.After)
		where += ` AND (p.created_at, p.id) > (SELECT x.created_at, x.id FROM webhook_endpoints x WHERE x.id = $` + strconv.Itoa(len(args)) + `)`
	}
	limit := ""
	if page.Limit > 0 {
		args = append(args, page.Limit)
		limit = ` LIMIT $` + strconv.Itoa(len(args))
	}
	var rows []struct {
		endpointRow
		Attempts    int            `db:"h_attempts"`
		Succeeded   int            `db:"h_succeeded"`
		LastAt      sql.NullTime   `db:"last_at"`
		LastStatus  sql.NullInt64  `db:"last_status"`
		LastError   sql.NullString `db:"last_error"`
		PendingRows int            `db:"pending"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `
		SELECT `+endpointColumns+`,
		       h.attempts AS h_attempts, h.succeeded AS h_succeeded,
		       la.started_at AS last_at, la.status AS last_status, la.error AS last_error,
		       (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.state = 'pending') AS pending
		FROM (SELECT p.* FROM webhook_endpoints p WHERE `+where+` ORDER BY p.created_at, p.id`+limit+`) e
		CROSS JOIN LATERAL (
			SELECT count(*) AS attempts,
			       count(*) FILTER (WHERE a.status BETWEEN 200 AND 299 AND a.error = '') AS succeeded
			FROM webhook_attempts a WHERE a.endpoint_id = e.id AND a.started_at >= $2) h
		LEFT JOIN LATERAL (
			SELECT a.started_at, a.status, a.error FROM webhook_attempts a
			WHERE a.endpoint_id = e.id ORDER BY a.started_at DESC, a.id DESC LIMIT 1) la ON true
		ORDER BY e.created_at, e.id`, args...)
	if err != nil {
		return nil, Translate(fmt.Errorf("list webhook endpoints: %w", err))
	}
	out := make([]emi.WebhookEndpoint, len(rows))
	for i, r := range rows {
		ep := r.endpoint()
		ep.Health = emi.EndpointHealth{Attempts: r.Attempts, Succeeded: r.Succeeded, LastAttemptAt: timePtr(r.LastAt),
			LastStatus: int(r.LastStatus.Int64), LastError: r.LastError.String, Pending: r.PendingRows}
		out[i] = ep
	}
	return out, nil
}

// deliveryColumns is what every query returning deliveries selects.
const deliveryColumns = `d.id, d.event_id, d.endpoint_id, d.state, d.attempts, d.schedule_step, d.next_attempt_at,
	d.first_attempt_at, d.last_status, d.last_error, d.replay_requested_at, d.replay_requested_by,
	d.created_at, d.updated_at, d.succeeded_at`

type deliveryRow struct {
	ID                string        `db:"id"`
	EventID           string        `db:"event_id"`
	EndpointID        string        `db:"endpoint_id"`
	State             string        `db:"state"`
	Attempts          int           `db:"attempts"`
	ScheduleStep      int           `db:"schedule_step"`
	NextAttemptAt     sql.NullTime  `db:"next_attempt_at"`
	FirstAttemptAt    sql.NullTime  `db:"first_attempt_at"`
	LastStatus        sql.NullInt64 `db:"last_status"`
	LastError         string        `db:"last_error"`
	ReplayRequestedAt sql.NullTime  `db:"replay_requested_at"`
	ReplayRequestedBy string        `db:"replay_requested_by"`
	CreatedAt         time.Time     `db:"created_at"`
	UpdatedAt         time.Time     `db:"updated_at"`
	SucceededAt       sql.NullTime  `db:"succeeded_at"`
}

func (r deliveryRow) stored() kernel.StoredDelivery {
	return kernel.StoredDelivery{
		WebhookDelivery: emi.WebhookDelivery{ID: r.ID, EventID: r.EventID, EndpointID: r.EndpointID,
			State: emi.DeliveryState(r.State), Attempts: r.Attempts, NextAttemptAt: timePtr(r.NextAttemptAt),
			LastStatus: int(r.LastStatus.Int64), LastError: r.LastError, ReplayRequested: r.ReplayRequestedAt.Valid,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, SucceededAt: timePtr(r.SucceededAt)},
		ScheduleStep:      r.ScheduleStep,
		FirstAttemptAt:    timePtr(r.FirstAttemptAt),
		ReplayRequestedAt: timePtr(r.ReplayRequestedAt),
		ReplayRequestedBy: r.ReplayRequestedBy,
	}
}

// nullStatus stores HTTP status 0 ("no answer") as NULL.
func nullStatus(status int) sql.NullInt64 {
	return sql.NullInt64{Int64: int64(status), Valid: status != 0}
}

// InsertDelivery stores a new delivery.
func (s *WebhookStore) InsertDelivery(ctx context.Context, d kernel.StoredDelivery) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `
		INSERT INTO webhook_deliveries (id, event_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		d.ID, d.EventID, d.EndpointID, d.State, d.NextAttemptAt, d.CreatedAt, d.UpdatedAt)
	return Translate(err)
}

// DeliveryForUpdate returns the delivery with its row locked until the
// transaction ends. Returns emi.ErrWebhookDeliveryNotFound.
// DeliveryFor returns the id of the delivery of an event to an endpoint.
func (s *WebhookStore) DeliveryFor(ctx context.Context, eventID, endpointID string) (string, error) {
	if !validUUID(eventID) || !validUUID(endpointID) {
		return "", emi.ErrWebhookDeliveryNotFound
	}
	var id string
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &id, `SELECT id FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2`, eventID, endpointID)
	if err != nil {
		return "", NotFound(err, emi.ErrWebhookDeliveryNotFound)
	}
	return id, nil
}

func (s *WebhookStore) DeliveryForUpdate(ctx context.Context, id string) (kernel.StoredDelivery, error) {
	return s.delivery(ctx, id, "FOR UPDATE")
}

func (s *WebhookStore) delivery(ctx context.Context, id, lock string) (kernel.StoredDelivery, error) {
	if !validUUID(id) {
		return kernel.StoredDelivery{}, emi.ErrWebhookDeliveryNotFound
	}
	var r deliveryRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.id = $1 `+lock, id)
	if err != nil {
		return kernel.StoredDelivery{}, NotFound(err, emi.ErrWebhookDeliveryNotFound)
	}
	return r.stored(), nil
}

// SaveDelivery writes every mutable column of d.
func (s *WebhookStore) SaveDelivery(ctx context.Context, d kernel.StoredDelivery) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE webhook_deliveries
		SET state = $2, attempts = $3, schedule_step = $4, next_attempt_at = $5, first_attempt_at = $6,
		    last_status = $7, last_error = $8, replay_requested_at = $9, replay_requested_by = $10,
		    updated_at = $11, succeeded_at = $12
		WHERE id = $1`,
		d.ID, d.State, d.Attempts, d.ScheduleStep, d.NextAttemptAt, d.FirstAttemptAt, nullStatus(d.LastStatus),
		d.LastError, d.ReplayRequestedAt, d.ReplayRequestedBy, d.UpdatedAt, d.SucceededAt)
	return Translate(err)
}

// CancelPendingDeliveries cancels the endpoint's pending deliveries but
// except ("" for none), dropping their replay requests, and returns how many.
func (s *WebhookStore) CancelPendingDeliveries(ctx context.Context, endpointID, except, reason string, at time.Time) (int64, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE webhook_deliveries
		SET state = 'canceled', next_attempt_at = NULL, last_error = $3,
		    replay_requested_at = NULL, replay_requested_by = '', updated_at = $4
		WHERE endpoint_id = $1 AND state = 'pending' AND id::text <> $2`,
		endpointID, except, reason, at)
	if err != nil {
		return 0, Translate(err)
	}
	n, err := res.RowsAffected()
	return n, Translate(err)
}

// DeliveryWork returns the delivery, its endpoint (with secrets) and its
// event (with body). Returns emi.ErrWebhookDeliveryNotFound.
func (s *WebhookStore) DeliveryWork(ctx context.Context, id string) (partners.DeliveryWork, error) {
	d, err := s.delivery(ctx, id, "")
	if err != nil {
		return partners.DeliveryWork{}, err
	}
	ep, err := s.Endpoint(ctx, d.EndpointID)
	if err != nil {
		return partners.DeliveryWork{}, err
	}
	var ev eventRow
	err = sqlx.GetContext(ctx, s.db.Ext(ctx), &ev, `SELECT `+eventColumns+` FROM events e WHERE e.id = $1`, d.EventID)
	if err != nil {
		return partners.DeliveryWork{}, Translate(fmt.Errorf("event %s of delivery %s: %w", d.EventID, id, err))
	}
	return partners.DeliveryWork{Delivery: d, Endpoint: ep, Event: ev.stored()}, nil
}

// InsertAttempt appends an attempt to the log.
func (s *WebhookStore) InsertAttempt(ctx context.Context, endpointID string, a emi.WebhookAttempt) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `
		INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempt, started_at, status, latency_ms,
		                              response_excerpt, error, replay, replayed_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		a.DeliveryID, endpointID, a.Attempt, a.StartedAt, nullStatus(a.Status), a.Latency.Milliseconds(),
		a.ResponseExcerpt, a.Error, a.Replay, a.ReplayedBy)
	return Translate(err)
}

// HurryJob makes the waiting job with the unique key due now (a running or
// finished one is left alone).
func (s *WebhookStore) HurryJob(ctx context.Context, uniqueKey string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `
		UPDATE jobs SET run_at = now(), updated_at = now()
		WHERE unique_key = $1 AND state = 'available' AND run_at > now()`, uniqueKey)
	return Translate(err)
}

// eventColumns is what every query returning events selects.
const eventColumns = `e.id, e.seq, e.partner_id, e.type, e.resource_token, e.data, e.body, e.endpoint_id, e.created_at`

type eventRow struct {
	ID            string         `db:"id"`
	Seq           int64          `db:"seq"`
	PartnerID     string         `db:"partner_id"`
	Type          string         `db:"type"`
	ResourceToken string         `db:"resource_token"`
	Data          []byte         `db:"data"`
	Body          []byte         `db:"body"`
	EndpointID    sql.NullString `db:"endpoint_id"`
	CreatedAt     time.Time      `db:"created_at"`
}

func (r eventRow) stored() emi.StoredEvent {
	var data map[string]any
	_ = json.Unmarshal(r.Data, &data) // jsonb from our own json.Marshal
	return emi.StoredEvent{
		Event:         emi.Event{ID: r.ID, PartnerID: r.PartnerID, Type: emi.EventType(r.Type), CreatedAt: r.CreatedAt, Data: data},
		ResourceToken: r.ResourceToken, Seq: r.Seq, Body: r.Body, EndpointID: r.EndpointID.String,
	}
}

// EventSeq returns the seq of the partner's event id; ok is false when the
// partner has no such event (or id is not a UUID).
func (s *WebhookStore) EventSeq(ctx context.Context, partnerID, eventID string) (int64, bool, error) {
	if !validUUID(eventID) || !validUUID(partnerID) {
		return 0, false, nil
	}
	var seq int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &seq, `SELECT seq FROM events WHERE id = $1 AND partner_id = $2`, eventID, partnerID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, Translate(err)
	}
	return seq, true, nil
}

// PartnerEvents returns the bodies of the partner's events of type typ ("" for
// all) with seq > afterSeq, ascending by seq when ascending and newest first
// otherwise, skipping offset and returning at most limit, with the number of
// matching events.
func (s *WebhookStore) PartnerEvents(ctx context.Context, partnerID string, typ emi.EventType, afterSeq int64, ascending bool, offset int64, limit int) ([]json.RawMessage, int64, error) {
	where := `partner_id = $1 AND ($2 = '' OR type = $2) AND seq > $3`
	ext := s.db.Ext(ctx)
	var total int64
	if err := sqlx.GetContext(ctx, ext, &total, `SELECT count(*) FROM events WHERE `+where, partnerID, typ, afterSeq); err != nil {
		return nil, 0, Translate(fmt.Errorf("count events: %w", err))
	}
	order := "DESC"
	if ascending {
		order = "ASC"
	}
	var bodies [][]byte
	err := sqlx.SelectContext(ctx, ext, &bodies, `SELECT body FROM events WHERE `+where+` ORDER BY seq `+order+` OFFSET $4 LIMIT $5`,
		partnerID, typ, afterSeq, offset, limit)
	if err != nil {
		return nil, 0, Translate(fmt.Errorf("list events: %w", err))
	}
	out := make([]json.RawMessage, len(bodies))
	for i, b := range bodies {
		out[i] = b
	}
	return out, total, nil
}

// EventLog returns a page of events matching f, newest first, with their
// deliveries (oldest first, with the endpoint's URL) and their attempts
// (oldest first). From is inclusive and To exclusive.
func (s *WebhookStore) EventLog(ctx context.Context, f emi.EventLogFilter) (emi.EventLog, error) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.PartnerID != "" {
		if !validUUID(f.PartnerID) {
			return emi.EventLog{Items: []emi.EventLogEntry{}, Page: f.Page, Limit: f.Limit}, nil
		}
		conds = append(conds, "e.partner_id = "+arg(f.PartnerID))
	}
	if f.Type != "" {
		conds = append(conds, "e.type = "+arg(f.Type))
	}
	if f.ResourceToken != "" {
		conds = append(conds, "e.resource_token = "+arg(f.ResourceToken))
	}
	if f.State != "" {
		conds = append(conds, "EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = "+arg(string(f.State))+")")
	}
	if !f.From.IsZero() {
		conds = append(conds, "e.created_at >= "+arg(f.From))
	}
	if !f.To.IsZero() {
		conds = append(conds, "e.created_at < "+arg(f.To))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	ext := s.db.Ext(ctx)
	log := emi.EventLog{Items: []emi.EventLogEntry{}, Page: f.Page, Limit: f.Limit}
	if err := sqlx.GetContext(ctx, ext, &log.Total, `SELECT count(*) FROM events e`+where, args...); err != nil {
		return emi.EventLog{}, Translate(fmt.Errorf("count event log: %w", err))
	}
	var evs []eventRow
	q := `SELECT ` + eventColumns + ` FROM events e` + where + ` ORDER BY e.seq DESC OFFSET ` +
		arg(int64(f.Page-1)*int64(f.Limit)) + ` LIMIT ` + arg(f.Limit)
	if err := sqlx.SelectContext(ctx, ext, &evs, q, args...); err != nil {
		return emi.EventLog{}, Translate(fmt.Errorf("event log: %w", err))
	}
	if len(evs) == 0 {
		return log, nil
	}
	ids := make(pq.StringArray, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	deliveries, err := s.deliveriesWithAttempts(ctx, `d.event_id = ANY ($1::uuid[])`, ids)
	if err != nil {
		return emi.EventLog{}, err
	}
	byEvent := map[string][]emi.WebhookDelivery{}
	for _, d := range deliveries {
		byEvent[d.EventID] = append(byEvent[d.EventID], d)
	}
	for _, e := range evs {
		log.Items = append(log.Items, emi.EventLogEntry{StoredEvent: e.stored(), Deliveries: byEvent[e.ID]})
	}
	return log, nil
}

// FailedDeliveriesForReplay locks and returns up to limit failed
// deliveries of f's partner (of events of f.Type, created in [f.From,
// f.To) when set) to enabled endpoints with no replay asked for, oldest
// first. Rows another transaction holds are skipped (SKIP LOCKED), so two
// bulk replays at once share the deliveries instead of both taking them.
func (s *WebhookStore) FailedDeliveriesForReplay(ctx context.Context, f emi.EventLogFilter, limit int) ([]kernel.StoredDelivery, error) {
	if !validUUID(f.PartnerID) {
		return nil, nil
	}
	args := []any{f.PartnerID, limit}
	cond := ""
	if f.Type != "" {
		args = append(args, string(f.Type))
		cond += " AND e.type = $" + strconv.Itoa(len(args))
	}
	if !f.From.IsZero() {
		args = append(args, f.From)
		cond += " AND e.created_at >= $" + strconv.Itoa(len(args))
	}
	if !f.To.IsZero() {
		args = append(args, f.To)
		cond += " AND e.created_at < $" + strconv.Itoa(len(args))
	}
	var rows []deliveryRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `
		SELECT `+deliveryColumns+`
		FROM webhook_deliveries d
		JOIN events e ON e.id = d.event_id
		JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
		WHERE e.partner_id = $1 AND d.state = 'failed' AND d.replay_requested_at IS NULL
		  AND ep.enabled AND ep.deleted_at IS NULL`+cond+`
		ORDER BY d.created_at, d.id
		LIMIT $2
		FOR UPDATE OF d SKIP LOCKED`, args...)
	if err != nil {
		return nil, Translate(fmt.Errorf("failed deliveries: %w", err))
	}
	out := make([]kernel.StoredDelivery, len(rows))
	for i, r := range rows {
		out[i] = r.stored()
	}
	return out, nil
}

// Delivery returns a delivery with its attempts.
// Returns emi.ErrWebhookDeliveryNotFound.
func (s *WebhookStore) Delivery(ctx context.Context, id string) (emi.WebhookDelivery, error) {
	if !validUUID(id) {
		return emi.WebhookDelivery{}, emi.ErrWebhookDeliveryNotFound
	}
	ds, err := s.deliveriesWithAttempts(ctx, `d.id = $1`, id)
	if err != nil {
		return emi.WebhookDelivery{}, err
	}
	if len(ds) == 0 {
		return emi.WebhookDelivery{}, emi.ErrWebhookDeliveryNotFound
	}
	return ds[0], nil
}

// deliveriesWithAttempts returns the deliveries matching cond (on d, with
// arg as $1), oldest first, with their endpoint's URL and their attempts.
func (s *WebhookStore) deliveriesWithAttempts(ctx context.Context, cond string, arg any) ([]emi.WebhookDelivery, error) {
	ext := s.db.Ext(ctx)
	var rows []struct {
		deliveryRow
		URL string `db:"url"`
	}
	err := sqlx.SelectContext(ctx, ext, &rows, `
		SELECT `+deliveryColumns+`, ep.url
		FROM webhook_deliveries d JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
		WHERE `+cond+` ORDER BY d.created_at, d.id`, arg)
	if err != nil {
		return nil, Translate(fmt.Errorf("deliveries: %w", err))
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make(pq.StringArray, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var attempts []struct {
		ID              int64         `db:"id"`
		DeliveryID      string        `db:"delivery_id"`
		Attempt         int           `db:"attempt"`
		StartedAt       time.Time     `db:"started_at"`
		Status          sql.NullInt64 `db:"status"`
		LatencyMS       int64         `db:"latency_ms"`
		ResponseExcerpt string        `db:"response_excerpt"`
		Error           string        `db:"error"`
		Replay          bool          `db:"replay"`
		ReplayedBy      string        `db:"replayed_by"`
	}
	err = sqlx.SelectContext(ctx, ext, &attempts, `
		SELECT id, delivery_id, attempt, started_at, status, latency_ms, response_excerpt, error, replay, replayed_by
		FROM webhook_attempts WHERE delivery_id = ANY ($1::uuid[]) ORDER BY id`, ids)
	if err != nil {
		return nil, Translate(fmt.Errorf("attempts: %w", err))
	}
	byDelivery := map[string][]emi.WebhookAttempt{}
	for _, a := range attempts {
		byDelivery[a.DeliveryID] = append(byDelivery[a.DeliveryID], emi.WebhookAttempt{ID: a.ID, DeliveryID: a.DeliveryID,
			Attempt: a.Attempt, StartedAt: a.StartedAt, Status: int(a.Status.Int64),
			Latency: time.Duration(a.LatencyMS) * time.Millisecond, ResponseExcerpt: a.ResponseExcerpt, Error: a.Error,
			Replay: a.Replay, ReplayedBy: a.ReplayedBy})
	}
	out := make([]emi.WebhookDelivery, len(rows))
	for i, r := range rows {
		d := r.stored().WebhookDelivery
		d.EndpointURL = r.URL
		d.AttemptLog = byDelivery[r.ID]
		out[i] = d
	}
	return out, nil
}

// ClockRetries implements partners.WebhookStore: pending deliveries to
// partnerID's endpoints whose last attempt failed (schedule_step > 0) and
// whose retry is due at or before until, with no replay asked for (a
// replay goes through the job queue at once), in (next_attempt_at, id)
// order after the one given (nil: from the first).
func (s *WebhookStore) ClockRetries(ctx context.Context, partnerID string, until time.Time, after *kernel.StoredDelivery, limit int) ([]kernel.StoredDelivery, error) {
	afterAt, afterID := time.Time{}, ""
	if after != nil && after.NextAttemptAt != nil {
		afterAt, afterID = *after.NextAttemptAt, after.ID
	}
	var rows []deliveryRow
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+deliveryColumns+`
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE e.partner_id = $1 AND d.state = 'pending' AND d.schedule_step > 0
		  AND d.replay_requested_at IS NULL AND d.next_attempt_at <= $2
		  AND ($4 = '' OR (d.next_attempt_at, d.id) > ($5, $4::uuid))
		ORDER BY d.next_attempt_at, d.id LIMIT $3`, partnerID, until, limit, afterID, afterAt)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]kernel.StoredDelivery, len(rows))
	for i, r := range rows {
		out[i] = r.stored()
	}
	return out, nil
}
