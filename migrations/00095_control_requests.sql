-- +goose Up

-- One lifecycle for every decision that takes two people (staff.Controls:
-- ProposeRequest, ApproveRequest, DeclineRequest, LapseDueRequests). A
-- request is proposed by one person with a reason and the revision of the
-- thing it is bound to; it ends approved (the last approval applied the
-- change), rejected (by another person), withdrawn (by its proposer),
-- lapsed (nobody decided in time) or void (the thing it was bound to
-- changed, so an approval would approve something nobody proposed). Rows
-- are kept after the decision: the screens show them and the audit log
-- names them.
--
-- subject is what the request is about, as "type:token" (one pending
-- request per subject); resource_type and resource_token where its audit
-- rows go (an adjustment is about itself but shows on its account).
-- What a flow needs beyond this (a program's proposed settings, an
-- adjustment's amount) is in a table of the flow keyed by the request id.
CREATE TABLE control_requests (
    id             uuid PRIMARY KEY,
    control        text NOT NULL CHECK (length(control) BETWEEN 1 AND 64),
    subject        text NOT NULL CHECK (length(subject) BETWEEN 3 AND 400),
    resource_type  text NOT NULL CHECK (length(resource_type) BETWEEN 1 AND 64),
    resource_token text NOT NULL CHECK (length(resource_token) BETWEEN 1 AND 200),
    partner_id     uuid REFERENCES partners (id),
    reason         text NOT NULL CHECK (length(reason) <= 2000),
    revision       text NOT NULL DEFAULT '' CHECK (length(revision) <= 200),
    status         text NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'approved', 'rejected', 'withdrawn', 'lapsed', 'void')),
    proposed_by    uuid NOT NULL,
    proposed_at    timestamptz NOT NULL,
    lapses_at      timestamptz,
    -- Approvals given so far, in order (the last one of an approved
    -- request is decided_by).
    approvals      uuid[] NOT NULL DEFAULT '{}',
    decided_by     uuid,
    decided_at     timestamptz,
    note           text NOT NULL DEFAULT '' CHECK (length(note) <= 2000),
    CHECK ((status = 'pending') = (decided_at IS NULL)),
    CHECK (status IN ('pending', 'lapsed', 'void') OR decided_by IS NOT NULL),
    -- Four-eyes, as the database sees it: nobody approves their own
    -- proposal, and only the proposer withdraws.
    CHECK (NOT (proposed_by = ANY (approvals))),
    CHECK (status <> 'approved' OR decided_by <> proposed_by),
    CHECK (status <> 'withdrawn' OR decided_by = proposed_by)
);
CREATE UNIQUE INDEX control_requests_one_pending ON control_requests (subject) WHERE status = 'pending';
CREATE INDEX control_requests_subject ON control_requests (subject, proposed_at DESC);
CREATE INDEX control_requests_pending ON control_requests (control, proposed_at) WHERE status = 'pending';
CREATE INDEX control_requests_lapse ON control_requests (lapses_at) WHERE status = 'pending' AND lapses_at IS NOT NULL;

-- A proposer hears of the decision on their request in their inbox.
ALTER TABLE staff_inbox DROP CONSTRAINT staff_inbox_kind_check;
ALTER TABLE staff_inbox ADD CONSTRAINT staff_inbox_kind_check CHECK (kind IN ('mention', 'assignment', 'suspension', 'decision'));

-- Account terminations and transfer reversals need nothing beyond the
-- lifecycle: their pending rows move over and their tables go.
INSERT INTO control_requests (id, control, subject, resource_type, resource_token, partner_id, reason,
                              proposed_by, proposed_at)
SELECT gen_random_uuid(), 'account.terminate', 'account:' || t.account, 'account', t.account::text, a.partner_id,
       t.reason, t.requested_by, t.requested_at
FROM account_termination_requests t JOIN accounts a ON a.token = t.account;
DROP TABLE account_termination_requests;

