-- +goose Up

-- Issue 20, M5: account identifiers were drawn from sequences, so IBAN and
-- UK account-number serials were consecutive and a partner could walk the
-- other partners' customers from its own IBAN. Serials are now drawn at
-- random (crypto/rand) and reserved here: the primary key decides between
-- two concurrent draws of one serial (INSERT ... ON CONFLICT DO NOTHING,
-- the loser draws again), and a serial whose IBAN is already issued (the
-- sequential ones from before, or `emi generate accounts`) is never
-- reserved. The sequences stay for `emi generate accounts`.
CREATE TABLE identifier_serials (
    kind   text   NOT NULL CHECK (kind IN ('bg', 'uk')),
    serial bigint NOT NULL,
    PRIMARY KEY (kind, serial)
);

-- +goose Down
DROP TABLE identifier_serials;
