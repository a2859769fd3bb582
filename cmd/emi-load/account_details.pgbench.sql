-- Exactly the statements one account_details request executes, as
-- pg_stat_statements shows them in `make bench` (REPORT.md, "Where a
-- request's time goes"): the API key comes from the instance's cache (no
-- statement), the replay guard's batched insert (here a batch of one: emi
-- shares one among concurrent requests, pgbench cannot, so this script pays
-- more for it than emi does), the account with its balances (one statement). The token is
-- picked by a subquery on bench_accounts inside each statement (an index
-- lookup in the server, no extra round trip).
-- Run it with -M prepared: emi runs both statements as prepared statements
-- (postgres.DB.getPrepared), and :partner is then a parameter as in emi.
--   pgbench -n -M prepared -c 16 -j 2 -T 6 -D partner=P -D naccounts=N -f cmd/emi-load/account_details.pgbench.sql "$DATABASE_URL"
\set i random(1, :naccounts)
INSERT INTO api_signatures (hash, expires_at) SELECT h, e::timestamptz FROM unnest(ARRAY[decode(md5(random()::text || clock_timestamp()::text), 'hex')], ARRAY[(now() + interval '16 seconds')::text]) WITH ORDINALITY AS t (h, e, n), (SELECT set_config('synchronous_commit', 'off', true)) AS async (setting) ORDER BY n ON CONFLICT (hash) DO NOTHING RETURNING hash;
SELECT a.token, a.partner_id, a.program, a.merchant::text AS merchant, a.user_token::text AS user_token,
	a.main::text AS main, a.virtual, a.alias, a.status, a.created_at, a.updated_at, a.terminated_at,
	coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = a.user_token),
	         (SELECT m.name FROM merchants m WHERE m.token = a.merchant), '') AS owner_name, (SELECT json_agg(json_build_object('token', b.token, 'account', b.account,
		'position', b.position, 'currency', b.currency, 'available', b.available, 'posted', b.posted, 'held', b.held,
		'overdraft', b.overdraft, 'iban', b.iban, 'bic', b.bic, 'account_number', b.account_number, 'sort_code', b.sort_code)
		ORDER BY b.position) FROM balances b WHERE b.account = CASE WHEN a.virtual THEN a.main ELSE a.token END) AS balances_json
	FROM accounts a WHERE a.token = (SELECT token FROM bench_accounts WHERE i = :i) AND a.partner_id = :partner;