INSERT INTO control_requests (id, control, subject, resource_type, resource_token, partner_id, reason,
                              proposed_by, proposed_at)
SELECT gen_random_uuid(), 'transfer.reverse', 'transfer:' || r.transfer, 'transfer', r.transfer::text, t.partner_id,
       r.reason, r.requested_by, r.requested_at
FROM transfer_reversal_requests r JOIN transfers t ON t.token = r.transfer;
DROP TABLE transfer_reversal_requests;

-- A program change keeps its proposed settings and risk in program_changes,
-- keyed by its request; the program's version when proposed becomes the
-- request's revision (microseconds, UTC: staff.TimeRevision).
ALTER TABLE program_changes ADD COLUMN request uuid;
UPDATE program_changes SET request = gen_random_uuid();
INSERT INTO control_requests (id, control, subject, resource_type, resource_token, reason, revision,
                              proposed_by, proposed_at)
SELECT request, 'program.risk_change', 'program:' || program, 'program', program, '',
       to_char(base_version AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), proposed_by, proposed_at
FROM program_changes;
ALTER TABLE program_changes
    DROP CONSTRAINT program_changes_pkey,
    ALTER COLUMN request SET NOT NULL,
    ADD PRIMARY KEY (request),
    ADD FOREIGN KEY (request) REFERENCES control_requests (id),
    DROP COLUMN base_version,
    DROP COLUMN proposed_by,
    DROP COLUMN proposed_at;

-- A manual adjustment keeps its account, balance, direction, amount and
-- the ledger transaction of its approval; its lifecycle moves over, under
-- the same id (the adjustment's token is its request's id). A rejection by
-- the requester themself was a rejection; it stays one.
INSERT INTO control_requests (id, control, subject, resource_type, resource_token, partner_id, reason, status,
                              proposed_by, proposed_at, approvals, decided_by, decided_at, note)
SELECT token, 'adjustment.approve', 'adjustment:' || token, 'account', account::text, partner_id, reason, status,
       requested_by, requested_at, CASE WHEN status = 'approved' THEN ARRAY[decided_by] ELSE '{}' END,
       decided_by, decided_at, decision_note
FROM adjustment_requests;
ALTER TABLE adjustment_requests
    DROP COLUMN reason, DROP COLUMN status, DROP COLUMN requested_by, DROP COLUMN requested_at,
    DROP COLUMN decided_by, DROP COLUMN decided_at, DROP COLUMN decision_note,
    ADD FOREIGN KEY (token) REFERENCES control_requests (id);
CREATE INDEX adjustment_requests_account ON adjustment_requests (account);

-- A suspense assignment keeps its item, target and the transfer of its
-- approval; its lifecycle moves over under the same id. Its subject is the
-- item: one assignment waits per item.
INSERT INTO control_requests (id, control, subject, resource_type, resource_token, partner_id, reason, status,
                              proposed_by, proposed_at, approvals, decided_by, decided_at, note)
SELECT token, 'suspense.assign', 'suspense:' || item, 'suspense_item', item::text, partner_id, reason, status,
       requested_by, requested_at, CASE WHEN status = 'approved' THEN ARRAY[decided_by] ELSE '{}' END,
       decided_by, decided_at, decision_note
FROM suspense_assignment_requests;
ALTER TABLE suspense_assignment_requests
    DROP COLUMN reason, DROP COLUMN status, DROP COLUMN requested_by, DROP COLUMN requested_at,
    DROP COLUMN decided_by, DROP COLUMN decided_at, DROP COLUMN decision_note,
    ADD FOREIGN KEY (token) REFERENCES control_requests (id);
CREATE INDEX suspense_assignment_requests_item ON suspense_assignment_requests (item);

