-- +goose Up

-- Issue 19: every screening hit reaches compliance.
--
-- A watch-list addition re-screens active customers: a user whose name is
-- close to the new entry gets a check with source 'watchlist', which waits
-- in the alert queue and holds their cards and outgoing transfers like any
-- other open check.
ALTER TABLE aml_checks DROP CONSTRAINT aml_checks_source_check;
ALTER TABLE aml_checks ADD CONSTRAINT aml_checks_source_check
    CHECK (source IN ('api', 'rescreen', 'user_update', 'watchlist'));

-- Claims and assignments of the compliance alert queue. An alert is an AML
-- check waiting for a decision (subject_kind 'aml_check') or an
-- application with sanctions hits without a final decision
-- ('application'); the queue itself is derived from those rows, so it can
-- never disagree with them. One holder per alert.
CREATE TABLE compliance_claims (
    subject_kind text NOT NULL CHECK (subject_kind IN ('aml_check', 'application')),
    subject      uuid NOT NULL,
    staff_id     uuid NOT NULL REFERENCES staff_users (id),
    assigned_by  uuid REFERENCES staff_users (id),
    claimed_at   timestamptz NOT NULL,
    PRIMARY KEY (subject_kind, subject)
);
CREATE INDEX compliance_claims_staff ON compliance_claims (staff_id);

-- A per-person inbox: mentions in internal notes and assignments (of
-- applications and of alerts). read_at is set when the person opens it or
-- marks it read.
CREATE TABLE staff_inbox (
    id         bigserial PRIMARY KEY,
    staff_id   uuid NOT NULL REFERENCES staff_users (id),
    kind       text NOT NULL CHECK (kind IN ('mention', 'assignment')),
    href       text NOT NULL CHECK (href LIKE '/backoffice/%'),
    body       text NOT NULL CHECK (length(body) BETWEEN 1 AND 500),
    by_staff   uuid,
    created_at timestamptz NOT NULL,
    read_at    timestamptz
);
CREATE INDEX staff_inbox_unread ON staff_inbox (staff_id, created_at DESC) WHERE read_at IS NULL;
CREATE INDEX staff_inbox_staff ON staff_inbox (staff_id, created_at DESC);

-- +goose Down
DROP TABLE staff_inbox;
DROP TABLE compliance_claims;
DELETE FROM aml_false_positives WHERE check_token IN (SELECT token FROM aml_checks WHERE source = 'watchlist');
DELETE FROM aml_hits WHERE check_token IN (SELECT token FROM aml_checks WHERE source = 'watchlist');
UPDATE users SET aml_check = NULL WHERE aml_check IN (SELECT token FROM aml_checks WHERE source = 'watchlist');
DELETE FROM aml_checks WHERE source = 'watchlist';
ALTER TABLE aml_checks DROP CONSTRAINT aml_checks_source_check;
ALTER TABLE aml_checks ADD CONSTRAINT aml_checks_source_check
    CHECK (source IN ('api', 'rescreen', 'user_update'));
