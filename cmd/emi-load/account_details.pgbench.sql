-- Exactly the statements one account_details request executes, as
-- pg_stat_statements shows them in `make bench` (REPORT.md, "Where a
-- request's time goes"): the API key comes from the instance's cache (no
-- statement), the replay guard's batched insert (here a batch of one: emi
-- shares one among concurrent requests, pgbench cannot, so this script pays
-- more for it than emi does), the account, its balances. The token is
-- picked by a subquery on bench_accounts inside each statement (an index
-- lookup in the server, no extra round trip).
--   pgbench -n -c 16 -j 2 -T 6 -D partner=P -D naccounts=N -f cmd/emi-load/account_details.pgbench.sql "$DATABASE_URL"
\set i random(1, :naccounts)
INSERT INTO api_signatures (hash, expires_at) SELECT h, e::timestamptz FROM unnest(ARRAY[decode(md5(random()::text || clock_timestamp()::text), 'hex')], ARRAY[(now() + interval '16 seconds')::text]) AS t (h, e) ON CONFLICT (hash) DO NOTHING RETURNING hash;
SELECT a.token, a.partner_id, a.program, a.merchant::text AS merchant, a.user_token::text AS user_token,
	a.main::text AS main, a.virtual, a.alias, a.status, a.created_at, a.updated_at, a.terminated_at,
	coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = a.user_token),
	         (SELECT m.name FROM merchants m WHERE m.token = a.merchant), '') AS owner_name FROM accounts a WHERE a.token = (SELECT token FROM bench_accounts WHERE i = :i) AND a.partner_id = ':partner';
SELECT token, account, position, currency, available, posted, held, overdraft, iban, bic, account_number, sort_code FROM balances WHERE account = (SELECT token FROM bench_accounts WHERE i = :i) ORDER BY position;
