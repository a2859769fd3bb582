-- +goose Up

-- Back-office staff users (issue 3). Passwords are argon2id PHC strings; the
-- TOTP secret is needed in clear to check codes, so it is sealed (AES-256-GCM
-- bound to "staff_users.totp:<id>"). A secret with totp_enrolled_at NULL is a
-- pending enrolment. totp_last_step is the newest RFC 6238 time step that was
-- accepted: a code is accepted only for a newer step, by one conditional
-- UPDATE, so each code works once even under concurrent requests.
-- failed_attempts counts consecutive failed sign-ins (password or second
-- factor); reaching the threshold sets locked_until (PCI DSS 8.3.4).
-- sessions_revoked_at ends every session signed in before it (disable, role
-- change, credential reset, "sign out everywhere").
CREATE TABLE staff_users (
    id                  uuid PRIMARY KEY,
    email               text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    name                text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    password_hash       text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
    password_temporary  boolean NOT NULL DEFAULT false,
    roles               text[] NOT NULL
                        CHECK (cardinality(roles) >= 1
                               AND roles <@ ARRAY['admin', 'underwriter', 'compliance', 'customer_service', 'auditor']::text[]),
    totp_secret_enc     bytea,
    totp_enrolled_at    timestamptz,
    totp_last_step      bigint NOT NULL DEFAULT 0 CHECK (totp_last_step >= 0),
    failed_attempts     int NOT NULL DEFAULT 0 CHECK (failed_attempts >= 0),
    locked_until        timestamptz,
    disabled_at         timestamptz,
    password_set_at     timestamptz NOT NULL,
    last_sign_in_at     timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    sessions_revoked_at timestamptz,
    CHECK (totp_enrolled_at IS NULL OR totp_secret_enc IS NOT NULL)
);
-- E-mail addresses are unique whatever their case; sign-in looks them up
-- through this index.
CREATE UNIQUE INDEX staff_users_email_lower ON staff_users (lower(email));

-- Recovery codes: 10 per user, each usable once (used_at). Only a salted
-- SHA-256 of each code is kept (see internal/service/totp.go for why not
-- argon2id).
CREATE TABLE staff_recovery_codes (
    staff_id   uuid NOT NULL REFERENCES staff_users (id),
    code_hash  bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at    timestamptz,
    PRIMARY KEY (staff_id, code_hash)
);

-- Every sign-in attempt (password or second factor), for throttling: failures
-- per e-mail and per IP in the last 15 minutes. email_lookup is the lower-cased
-- address as typed, also when no such user exists, so unknown addresses are
-- throttled exactly like known ones. Throttled attempts are recorded with
-- reason 'throttled' and do not count, so the window can run out. The
-- permanent record is the audit log; rows here are pruned after 7 days.
CREATE TABLE signin_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email_lookup text NOT NULL,
    staff_id     uuid,
    ip           inet,
    at           timestamptz NOT NULL,
    success      boolean NOT NULL,
    reason       text NOT NULL
);
CREATE INDEX signin_attempts_email_failures ON signin_attempts (email_lookup, at) WHERE NOT success;
CREATE INDEX signin_attempts_ip_failures ON signin_attempts (ip, at) WHERE NOT success;
CREATE INDEX signin_attempts_at ON signin_attempts (at);

-- Back-office sessions (alexedwards/scs). The key is the SHA-256 of the
-- session token, never the token, so reading this table does not hand out
-- live sessions. staff_id is copied from the session data on every commit,
-- so all sessions of one user can be deleted at once.
CREATE TABLE sessions (
    token_hash bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    data       bytea NOT NULL,
    expiry     timestamptz NOT NULL,
    staff_id   uuid REFERENCES staff_users (id)
);
CREATE INDEX sessions_expiry ON sessions (expiry);
CREATE INDEX sessions_staff ON sessions (staff_id) WHERE staff_id IS NOT NULL;

-- +goose Down
DROP TABLE sessions;
DROP TABLE signin_attempts;
DROP TABLE staff_recovery_codes;
DROP TABLE staff_users;
