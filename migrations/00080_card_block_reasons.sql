-- +goose Up

-- Card block reasons and replacements (issue 23, item 4).
--
-- A staff block carries a reason code, as card issuers keep one: lost,
-- stolen, fraud_suspected, customer_request or other (other needs a note,
-- the history's reason). The code is kept on the history entry of the
-- change and, for the card's current status, on the card itself
-- (status_reason: "" while the card is active or when the partner API set
-- the status, which has no reason codes). A card reported lost or stolen is
-- terminated at once (its number is compromised) and can be replaced.
ALTER TABLE card_history
    ADD COLUMN reason_code text NOT NULL DEFAULT ''
        CHECK (reason_code IN ('', 'lost', 'stolen', 'fraud_suspected', 'customer_request', 'other'));
ALTER TABLE cards
    ADD COLUMN status_reason text NOT NULL DEFAULT ''
        CHECK (status_reason IN ('', 'lost', 'stolen', 'fraud_suspected', 'customer_request', 'other')),
    -- The terminated card this one replaces (same account, same settings).
    -- A card is replaced at most once, kept by the database so that two
    -- racing replacements cannot both win.
    ADD COLUMN replaces uuid REFERENCES cards (token),
    ADD CHECK (replaces IS NULL OR replaces <> token);
CREATE UNIQUE INDEX cards_replaces ON cards (replaces) WHERE replaces IS NOT NULL;

-- +goose Down
DROP INDEX cards_replaces;
ALTER TABLE cards DROP COLUMN replaces, DROP COLUMN status_reason;
ALTER TABLE card_history DROP COLUMN reason_code;
