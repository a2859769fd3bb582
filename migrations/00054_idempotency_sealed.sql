-- +goose Up

-- Issue 20, A3: a stored idempotent response is replayed byte for byte for
-- 24 hours, so it held, in clear, whatever the answer carried: the hosted
-- KYC page's capability URL (kyc_init), personal data of users and
-- applications. The body is now sealed like every other secret
-- (AES-256-GCM under the master key, bound to the row's id, re-sealed by
-- `emi rekey`): body_enc. Rows stored before this migration keep their
-- clear body until the maintenance job prunes them (24 hours); new rows
-- never have one.
ALTER TABLE idempotency_keys
    ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN body_enc bytea,
    ALTER COLUMN body DROP NOT NULL;
CREATE UNIQUE INDEX idempotency_keys_id ON idempotency_keys (id);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_one_body CHECK ((body IS NULL) <> (body_enc IS NULL));

-- +goose Down
DELETE FROM idempotency_keys WHERE body IS NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_one_body;
DROP INDEX idempotency_keys_id;
ALTER TABLE idempotency_keys DROP COLUMN body_enc, DROP COLUMN id, ALTER COLUMN body SET NOT NULL;
