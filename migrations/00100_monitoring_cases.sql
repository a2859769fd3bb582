-- +goose Up

-- Cases (internal/service/monitoring/cases.go): compliance opens a case
-- from one or more alerts of one subject and works it: notes, documents,
-- an assignee, a timeline; open -> investigating -> closed (no suspicion,
-- with a reason) or -> reported (a suspicious transaction report was
-- approved and exported). Partners never see a case: no table here is
-- read by the partner API.
CREATE TABLE monitoring_cases (
    token         uuid PRIMARY KEY,
    partner_id    uuid NOT NULL REFERENCES partners (id),
    subject_kind  text NOT NULL CHECK (subject_kind IN ('user', 'merchant')),
    subject_token uuid NOT NULL,
    status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'investigating', 'closed', 'reported')),
    assignee      uuid REFERENCES staff_users (id),
    opened_by     uuid NOT NULL REFERENCES staff_users (id),
    opened_at     timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    closed_reason text NOT NULL DEFAULT '' CHECK (length(closed_reason) <= 2000),
    ended_at      timestamptz,
    CHECK ((status IN ('closed', 'reported')) = (ended_at IS NOT NULL)),
    CHECK (status <> 'closed' OR closed_reason <> '')
);
CREATE INDEX monitoring_cases_status ON monitoring_cases (status, opened_at);
CREATE INDEX monitoring_cases_subject ON monitoring_cases (subject_kind, subject_token, opened_at DESC);

-- An alert is worked in at most one case; joining one ends its place in
-- the queue (status 'in_case'), and the subject's next hits open a new
-- alert.
ALTER TABLE monitoring_alerts DROP CONSTRAINT monitoring_alerts_status_check;
ALTER TABLE monitoring_alerts ADD CONSTRAINT monitoring_alerts_status_check CHECK (status IN ('open', 'closed', 'in_case'));
ALTER TABLE monitoring_alerts ADD COLUMN case_token uuid REFERENCES monitoring_cases (token);
CREATE INDEX monitoring_alerts_case ON monitoring_alerts (case_token) WHERE case_token IS NOT NULL;

-- The case's timeline: every step, note and decision, in order. kind
-- names the step; body is the note or reason as written.
CREATE TABLE monitoring_case_events (
    id         bigserial PRIMARY KEY,
    case_token uuid NOT NULL REFERENCES monitoring_cases (token),
    at         timestamptz NOT NULL,
    actor      uuid REFERENCES staff_users (id),
    kind       text NOT NULL,
    body       text NOT NULL DEFAULT '' CHECK (length(body) <= 10000),
    data       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX monitoring_case_events_case ON monitoring_case_events (case_token, id);

-- Evidence attached to a case: content sealed (AES-256-GCM bound to the
-- row, internal/seal), metadata readable.
CREATE TABLE monitoring_case_documents (
    token        uuid PRIMARY KEY,
    case_token   uuid NOT NULL REFERENCES monitoring_cases (token),
    filename     text NOT NULL CHECK (length(filename) BETWEEN 1 AND 200),
    content_type text NOT NULL,
    size         int NOT NULL CHECK (size > 0),
    sha256       bytea NOT NULL,
    content_enc  bytea NOT NULL,
    uploaded_by  uuid NOT NULL REFERENCES staff_users (id),
    uploaded_at  timestamptz NOT NULL
);
CREATE INDEX monitoring_case_documents_case ON monitoring_case_documents (case_token, uploaded_at);

-- Information requests: compliance asks the partner about a customer's
-- activity. The partner reads the request and answers it through the API
-- (information_request.created, information_requests_*); it never learns
-- of the case (case_token is not in the API's answers).
CREATE TABLE information_requests (
    token         uuid PRIMARY KEY,
    partner_id    uuid NOT NULL REFERENCES partners (id),
    case_token    uuid NOT NULL REFERENCES monitoring_cases (token),
    subject_kind  text NOT NULL CHECK (subject_kind IN ('user', 'merchant')),
    subject_token uuid NOT NULL,
    topic         text NOT NULL,
    question      text NOT NULL CHECK (length(question) BETWEEN 1 AND 2000),
    status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'answered')),
    answer        text NOT NULL DEFAULT '' CHECK (length(answer) <= 10000),
    requested_by  uuid NOT NULL REFERENCES staff_users (id),
    requested_at  timestamptz NOT NULL,
    due_at        timestamptz NOT NULL,
    answered_at   timestamptz,
    CHECK ((status = 'answered') = (answered_at IS NOT NULL))
);
CREATE INDEX information_requests_partner ON information_requests (partner_id, requested_at DESC, token);
CREATE INDEX information_requests_case ON information_requests (case_token, requested_at);

-- A compliance hold placed from a case: while one is in force, no money
-- leaves the subject's accounts (transfers answer 14030, card payments
-- are declined 78), as for a screening hit awaiting a decision.
CREATE TABLE compliance_holds (
    id            bigserial PRIMARY KEY,
    subject_kind  text NOT NULL CHECK (subject_kind IN ('user', 'merchant')),
    subject_token uuid NOT NULL,
    case_token    uuid REFERENCES monitoring_cases (token),
    placed_by     uuid NOT NULL REFERENCES staff_users (id),
    placed_at     timestamptz NOT NULL,
    reason        text NOT NULL CHECK (length(reason) BETWEEN 3 AND 2000),
    lifted_by     uuid REFERENCES staff_users (id),
    lifted_at     timestamptz,
    CHECK ((lifted_by IS NULL) = (lifted_at IS NULL))
);
CREATE UNIQUE INDEX compliance_holds_in_force ON compliance_holds (subject_kind, subject_token) WHERE lifted_at IS NULL;

-- Suspicious transaction reports: drafted from a case by one officer,
-- approved by a second with the reporting permission
-- (staff.ControlReport), then exported as goAML XML (internal/goaml).
CREATE TABLE monitoring_reports (
    token        uuid PRIMARY KEY,
    case_token   uuid NOT NULL REFERENCES monitoring_cases (token),
    status       text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'approved')),
    narrative    text NOT NULL CHECK (length(narrative) BETWEEN 1 AND 20000),
    action       text NOT NULL DEFAULT '' CHECK (length(action) <= 4000),
    transactions jsonb NOT NULL DEFAULT '[]',
    drafted_by   uuid NOT NULL REFERENCES staff_users (id),
    drafted_at   timestamptz NOT NULL,
    approved_by  uuid REFERENCES staff_users (id),
    approved_at  timestamptz,
    xml_enc      bytea,
    CHECK ((status = 'approved') = (approved_at IS NOT NULL))
);
CREATE UNIQUE INDEX monitoring_reports_one_per_case ON monitoring_reports (case_token);

-- +goose Down
DROP TABLE monitoring_reports;
DROP TABLE compliance_holds;
DROP TABLE information_requests;
DROP TABLE monitoring_case_documents;
DROP TABLE monitoring_case_events;
DROP INDEX monitoring_alerts_case;
ALTER TABLE monitoring_alerts DROP COLUMN case_token;
ALTER TABLE monitoring_alerts DROP CONSTRAINT monitoring_alerts_status_check;
ALTER TABLE monitoring_alerts ADD CONSTRAINT monitoring_alerts_status_check CHECK (status IN ('open', 'closed'));
DROP TABLE monitoring_cases;
