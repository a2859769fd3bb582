-- +goose Up

-- Rules that can stop money (internal/service/monitoring/screen.go). A
-- rule's outcome says when it runs and what it does:
--   alert    after the fact: its hits join the subject's alert;
--   hold     also before the money moves: a transfer it hits is held for
--            review (status held_for_review, the money parked on the
--            review_hold account) until compliance releases or returns
--            it; a card authorization it hits is declined (a payment
--            cannot wait);
--   decline  also before the money moves: the transfer or authorization
--            is refused.
-- Every outcome raises the alert.
ALTER TABLE monitoring_rules
    ADD COLUMN outcome text NOT NULL DEFAULT 'alert' CHECK (outcome IN ('alert', 'hold', 'decline'));
ALTER TABLE monitoring_rule_changes
    ADD COLUMN outcome text NOT NULL DEFAULT 'alert' CHECK (outcome IN ('alert', 'hold', 'decline'));

-- A payment to, or a card payment at a merchant in, a jurisdiction under
-- the FATF's call for action or on the EU's list of high-risk third
-- countries is held for review before it leaves (high_risk_country
-- still alerts on every tier after the fact, incoming money included).
INSERT INTO monitoring_rules (code, version, score, description, params, outcome) VALUES
('high_risk_country_hold', 1, 70, 'An outgoing payment or card payment whose counterparty or merchant is in a jurisdiction under the FATF call for action or on the EU list of high-risk third countries (high_risk_countries.tsv), of min_eur or more: held for review before the money leaves.', '{"min_eur": 0}', 'hold');

-- A movement the rules that stop money looked at before it was booked:
-- the after-the-fact evaluation does not run those rules on it again.
ALTER TABLE monitoring_movements ADD COLUMN screened boolean NOT NULL DEFAULT false;

-- The ledger: held money is parked on the institution's review_hold
-- account (one per currency) between the transfer and the decision.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_internal_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_internal_check CHECK (internal IN ('incoming_clearing',
    'outgoing_clearing', 'card_clearing', 'fees', 'suspense', 'adjustments', 'opening', 'review_hold'));
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_kind_check CHECK (kind IN ('opening', 'transfer', 'incoming',
    'outgoing', 'outgoing_return', 'suspense_assign', 'suspense_return', 'adjustment', 'card_clearing', 'reversal',
    'review_hold', 'review_release', 'review_return'));

-- A held transfer: txn parks the money (source -> review_hold);
-- release_txn moves it on when released (review_hold -> destination, or
-- -> outgoing clearing); return_txn gives it back when returned.
ALTER TABLE transfers DROP CONSTRAINT transfers_status_check;
ALTER TABLE transfers ADD CONSTRAINT transfers_status_check CHECK (status IN ('pending', 'completed', 'returned', 'held_for_review'));
ALTER TABLE transfers ADD COLUMN release_txn bigint REFERENCES ledger_transactions (id);

-- What held a transfer, and how it ended. decided_by is the staff user
-- who released or returned it (never its initiator: initiated_by is the
-- API key or staff user that created the transfer).
CREATE TABLE monitoring_holds (
    transfer      uuid PRIMARY KEY REFERENCES transfers (token),
    partner_id    uuid NOT NULL REFERENCES partners (id),
    subject_kind  text NOT NULL CHECK (subject_kind IN ('user', 'merchant')),
    subject_token uuid NOT NULL,
    alert         uuid REFERENCES monitoring_alerts (token),
    movement      bigint REFERENCES monitoring_movements (id),
    hits          jsonb NOT NULL DEFAULT '[]',
    initiated_by  text NOT NULL DEFAULT '',
    status        text NOT NULL DEFAULT 'held' CHECK (status IN ('held', 'released', 'returned')),
    held_at       timestamptz NOT NULL,
    decided_by    text NOT NULL DEFAULT '',
    decided_at    timestamptz,
    reason        text NOT NULL DEFAULT '' CHECK (length(reason) <= 500),
    CHECK ((status = 'held') = (decided_at IS NULL))
);
CREATE INDEX monitoring_holds_held ON monitoring_holds (held_at) WHERE status = 'held';
CREATE INDEX monitoring_holds_subject ON monitoring_holds (subject_kind, subject_token, held_at DESC);

-- +goose Down
DROP TABLE monitoring_holds;
ALTER TABLE transfers DROP COLUMN release_txn;
ALTER TABLE transfers DROP CONSTRAINT transfers_status_check;
ALTER TABLE transfers ADD CONSTRAINT transfers_status_check CHECK (status IN ('pending', 'completed', 'returned'));
ALTER TABLE ledger_transactions DROP CONSTRAINT ledger_transactions_kind_check;
ALTER TABLE ledger_transactions ADD CONSTRAINT ledger_transactions_kind_check CHECK (kind IN ('opening', 'transfer', 'incoming',
    'outgoing', 'outgoing_return', 'suspense_assign', 'suspense_return', 'adjustment', 'card_clearing', 'reversal'));
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_internal_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_internal_check CHECK (internal IN ('incoming_clearing',
    'outgoing_clearing', 'card_clearing', 'fees', 'suspense', 'adjustments', 'opening'));
ALTER TABLE monitoring_movements DROP COLUMN screened;
DELETE FROM monitoring_rules WHERE code = 'high_risk_country_hold';
ALTER TABLE monitoring_rule_changes DROP COLUMN outcome;
ALTER TABLE monitoring_rules DROP COLUMN outcome;
