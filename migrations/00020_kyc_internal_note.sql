-- +goose Up

-- Issue 19 (C7): a KYC decision carries an internal note beside the
-- partner-facing reason. `reason` leaves emi (the user.kyc_updated event);
-- `internal_note` never does: it is shown to staff on the KYC review page and
-- recorded in the audit log, so the real grounds of a rejection (a sanctions
-- or fraud suspicion) are not tipped off to the partner and its customer.
ALTER TABLE kyc_sessions
    ADD COLUMN internal_note text NOT NULL DEFAULT ''
        CHECK (length(internal_note) <= 4000);

-- +goose Down
ALTER TABLE kyc_sessions DROP COLUMN internal_note;
