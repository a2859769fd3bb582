package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
)

// LockProgram implements accounts.ProgramStore: the program's row stays
// locked until the transaction in ctx ends. The lock also waits for
// accounts being opened on the program (their foreign key holds a share
// lock on the row), so an in-use check after it sees them.
func (s *AccountStore) LockProgram(ctx context.Context, code string) (emi.Program, error) {
	var one int
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &one, `SELECT 1 FROM programs WHERE code = $1 FOR UPDATE`, code)
	if errors.Is(err, sql.ErrNoRows) {
		return emi.Program{}, emi.ErrProgramNotFound
	}
	if err != nil {
		return emi.Program{}, Translate(err)
	}
	return s.Program(ctx, code)
}

// InsertProgram implements accounts.ProgramStore. Returns
// emi.ErrNonUniqueValue when a program has the code.
func (s *AccountStore) InsertProgram(ctx context.Context, p emi.Program) error {
	return s.db.InTx(ctx, func(ctx context.Context) error {
		_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO programs (code, name, currencies, schemes, cards_allowed, card_types,
			bin_prefix, card_validity_months, aml_required, overdraft, allowed_partners, pin_by_sms, wallet_provisioning)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::uuid[], $12, $13)`,
			p.Code, p.Name, pq.StringArray(p.Currencies), pq.StringArray(p.Schemes), p.CardsAllowed, pq.StringArray(nonNil(p.CardTypes)),
			p.BINPrefix, p.CardValidityMonths, p.AMLRequired, p.Overdraft, partnerArray(p.AllowedPartners), p.PINBySMS, p.WalletProvisioning)
		if UniqueViolation(err, "programs_pkey") {
			return emi.ErrNonUniqueValue.Wrap(err)
		}
		if err != nil {
			return Translate(err)
		}
		return s.insertGroups(ctx, p)
	})
}

// UpdateProgram implements accounts.ProgramStore: every setting and the
// groups as given. updated_at moves strictly forward, even within one
// microsecond or a transaction's now(), so it works as a version.
func (s *AccountStore) UpdateProgram(ctx context.Context, p emi.Program) error {
	return s.db.InTx(ctx, func(ctx context.Context) error {
		res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE programs SET name = $2, currencies = $3, schemes = $4, cards_allowed = $5,
			card_types = $6, bin_prefix = $7, card_validity_months = $8, aml_required = $9, overdraft = $10,
			allowed_partners = $11::uuid[], pin_by_sms = $12, wallet_provisioning = $13,
			updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond')
			WHERE code = $1`,
			p.Code, p.Name, pq.StringArray(p.Currencies), pq.StringArray(p.Schemes), p.CardsAllowed, pq.StringArray(nonNil(p.CardTypes)),
			p.BINPrefix, p.CardValidityMonths, p.AMLRequired, p.Overdraft, partnerArray(p.AllowedPartners), p.PINBySMS, p.WalletProvisioning)
		if err != nil {
			return Translate(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return Translate(err)
		} else if n == 0 {
			return emi.ErrProgramNotFound
		}
		if _, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM program_groups WHERE program = $1`, p.Code); err != nil {
			return Translate(err)
		}
		if err := s.syncOverdraft(ctx, p.Code, p.Overdraft); err != nil {
			return err
		}
		return s.insertGroups(ctx, p)
	})
}

// syncOverdraft gives the program's balances its overdraft setting (the
// balances_no_overdraft CHECK reads it from the balance row). Withdrawing
// the overdraft while a balance is below zero is refused: those customers
// must be brought back to zero first.
func (s *AccountStore) syncOverdraft(ctx context.Context, program string, overdraft bool) error {
	var overdrawn int
	if !overdraft {
		if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &overdrawn, `SELECT count(*) FROM balances b JOIN accounts a ON a.token = b.account
			WHERE a.program = $1 AND b.available < 0`, program); err != nil {
			return Translate(err)
		}
		if overdrawn > 0 {
			return emi.ErrProgramValidation.Field("overdraft", fmt.Sprintf("%d balances of this program are overdrawn; the overdraft cannot be withdrawn until they are back at zero", overdrawn))
		}
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE balances b SET overdraft = $2 FROM accounts a
		WHERE a.token = b.account AND a.program = $1 AND b.overdraft <> $2`, program, overdraft)
	return Translate(err)
}

