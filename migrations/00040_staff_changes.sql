-- +goose Up

-- Changes to staff access that need a second administrator (issue 19, C8):
-- creating a user with a privileged role, granting one, and resetting the
-- credentials of a user who holds one. One administrator proposes (a
-- pending row), a second, distinct one approves, and only then does the
-- change take effect. For a create, staff_id is the id the user will get.
--
-- A create or reset issues a temporary password in two halves: the proposer
-- sees the first once, the approver the second, so no administrator alone
-- holds a working password. password_hash is the argon2id hash of the whole
-- password; second_half_enc the approver's half, sealed (AES-256-GCM bound
-- to "staff_changes.second_half:<id>") and cleared when decided. proposed_by
-- and decided_by are staff ids, like the audit log's actor_id (staff users are
-- never deleted).
CREATE TABLE staff_changes (
    id              uuid PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('create', 'set_roles', 'reset_credentials')),
    staff_id        uuid NOT NULL,
    email           text NOT NULL DEFAULT '',
    name            text NOT NULL DEFAULT '',
    roles           text[] NOT NULL DEFAULT '{}',
    from_roles      text[] NOT NULL DEFAULT '{}',
    password_hash   text CHECK (password_hash IS NULL OR password_hash LIKE '$argon2id$%'),
    second_half_enc bytea,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied', 'rejected')),
    proposed_by     uuid NOT NULL,
    proposed_at     timestamptz NOT NULL,
    decided_by      uuid,
    decided_at      timestamptz,
    reason          text NOT NULL DEFAULT '' CHECK (length(reason) <= 1000),
    CHECK ((status = 'pending') = (decided_at IS NULL)),
    CHECK (status = 'pending' OR second_half_enc IS NULL)
);
-- One pending change per user, and one pending create per e-mail address.
CREATE UNIQUE INDEX staff_changes_one_pending ON staff_changes (staff_id) WHERE status = 'pending';
CREATE UNIQUE INDEX staff_changes_pending_email ON staff_changes (lower(email))
    WHERE status = 'pending' AND kind = 'create';
CREATE INDEX staff_changes_status ON staff_changes (status, proposed_at DESC);

-- +goose Down
DROP TABLE staff_changes;
