-- +goose Up

-- The AML and KYC review screens sort and page in SQL (keyset on the sort
-- expression and the token, as the other sorted lists of migration
-- 00085). A tab is a status, so each order's index leads with the status:
-- a page of a tab, in either direction, is an index range, not a sort of
-- every check. The "All" tabs' orders by time and by name have their own
-- (by status, the status indexes serve them). The orders by partner (and,
-- for KYC, by person) go through a join and are sorted at read time
-- (about 40 ms for 100,000 checks); they are asked for rarely.
CREATE INDEX aml_checks_sort_created ON aml_checks (status, created_at, token);
CREATE INDEX aml_checks_sort_person ON aml_checks (status, lower(first_name || ' ' || last_name), token);
CREATE INDEX aml_checks_sort_status ON aml_checks (status, token);
CREATE INDEX aml_checks_sort_all ON aml_checks (created_at, token);
CREATE INDEX aml_checks_sort_all_person ON aml_checks (lower(first_name || ' ' || last_name), token);
CREATE INDEX kyc_sessions_sort_started ON kyc_sessions (status, created_at, token);
CREATE INDEX kyc_sessions_sort_submitted ON kyc_sessions (status, coalesce(submitted_at, '-infinity'), token);
CREATE INDEX kyc_sessions_sort_status ON kyc_sessions (status, token);
CREATE INDEX kyc_sessions_sort_all ON kyc_sessions (created_at, token);
CREATE INDEX kyc_sessions_sort_all_submitted ON kyc_sessions (coalesce(submitted_at, '-infinity'), token);

-- +goose Down
DROP INDEX kyc_sessions_sort_all_submitted;
DROP INDEX kyc_sessions_sort_all;
DROP INDEX kyc_sessions_sort_status;
DROP INDEX kyc_sessions_sort_submitted;
DROP INDEX kyc_sessions_sort_started;
DROP INDEX aml_checks_sort_all_person;
DROP INDEX aml_checks_sort_all;
DROP INDEX aml_checks_sort_status;
DROP INDEX aml_checks_sort_person;
DROP INDEX aml_checks_sort_created;
