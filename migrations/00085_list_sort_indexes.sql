-- +goose Up

-- Sorted back-office lists (issue 23). The people list pages by keyset on
-- (sort expression, token) and the audit log on (sort expression, id);
-- these indexes serve the orders with a tie-breaker that staff use most
-- (people by name or e-mail, the audit log by action) so a page is an
-- index range, not a sort of the whole table. The bulk replay of failed
-- webhook deliveries takes a partner's oldest failed deliveries first.
CREATE INDEX users_sort_name ON users (lower(last_name || ' ' || first_name), token);
CREATE INDEX users_sort_email ON users (lower(email), token);
CREATE INDEX audit_log_sort_action ON audit_log (action, id);
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (created_at, id) WHERE state = 'failed';

-- +goose Down
DROP INDEX webhook_deliveries_failed;
DROP INDEX audit_log_sort_action;
DROP INDEX users_sort_email;
DROP INDEX users_sort_name;
