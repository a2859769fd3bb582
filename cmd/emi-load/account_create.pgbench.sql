-- The SQL statements account_create runs per request (the replay guard's
-- batched insert, here a batch of one, then one transaction; the API key
-- comes from the instance's cache since issue 18), for pgbench, to compare emi with the
-- database alone. Setup (once, after `emi generate accounts`):
--   psql "$DATABASE_URL" -c "CREATE TABLE bench_users AS SELECT row_number() OVER () AS i, token FROM users WHERE partner_id = 'PARTNER'" -c "CREATE UNIQUE INDEX ON bench_users (i)"
-- Run:
--   pgbench -n -c 32 -j 2 -T 15 -D partner=PARTNER -D nusers=N -f cmd/emi-load/account_create.pgbench.sql "$DATABASE_URL"
-- (N: the rows of bench_users; `make bench` sets all of this up itself.)
\set uid random(1, :nusers)
INSERT INTO api_signatures (hash, expires_at) SELECT h, e::timestamptz FROM unnest(ARRAY[decode(md5(random()::text || clock_timestamp()::text), 'hex')], ARRAY[(now() + interval '16 seconds')::text]) AS t (h, e), (SELECT set_config('synchronous_commit', 'off', true)) AS async (setting) ON CONFLICT (hash) DO NOTHING RETURNING hash;
BEGIN;
SELECT code, name, currencies, schemes, cards_allowed, card_types, bin_prefix, card_validity_months, aml_required, overdraft, allowed_partners::text[] FROM programs WHERE code = 'account_eur';
SELECT kind, code, is_default FROM program_groups WHERE program = 'account_eur' ORDER BY kind, code;
SELECT token AS utoken FROM bench_users WHERE i = :uid \gset
SELECT EXISTS (SELECT 1 FROM users WHERE token = ':utoken' AND partner_id = ':partner' AND status = 'active');
SELECT gen_random_uuid() AS acc, gen_random_uuid() AS bal \gset
INSERT INTO accounts (token, partner_id, program, user_token, alias, status, created_at, updated_at) VALUES (':acc', ':partner', 'account_eur', ':utoken', 'pgbench', 'active', now(), now());
SELECT nextval('bg_account_serial') AS serial \gset
INSERT INTO balances (token, account, position, currency, available, iban, bic) VALUES (':bal', ':acc', 0, 'EUR', 0, 'PGB' || :serial, 'EMIBBGSF');
INSERT INTO ibans (iban, account, balance) VALUES ('PGB' || :serial, ':acc', ':bal');
INSERT INTO account_status_history (account, from_status, to_status, reason, actor, at) VALUES (':acc', '', 'active', '', 'pgbench', now());
INSERT INTO audit_log (actor_type, actor_id, partner_id, action, resource_type, resource_token, changes) VALUES ('partner_key', 'pgbench', ':partner', 'account.create', 'account', ':acc', '{"program":"account_eur"}');
SELECT a.token, a.partner_id, a.program FROM accounts a WHERE a.token = ':acc' AND a.partner_id = ':partner';
SELECT token, account, position, currency, available, iban, bic, account_number, sort_code FROM balances WHERE account = ':acc' ORDER BY position;
COMMIT;