-- A staff change keeps its kind, user, roles and, until it is decided, the
-- hash of the temporary password it issues and the approver's sealed half;
-- its lifecycle moves over under the same id. Its subject is the user
-- (one pending change per user) or, for a create, the e-mail address (one
-- pending create per address); it binds to the user's roles when proposed
-- and lapses 7 days after (staff.StaffChangeTTL). Which row of the
-- decision table it runs under: taking privilege away (a disable, or new
-- roles that grant no privileged role, every role but auditor being
-- privileged) or the rest.
INSERT INTO control_requests (id, control, subject, resource_type, resource_token, reason, revision, status,
                              proposed_by, proposed_at, lapses_at, approvals, decided_by, decided_at, note)
SELECT id,
       CASE WHEN kind = 'disable' OR (kind = 'set_roles' AND NOT EXISTS (
                SELECT 1 FROM unnest(roles) r WHERE r <> 'auditor' AND NOT r = ANY (from_roles)))
            THEN 'staff.privilege_removal' ELSE 'staff.privileged_change' END,
       CASE WHEN kind = 'create' THEN 'staff-email:' || lower(email) ELSE 'staff:' || staff_id END,
       'staff_change', id::text, '', CASE WHEN kind = 'create' THEN '' ELSE array_to_string(from_roles, ',') END,
       CASE status WHEN 'applied' THEN 'approved' ELSE status END,
       proposed_by, proposed_at, proposed_at + interval '7 days',
       CASE WHEN status = 'applied' THEN ARRAY[decided_by] ELSE '{}' END,
       decided_by, decided_at, reason
FROM staff_changes;
ALTER TABLE staff_changes
    DROP COLUMN status, DROP COLUMN proposed_by, DROP COLUMN proposed_at, DROP COLUMN decided_by,
    DROP COLUMN decided_at, DROP COLUMN reason,
    ADD FOREIGN KEY (id) REFERENCES control_requests (id);
CREATE INDEX staff_changes_staff ON staff_changes (staff_id);

-- A decided staff change keeps no secret: whatever decides it (an
-- approval, a rejection, a withdrawal, the lapse job, a void), the hash of
-- its temporary password and the sealed half go.
-- +goose StatementBegin
CREATE FUNCTION staff_changes_clear_secrets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE staff_changes SET password_hash = NULL, second_half_enc = NULL
     WHERE id = NEW.id AND (password_hash IS NOT NULL OR second_half_enc IS NOT NULL);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER control_requests_staff_secrets AFTER UPDATE OF status ON control_requests
    FOR EACH ROW WHEN (NEW.status <> 'pending' AND NEW.resource_type = 'staff_change')
    EXECUTE FUNCTION staff_changes_clear_secrets();

-- A false positive on an application's sanctions hit takes two people: the
-- hit's decision row keeps what was decided (and who confirmed it), the
-- lifecycle the proposal. Its subject is the hit. An unconfirmed proposal
-- on an application decided since can never be confirmed: it is void.
INSERT INTO control_requests (id, control, subject, resource_type, resource_token, partner_id, reason, status,
                              proposed_by, proposed_at, approvals, decided_by, decided_at)
SELECT gen_random_uuid(), 'application.hit_false_positive', 'hit:' || d.application || ':' || d.hit_key, 'application',
       d.application::text, a.partner_id, d.reason,
       CASE WHEN d.confirmed_by IS NOT NULL THEN 'approved'
            WHEN a.status IN ('approved', 'rejected') THEN 'void' ELSE 'pending' END,
       d.staff_id, d.at, CASE WHEN d.confirmed_by IS NULL THEN '{}' ELSE ARRAY[d.confirmed_by] END,
       d.confirmed_by, CASE WHEN d.confirmed_by IS NULL AND a.status IN ('approved', 'rejected') THEN now() ELSE d.confirmed_at END
FROM application_hit_decisions d JOIN applications a ON a.token = d.application
WHERE d.decision = 'false_positive';

