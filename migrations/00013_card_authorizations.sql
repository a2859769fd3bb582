-- +goose Up

-- Card authorizations (sandbox card payments): every decision on a card
-- payment, approved or declined, with its ISO 8583-style reason code
-- (emi.Reason*). An approval holds hold_amount on the balance (balances.held)
-- until the authorization is cleared (a card_clearing ledger transaction
-- settles cleared_amount, the rest of the hold is released), released
-- (reversed) or expired (not cleared by expires_at). The PIN typed for a
-- payment is never stored: pin_entered only says one was given.
CREATE TABLE card_authorizations (
    token            uuid PRIMARY KEY,
    card             uuid NOT NULL REFERENCES cards (token),
    partner_id       uuid NOT NULL REFERENCES partners (id),
    -- The card's account when the payment was decided (NULL for a card
    -- without one), and the balance held (a virtual account's main
    -- balance), known once the account is.
    account          uuid REFERENCES accounts (token),
    balance          uuid REFERENCES balances (token),
    channel          text NOT NULL CHECK (channel IN ('pos', 'online', 'atm')),
    amount           bigint NOT NULL CHECK (amount > 0),
    -- The payment's currency as the merchant sent it (any ISO 4217 code:
    -- one that is not the card's is declined with 13).
    currency         text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    mcc              text NOT NULL CHECK (mcc ~ '^[0-9]{4}$'),
    merchant_name    text NOT NULL DEFAULT '' CHECK (length(merchant_name) <= 100),
    merchant_country text NOT NULL DEFAULT '' CHECK (merchant_country = '' OR merchant_country ~ '^[A-Z]{2}$'),
    three_ds         text NOT NULL DEFAULT '' CHECK (three_ds IN ('', 'passed', 'failed')),
    pin_entered      boolean NOT NULL DEFAULT false,
    decision         text NOT NULL CHECK (decision IN ('approved', 'declined')),
    reason_code      text NOT NULL CHECK (reason_code ~ '^[0-9A-Z]{2}$'),
    status           text NOT NULL CHECK (status IN ('declined', 'approved', 'cleared', 'released', 'expired')),
    hold_amount      bigint NOT NULL DEFAULT 0 CHECK (hold_amount >= 0),
    cleared_amount   bigint NOT NULL DEFAULT 0 CHECK (cleared_amount >= 0 AND cleared_amount <= hold_amount),
    clearing_txn     bigint UNIQUE REFERENCES ledger_transactions (id),
    expires_at       timestamptz,
    created_at       timestamptz NOT NULL,
    settled_at       timestamptz,
    -- A decline holds nothing and stays declined; an approval holds money
    -- on a balance until a deadline.
    CHECK ((decision = 'approved') = (status <> 'declined')),
    CHECK ((decision = 'approved') = (reason_code = '00')),
    CHECK ((decision = 'approved') = (hold_amount > 0)),
    CHECK (decision = 'declined' OR (hold_amount = amount AND balance IS NOT NULL AND expires_at IS NOT NULL)),
    -- Settled (cleared, released, expired) exactly when settled_at is set;
    -- a clearing names its ledger transaction.
    CHECK ((status IN ('cleared', 'released', 'expired')) = (settled_at IS NOT NULL)),
    CHECK ((status = 'cleared') = (clearing_txn IS NOT NULL)),
    CHECK ((status = 'cleared') = (cleared_amount > 0))
);
CREATE INDEX card_authorizations_card ON card_authorizations (card, created_at DESC);
-- The expiry job's queue: open holds by deadline.
CREATE INDEX card_authorizations_open ON card_authorizations (expires_at) WHERE status = 'approved';

-- +goose Down
DROP TABLE card_authorizations;
