-- +goose Up

-- Assigning a suspense item to a balance takes two people (issue 19, C9),
-- as a manual adjustment does: one staff member requests the assignment
-- (the item, the target they typed, the balance and account it resolved to,
-- and a reason); a second, distinct person (service.Controls) approves it,
-- and only then does the money move (suspense -> customer) and the item
-- become `assigned`. The requester withdraws, or anyone with the
-- permission rejects, with a reason. The request cannot be edited: a
-- different target or reason is a new request. Rows are kept after the
-- decision, for the screens and the audit trail.
CREATE TABLE suspense_assignment_requests (
    token          uuid PRIMARY KEY,
    item           uuid NOT NULL REFERENCES suspense_items (token),
    -- What the requester typed (a normalised IBAN or a token), and the
    -- balance and account it named when requested: the approval posts to
    -- exactly these.
    target         text NOT NULL CHECK (length(target) BETWEEN 1 AND 64),
    target_account uuid NOT NULL REFERENCES accounts (token),
    target_balance uuid NOT NULL REFERENCES balances (token),
    partner_id     uuid NOT NULL REFERENCES partners (id),
    reason         text NOT NULL CHECK (length(reason) BETWEEN 3 AND 2000),
    status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'withdrawn')),
    requested_by   uuid NOT NULL,
    requested_at   timestamptz NOT NULL,
    decided_by     uuid,
    decided_at     timestamptz,
    decision_note  text NOT NULL DEFAULT '' CHECK (length(decision_note) <= 2000),
    -- The incoming transfer the approval created.
    transfer       uuid REFERENCES transfers (token),
    CHECK ((status = 'pending') = (decided_by IS NULL)),
    CHECK ((status = 'pending') = (decided_at IS NULL)),
    CHECK ((status = 'approved') = (transfer IS NOT NULL)),
    -- Four-eyes, as adjustment_requests: the database refuses an approval
    -- by the requester too; only the requester withdraws.
    CHECK (status <> 'approved' OR decided_by <> requested_by),
    CHECK (status <> 'withdrawn' OR decided_by = requested_by)
);
-- At most one pending request per item, and at most one approved.
CREATE UNIQUE INDEX suspense_assignment_requests_pending ON suspense_assignment_requests (item) WHERE status = 'pending';
CREATE UNIQUE INDEX suspense_assignment_requests_approved ON suspense_assignment_requests (item) WHERE status = 'approved';

-- +goose Down
DROP TABLE suspense_assignment_requests;