-- +goose Down
DELETE FROM control_requests WHERE control = 'application.hit_false_positive';
DROP TRIGGER control_requests_staff_secrets ON control_requests;
DROP FUNCTION staff_changes_clear_secrets();
DROP INDEX staff_changes_staff;
ALTER TABLE staff_changes
    DROP CONSTRAINT staff_changes_id_fkey,
    ADD COLUMN status      text NOT NULL DEFAULT 'pending',
    ADD COLUMN proposed_by uuid,
    ADD COLUMN proposed_at timestamptz,
    ADD COLUMN decided_by  uuid,
    ADD COLUMN decided_at  timestamptz,
    ADD COLUMN reason      text NOT NULL DEFAULT '';
UPDATE staff_changes c SET status = CASE r.status WHEN 'approved' THEN 'applied' WHEN 'pending' THEN 'pending' ELSE 'rejected' END,
       proposed_by = r.proposed_by, proposed_at = r.proposed_at, decided_by = r.decided_by,
       decided_at = CASE WHEN r.status = 'pending' THEN NULL ELSE r.decided_at END, reason = left(r.note, 1000)
FROM control_requests r WHERE r.id = c.id;
ALTER TABLE staff_changes
    ALTER COLUMN proposed_by SET NOT NULL,
    ALTER COLUMN proposed_at SET NOT NULL,
    ADD CHECK (status IN ('pending', 'applied', 'rejected')),
    ADD CHECK (length(reason) <= 1000),
    ADD CHECK ((status = 'pending') = (decided_at IS NULL)),
    ADD CHECK (status = 'pending' OR second_half_enc IS NULL);
CREATE UNIQUE INDEX staff_changes_one_pending ON staff_changes (staff_id) WHERE status = 'pending';
CREATE UNIQUE INDEX staff_changes_pending_email ON staff_changes (lower(email)) WHERE status = 'pending' AND kind = 'create';
CREATE INDEX staff_changes_status ON staff_changes (status, proposed_at DESC);
DROP INDEX suspense_assignment_requests_item;
ALTER TABLE suspense_assignment_requests
    DROP CONSTRAINT suspense_assignment_requests_token_fkey,
    ADD COLUMN reason        text,
    ADD COLUMN status        text NOT NULL DEFAULT 'pending',
    ADD COLUMN requested_by  uuid,
    ADD COLUMN requested_at  timestamptz,
    ADD COLUMN decided_by    uuid,
    ADD COLUMN decided_at    timestamptz,
    ADD COLUMN decision_note text NOT NULL DEFAULT '';
UPDATE suspense_assignment_requests a SET reason = r.reason, status = r.status,
       requested_by = r.proposed_by, requested_at = r.proposed_at, decided_by = r.decided_by, decided_at = r.decided_at,
       decision_note = r.note
FROM control_requests r WHERE r.id = a.token;
ALTER TABLE suspense_assignment_requests
    ALTER COLUMN reason SET NOT NULL,
    ALTER COLUMN requested_by SET NOT NULL,
    ALTER COLUMN requested_at SET NOT NULL,
    ADD CHECK (length(reason) BETWEEN 3 AND 2000),
    ADD CHECK (status IN ('pending', 'approved', 'rejected', 'withdrawn')),
    ADD CHECK (length(decision_note) <= 2000),
    ADD CHECK ((status = 'pending') = (decided_by IS NULL)),
    ADD CHECK ((status = 'pending') = (decided_at IS NULL)),
    ADD CHECK ((status = 'approved') = (transfer IS NOT NULL)),
    ADD CHECK (status <> 'approved' OR decided_by <> requested_by),
    ADD CHECK (status <> 'withdrawn' OR decided_by = requested_by);
