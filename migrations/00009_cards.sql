-- +goose Up

-- Program options the cards need: whether the PIN may be sent by SMS and
-- whether cards may be pushed to mobile wallets.
ALTER TABLE programs
    ADD COLUMN pin_by_sms          boolean NOT NULL DEFAULT true,
    ADD COLUMN wallet_provisioning boolean NOT NULL DEFAULT false;

-- Cards. Card data is never stored in clear: the PAN, CVV2 and PIN are
-- sealed (AES-256-GCM, the row's token and the column in the associated
-- data, internal/seal); pan_lookup is an HMAC-SHA256 under its own key for
-- uniqueness and search. Only the first six and last four digits are kept
-- in clear (PCI DSS 3.4.1 allows them), for masking and customer service.
-- CVV2 and PIN become NULL when the card is terminated (sensitive
-- authentication data is not kept once it cannot be used).
--
-- Owner: merchant or user (copied from the account for customer cards; a
-- non-personalized card may have an owner before it has an account, or
-- none at all).
CREATE TABLE cards (
    token         uuid PRIMARY KEY,
    partner_id    uuid NOT NULL REFERENCES partners (id),
    program       text NOT NULL REFERENCES programs (code),
    account       uuid REFERENCES accounts (token),
    merchant      uuid REFERENCES merchants (token),
    user_token    uuid REFERENCES users (token),
    type          text NOT NULL CHECK (type IN ('virtual', 'plastic')),
    status        text NOT NULL CHECK (status IN ('active', 'inactive', 'terminated')),
    activated     boolean NOT NULL,
    pan_sealed    bytea NOT NULL,
    pan_lookup    bytea NOT NULL,
    pan_first6    text NOT NULL CHECK (pan_first6 ~ '^[0-9]{6}$'),
    pan_last4     text NOT NULL CHECK (pan_last4 ~ '^[0-9]{4}$'),
    expiry_month  int NOT NULL CHECK (expiry_month BETWEEN 1 AND 12),
    expiry_year   int NOT NULL CHECK (expiry_year BETWEEN 2000 AND 2200),
    cvv_sealed    bytea,
    pin_sealed    bytea,
    pin_errors    int NOT NULL DEFAULT 0 CHECK (pin_errors >= 0),
    cvv_errors    int NOT NULL DEFAULT 0 CHECK (cvv_errors >= 0),
    aml           uuid,
    emboss_name       text NOT NULL DEFAULT '',
    emboss_name_line4 text NOT NULL DEFAULT '',
    fulfil1       text NOT NULL DEFAULT '',
    fulfil2       text NOT NULL DEFAULT '',
    thermal_line1 text NOT NULL DEFAULT '',
    thermal_line2 text NOT NULL DEFAULT '',
    first_name    text NOT NULL DEFAULT '',
    last_name     text NOT NULL DEFAULT '',
    alias         text NOT NULL DEFAULT '',
    url           text NOT NULL DEFAULT '',
    delivery      jsonb,
    groups        jsonb NOT NULL DEFAULT '{}',
    tds_otp_sms   text NOT NULL DEFAULT '',
    tds_biometric boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    activated_at  timestamptz,
    terminated_at timestamptz,
    CHECK (merchant IS NULL OR user_token IS NULL),
    CHECK ((status = 'terminated') = (terminated_at IS NOT NULL)),
    CHECK (status <> 'terminated' OR (cvv_sealed IS NULL AND pin_sealed IS NULL))
);
CREATE UNIQUE INDEX cards_pan_lookup ON cards (pan_lookup);
-- One non-terminated card per account (seed limit, contract §7), kept by
-- the database so that racing requests cannot both win.
CREATE UNIQUE INDEX cards_one_per_account ON cards (account) WHERE status <> 'terminated';
CREATE INDEX cards_partner ON cards (partner_id, created_at DESC, token DESC);
CREATE INDEX cards_merchant ON cards (merchant, created_at DESC) WHERE merchant IS NOT NULL;
CREATE INDEX cards_user ON cards (user_token, created_at DESC) WHERE user_token IS NOT NULL;
CREATE INDEX cards_account ON cards (account) WHERE account IS NOT NULL;
CREATE INDEX cards_last4 ON cards (pan_last4);

-- Every change of a card's state (status, activation, conversion,
-- assignment), with its reason and actor.
CREATE TABLE card_history (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    card    uuid NOT NULL REFERENCES cards (token),
    change  text NOT NULL,
    from_value text NOT NULL DEFAULT '',
    to_value   text NOT NULL DEFAULT '',
    reason  text NOT NULL DEFAULT '',
    actor   text NOT NULL,
    at      timestamptz NOT NULL
);
CREATE INDEX card_history_card ON card_history (card, id);

-- Mobile wallet tokens of a card (push provisioning). Their state follows
-- the card's and is computed on read: suspended while the card is
-- inactive or its account blocked, deleted once the card is terminated.
CREATE TABLE card_wallet_tokens (
    token       uuid PRIMARY KEY,
    card        uuid NOT NULL REFERENCES cards (token),
    wallet      text NOT NULL CHECK (wallet IN ('apple_pay', 'google_pay')),
    device_name text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL
);
CREATE INDEX card_wallet_tokens_card ON card_wallet_tokens (card, created_at);

-- Text messages sent to cardholders (PIN by SMS). The text is stored with
-- the PIN masked; the sandbox provider delivers nothing else, the HTTP
-- gateway adapter records the gateway's answer.
CREATE TABLE sms_messages (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partner_id   uuid NOT NULL REFERENCES partners (id),
    card         uuid REFERENCES cards (token),
    to_phone     text NOT NULL,
    text_masked  text NOT NULL,
    provider     text NOT NULL,
    status       text NOT NULL CHECK (status IN ('sent', 'failed')),
    provider_ref text NOT NULL DEFAULT '',
    error        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL
);
CREATE INDEX sms_messages_card ON sms_messages (card, created_at DESC);
CREATE INDEX sms_messages_at ON sms_messages (created_at DESC);

-- +goose Down
DROP TABLE sms_messages;
DROP TABLE card_wallet_tokens;
DROP TABLE card_history;
DROP TABLE cards;
ALTER TABLE programs DROP COLUMN wallet_provisioning, DROP COLUMN pin_by_sms;
