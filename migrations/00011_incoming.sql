-- +goose Up

-- Suspense items: money received from outside emi (a SEPA credit, a
-- Faster Payment, a card top-up) that could not be credited to a customer:
-- the identifier is unknown, its account is blocked or terminated, or its
-- balance is in another currency. The money sits on the suspense ledger
-- account (ledger transaction txn: incoming clearing -> suspense) until
-- staff assign it to a balance (suspense -> customer, an incoming transfer
-- is created) or return it to the sender (suspense -> incoming clearing).
-- An item is resolved once: the resolution is written under the item's row
-- lock, and the CHECKs below keep a resolved item's fields complete.
CREATE TABLE suspense_items (
    token             uuid PRIMARY KEY,
    scheme            text NOT NULL CHECK (scheme IN ('sepa', 'faster_payments', 'card')),
    amount            bigint NOT NULL CHECK (amount > 0),
    currency          text NOT NULL CHECK (currency IN ('EUR', 'BGN', 'GBP')),
    -- The payer as a transfer's counterparty: name, iban, account_number,
    -- sort_code, card_last4, scheme.
    payer             jsonb NOT NULL DEFAULT '{}',
    -- What the payment was sent to, as people read it, and as the request
    -- named it (iban, account_number + sort_code, account, balance).
    identifier        text NOT NULL CHECK (length(identifier) BETWEEN 1 AND 200),
    destination       jsonb NOT NULL DEFAULT '{}',
    reason            text NOT NULL CHECK (reason IN ('unknown_identifier', 'account_terminated', 'account_blocked',
                          'currency_not_held')),
    reference         text NOT NULL DEFAULT '' CHECK (length(reference) <= 140),
    -- The account the identifier matched, when it could not take the money.
    account           uuid REFERENCES accounts (token),
    -- The partner whose sandbox call simulated the payment (NULL: staff or
    -- a bank feed).
    partner_id        uuid REFERENCES partners (id),
    txn               bigint NOT NULL REFERENCES ledger_transactions (id),
    status            text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'assigned', 'returned')),
    created_at        timestamptz NOT NULL,
    resolved_by       uuid,
    resolved_at       timestamptz,
    resolution_reason text NOT NULL DEFAULT '' CHECK (length(resolution_reason) <= 2000),
    resolution_txn    bigint REFERENCES ledger_transactions (id),
    -- For an assigned item: the incoming transfer it became and its account.
    transfer          uuid REFERENCES transfers (token),
    assigned_account  uuid REFERENCES accounts (token),
    CHECK ((status = 'open') = (resolution_txn IS NULL)),
    CHECK ((status = 'open') = (resolved_at IS NULL)),
    CHECK ((status = 'open') = (resolved_by IS NULL)),
    CHECK ((status = 'assigned') = (transfer IS NOT NULL)),
    CHECK ((status = 'assigned') = (assigned_account IS NOT NULL))
);
CREATE INDEX suspense_items_open ON suspense_items (created_at, token) WHERE status = 'open';
CREATE INDEX suspense_items_resolved ON suspense_items (resolved_at DESC, token) WHERE status <> 'open';

-- Manual adjustments: a staff member asks for a credit or a debit of a
-- balance with a reason; another staff member approves it (ledger
-- transaction txn: adjustments <-> customer) or rejects it. The database
-- refuses an approval by the requester too (four-eyes).
CREATE TABLE adjustment_requests (
    token         uuid PRIMARY KEY,
    -- The account the entry shows on (a virtual account's own) and the
    -- balance it moves (a virtual account's main balance).
    account       uuid NOT NULL REFERENCES accounts (token),
    balance       uuid NOT NULL REFERENCES balances (token),
    partner_id    uuid NOT NULL REFERENCES partners (id),
    direction     text NOT NULL CHECK (direction IN ('credit', 'debit')),
    amount        bigint NOT NULL CHECK (amount > 0),
    currency      text NOT NULL CHECK (currency IN ('EUR', 'BGN', 'GBP')),
    reason        text NOT NULL CHECK (length(reason) BETWEEN 3 AND 2000),
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    requested_by  uuid NOT NULL,
    requested_at  timestamptz NOT NULL,
    decided_by    uuid,
    decided_at    timestamptz,
    decision_note text NOT NULL DEFAULT '' CHECK (length(decision_note) <= 2000),
    txn           bigint REFERENCES ledger_transactions (id),
    CHECK ((status = 'pending') = (decided_by IS NULL)),
    CHECK ((status = 'pending') = (decided_at IS NULL)),
    CHECK ((status = 'approved') = (txn IS NOT NULL)),
    CHECK (status <> 'approved' OR decided_by <> requested_by)
);
CREATE INDEX adjustment_requests_pending ON adjustment_requests (requested_at, token) WHERE status = 'pending';
CREATE INDEX adjustment_requests_account ON adjustment_requests (account, requested_at DESC);

-- +goose Down
DROP TABLE adjustment_requests;
DROP TABLE suspense_items;
