-- +goose Up

-- Merchants a partner may act for: its master merchant (one per partner,
-- created with it) and the merchants onboarded under it (created when an
-- application is approved). Users and accounts hang off a merchant.
CREATE TABLE merchants (
    token       uuid PRIMARY KEY,
    partner_id  uuid NOT NULL REFERENCES partners (id),
    kind        text NOT NULL CHECK (kind IN ('master', 'onboarded')),
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX merchants_partner ON merchants (partner_id);
CREATE UNIQUE INDEX merchants_one_master ON merchants (partner_id) WHERE kind = 'master';
INSERT INTO merchants (token, partner_id, kind, name, created_at)
    SELECT master_merchant, id, 'master', name, created_at FROM partners;

-- Natural persons (seed "User"). The searchable identity fields are columns;
-- the rest of the profile, exactly as the partner sent it, is a JSON object
-- validated by the service. e-mail is unique per master merchant whatever its
-- case (seed -2), enforced here so that concurrent creates give one user.
-- A removed user is archived, not deleted: kept for the legal retention
-- period, gone from the API, shown as removed in the back office.
CREATE TABLE users (
    token           uuid PRIMARY KEY,
    partner_id      uuid NOT NULL REFERENCES partners (id),
    master_merchant uuid NOT NULL,
    merchant        uuid NOT NULL REFERENCES merchants (token),
    email           text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
    first_name      text NOT NULL,
    middle_name     text NOT NULL DEFAULT '',
    last_name       text NOT NULL,
    birthday        date,
    nationality     text NOT NULL DEFAULT '',
    phone           text NOT NULL DEFAULT '',
    mobile_phone    text NOT NULL DEFAULT '',
    type            text NOT NULL DEFAULT 'default' CHECK (type IN ('default', 'card-usage')),
    aml_check       uuid,
    registration_ip text NOT NULL DEFAULT '',
    profile         jsonb NOT NULL DEFAULT '{}',
    status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'removed')),
    kyc_status      text NOT NULL DEFAULT 'none'
                    CHECK (kyc_status IN ('none', 'pending', 'submitted', 'approved', 'rejected', 'expired')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    removed_at      timestamptz,
    CHECK ((status = 'removed') = (removed_at IS NOT NULL))
);
CREATE UNIQUE INDEX users_email_per_master ON users (master_merchant, lower(email));
CREATE INDEX users_partner_created ON users (partner_id, created_at DESC);
CREATE INDEX users_created ON users (created_at DESC, token DESC);
CREATE INDEX users_search_name ON users (lower(last_name), lower(first_name));
CREATE INDEX users_search_email ON users (lower(email) text_pattern_ops);

-- Documents (users, KYC sessions; later companies and members). The content
-- is sealed with AES-256-GCM bound to the row (internal/seal); only its
-- metadata and digest are readable.
CREATE TABLE documents (
    token         uuid PRIMARY KEY,
    partner_id    uuid NOT NULL REFERENCES partners (id),
    owner_type    text NOT NULL CHECK (owner_type IN ('user', 'kyc_session', 'company', 'member')),
    owner_token   uuid NOT NULL,
    document_type text NOT NULL,
    file_type     text NOT NULL,
    content_type  text NOT NULL,
    size          int NOT NULL CHECK (size > 0),
    sha256        bytea NOT NULL,
    content_enc   bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_owner ON documents (owner_type, owner_token, created_at);

-- AML checks (seed "AML check"): one screening of a person against the
-- sanctions lists, with the list version used. Checks made by the partner's
-- aml_check have source 'api'; re-screenings of users after a list update
-- have source 'rescreen' and name the user.
CREATE TABLE aml_checks (
    token        uuid PRIMARY KEY,
    partner_id   uuid NOT NULL REFERENCES partners (id),
    source       text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'rescreen')),
    user_token   uuid REFERENCES users (token),
    first_name   text NOT NULL DEFAULT '',
    last_name    text NOT NULL DEFAULT '',
    nationality  text NOT NULL DEFAULT '',
    birthday     date,
    person_key   bytea NOT NULL,
    status       text NOT NULL CHECK (status IN ('clear', 'match', 'cleared', 'confirmed')),
    list_version text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    reviewed_at  timestamptz,
    reviewed_by  uuid
);
CREATE INDEX aml_checks_partner ON aml_checks (partner_id, created_at DESC);
CREATE INDEX aml_checks_queue ON aml_checks (created_at) WHERE status = 'match';
CREATE INDEX aml_checks_user ON aml_checks (user_token, created_at DESC) WHERE user_token IS NOT NULL;
ALTER TABLE users ADD CONSTRAINT users_aml_check_fk FOREIGN KEY (aml_check) REFERENCES aml_checks (token);

