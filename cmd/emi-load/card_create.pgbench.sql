-- The SQL statements card_create runs per request (the replay guard's
-- batched insert, here a batch of one, then one transaction; the API key
-- comes from the instance's cache since issue 18), for pgbench, to compare emi with the
-- database alone. Setup (once, after `emi generate cards --count N --free M`):
--   psql "$DATABASE_URL" -c "CREATE TABLE bench_free AS SELECT row_number() OVER () AS i, a.token FROM accounts a WHERE a.partner_id = 'PARTNER' AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.account = a.token)" -c "CREATE UNIQUE INDEX ON bench_free (i)" -c "CREATE SEQUENCE bench_free_seq"
-- Run:
--   pgbench -n -c 32 -j 2 -T 15 -D partner=PARTNER -f cmd/emi-load/card_create.pgbench.sql "$DATABASE_URL"
-- Sealed values are random bytes of the real sizes (PAN 53, CVV 40, PIN 41,
-- lookup 32): pgbench measures the database, not AES.
INSERT INTO api_signatures (hash, expires_at) SELECT h, e::timestamptz FROM unnest(ARRAY[decode(md5(random()::text || clock_timestamp()::text), 'hex')], ARRAY[(now() + interval '16 seconds')::text]) AS t (h, e), (SELECT set_config('synchronous_commit', 'off', true)) AS async (setting) ON CONFLICT (hash) DO NOTHING RETURNING hash;
BEGIN;
SELECT nextval('bench_free_seq') AS n \gset
SELECT token AS acc FROM bench_free WHERE i = :n \gset
SELECT a.token, a.partner_id, a.program, a.merchant::text, a.user_token::text, a.main::text, a.virtual, a.alias, a.status, a.created_at, a.updated_at, a.terminated_at,
  coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = a.user_token), (SELECT m.name FROM merchants m WHERE m.token = a.merchant), '') AS owner_name
  FROM accounts a WHERE a.token = ':acc' AND a.partner_id = ':partner' FOR UPDATE OF a;
SELECT token, account, position, currency, available, iban, bic, account_number, sort_code FROM balances WHERE account = ':acc' ORDER BY position;
SELECT code, name, currencies, schemes, cards_allowed, card_types, bin_prefix, card_validity_months, aml_required, overdraft, pin_by_sms, wallet_provisioning, allowed_partners::text[] FROM programs WHERE code = 'account_eur';
SELECT kind, code, is_default FROM program_groups WHERE program = 'account_eur' ORDER BY kind, code;
SELECT token::text FROM cards WHERE account = ':acc' AND status <> 'terminated';
SELECT gen_random_uuid() AS card, decode(md5(random()::text) || md5(random()::text), 'hex') AS lookup \gset
SELECT EXISTS (SELECT 1 FROM cards WHERE pan_lookup = ANY(ARRAY[':lookup'::bytea]));
INSERT INTO cards (token, partner_id, program, account, merchant, user_token, type, status, activated, pan_sealed, pan_lookup, pan_first6, pan_last4,
  expiry_month, expiry_year, cvv_sealed, pin_sealed, aml, emboss_name, emboss_name_line4, fulfil1, fulfil2, thermal_line1, thermal_line2, first_name,
  last_name, alias, url, delivery, groups, tds_otp_sms, tds_biometric, created_at, updated_at, activated_at)
  SELECT ':card', ':partner', 'account_eur', ':acc', NULL, a.user_token, 'virtual', 'active', true,
  decode(repeat(md5(random()::text), 4), 'hex') || '\x0102030405'::bytea, ':lookup'::bytea, '539994', lpad((random() * 9999)::int::text, 4, '0'),
  11, 2029, decode(repeat(md5(random()::text), 3), 'hex') || '\x0102030405060708'::bytea, decode(repeat(md5(random()::text), 3), 'hex') || '\x010203040506070809'::bytea,
  NULL, '', '', '', '', '', '', '', '', '', '', NULL, '{"fees":"fees_std","limits":"limits_std","mcc":"mcc_std","usage":"usage_std"}', '', false, now(), now(), now()
  FROM accounts a WHERE a.token = ':acc'
  ON CONFLICT (pan_lookup) DO NOTHING;
INSERT INTO card_history (card, change, from_value, to_value, reason, actor, at) VALUES (':card', 'issued', '', 'active', '', 'pgbench', now());
INSERT INTO audit_log (actor_type, actor_id, partner_id, action, resource_type, resource_token, changes) VALUES ('partner_key', 'pgbench', ':partner', 'card.create', 'card', ':card', '{"program":"account_eur","type":"virtual","masked":"539994******1234"}');
SELECT c.token, c.partner_id, c.program, c.account::text, c.merchant::text, c.user_token::text, c.type, c.status, c.activated, c.pan_first6, c.pan_last4,
  c.expiry_month, c.expiry_year, c.pin_errors, c.cvv_errors, c.aml::text, c.emboss_name, c.emboss_name_line4, c.fulfil1, c.fulfil2, c.thermal_line1,
  c.thermal_line2, c.first_name, c.last_name, c.alias, c.url, c.delivery, c.groups, c.tds_otp_sms, c.tds_biometric, c.created_at, c.updated_at,
  c.activated_at, c.terminated_at, coalesce((SELECT a.status FROM accounts a WHERE a.token = c.account), '') AS account_status,
  coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = c.user_token), (SELECT m.name FROM merchants m WHERE m.token = c.merchant), '') AS owner_name
  FROM cards c WHERE c.token = ':card' AND c.partner_id = ':partner';
SELECT token, card, wallet, device_name, created_at FROM card_wallet_tokens WHERE card = ':card' ORDER BY created_at;
COMMIT;
