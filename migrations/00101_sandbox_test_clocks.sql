-- +goose Up

-- Test clocks (sandbox only; ops.TestClocks). A sandbox partner may run on
-- one test clock: a time that stands still until the partner advances it.
-- While it exists, every request of the partner and every piece of work
-- done for it reads frozen_time (kernel.Clock.At), and the instance's own
-- sweeps leave the partner's holds, KYC links and webhook retries to the
-- clock's advances. advancing_since is set while an advance runs what
-- became due (one advance at a time; an advance older than ten minutes is
-- taken as crashed).
CREATE TABLE sandbox_test_clocks (
    partner_id      uuid PRIMARY KEY REFERENCES partners (id),
    token           uuid NOT NULL UNIQUE,
    name            text NOT NULL DEFAULT '' CHECK (length(name) <= 100),
    frozen_time     timestamptz NOT NULL,
    advancing_since timestamptz,
    advancing_to    timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- The sweeps a clock's advance runs find a partner's due work by time.
CREATE INDEX kyc_sessions_pending_expiry ON kyc_sessions (partner_id, expires_at) WHERE status = 'pending';
CREATE INDEX card_authorizations_partner_open ON card_authorizations (partner_id, expires_at) WHERE status = 'approved';
CREATE INDEX webhook_deliveries_pending_next ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_pending_next;
DROP INDEX card_authorizations_partner_open;
DROP INDEX kyc_sessions_pending_expiry;
DROP TABLE sandbox_test_clocks;
