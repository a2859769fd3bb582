-- +goose Up

-- Issue 20, M1: a ledger transaction whose entries on one customer balance
-- sum to zero (a main account paying its own virtual account, which lives
-- on the main account's balance) moves nothing, so the guarded update that
-- checks funds never sees it: a "completed" transfer of any amount could be
-- booked from an empty balance. Ledger.Post refuses it (14008); so does the
-- database, at commit, whoever writes the entries.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ledger_txn_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
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
    SELECT balance::text INTO bad FROM ledger_entries WHERE txn = NEW.txn AND balance IS NOT NULL
        GROUP BY balance HAVING sum(amount) = 0 LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'ledger transaction % nets to nothing on balance %', NEW.txn, bad
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION ledger_txn_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
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
