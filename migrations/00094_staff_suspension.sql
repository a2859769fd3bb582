-- +goose Up

-- Taking privileges away takes two administrators, like granting them:
-- removing a privileged role, disabling a user who holds one or held one in
-- the last 30 days, and resetting such a user are staff changes that a
-- second administrator approves. 'disable' is the new kind.
ALTER TABLE staff_changes DROP CONSTRAINT staff_changes_kind_check;
ALTER TABLE staff_changes ADD CONSTRAINT staff_changes_kind_check
    CHECK (kind IN ('create', 'set_roles', 'reset_credentials', 'disable'));

-- privilege_ended_at: when the user last lost a privileged role (every role
-- but auditor). For 30 days after it the user is treated as privileged:
-- disabling or resetting them takes two administrators, so that stripping
-- a colleague first does not make them a one-step target.
--
-- The suspension: one administrator's one-step stop of a colleague for an
-- incident (sessions ended, no sign-in). It lapses 24 hours after
-- suspended_at unless a second, distinct administrator confirms it
-- (suspension_confirmed_by); any administrator but the user lifts it
-- (all four columns back to NULL / '').
ALTER TABLE staff_users
    ADD COLUMN privilege_ended_at      timestamptz,
    ADD COLUMN suspended_at            timestamptz,
    ADD COLUMN suspended_by            uuid,
    ADD COLUMN suspension_reason       text NOT NULL DEFAULT '' CHECK (length(suspension_reason) <= 1000),
    ADD COLUMN suspension_confirmed_by uuid,
    ADD CONSTRAINT staff_users_suspension CHECK ((suspended_at IS NULL) = (suspended_by IS NULL)
        AND (suspension_confirmed_by IS NULL OR suspended_at IS NOT NULL)
        AND (suspension_confirmed_by IS NULL OR suspension_confirmed_by <> suspended_by));

-- The roles removed before this migration, from the audit log (append-only):
-- the latest set_roles row whose "from" held a privileged role that "to"
-- does not.
UPDATE staff_users s SET privilege_ended_at = l.at
  FROM (SELECT resource_token, max(at) AS at FROM audit_log
         WHERE resource_type = 'staff_user' AND action = 'staff.set_roles' AND outcome = 'success'
           AND jsonb_typeof(changes->'roles'->'from') = 'array'
           AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(changes->'roles'->'from') f(r)
                        WHERE f.r <> 'auditor' AND NOT coalesce(changes->'roles'->'to', '[]'::jsonb) ? f.r)
         GROUP BY resource_token) l
 WHERE s.id::text = l.resource_token;

-- Every other administrator hears of a suspension at once.
ALTER TABLE staff_inbox DROP CONSTRAINT staff_inbox_kind_check;
ALTER TABLE staff_inbox ADD CONSTRAINT staff_inbox_kind_check CHECK (kind IN ('mention', 'assignment', 'suspension'));

-- +goose Down
ALTER TABLE staff_inbox DROP CONSTRAINT staff_inbox_kind_check;
DELETE FROM staff_inbox WHERE kind = 'suspension';
ALTER TABLE staff_inbox ADD CONSTRAINT staff_inbox_kind_check CHECK (kind IN ('mention', 'assignment'));
ALTER TABLE staff_users DROP CONSTRAINT staff_users_suspension,
    DROP COLUMN suspension_confirmed_by, DROP COLUMN suspension_reason, DROP COLUMN suspended_by,
    DROP COLUMN suspended_at, DROP COLUMN privilege_ended_at;
DELETE FROM staff_changes WHERE kind = 'disable';
ALTER TABLE staff_changes DROP CONSTRAINT staff_changes_kind_check;
ALTER TABLE staff_changes ADD CONSTRAINT staff_changes_kind_check
    CHECK (kind IN ('create', 'set_roles', 'reset_credentials'));
