-- +goose Up

-- Issue 20, A1: a signed-out (or revoked, or renewed) session token is
-- remembered until it could no longer be valid, so that the commit of a
-- request that was in flight during the sign-out cannot write the session
-- back (scs saves every request's session at its end, and the store's
-- commit was an upsert). Keyed, like sessions, by the SHA-256 of the token.
CREATE TABLE revoked_sessions (
    token_hash bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX revoked_sessions_expires ON revoked_sessions (expires_at);

-- +goose Down
DROP TABLE revoked_sessions;
