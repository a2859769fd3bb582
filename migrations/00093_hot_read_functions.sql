-- +goose Up

-- The account read of account_details and the card read of card_details
-- (and every other non-locking read of one account or card) as PL/pgSQL
-- functions, for deployments behind a
-- transaction-mode pooler (issue 30). There emi prepares nothing
-- (EMI_DB_POOLER=transaction, the default), so PostgreSQL parsed and
-- planned the account's JSON aggregate on every request: most of the
-- statement's cost (pgbench, 8 clients, 2 cores: 2,548 tps unprepared,
-- 10,316 prepared). PL/pgSQL keeps the plan of the statement below for the
-- life of the server connection, and a pooler's server connections live
-- long, so the read costs what a prepared one does without a named
-- statement a pooler could mix up (4,598 tps directly, 3,533 through
-- PgBouncer against 1,709 for the unprepared statement).
--
-- Each statement is the one internal/postgres/accounts.go (Account) or
-- cards.go (Card) runs when it prepares (EMI_DB_POOLER=none) or locks the
-- row (FOR UPDATE must stay in the caller's statement: a lock taken around
-- a function would return the row as it was before the wait). Change both
-- together: TestAccountReadFunctionMatchesTheStatement and
-- TestCardReadFunctionMatchesTheStatement (web/api) compare what they
-- return. p_partner NULL reads any partner's (the back office).
-- +goose StatementBegin
CREATE FUNCTION account_read(p_token uuid, p_partner uuid)
RETURNS TABLE (token uuid, partner_id uuid, program text, merchant text, user_token text, main text, virtual boolean,
  alias text, status text, created_at timestamptz, updated_at timestamptz, terminated_at timestamptz, owner_name text,
  balances_json json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT a.token, a.partner_id, a.program, a.merchant::text, a.user_token::text,
    a.main::text, a.virtual, a.alias, a.status, a.created_at, a.updated_at, a.terminated_at,
    coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = a.user_token),
             (SELECT m.name FROM merchants m WHERE m.token = a.merchant), ''),
    (SELECT json_agg(json_build_object('token', b.token, 'account', b.account,
      'position', b.position, 'currency', b.currency, 'available', b.available, 'posted', b.posted, 'held', b.held,
      'overdraft', b.overdraft, 'iban', b.iban, 'bic', b.bic, 'account_number', b.account_number, 'sort_code', b.sort_code)
      ORDER BY b.position) FROM balances b WHERE b.account = CASE WHEN a.virtual THEN a.main ELSE a.token END)
    FROM accounts a WHERE a.token = p_token AND (p_partner IS NULL OR a.partner_id = p_partner);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION card_read(p_token uuid, p_partner uuid)
RETURNS TABLE (token uuid, partner_id uuid, program text, account text, merchant text, user_token text, type text, status text,
  activated boolean, pan_first6 text, pan_last4 text, expiry_month integer, expiry_year integer, pin_errors integer,
  cvv_errors integer, aml text, emboss_name text, emboss_name_line4 text, fulfil1 text, fulfil2 text, thermal_line1 text,
  thermal_line2 text, first_name text, last_name text, alias text, url text, delivery jsonb, groups jsonb, tds_otp_sms text,
  tds_biometric boolean, created_at timestamptz, updated_at timestamptz, activated_at timestamptz, terminated_at timestamptz,
  status_reason text, replaces text, replaced_by text, account_status text, owner_name text, wallets_json json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT c.token, c.partner_id, c.program, c.account::text, c.merchant::text,
    c.user_token::text, c.type, c.status, c.activated, c.pan_first6, c.pan_last4, c.expiry_month, c.expiry_year,
    c.pin_errors, c.cvv_errors, c.aml::text, c.emboss_name, c.emboss_name_line4, c.fulfil1, c.fulfil2, c.thermal_line1,
    c.thermal_line2, c.first_name, c.last_name, c.alias, c.url, c.delivery, c.groups, c.tds_otp_sms, c.tds_biometric,
    c.created_at, c.updated_at, c.activated_at, c.terminated_at, c.status_reason, c.replaces::text,
    (SELECT n.token::text FROM cards n WHERE n.replaces = c.token),
    coalesce((SELECT a.status FROM accounts a WHERE a.token = c.account), ''),
    coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = c.user_token),
             (SELECT m.name FROM merchants m WHERE m.token = c.merchant), ''),
    (SELECT json_agg(json_build_object('token', w.token, 'card', w.card, 'wallet', w.wallet,
      'device_name', w.device_name, 'created_at', w.created_at) ORDER BY w.created_at)
      FROM card_wallet_tokens w WHERE w.card = c.token)
    FROM cards c WHERE c.token = p_token AND (p_partner IS NULL OR c.partner_id = p_partner);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION card_read(uuid, uuid);
DROP FUNCTION account_read(uuid, uuid);
