-- +goose Up

-- Issue 19 (C5): a change of a user's name, birthday or nationality
-- (user_update) screens the person again and records the check, linked to
-- the user, with source 'user_update'. The newest such check also marks the
-- last change of the user's identity: a card operation refuses an AML check
-- made before it.
ALTER TABLE aml_checks DROP CONSTRAINT aml_checks_source_check;
ALTER TABLE aml_checks ADD CONSTRAINT aml_checks_source_check
    CHECK (source IN ('api', 'rescreen', 'user_update'));

-- +goose Down
-- Kept as re-screenings (they are one: a user's identity screened again).
UPDATE aml_checks SET source = 'rescreen' WHERE source = 'user_update';
ALTER TABLE aml_checks DROP CONSTRAINT aml_checks_source_check;
ALTER TABLE aml_checks ADD CONSTRAINT aml_checks_source_check CHECK (source IN ('api', 'rescreen'));
