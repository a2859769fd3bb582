-- +goose Up

-- The background job queue (internal/postgres/jobs.go, internal/worker).
-- Jobs are enqueued in the transaction of the change that causes them, so a
-- job exists iff that change committed. Workers claim due jobs with
-- FOR UPDATE SKIP LOCKED and hold them under a lease (locked_until, by the
-- database clock) that they extend while the job runs; a job whose lease ran
-- out (its worker died) goes back to the queue. attempt counts claims, and a
-- worker's result is accepted only while its attempt still holds the row.
CREATE TABLE jobs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind         text NOT NULL CHECK (length(kind) BETWEEN 1 AND 200),
    payload      jsonb NOT NULL DEFAULT '{}',
    state        text NOT NULL DEFAULT 'available'
                 CHECK (state IN ('available', 'running', 'succeeded', 'dead')),
    attempt      int NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts int NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
    run_at       timestamptz NOT NULL DEFAULT now(),
    locked_until timestamptz,
    locked_by    text NOT NULL DEFAULT '',
    last_error   text NOT NULL DEFAULT '',
    unique_key   text CHECK (length(unique_key) BETWEEN 1 AND 500),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    CHECK ((state = 'running') = (locked_until IS NOT NULL)),
    CHECK ((state IN ('succeeded', 'dead')) = (finished_at IS NOT NULL))
);

-- Claiming scans available jobs in run_at order. The leading state column
-- also serves counts by state (an index-only scan once the table has been
-- vacuumed), so a separate (state) index would only slow down writes.
CREATE INDEX jobs_claim ON jobs (state, run_at);

-- Finding running jobs whose lease ran out.
CREATE INDEX jobs_lease ON jobs (locked_until) WHERE state = 'running';

-- One pending job per unique key: enqueueing "run the checks of application
-- X" again while such a job waits or runs is a no-op. Finished jobs do not
-- count, so the next change queues a new run.
CREATE UNIQUE INDEX jobs_unique_pending ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'running');

-- Pruning succeeded jobs after the retention period.
CREATE INDEX jobs_prune ON jobs (finished_at) WHERE state = 'succeeded';

-- +goose Down
DROP TABLE jobs;
