-- Exactly the statements one card_details request executes, as
-- pg_stat_statements shows them in `make bench` (REPORT.md, "Where a
-- request's time goes"): the API key comes from the instance's cache (no
-- statement), the replay guard's batched insert (here a batch of one: emi
-- shares one among concurrent requests, pgbench cannot), the card, its
-- wallet tokens. The token is picked by a subquery on bench_cards inside
-- each statement (an index lookup in the server, no extra round trip).
-- Run it with -M prepared: emi runs both statements as prepared statements
-- (postgres.DB.getPrepared), and :partner is then a parameter as in emi.
--   pgbench -n -M prepared -c 16 -j 2 -T 6 -D partner=P -D ncards=N -f cmd/emi-load/card_details.pgbench.sql "$DATABASE_URL"
\set i random(1, :ncards)
INSERT INTO api_signatures (hash, expires_at) SELECT h, e::timestamptz FROM unnest(ARRAY[decode(md5(random()::text || clock_timestamp()::text), 'hex')], ARRAY[(now() + interval '16 seconds')::text]) WITH ORDINALITY AS t (h, e, n), (SELECT set_config('synchronous_commit', 'off', true)) AS async (setting) ORDER BY n ON CONFLICT (hash) DO NOTHING RETURNING hash;
SELECT c.token, c.partner_id, c.program, c.account::text AS account, c.merchant::text AS merchant,
	c.user_token::text AS user_token, c.type, c.status, c.activated, c.pan_first6, c.pan_last4, c.expiry_month, c.expiry_year,
	c.pin_errors, c.cvv_errors, c.aml::text AS aml, c.emboss_name, c.emboss_name_line4, c.fulfil1, c.fulfil2, c.thermal_line1,
	c.thermal_line2, c.first_name, c.last_name, c.alias, c.url, c.delivery, c.groups, c.tds_otp_sms, c.tds_biometric,
	c.created_at, c.updated_at, c.activated_at, c.terminated_at,
	coalesce((SELECT a.status FROM accounts a WHERE a.token = c.account), '') AS account_status,
	coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = c.user_token),
	         (SELECT m.name FROM merchants m WHERE m.token = c.merchant), '') AS owner_name, (SELECT json_agg(json_build_object('token', w.token, 'card', w.card, 'wallet', w.wallet,
		'device_name', w.device_name, 'created_at', w.created_at) ORDER BY w.created_at)
		FROM card_wallet_tokens w WHERE w.card = c.token) AS wallets_json FROM cards c WHERE c.token = (SELECT token FROM bench_cards WHERE i = :i) AND c.partner_id = :partner;
