-- +goose Up

-- A per-partner budget for webhook deliveries (issue 29): one partner's
-- fan-out (many endpoints, many events, each delivery retried for days)
-- must not take every worker. Jobs that share a concurrency_key (a
-- delivery's is "partner:<partner id>") run at most a configured number at
-- once in one worker pool (EMI_WEBHOOK_PARTNER_CONCURRENCY): the claim
-- (internal/postgres/kernel_jobs.go, Claim) passes over the others, which
-- stay in the queue as they are, their attempt count untouched, until a
-- place frees. NULL: no budget (every other kind of job).
ALTER TABLE jobs ADD COLUMN concurrency_key text CHECK (length(concurrency_key) BETWEEN 1 AND 200);

-- Delivery jobs waiting or running when this runs get their partner's key.
UPDATE jobs j SET concurrency_key = 'partner:' || e.partner_id
FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
WHERE j.kind = 'webhook.deliver' AND j.state IN ('available', 'running')
  AND j.payload->>'delivery' = d.id::text;

-- +goose Down
ALTER TABLE jobs DROP COLUMN concurrency_key;
