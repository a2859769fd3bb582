-- +goose Up

-- Partners are the fintechs that call the API. Each owns one master merchant.
CREATE TABLE partners (
    id              uuid PRIMARY KEY,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    master_merchant uuid NOT NULL UNIQUE,
    processing      text NOT NULL DEFAULT 'automatic'
                    CHECK (processing IN ('automatic', 'semi-automatic')),
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- API keys. The secret is needed in clear to verify HMACs, so it is stored
-- encrypted (AES-256-GCM, bound to the key id), never hashed. During a
-- rotation the previous secret stays valid until previous_valid_until.
CREATE TABLE partner_keys (
    id                   uuid PRIMARY KEY,
    partner_id           uuid NOT NULL REFERENCES partners (id),
    api_key              text NOT NULL UNIQUE,
    secret_enc           bytea NOT NULL,
    previous_secret_enc  bytea,
    previous_valid_until timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    rotated_at           timestamptz,
    revoked_at           timestamptz,
    CHECK ((previous_secret_enc IS NULL) = (previous_valid_until IS NULL))
);
CREATE INDEX partner_keys_partner ON partner_keys (partner_id);

-- Replay guard: every accepted x-hash is remembered for the timestamp window.
-- The primary key makes two copies racing each other resolve to one winner,
-- across every emi process sharing the database.
CREATE TABLE api_signatures (
    hash       bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX api_signatures_expires ON api_signatures (expires_at);

-- Idempotency-Key responses (contract §5), per partner, kept 24 h.
CREATE TABLE idempotency_keys (
    partner_id  uuid NOT NULL REFERENCES partners (id),
    key         text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    fingerprint bytea NOT NULL,
    status      int NOT NULL,
    headers     jsonb NOT NULL DEFAULT '{}',
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partner_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Webhook endpoints registered for a partner (delivery comes with the
-- webhooks work). The signing secret is stored encrypted.
CREATE TABLE webhook_endpoints (
    id          uuid PRIMARY KEY,
    partner_id  uuid NOT NULL REFERENCES partners (id),
    url         text NOT NULL,
    description text NOT NULL DEFAULT '',
    secret_enc  bytea NOT NULL,
    event_types text[] NOT NULL DEFAULT '{}',
    enabled     boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_partner ON webhook_endpoints (partner_id);

-- The audit log is append-only: the triggers below refuse UPDATE, DELETE and
-- TRUNCATE for every role, the owner included. changes never holds secrets,
-- card data or document contents (the service helper filters them).
CREATE TABLE audit_log (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT now(),
    actor_type     text NOT NULL CHECK (actor_type IN ('partner_key', 'staff', 'system')),
    actor_id       text NOT NULL,
    partner_id     uuid,
    action         text NOT NULL,
    resource_type  text NOT NULL,
    resource_token text NOT NULL DEFAULT '',
    outcome        text NOT NULL DEFAULT 'success' CHECK (outcome IN ('success', 'denied', 'failure')),
    request_id     text NOT NULL DEFAULT '',
    ip             inet,
    changes        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at DESC);
CREATE INDEX audit_log_resource ON audit_log (resource_type, resource_token, at DESC);
CREATE INDEX audit_log_actor ON audit_log (actor_type, actor_id, at DESC);

-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
DROP TABLE webhook_endpoints;
DROP TABLE idempotency_keys;
DROP TABLE api_signatures;
DROP TABLE partner_keys;
DROP TABLE partners;
