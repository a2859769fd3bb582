-- +goose Up

-- The ledger: every movement of money is a ledger transaction of journal
-- entries, in minor units, that sum to zero per currency. An entry moves
-- either a customer balance or one of the institution's own accounts
-- (internal: incoming clearing, outgoing clearing, card clearing, fees,
-- suspense, adjustments). Entries are append-only; a correction is a new,
-- reversing transaction.
--
-- Sign: a positive amount credits (increases) the account it names. So the
-- sum of all customer balances of a currency equals minus the sum of the
-- institution's accounts of that currency.
--
-- A customer balance keeps three figures, changed in the same transaction
-- as its entries, under the balance row's lock:
--   posted    = the sum of its entries (the ledger balance);
--   held      = card authorizations approved but not yet cleared;
--   available = posted - held, what can be spent.
-- available never goes below zero unless the balance's program allows an
-- overdraft (the overdraft column follows the program).
--
-- The institution's accounts keep no stored figure: their position is the
-- sum of their entries (index below). Storing one would put a single hot
-- row under every incoming credit and outgoing payment of the whole system.
ALTER TABLE balances
    ADD COLUMN posted    bigint  NOT NULL DEFAULT 0,
    ADD COLUMN held      bigint  NOT NULL DEFAULT 0 CHECK (held >= 0),
    ADD COLUMN overdraft boolean NOT NULL DEFAULT false;

UPDATE balances b SET overdraft = p.overdraft
FROM accounts a JOIN programs p ON p.code = a.program
WHERE a.token = b.account AND p.overdraft;

CREATE TABLE ledger_transactions (
    -- id is the posting sequence: replaying transactions in id order
    -- rebuilds every balance (per balance, id order is commit order,
    -- because entries of a balance are written under its row lock).
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token       uuid NOT NULL UNIQUE,
    kind        text NOT NULL CHECK (kind IN ('opening', 'transfer', 'incoming', 'outgoing', 'outgoing_return',
                    'suspense_assign', 'suspense_return', 'adjustment', 'card_clearing', 'reversal')),
    -- A transaction is reversed at most once.
    reverses    bigint UNIQUE REFERENCES ledger_transactions (id),
    partner_id  uuid REFERENCES partners (id),
    reference   text NOT NULL DEFAULT '' CHECK (length(reference) <= 140),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'reversal') = (reverses IS NOT NULL))
);

CREATE TABLE ledger_entries (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    txn           bigint NOT NULL REFERENCES ledger_transactions (id),
    balance       uuid REFERENCES balances (token),
    internal      text CHECK (internal IN ('incoming_clearing', 'outgoing_clearing', 'card_clearing', 'fees',
                      'suspense', 'adjustments', 'opening')),
    -- The account the entry shows on: for a virtual account's movement,
    -- the virtual account (its money is on the main account's balance).
    account       uuid REFERENCES accounts (token),
    currency      text NOT NULL CHECK (currency IN ('EUR', 'BGN', 'GBP')),
    amount        bigint NOT NULL CHECK (amount <> 0),
    -- The balance's posted figure right after this entry (statements'
    -- running balance); NULL for the institution's accounts.
    balance_after bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((balance IS NULL) <> (internal IS NULL)),
    CHECK ((balance IS NULL) = (balance_after IS NULL)),
    CHECK ((balance IS NULL) = (account IS NULL))
);
CREATE INDEX ledger_entries_txn ON ledger_entries (txn);
CREATE INDEX ledger_entries_balance ON ledger_entries (balance, id) WHERE balance IS NOT NULL;
CREATE INDEX ledger_entries_account ON ledger_entries (account, created_at, id) WHERE account IS NOT NULL;
CREATE INDEX ledger_entries_internal ON ledger_entries (internal, currency) WHERE internal IS NOT NULL;

-- Entries and transactions are append-only, for every role.
-- +goose StatementBegin
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused (post a reversing transaction instead)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER ledger_entries_no_update_delete BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_transactions_no_update_delete BEFORE UPDATE OR DELETE ON ledger_transactions
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_transactions_no_truncate BEFORE TRUNCATE ON ledger_transactions
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- Double entry, checked by the database at commit: the entries of a
-- transaction sum to zero per currency, and a transaction has at least two.
-- +goose StatementBegin
CREATE FUNCTION ledger_txn_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad text;
    n   int;
