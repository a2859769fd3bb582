-- +goose Up

-- A cursor (starting_after) on card_authorizations,
-- information_requests_list and webhook_endpoints_list: each index is the
-- list's order with its tie-breaker, so that the page after a cursor is
-- one index range. The first two replace indexes without the tie-breaker
-- (the new ones serve every query the old ones did).
CREATE INDEX card_authorizations_card_order ON card_authorizations (card, created_at DESC, token DESC);
DROP INDEX card_authorizations_card;
CREATE INDEX information_requests_partner_order ON information_requests (partner_id, requested_at DESC, token DESC);
DROP INDEX information_requests_partner;
-- webhook_endpoints_list: the partner's endpoints that are not deleted,
-- oldest first.
CREATE INDEX webhook_endpoints_partner_order ON webhook_endpoints (partner_id, created_at, id) WHERE deleted_at IS NULL;

-- +goose Down
DROP INDEX webhook_endpoints_partner_order;
CREATE INDEX information_requests_partner ON information_requests (partner_id, requested_at DESC, token);
DROP INDEX information_requests_partner_order;
CREATE INDEX card_authorizations_card ON card_authorizations (card, created_at DESC);
DROP INDEX card_authorizations_card_order;
