-- +goose Up

-- A proposed change of a monitoring rule (staff.ControlMonitoringRule): one
-- compliance officer proposes the next version of a rule for every
-- program (program '') or one program, another approves it; the
-- request's lifecycle is control_requests'. base_version is the version
-- in force when proposed (0: a program's first override); backtest is
-- what the proposal would have changed over the stored history, computed
-- when proposed.
CREATE TABLE monitoring_rule_changes (
    request      uuid PRIMARY KEY REFERENCES control_requests (id),
    code         text NOT NULL,
    program      text NOT NULL DEFAULT '',
    base_version int NOT NULL,
    score        int NOT NULL CHECK (score BETWEEN 0 AND 100),
    enabled      boolean NOT NULL,
    shadow       boolean NOT NULL,
    params       jsonb NOT NULL,
    backtest     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX monitoring_rule_changes_rule ON monitoring_rule_changes (code, program);

-- Hits of rules in shadow mode: evaluated, counted for tuning, never
-- raised.
CREATE TABLE monitoring_shadow_hits (
    id            bigserial PRIMARY KEY,
    code          text NOT NULL,
    version       int NOT NULL,
    program       text NOT NULL DEFAULT '',
    subject_kind  text NOT NULL,
    subject_token uuid NOT NULL,
    movement      bigint NOT NULL REFERENCES monitoring_movements (id),
    at            timestamptz NOT NULL
);
CREATE INDEX monitoring_shadow_hits_rule ON monitoring_shadow_hits (code, at);

-- +goose Down
DROP TABLE monitoring_shadow_hits;
DROP TABLE monitoring_rule_changes;
