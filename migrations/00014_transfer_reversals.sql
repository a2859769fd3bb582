-- +goose Up

-- A reversal of an internal transfer moves a customer's money back, so it
-- takes two staff members: one requests it with a reason, another approves
-- it (or either withdraws/rejects it). A transfer has at most one pending
-- request; the row is removed when the request is decided (the decision is
-- in the audit log and, for an approval, in the ledger).
CREATE TABLE transfer_reversal_requests (
    transfer     uuid PRIMARY KEY REFERENCES transfers (token),
    requested_by uuid NOT NULL,
    reason       text NOT NULL CHECK (length(reason) BETWEEN 3 AND 2000),
    requested_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE transfer_reversal_requests;