CREATE UNIQUE INDEX suspense_assignment_requests_pending ON suspense_assignment_requests (item) WHERE status = 'pending';
CREATE UNIQUE INDEX suspense_assignment_requests_approved ON suspense_assignment_requests (item) WHERE status = 'approved';
DROP INDEX adjustment_requests_account;
ALTER TABLE adjustment_requests
    DROP CONSTRAINT adjustment_requests_token_fkey,
    ADD COLUMN reason        text,
    ADD COLUMN status        text NOT NULL DEFAULT 'pending',
    ADD COLUMN requested_by  uuid,
    ADD COLUMN requested_at  timestamptz,
    ADD COLUMN decided_by    uuid,
    ADD COLUMN decided_at    timestamptz,
    ADD COLUMN decision_note text NOT NULL DEFAULT '';
UPDATE adjustment_requests a SET reason = r.reason,
       status = CASE WHEN r.status = 'withdrawn' THEN 'rejected' ELSE r.status END,
       requested_by = r.proposed_by, requested_at = r.proposed_at, decided_by = r.decided_by, decided_at = r.decided_at,
       decision_note = r.note
FROM control_requests r WHERE r.id = a.token;
ALTER TABLE adjustment_requests
    ALTER COLUMN reason SET NOT NULL,
    ALTER COLUMN requested_by SET NOT NULL,
    ALTER COLUMN requested_at SET NOT NULL,
    ADD CHECK (length(reason) BETWEEN 3 AND 2000),
    ADD CHECK (status IN ('pending', 'approved', 'rejected')),
    ADD CHECK (length(decision_note) <= 2000),
    ADD CHECK ((status = 'pending') = (decided_by IS NULL)),
    ADD CHECK ((status = 'pending') = (decided_at IS NULL)),
    ADD CHECK ((status = 'approved') = (txn IS NOT NULL)),
    ADD CHECK (status <> 'approved' OR decided_by <> requested_by);
CREATE INDEX adjustment_requests_pending ON adjustment_requests (requested_at, token) WHERE status = 'pending';
CREATE INDEX adjustment_requests_account ON adjustment_requests (account, requested_at DESC);
CREATE TABLE account_termination_requests (
    account      uuid PRIMARY KEY REFERENCES accounts (token),
    requested_by uuid NOT NULL,
    reason       text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO account_termination_requests (account, requested_by, reason, requested_at)
SELECT resource_token::uuid, proposed_by, reason, proposed_at FROM control_requests
WHERE control = 'account.terminate' AND status = 'pending';
CREATE TABLE transfer_reversal_requests (
    transfer     uuid PRIMARY KEY REFERENCES transfers (token),
    requested_by uuid NOT NULL,
    reason       text NOT NULL CHECK (length(reason) BETWEEN 3 AND 2000),
    requested_at timestamptz NOT NULL
);
INSERT INTO transfer_reversal_requests (transfer, requested_by, reason, requested_at)
SELECT resource_token::uuid, proposed_by, reason, proposed_at FROM control_requests
WHERE control = 'transfer.reverse' AND status = 'pending';
DELETE FROM program_changes p USING control_requests r WHERE r.id = p.request AND r.status <> 'pending';
ALTER TABLE program_changes
    ADD COLUMN base_version timestamptz,
    ADD COLUMN proposed_by uuid,
    ADD COLUMN proposed_at timestamptz;
UPDATE program_changes p SET base_version = r.revision::timestamptz, proposed_by = r.proposed_by, proposed_at = r.proposed_at
FROM control_requests r WHERE r.id = p.request;
ALTER TABLE program_changes
    DROP CONSTRAINT program_changes_pkey,
    DROP CONSTRAINT program_changes_request_fkey,
    DROP COLUMN request,
    ALTER COLUMN base_version SET NOT NULL,
    ALTER COLUMN proposed_by SET NOT NULL,
    ALTER COLUMN proposed_at SET NOT NULL,
    ADD PRIMARY KEY (program);
DROP TABLE control_requests;
ALTER TABLE staff_inbox DROP CONSTRAINT staff_inbox_kind_check;
DELETE FROM staff_inbox WHERE kind = 'decision';
ALTER TABLE staff_inbox ADD CONSTRAINT staff_inbox_kind_check CHECK (kind IN ('mention', 'assignment', 'suspension'));
