-- +goose Up

-- Issue 19, C2: a false positive on a sanctions hit inside an application
-- (or on an API check's hit scoring 0.9 or more) takes two people: one
-- proposes it, a second, distinct person with the compliance permission
-- confirms it. Until confirmed, the hit stays undecided.
ALTER TABLE application_hit_decisions
    ADD COLUMN confirmed_by uuid,
    ADD COLUMN confirmed_at timestamptz,
    ADD CHECK ((confirmed_by IS NULL) = (confirmed_at IS NULL)),
    ADD CHECK (confirmed_by IS NULL OR decision = 'false_positive');

-- The same on an API check's hit scoring 0.9 or more.
ALTER TABLE aml_hits
    ADD COLUMN confirmed_by uuid,
    ADD COLUMN confirmed_at timestamptz,
    ADD CHECK ((confirmed_by IS NULL) = (confirmed_at IS NULL));

-- A remembered false positive records whether two people decided it. Only
-- a two-person memory answers a later hit that needs two people: a
-- remembered decision never lowers the number of people a decision needs.
-- Rows written before this migration were decided by one person.
ALTER TABLE aml_false_positives ADD COLUMN confirmed_by uuid;

-- +goose Down
ALTER TABLE aml_hits DROP COLUMN confirmed_at, DROP COLUMN confirmed_by;
ALTER TABLE aml_false_positives DROP COLUMN confirmed_by;
ALTER TABLE application_hit_decisions DROP COLUMN confirmed_at, DROP COLUMN confirmed_by;
