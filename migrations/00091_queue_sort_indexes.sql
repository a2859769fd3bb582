-- +goose Up

-- The AML and KYC review screens sort and page in SQL (keyset on the sort
-- expression and the token, as the other sorted lists of migration
-- 00085). A tab is a status, so each order's index leads with the status:
-- a page of a tab, in either direction, is an index range, not a sort of
-- every check. The "All" tabs' default order (newest first) has its own.
-- The orders by partner (and, for KYC, by person) go through a join and
-- are sorted by the database at read time; partners are few, and those
-- orders are asked for rarely.
CREATE INDEX aml_checks_sort_created ON aml_checks (status, created_at, token);
CREATE INDEX aml_checks_sort_person ON aml_checks (status, lower(first_name || ' ' || last_name), token);
CREATE INDEX aml_checks_sort_status ON aml_checks (status, token);
CREATE INDEX aml_checks_sort_all ON aml_checks (created_at, token);
CREATE INDEX kyc_sessions_sort_started ON kyc_sessions (status, created_at, token);
CREATE INDEX kyc_sessions_sort_submitted ON kyc_sessions (status, coalesce(submitted_at, '-infinity'), token);
CREATE INDEX kyc_sessions_sort_status ON kyc_sessions (status, token);
CREATE INDEX kyc_sessions_sort_all ON kyc_sessions (created_at, token);

-- +goose Down
DROP INDEX kyc_sessions_sort_all;
DROP INDEX kyc_sessions_sort_status;
DROP INDEX kyc_sessions_sort_submitted;
DROP INDEX kyc_sessions_sort_started;
DROP INDEX aml_checks_sort_all;
DROP INDEX aml_checks_sort_status;
DROP INDEX aml_checks_sort_person;
DROP INDEX aml_checks_sort_created;
