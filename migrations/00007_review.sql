-- +goose Up

-- The underwriters' queue. An application waits in review from queued_at;
-- its SLA is due at sla_due_at (business hours), paused while information
-- is requested (sla_left keeps what was left). One underwriter holds it at
-- a time: assignee, with last_activity_at for the 30-minute claim expiry.
-- A four-eyes application records its first approval before the second.
ALTER TABLE applications
    ADD COLUMN queued_at             timestamptz,
    ADD COLUMN sla_due_at            timestamptz,
    ADD COLUMN sla_left              interval,
    ADD COLUMN assignee              uuid,
    ADD COLUMN claimed_at            timestamptz,
    ADD COLUMN last_activity_at      timestamptz,
    ADD COLUMN first_approval_by     uuid,
    ADD COLUMN first_approval_at     timestamptz,
    ADD COLUMN first_approval_reason text NOT NULL DEFAULT '',
    ADD COLUMN manual_review         boolean NOT NULL DEFAULT false,
    ADD COLUMN has_sanctions_hit     boolean NOT NULL DEFAULT false;
CREATE INDEX applications_queue ON applications (status, (coalesce(queued_at, created_at)), token);
CREATE INDEX applications_queue_risk ON applications (status, risk_points DESC, (coalesce(queued_at, created_at)), token);
CREATE INDEX applications_assignee ON applications (assignee, status) WHERE assignee IS NOT NULL;
CREATE INDEX applications_partner_status ON applications (partner_id, status, queued_at);

-- Underwriters' decisions, each with a snapshot of the evidence shown.
CREATE TABLE application_decisions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    application uuid NOT NULL REFERENCES applications (token),
    action      text NOT NULL CHECK (action IN ('first_approval', 'approved', 'rejected', 'information_requested')),
    reason_code text NOT NULL DEFAULT '',
    text        text NOT NULL DEFAULT '',
    staff_id    uuid NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    snapshot    jsonb NOT NULL
);
CREATE INDEX application_decisions_app ON application_decisions (application, at);
CREATE INDEX application_decisions_at ON application_decisions (at);

-- Internal notes, threaded, with mentions of colleagues.
CREATE TABLE application_notes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    application uuid NOT NULL REFERENCES applications (token),
    parent_id   bigint REFERENCES application_notes (id),
    author      uuid NOT NULL,
    body        text NOT NULL CHECK (length(body) BETWEEN 1 AND 5000),
    mentions    uuid[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX application_notes_app ON application_notes (application, id);
CREATE INDEX application_notes_mentions ON application_notes USING gin (mentions);

-- Decisions on the sanctions hits of an application's check.
CREATE TABLE application_hit_decisions (
    application uuid NOT NULL REFERENCES applications (token),
    hit_key     text NOT NULL,
    decision    text NOT NULL CHECK (decision IN ('false_positive', 'true_match')),
    reason      text NOT NULL,
    staff_id    uuid NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (application, hit_key)
);

-- A false positive decided on an application's sanctions hit is
-- remembered like one decided on an AML check.
ALTER TABLE aml_false_positives ALTER COLUMN check_token DROP NOT NULL;
ALTER TABLE aml_false_positives ADD COLUMN application uuid REFERENCES applications (token);

-- Saved queue views per staff user ("high risk nearing SLA").
CREATE TABLE saved_views (
    id       uuid PRIMARY KEY,
    staff_id uuid NOT NULL,
    name     text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    query    text NOT NULL CHECK (length(query) <= 2000),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (staff_id, name)
);

-- +goose Down
DROP TABLE saved_views;
DELETE FROM aml_false_positives WHERE check_token IS NULL;
ALTER TABLE aml_false_positives DROP COLUMN application;
ALTER TABLE aml_false_positives ALTER COLUMN check_token SET NOT NULL;
DROP TABLE application_hit_decisions;
DROP TABLE application_notes;
DROP TABLE application_decisions;
DROP INDEX applications_queue;
DROP INDEX applications_queue_risk;
DROP INDEX applications_assignee;
DROP INDEX applications_partner_status;
ALTER TABLE applications
    DROP COLUMN queued_at, DROP COLUMN sla_due_at, DROP COLUMN sla_left, DROP COLUMN assignee,
    DROP COLUMN claimed_at, DROP COLUMN last_activity_at, DROP COLUMN first_approval_by,
    DROP COLUMN first_approval_at, DROP COLUMN first_approval_reason, DROP COLUMN manual_review,
    DROP COLUMN has_sanctions_hit;
