-- +goose Up

-- Programs are operator configuration: the balances an account of the
-- program gets (one per currency, in order, each with its identifier
-- scheme), card rules and the card group codes associated with it.
-- allowed_partners NULL: every partner may use the program.
CREATE TABLE programs (
    code                 text PRIMARY KEY CHECK (code ~ '^[a-z0-9_]{2,40}$'),
    name                 text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    currencies           text[] NOT NULL CHECK (cardinality(currencies) BETWEEN 1 AND 3),
    schemes              text[] NOT NULL,
    cards_allowed        boolean NOT NULL DEFAULT false,
    card_types           text[] NOT NULL DEFAULT '{}',
    bin_prefix           text NOT NULL DEFAULT '' CHECK (bin_prefix ~ '^([0-9]{6,8})?$'),
    card_validity_months int NOT NULL DEFAULT 36 CHECK (card_validity_months BETWEEN 1 AND 120),
    aml_required         boolean NOT NULL DEFAULT false,
    overdraft            boolean NOT NULL DEFAULT false,
    allowed_partners     uuid[],
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK (cardinality(schemes) = cardinality(currencies))
);

-- Card group codes associated with a program, by kind; is_default marks
-- the groups a new card gets.
CREATE TABLE program_groups (
    program    text NOT NULL REFERENCES programs (code) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('usage', 'fees', 'schedule_fees', 'web_service_fees', 'limits', 'linkage', 'mcc', 'whitelist')),
    code       text NOT NULL CHECK (code ~ '^[a-z0-9_]{1,40}$'),
    is_default boolean NOT NULL DEFAULT false,
    PRIMARY KEY (program, kind, code)
);
CREATE UNIQUE INDEX program_groups_one_default ON program_groups (program, kind) WHERE is_default;

-- Accounts. Exactly one owner: a merchant or a user. A virtual account
-- names its main account and has no balance of its own.
CREATE TABLE accounts (
    token         uuid PRIMARY KEY,
    partner_id    uuid NOT NULL REFERENCES partners (id),
    program       text NOT NULL REFERENCES programs (code),
    merchant      uuid REFERENCES merchants (token),
    user_token    uuid REFERENCES users (token),
    main          uuid REFERENCES accounts (token),
    virtual       boolean NOT NULL DEFAULT false,
    alias         text NOT NULL DEFAULT '',
    status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'blocked', 'terminated')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    terminated_at timestamptz,
    CHECK ((merchant IS NULL) <> (user_token IS NULL)),
    CHECK (virtual = (main IS NOT NULL)),
    CHECK ((status = 'terminated') = (terminated_at IS NOT NULL))
);
CREATE INDEX accounts_partner ON accounts (partner_id, created_at DESC, token DESC);
CREATE INDEX accounts_merchant ON accounts (merchant, created_at DESC) WHERE merchant IS NOT NULL;
CREATE INDEX accounts_user ON accounts (user_token, created_at DESC) WHERE user_token IS NOT NULL;
CREATE INDEX accounts_main ON accounts (main) WHERE main IS NOT NULL;

-- Balances, in minor units. available never goes below zero unless the
-- program allows an overdraft (checked by the ledger work).
CREATE TABLE balances (
    token          uuid PRIMARY KEY,
    account        uuid NOT NULL REFERENCES accounts (token),
    position       int NOT NULL,
    currency       text NOT NULL CHECK (currency IN ('EUR', 'BGN', 'GBP')),
    available      bigint NOT NULL DEFAULT 0,
    iban           text UNIQUE,
    bic            text NOT NULL DEFAULT '',
    account_number text,
    sort_code      text,
    UNIQUE (account, currency),
    UNIQUE (sort_code, account_number)
);

-- Every IBAN emi has issued, real or virtual, once: the database, not
-- luck, keeps them unique. A virtual IBAN routes to its main account's
-- balance.
CREATE TABLE ibans (
    iban       text PRIMARY KEY,
    account    uuid NOT NULL REFERENCES accounts (token),
    balance    uuid NOT NULL REFERENCES balances (token),
    virtual    boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ibans_account ON ibans (account);

-- Serials of issued identifiers.
CREATE SEQUENCE bg_account_serial MINVALUE 1 MAXVALUE 99999999;
CREATE SEQUENCE uk_account_serial MINVALUE 1 MAXVALUE 9999999;

-- Every status change of an account, with its reason.
CREATE TABLE account_status_history (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account  uuid NOT NULL REFERENCES accounts (token),
    from_status text NOT NULL,
    to_status   text NOT NULL,
    reason   text NOT NULL DEFAULT '',
    actor    text NOT NULL,
    at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_status_history_account ON account_status_history (account, id);

-- Termination requested by staff waits for a second staff member.
CREATE TABLE account_termination_requests (
    account      uuid PRIMARY KEY REFERENCES accounts (token),
    requested_by uuid NOT NULL,
    reason       text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE account_termination_requests;
DROP TABLE account_status_history;
DROP SEQUENCE uk_account_serial;
DROP SEQUENCE bg_account_serial;
DROP TABLE ibans;
DROP TABLE balances;
DROP TABLE accounts;
DROP TABLE program_groups;
DROP TABLE programs;