BEGIN
    SELECT count(*) INTO n FROM ledger_entries WHERE txn = NEW.txn;
    IF n < 2 THEN
        RAISE EXCEPTION 'ledger transaction % has % entries: at least two are needed', NEW.txn, n
            USING ERRCODE = 'check_violation';
    END IF;
    SELECT currency INTO bad FROM ledger_entries WHERE txn = NEW.txn
        GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'ledger transaction % does not sum to zero in %', NEW.txn, bad
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_txn_balanced();

-- Balances that held money before the ledger existed (only possible in
-- development databases) get an opening transaction, so that every posted
-- figure is the sum of its entries from the start.
UPDATE balances SET posted = available WHERE available <> 0;
-- +goose StatementBegin
DO $$
DECLARE
    r  record;
    id bigint;
BEGIN
    FOR r IN SELECT token, account, currency, available FROM balances WHERE available <> 0 ORDER BY token LOOP
        INSERT INTO ledger_transactions (token, kind, reference)
            VALUES (gen_random_uuid(), 'opening', 'opening balance') RETURNING ledger_transactions.id INTO id;
        INSERT INTO ledger_entries (txn, balance, account, currency, amount, balance_after)
            VALUES (id, r.token, r.account, r.currency, r.available, r.available);
        INSERT INTO ledger_entries (txn, internal, currency, amount)
            VALUES (id, 'opening', r.currency, -r.available);
    END LOOP;
END;
$$;
-- +goose StatementEnd

ALTER TABLE balances
    ADD CONSTRAINT balances_available_is_posted_minus_held CHECK (available = posted - held),
    ADD CONSTRAINT balances_no_overdraft CHECK (overdraft OR available >= 0);

-- Transfers: the customer-facing record of a movement (internal transfers,
-- outgoing external payments, incoming credits). The money moves in the
-- ledger transactions it names.
CREATE TABLE transfers (
    token               uuid PRIMARY KEY,
    -- The partner that sent it (NULL for incoming credits).
    partner_id          uuid REFERENCES partners (id),
    type                text NOT NULL CHECK (type IN ('internal', 'outgoing', 'incoming')),
    status              text NOT NULL CHECK (status IN ('pending', 'completed', 'returned')),
    source_account      uuid REFERENCES accounts (token),
    source_balance      uuid REFERENCES balances (token),
    destination_account uuid REFERENCES accounts (token),
    destination_balance uuid REFERENCES balances (token),
    -- The external party of an outgoing or incoming transfer: name, iban,
    -- bic, account_number, sort_code, scheme.
    counterparty        jsonb NOT NULL DEFAULT '{}',
    amount              bigint NOT NULL CHECK (amount > 0),
    currency            text NOT NULL CHECK (currency IN ('EUR', 'BGN', 'GBP')),
    reference           text NOT NULL DEFAULT '' CHECK (length(reference) <= 140),
    txn                 bigint NOT NULL REFERENCES ledger_transactions (id),
    return_txn          bigint REFERENCES ledger_transactions (id),
    return_reason       text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    CHECK ((status = 'returned') = (return_txn IS NOT NULL))
);
CREATE INDEX transfers_partner ON transfers (partner_id, created_at DESC) WHERE partner_id IS NOT NULL;
CREATE INDEX transfers_source ON transfers (source_account, created_at DESC) WHERE source_account IS NOT NULL;
CREATE INDEX transfers_destination ON transfers (destination_account, created_at DESC) WHERE destination_account IS NOT NULL;
CREATE INDEX transfers_txn ON transfers (txn);
CREATE INDEX transfers_pending ON transfers (created_at) WHERE status = 'pending';

-- +goose Down
DROP TABLE transfers;
ALTER TABLE balances
    DROP CONSTRAINT balances_no_overdraft,
    DROP CONSTRAINT balances_available_is_posted_minus_held;
DROP TRIGGER ledger_entries_balanced ON ledger_entries;
DROP FUNCTION ledger_txn_balanced();
DROP TRIGGER ledger_transactions_no_truncate ON ledger_transactions;
DROP TRIGGER ledger_transactions_no_update_delete ON ledger_transactions;
DROP TRIGGER ledger_entries_no_truncate ON ledger_entries;
DROP TRIGGER ledger_entries_no_update_delete ON ledger_entries;
DROP FUNCTION ledger_append_only();
DROP TABLE ledger_entries;
DROP TABLE ledger_transactions;
ALTER TABLE balances DROP COLUMN overdraft, DROP COLUMN held, DROP COLUMN posted;
