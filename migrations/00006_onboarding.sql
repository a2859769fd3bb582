-- +goose Up

-- Which fields are mandatory for a partner's applications (seed fact 9).
-- NULL: the partner has none, and application_create answers 11008.
ALTER TABLE partners ADD COLUMN validator_config jsonb;

-- An onboarded merchant remembers its application and, for acquiring
-- products, its MID and TID (unique across emi).
ALTER TABLE merchants ADD COLUMN application uuid UNIQUE;
ALTER TABLE merchants ADD COLUMN mid text UNIQUE CHECK (mid ~ '^[0-9]{15}$');
ALTER TABLE merchants ADD COLUMN tid text UNIQUE CHECK (tid ~ '^[0-9]{8}$');

-- Legal-entity applications (v3). revision counts the changes of the
-- application, its company and members; checked_revision is the revision
-- the stored check results are for, so a result computed on older data is
-- never used for a decision.
CREATE TABLE applications (
    token              uuid PRIMARY KEY,
    partner_id         uuid NOT NULL REFERENCES partners (id),
    merchant           uuid NOT NULL REFERENCES merchants (token),
    products           text[] NOT NULL,
    due_diligence      text NOT NULL DEFAULT '',
    payout_details     jsonb NOT NULL DEFAULT '[]',
    ip_address         text NOT NULL DEFAULT '',
    fingerprint        text NOT NULL DEFAULT '',
    processing         text NOT NULL CHECK (processing IN ('automatic', 'semi-automatic')),
    status             text NOT NULL DEFAULT 'checking'
                       CHECK (status IN ('checking', 'in_review', 'information_requested', 'approved', 'rejected')),
    risk_score         text NOT NULL DEFAULT '' CHECK (risk_score IN ('', 'Low', 'Medium', 'High')),
    risk_points        int NOT NULL DEFAULT 0,
    risk_factors       jsonb NOT NULL DEFAULT '[]',
    revision           int NOT NULL DEFAULT 1,
    checked_revision   int NOT NULL DEFAULT 0,
    onboarded_merchant uuid REFERENCES merchants (token),
    decision_reason    text NOT NULL DEFAULT '',
    decided_at         timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX applications_partner ON applications (partner_id, created_at DESC);
CREATE INDEX applications_status ON applications (status, created_at);

-- The company of an application (one per application), as submitted.
CREATE TABLE companies (
    application uuid PRIMARY KEY REFERENCES applications (token),
    partner_id  uuid NOT NULL REFERENCES partners (id),
    legal_name  text NOT NULL DEFAULT '',
    trade_name  text NOT NULL DEFAULT '',
    uic         text NOT NULL DEFAULT '',
    country     text NOT NULL DEFAULT '',
    fields      jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX companies_legal_name ON companies (lower(legal_name));
CREATE INDEX companies_uic ON companies (uic);

CREATE TABLE company_members (
    token             uuid PRIMARY KEY,
    application       uuid NOT NULL REFERENCES applications (token),
    partner_id        uuid NOT NULL REFERENCES partners (id),
    status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
    types             text[] NOT NULL,
    first_name        text NOT NULL DEFAULT '',
    last_name         text NOT NULL DEFAULT '',
    legal_name        text NOT NULL DEFAULT '',
    unique_identifier text NOT NULL DEFAULT '',
    birthday          date,
    fields            jsonb NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX company_members_application ON company_members (application, created_at);
CREATE INDEX company_members_identifier ON company_members (unique_identifier) WHERE unique_identifier <> '';
CREATE INDEX company_members_name ON company_members (lower(last_name), lower(first_name), birthday);

-- The latest result of each automatic check, and every result ever stored.
CREATE TABLE application_checks (
    application uuid NOT NULL REFERENCES applications (token),
    name        text NOT NULL,
    status      text NOT NULL CHECK (status IN ('passed', 'failed', 'review', 'error', 'pending')),
    details     jsonb NOT NULL DEFAULT '{}',
    revision    int NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (application, name)
);
CREATE TABLE application_check_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    application uuid NOT NULL REFERENCES applications (token),
    name        text NOT NULL,
    status      text NOT NULL,
    details     jsonb NOT NULL DEFAULT '{}',
    revision    int NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX application_check_history_app ON application_check_history (application, at);

-- The adverse-media watch list compliance maintains (embedded provider).
CREATE TABLE adverse_media_watchlist (
    id         uuid PRIMARY KEY,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 300),
    category   text NOT NULL,
    note       text NOT NULL DEFAULT '',
    source     text NOT NULL DEFAULT '',
    created_by uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    removed_at timestamptz
);

-- +goose Down
DROP TABLE adverse_media_watchlist;
DROP TABLE application_check_history;
DROP TABLE application_checks;
DROP TABLE company_members;
DROP TABLE companies;
DROP TABLE applications;
ALTER TABLE merchants DROP COLUMN tid, DROP COLUMN mid, DROP COLUMN application;
ALTER TABLE partners DROP COLUMN validator_config;
