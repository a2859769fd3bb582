-- +goose Up

-- Monitoring alerts join the compliance alert queue: they are claimed and
-- assigned as screening alerts are.
ALTER TABLE compliance_claims DROP CONSTRAINT compliance_claims_subject_kind_check;
ALTER TABLE compliance_claims ADD CONSTRAINT compliance_claims_subject_kind_check
    CHECK (subject_kind IN ('aml_check', 'application', 'monitoring_alert'));

-- +goose Down
DELETE FROM compliance_claims WHERE subject_kind = 'monitoring_alert';
ALTER TABLE compliance_claims DROP CONSTRAINT compliance_claims_subject_kind_check;
ALTER TABLE compliance_claims ADD CONSTRAINT compliance_claims_subject_kind_check
    CHECK (subject_kind IN ('aml_check', 'application'));
