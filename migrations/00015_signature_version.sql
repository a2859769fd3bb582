-- +goose Up

-- Contract §2: a key accepts signature versions from min_signature_version
-- up. 1 accepts the seed's signature and version 2; 2 refuses version 1
-- (set in the back office's partner page or with
-- `emi partner create --signature-version 2`).
ALTER TABLE partner_keys
    ADD COLUMN min_signature_version smallint NOT NULL DEFAULT 1
        CHECK (min_signature_version IN (1, 2));

-- api_signatures is unchanged: its rows become digests of contract §2's
-- request tuple instead of (key, x-hash). Rows of the old form expire within
-- 16 s and are pruned as before.

-- +goose Down
ALTER TABLE partner_keys DROP COLUMN min_signature_version;
