-- +goose Up
-- Every instance caches API keys in memory (internal/app, keyCache) and must
-- see a revocation, a rotation or any other change to a key or its partner
-- within 1 s. The change announces itself when it commits: a trigger, not
-- the store's code, so every writer is covered (the back office, emi rekey,
-- a migration, a hand-written UPDATE). Payload: 'k:' and the api_key for a
-- key, 'p:' and the partner id for a partner. NOTIFY is delivered only on
-- commit, and never for a rolled-back change.
-- +goose StatementBegin
CREATE FUNCTION notify_partner_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'partner_keys' THEN
        PERFORM pg_notify('emi_partner_keys', 'k:' || OLD.api_key);
        IF TG_OP = 'UPDATE' AND NEW.api_key IS DISTINCT FROM OLD.api_key THEN
            PERFORM pg_notify('emi_partner_keys', 'k:' || NEW.api_key);
        END IF;
    ELSE
        PERFORM pg_notify('emi_partner_keys', 'p:' || OLD.id::text);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER partner_keys_notify AFTER UPDATE OR DELETE ON partner_keys
    FOR EACH ROW EXECUTE FUNCTION notify_partner_key_change();
CREATE TRIGGER partners_notify AFTER UPDATE OR DELETE ON partners
    FOR EACH ROW EXECUTE FUNCTION notify_partner_key_change();

-- +goose Down
DROP TRIGGER partners_notify ON partners;
DROP TRIGGER partner_keys_notify ON partner_keys;
DROP FUNCTION notify_partner_key_change();
