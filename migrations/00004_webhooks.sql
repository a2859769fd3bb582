-- +goose Up

-- Webhooks (issue 4, contract §9): a transactional outbox of events, one
-- delivery per (event, endpoint), and a log of every attempt.

-- Endpoints gain what rotation, health and soft deletion need. During a
-- secret rotation the previous secret (sealed under the same row context,
-- "webhook_endpoints.secret:<id>") keeps signing until previous_valid_until,
-- so every message carries two signatures. failing_since is the start of the
-- current run of failed attempts (cleared by a success); an endpoint failing
-- for 5 days in a row, or answering 410 Gone, is disabled with a reason.
-- Deleted endpoints are kept (deleted_at) because deliveries refer to them.
ALTER TABLE webhook_endpoints
    ADD COLUMN previous_secret_enc  bytea,
    ADD COLUMN previous_valid_until timestamptz,
    ADD COLUMN disabled_reason      text NOT NULL DEFAULT '',
    ADD COLUMN failing_since        timestamptz,
    ADD COLUMN updated_at           timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN deleted_at           timestamptz,
    ADD CONSTRAINT webhook_endpoints_previous_secret
        CHECK ((previous_secret_enc IS NULL) = (previous_valid_until IS NULL)),
    ADD CONSTRAINT webhook_endpoints_url_length CHECK (length(url) BETWEEN 1 AND 2000),
    ADD CONSTRAINT webhook_endpoints_description_length CHECK (length(description) <= 200);

-- Events: written in the transaction of the change that causes them, so an
-- event exists iff that change committed. body holds the exact bytes sent
-- (serialised once at emit time): retries, replays and events_list all
-- serve the same bytes, and signatures are over those bytes. data is the
-- same object as jsonb for the back office. seq orders events stably (ids are
-- UUIDv7 but two events in one millisecond need not sort by commit order).
-- resource_token is the token named in data under the resource's name, for
-- the back office's filter. A webhook.test event goes only to endpoint_id.
CREATE TABLE events (
    id             uuid PRIMARY KEY,
    seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    partner_id     uuid NOT NULL REFERENCES partners (id),
    type           text NOT NULL CHECK (length(type) BETWEEN 1 AND 100),
    resource_token text NOT NULL DEFAULT '',
    data           jsonb NOT NULL,
    body           bytea NOT NULL,
    endpoint_id    uuid REFERENCES webhook_endpoints (id),
    created_at     timestamptz NOT NULL
);
CREATE INDEX events_partner_seq ON events (partner_id, seq);
CREATE INDEX events_partner_type_seq ON events (partner_id, type, seq);
CREATE INDEX events_resource ON events (resource_token, seq) WHERE resource_token <> '';
CREATE INDEX events_created ON events (created_at);

-- One delivery per (event, endpoint). state: pending (an attempt is due or
-- running), succeeded, failed (gave up: schedule exhausted, 410 Gone, or the
-- endpoint was disabled for failing), canceled (the endpoint was disabled or
-- deleted before it succeeded). attempts counts every attempt, replays
-- included; schedule_step counts the scheduled ones, which the retry
-- schedule is indexed by, and first_attempt_at is when the first of those
-- started (the schedule keeps retrying for at least 3 days after it). A replay request (back office) is recorded here
-- and consumed by the delivery job, so the attempts of a delivery are made
-- by its one job, one at a time.
CREATE TABLE webhook_deliveries (
    id                  uuid PRIMARY KEY,
    event_id            uuid NOT NULL REFERENCES events (id),
    endpoint_id         uuid NOT NULL REFERENCES webhook_endpoints (id),
    state               text NOT NULL DEFAULT 'pending'
                        CHECK (state IN ('pending', 'succeeded', 'failed', 'canceled')),
    attempts            int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    schedule_step       int NOT NULL DEFAULT 0 CHECK (schedule_step >= 0),
    next_attempt_at     timestamptz,
    first_attempt_at    timestamptz,
    last_status         int,
    last_error          text NOT NULL DEFAULT '',
    replay_requested_at timestamptz,
    replay_requested_by text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    succeeded_at        timestamptz,
    UNIQUE (event_id, endpoint_id),
    CHECK ((state = 'succeeded') = (succeeded_at IS NOT NULL))
);
CREATE INDEX webhook_deliveries_endpoint_pending ON webhook_deliveries (endpoint_id) WHERE state = 'pending';

-- Every attempt, as the back office shows it: when, HTTP status (NULL when
-- no answer arrived), latency, the first 1 KiB of the answer (valid UTF-8),
-- the error without an answer (timeout, refused, blocked…), and whether it
-- was a replay and by whom. endpoint_id is copied from the delivery for the
-- 24 h health figures.
CREATE TABLE webhook_attempts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id      uuid NOT NULL REFERENCES webhook_deliveries (id),
    endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints (id),
    attempt          int NOT NULL CHECK (attempt >= 1),
    started_at       timestamptz NOT NULL,
    status           int,
    latency_ms       int NOT NULL CHECK (latency_ms >= 0),
    response_excerpt text NOT NULL DEFAULT '' CHECK (octet_length(response_excerpt) <= 1024),
    error            text NOT NULL DEFAULT '',
    replay           boolean NOT NULL DEFAULT false,
    replayed_by      text NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
CREATE INDEX webhook_attempts_endpoint_started ON webhook_attempts (endpoint_id, started_at);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE events;
ALTER TABLE webhook_endpoints
    DROP CONSTRAINT webhook_endpoints_description_length,
    DROP CONSTRAINT webhook_endpoints_url_length,
    DROP CONSTRAINT webhook_endpoints_previous_secret,
    DROP COLUMN deleted_at,
    DROP COLUMN updated_at,
    DROP COLUMN failing_since,
    DROP COLUMN disabled_reason,
    DROP COLUMN previous_valid_until,
    DROP COLUMN previous_secret_enc;
