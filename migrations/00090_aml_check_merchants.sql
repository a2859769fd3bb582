-- +goose Up

-- Ongoing screening of onboarded merchants (AMLD art. 13(1)(d)): when the
-- sanctions lists change or a watch-list entry is added, every approved,
-- onboarded merchant's company name and people (the members of its
-- application) are screened again. A hit is an AML check with source
-- 'rescreen' or 'watchlist' that names the merchant (merchant_token) and,
-- for a person, the member (member_token); the company's own name leaves
-- member_token empty. While such a check is open or confirmed no money
-- leaves the merchant's accounts and no card is issued on them.
ALTER TABLE aml_checks
    ADD COLUMN merchant_token uuid REFERENCES merchants (token),
    ADD COLUMN member_token uuid REFERENCES company_members (token);
ALTER TABLE aml_checks ADD CONSTRAINT aml_checks_member_of_merchant
    CHECK (member_token IS NULL OR merchant_token IS NOT NULL);
ALTER TABLE aml_checks ADD CONSTRAINT aml_checks_one_subject
    CHECK (merchant_token IS NULL OR user_token IS NULL);
CREATE INDEX aml_checks_merchant ON aml_checks (merchant_token, created_at DESC) WHERE merchant_token IS NOT NULL;

-- +goose Down
DELETE FROM compliance_claims WHERE subject_kind = 'aml_check'
    AND subject IN (SELECT token FROM aml_checks WHERE merchant_token IS NOT NULL);
DELETE FROM aml_false_positives WHERE check_token IN (SELECT token FROM aml_checks WHERE merchant_token IS NOT NULL);
DELETE FROM aml_hits WHERE check_token IN (SELECT token FROM aml_checks WHERE merchant_token IS NOT NULL);
UPDATE users SET aml_check = NULL WHERE aml_check IN (SELECT token FROM aml_checks WHERE merchant_token IS NOT NULL);
DELETE FROM aml_checks WHERE merchant_token IS NOT NULL;
DROP INDEX aml_checks_merchant;
ALTER TABLE aml_checks DROP CONSTRAINT aml_checks_one_subject, DROP CONSTRAINT aml_checks_member_of_merchant,
    DROP COLUMN member_token, DROP COLUMN merchant_token;
