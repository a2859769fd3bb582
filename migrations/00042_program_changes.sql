-- +goose Up

-- Program changes that move risk (issue 19): turning a program's overdraft
-- on, or its AML requirement for cards off, is proposed by one
-- administrator and applied only when a second, distinct one approves
-- (service.ControlProgramRisk). input is the proposed settings
-- (emi.ProgramInput as JSON); base_version the program's updated_at when
-- proposed: any other change to the program since voids the proposal. One
-- proposal per program; a decided one is deleted (the audit log keeps
-- program.change_proposed, program.update and program.change_rejected).
CREATE TABLE program_changes (
    program      text PRIMARY KEY REFERENCES programs (code),
    input        jsonb NOT NULL,
    base_version timestamptz NOT NULL,
    risk         text NOT NULL,
    proposed_by  uuid NOT NULL,
    proposed_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE program_changes;
