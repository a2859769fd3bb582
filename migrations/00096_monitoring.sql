-- +goose Up

-- Transaction monitoring (internal/service/monitoring). Every money
-- movement is recorded in the transaction that books it, with its subject
-- (the person or merchant whose account moved) and its amount in euros;
-- the typologies evaluate each movement after commit, over windows of the
-- subject's movements up to it, and raise their hits into the subject's
-- open alert.
--
-- counterparty_key is a hash of the counterparty's IBAN (or card
-- merchant's name), enough to count distinct counterparties without
-- keeping them in clear here: the transfer and authorization rows (source)
-- hold the details.
CREATE TABLE monitoring_movements (
    id                   bigserial PRIMARY KEY,
    partner_id           uuid NOT NULL REFERENCES partners (id),
    subject_kind         text NOT NULL CHECK (subject_kind IN ('user', 'merchant')),
    subject_token        uuid NOT NULL,
    account              uuid NOT NULL REFERENCES accounts (token),
    program              text NOT NULL DEFAULT '',
    kind                 text NOT NULL CHECK (kind IN ('incoming', 'transfer_out', 'transfer_internal', 'card_payment', 'card_withdrawal')),
    direction            text NOT NULL CHECK (direction IN ('in', 'out')),
    amount_minor         bigint NOT NULL CHECK (amount_minor >= 0),
    currency             text NOT NULL,
    eur_minor            bigint NOT NULL CHECK (eur_minor >= 0),
    counterparty_key     text NOT NULL DEFAULT '',
    counterparty_country text NOT NULL DEFAULT '',
    mcc                  text NOT NULL DEFAULT '',
    declined             boolean NOT NULL DEFAULT false,
    at                   timestamptz NOT NULL,
    ref                  text NOT NULL DEFAULT '' CHECK (length(ref) <= 200),
    source               text NOT NULL DEFAULT '',
    evaluated_at         timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now()
);
-- The windows: one subject's movements by time (and id, which orders
-- movements of one instant), per direction.
CREATE INDEX monitoring_movements_window ON monitoring_movements (subject_kind, subject_token, direction, at, id)
    INCLUDE (kind, eur_minor, declined, counterparty_key);
CREATE INDEX monitoring_movements_pending ON monitoring_movements (subject_kind, subject_token, at, id) WHERE evaluated_at IS NULL;

-- The typologies, one row per version; program '' is every program's
-- default, another program's row overrides it. params are the tunable
-- figures (amounts in EUR).
CREATE TABLE monitoring_rules (
    code        text NOT NULL CHECK (code ~ '^[a-z_]{1,64}$'),
    program     text NOT NULL DEFAULT '',
    version     int NOT NULL CHECK (version >= 1),
    description text NOT NULL,
    score       int NOT NULL CHECK (score BETWEEN 0 AND 100),
    enabled     boolean NOT NULL DEFAULT true,
    shadow      boolean NOT NULL DEFAULT false,
    params      jsonb NOT NULL DEFAULT '{}',
    current     boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (code, program, version)
);
CREATE UNIQUE INDEX monitoring_rules_current ON monitoring_rules (code, program) WHERE current;

INSERT INTO monitoring_rules (code, version, score, description, params) VALUES
('large_amount', 1, 30, 'One movement of threshold_eur or more, in either direction.', '{"threshold_eur": 10000}'),
('structuring', 1, 60, 'min_count movements of one direction within days, each from ratio of the large-amount threshold up to just under it.', '{"threshold_eur": 10000, "ratio": 0.8, "days": 5, "min_count": 3}'),
('profile_incoming_volume', 1, 40, 'Incoming this calendar month above the upper bound of the declared expected_incoming_monthly_eur band, times the risk factor (low 1.5, medium 1.25, high 1).', '{"factor_low": 1.5, "factor_medium": 1.25, "factor_high": 1}'),
('profile_outgoing_volume', 1, 40, 'Outgoing this calendar month above the upper bound of the declared expected_outgoing_monthly_eur band, times the risk factor.', '{"factor_low": 1.5, "factor_medium": 1.25, "factor_high": 1}'),
('profile_incoming_frequency', 1, 20, 'More incoming transfers this calendar month than the declared expected_monthly_frequency_incoming_transfer allows, times the risk factor.', '{"factor_low": 1.5, "factor_medium": 1.25, "factor_high": 1}'),
('pass_through', 1, 60, 'Within hours, what left is ratio or more of what came in, when what came in is min_in_eur or more.', '{"hours": 48, "ratio": 0.8, "min_in_eur": 1000}'),
('high_risk_country', 1, 50, 'A counterparty or card merchant in a high-risk jurisdiction (high_risk_countries.tsv): any amount for the FATF call for action and the EU list, from increased_min_eur for FATF increased monitoring.', '{"increased_min_eur": 5000}'),
('dormant_reactivated', 1, 30, 'A movement of min_eur or more after days without any.', '{"days": 180, "min_eur": 1000}'),
('fan_in', 1, 40, 'min_counterparties distinct payers within days.', '{"days": 7, "min_counterparties": 10}'),
('fan_out', 1, 40, 'min_counterparties distinct payees within days.', '{"days": 7, "min_counterparties": 10}'),
('card_cash', 1, 30, 'Cash withdrawn this calendar month above share of the declared outgoing band (times the risk factor), or above limit_eur without a declared band.', '{"share": 0.3, "limit_eur": 2000, "factor_low": 1.5, "factor_medium": 1.25, "factor_high": 1}'),
('card_high_risk_mcc', 1, 30, 'A card payment of min_eur or more at a merchant of a high-risk category: gambling, quasi-cash and crypto-assets, money transfer, stored-value loads.', '{"min_eur": 0}'),
('card_testing', 1, 50, 'min_count declined card authorizations of max_eur or less within minutes.', '{"max_eur": 10, "minutes": 60, "min_count": 5}');

-- A subject's monitoring alert: open until compliance works it; new hits
-- of the subject join it. hits is the list of findings (rule, version,
-- score, sentence, movement, ref, at).
CREATE TABLE monitoring_alerts (
    token         uuid PRIMARY KEY,
    partner_id    uuid NOT NULL REFERENCES partners (id),
    subject_kind  text NOT NULL CHECK (subject_kind IN ('user', 'merchant')),
    subject_token uuid NOT NULL,
    status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    score         int NOT NULL DEFAULT 0,
    hits          jsonb NOT NULL DEFAULT '[]',
    raised_at     timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX monitoring_alerts_open ON monitoring_alerts (subject_kind, subject_token) WHERE status = 'open';
CREATE INDEX monitoring_alerts_raised ON monitoring_alerts (raised_at DESC, token);
CREATE INDEX monitoring_alerts_partner ON monitoring_alerts (partner_id, raised_at DESC);

-- +goose Down
DROP TABLE monitoring_alerts;
DROP TABLE monitoring_rules;
DROP TABLE monitoring_movements;
