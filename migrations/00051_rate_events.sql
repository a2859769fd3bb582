-- +goose Up

-- Issue 20: limits that count events in a rolling window, decided
-- atomically. Each counted event is a row; Take (internal/postgres/limits.go)
-- takes a transaction-scoped advisory lock on (scope, subject), counts the
-- rows inside the window and inserts one only while the count is under the
-- limit, so 50 concurrent attempts never get more than the limit through,
-- on one instance or several. Scopes: card-number reveals and full-PAN
-- searches per staff member ('card.reveal'), transfer_create's "destination
-- not found" answers per API key ('transfer.destination_miss').
CREATE TABLE rate_events (
    scope   text NOT NULL,
    subject text NOT NULL,
    at      timestamptz NOT NULL
);
CREATE INDEX rate_events_subject ON rate_events (scope, subject, at);

-- +goose Down
DROP TABLE rate_events;