-- The hits of a check, with the score breakdown and the reviewer's decision.
-- suppressed marks a hit that a remembered false positive already answered
-- (kept for the record, not shown to the partner, not queued).
CREATE TABLE aml_hits (
    check_token   uuid NOT NULL REFERENCES aml_checks (token),
    n             int NOT NULL,
    list          text NOT NULL,
    entry_id      text NOT NULL,
    entry_type    text NOT NULL,
    name          text NOT NULL,
    matched_name  text NOT NULL,
    alias         boolean NOT NULL,
    score         numeric(4,3) NOT NULL,
    fields        text[] NOT NULL DEFAULT '{}',
    breakdown     jsonb NOT NULL DEFAULT '{}',
    fingerprint   text NOT NULL,
    suppressed    boolean NOT NULL DEFAULT false,
    decision      text CHECK (decision IN ('false_positive', 'true_match')),
    reason        text NOT NULL DEFAULT '',
    decided_by    uuid,
    decided_at    timestamptz,
    PRIMARY KEY (check_token, n),
    CHECK ((decision IS NULL) = (decided_at IS NULL))
);

-- Remembered false positives: a person (normalised name and birthday) of a
-- partner that a reviewer cleared against one list entry, as the entry was
-- then (fingerprint). A later check of the same person does not raise that
-- entry again until the entry changes.
CREATE TABLE aml_false_positives (
    partner_id  uuid NOT NULL REFERENCES partners (id),
    person_key  bytea NOT NULL,
    list        text NOT NULL,
    entry_id    text NOT NULL,
    fingerprint text NOT NULL,
    check_token uuid NOT NULL REFERENCES aml_checks (token),
    reason      text NOT NULL,
    decided_by  uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partner_id, person_key, list, entry_id, fingerprint)
);

-- Sanctions list updates, as every instance attempted them (the back office
-- shows the last result and the lists loaded).
CREATE TABLE sanctions_updates (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    instance   text NOT NULL DEFAULT '',
    ok         boolean NOT NULL,
    error      text NOT NULL DEFAULT '',
    version    text NOT NULL DEFAULT '',
    changed    int NOT NULL DEFAULT 0,
    lists      jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX sanctions_updates_at ON sanctions_updates (at DESC);

-- KYC sessions (kyc_init). The public URL carries a secret derived from the
-- token with the lookup key; only its SHA-256 is stored, to find the session.
CREATE TABLE kyc_sessions (
    token        uuid PRIMARY KEY,
    partner_id   uuid NOT NULL REFERENCES partners (id),
    user_token   uuid NOT NULL REFERENCES users (token),
    provider     text NOT NULL DEFAULT 'hosted',
    secret_hash  bytea NOT NULL UNIQUE,
    secret_enc   bytea NOT NULL,
    status       text NOT NULL CHECK (status IN ('pending', 'submitted', 'approved', 'rejected', 'expired')),
    document_kind text NOT NULL DEFAULT '' CHECK (document_kind IN ('', 'passport', 'idcard')),
    consent_at   timestamptz,
    submitted_at timestamptz,
    reviewed_at  timestamptz,
    reviewed_by  uuid,
    reason       text NOT NULL DEFAULT '',
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
-- One open (pending or submitted) session per user.
CREATE UNIQUE INDEX kyc_sessions_one_open ON kyc_sessions (user_token) WHERE status IN ('pending', 'submitted');
CREATE INDEX kyc_sessions_queue ON kyc_sessions (submitted_at) WHERE status = 'submitted';
CREATE INDEX kyc_sessions_user ON kyc_sessions (user_token, created_at DESC);

-- +goose Down
ALTER TABLE users DROP CONSTRAINT users_aml_check_fk;
DROP TABLE kyc_sessions;
DROP TABLE sanctions_updates;
DROP TABLE aml_false_positives;
DROP TABLE aml_hits;
DROP TABLE aml_checks;
DROP TABLE documents;
DROP TABLE users;
DROP TABLE merchants;
