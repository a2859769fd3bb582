package postgres

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// Staff adjustments (transfers.AdjustmentStore), kept by IncomingStore
// beside the suspense queue (transfers_incoming.go): one store, two files.

// InsertAdjustment implements transfers.AdjustmentStore.
func (s *IncomingStore) InsertAdjustment(ctx context.Context, a emi.Adjustment) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO adjustment_requests (token, account, balance, partner_id, direction,
		amount, currency, reason, status, requested_by, requested_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10)`,
		a.Token, a.Account, a.Balance, a.PartnerID, a.Direction, a.Amount, a.Currency, a.Reason, a.RequestedBy, a.RequestedAt)
	return Translate(err)
}

type adjustmentRow struct {
	emi.Adjustment
	DecidedByN sql.NullString `db:"decided_by_n"`
	DecidedAtN sql.NullTime   `db:"decided_at_n"`
	TxnN       sql.NullInt64  `db:"txn_n"`
}

func (r adjustmentRow) adjustment() emi.Adjustment {
	a := r.Adjustment
	a.DecidedBy, a.Txn = r.DecidedByN.String, r.TxnN.Int64
	a.RequestedAt = a.RequestedAt.UTC()
	if r.DecidedAtN.Valid {
		at := r.DecidedAtN.Time.UTC()
		a.DecidedAt = &at
	}
	return a
}

// Adjustment implements transfers.AdjustmentStore.
func (s *IncomingStore) Adjustment(ctx context.Context, token string, forUpdate bool) (emi.Adjustment, error) {
	if !validUUID(token) {
		return emi.Adjustment{}, emi.ErrAdjustmentNotFound
	}
	q := `SELECT ` + adjustmentColumns + ` WHERE r.token = $1`
	if forUpdate {
		q += ` FOR UPDATE OF r`
	}
	var r adjustmentRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, token); err != nil {
		return emi.Adjustment{}, NotFound(err, emi.ErrAdjustmentNotFound)
	}
	return r.adjustment(), nil
}

// Adjustments implements transfers.AdjustmentStore.
func (s *IncomingStore) Adjustments(ctx context.Context, account string, pending bool, limit int) ([]emi.Adjustment, error) {
	q := `SELECT ` + adjustmentColumns + ` WHERE r.status = 'pending'`
	order := ` ORDER BY r.requested_at, r.token`
	if !pending {
		q = `SELECT ` + adjustmentColumns + ` WHERE r.status <> 'pending'`
		order = ` ORDER BY r.decided_at DESC, r.token`
	}
	args := []any{limit}
	if account != "" {
		if !validUUID(account) {
			return nil, nil
		}
		q += ` AND r.account = $2`
		args = append(args, account)
	}
	var rows []adjustmentRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q+order+` LIMIT $1`, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Adjustment, len(rows))
	for i, r := range rows {
		out[i] = r.adjustment()
	}
	return out, nil
}

// DecideAdjustment implements transfers.AdjustmentStore.
func (s *IncomingStore) DecideAdjustment(ctx context.Context, a emi.Adjustment) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE adjustment_requests SET status = $2, decided_by = $3, decided_at = $4,
		decision_note = $5, txn = $6 WHERE token = $1 AND status = 'pending'`,
		a.Token, a.Status, a.DecidedBy, a.DecidedAt, a.DecisionNote, nullInt(a.Txn))
	if err != nil {
		return Translate(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return emi.ErrAdjustmentDecided
	}
	return nil
}

// CountPendingAdjustments implements transfers.AdjustmentStore.
func (s *IncomingStore) CountPendingAdjustments(ctx context.Context) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM adjustment_requests WHERE status = 'pending'`)
	return n, Translate(err)
}