// insertGroups writes a program's group codes with their defaults.
func (s *AccountStore) insertGroups(ctx context.Context, p emi.Program) error {
	for kind, codes := range p.Groups {
		for _, c := range codes {
			if _, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO program_groups (program, kind, code, is_default) VALUES ($1, $2, $3, $4)`,
				p.Code, kind, c, p.Defaults[kind] == c); err != nil {
				return Translate(err)
			}
		}
	}
	return nil
}

// ProgramsInUse implements accounts.ProgramStore.
func (s *AccountStore) ProgramsInUse(ctx context.Context, codes ...string) ([]string, error) {
	out := []string{}
	q := `SELECT p.code FROM programs p WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.program = p.code)`
	args := []any{}
	if len(codes) > 0 {
		q += ` AND p.code = ANY($1)`
		args = append(args, pq.StringArray(codes))
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, q+` ORDER BY p.code`, args...)
	return out, Translate(err)
}

// MissingPartners implements accounts.ProgramStore.
func (s *AccountStore) MissingPartners(ctx context.Context, ids []string) ([]string, error) {
	var valid []string
	for _, id := range ids {
		if validUUID(id) {
			valid = append(valid, id)
		}
	}
	var known []string
	if len(valid) > 0 {
		if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &known, `SELECT id::text FROM partners WHERE id = ANY($1::uuid[])`,
			pq.StringArray(valid)); err != nil {
			return nil, Translate(err)
		}
	}
	var missing []string
	for _, id := range ids {
		if !slices.Contains(known, id) {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// partnerArray is the allowed_partners parameter: NULL for every partner.
func partnerArray(ids []string) any {
	if ids == nil {
		return nil
	}
	return pq.StringArray(ids)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type programChangeRow struct {
	emi.ProgramChange
	InputJSON []byte `db:"input"`
}

func (r programChangeRow) change() (emi.ProgramChange, error) {
	c := r.ProgramChange
	if err := json.Unmarshal(r.InputJSON, &c.Input); err != nil {
		return c, emi.Internal(err)
	}
	return c, nil
}

// InsertProgramChange implements accounts.ProgramStore: the settings of
// the request c.Request proposes.
func (s *AccountStore) InsertProgramChange(ctx context.Context, c emi.ProgramChange) error {
	in, err := json.Marshal(c.Input)
	if err != nil {
		return emi.Internal(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO program_changes (request, program, input, risk)
		VALUES ($1, $2, $3, $4)`, c.Request, c.Program, string(in), c.Risk)
	return Translate(err)
}

const programChangeColumns = `c.request::text AS request, c.program, c.input, c.risk, r.proposed_by::text AS proposed_by, r.proposed_at`

// ProgramChange implements accounts.ProgramStore: the change request
// proposes.
func (s *AccountStore) ProgramChange(ctx context.Context, request string) (emi.ProgramChange, error) {
	var r programChangeRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, `SELECT `+programChangeColumns+`
		FROM program_changes c JOIN control_requests r ON r.id = c.request WHERE c.request = $1`, request)
	if err != nil {
		return emi.ProgramChange{}, Translate(err)
	}
	return r.change()
}

// ProgramChanges implements accounts.ProgramStore: every waiting change by
// program.
func (s *AccountStore) ProgramChanges(ctx context.Context) (map[string]emi.ProgramChange, error) {
	var rows []programChangeRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+programChangeColumns+`
		FROM program_changes c JOIN control_requests r ON r.id = c.request WHERE r.status = 'pending'`); err != nil {
		return nil, Translate(err)
	}
	out := make(map[string]emi.ProgramChange, len(rows))
	for _, r := range rows {
		c, err := r.change()
		if err != nil {
			return nil, err
		}
		out[c.Program] = c
	}
	return out, nil
}
