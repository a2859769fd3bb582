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
		amount, currency) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		a.Token, a.Account, a.Balance, a.PartnerID, a.Direction, a.Amount, a.Currency)
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
	q := `SELECT ` + adjustmentColumns + ` WHERE c.status = 'pending'`
	order := ` ORDER BY c.proposed_at, r.token`
	if !pending {
		q = `SELECT ` + adjustmentColumns + ` WHERE c.status <> 'pending'`
		order = ` ORDER BY c.decided_at DESC, r.token`
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

// SetAdjustmentTxn implements transfers.AdjustmentStore.
func (s *IncomingStore) SetAdjustmentTxn(ctx context.Context, token string, txn int64) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE adjustment_requests SET txn = $2 WHERE token = $1`, token, txn)
	return Translate(err)
}

// CountPendingAdjustments implements transfers.AdjustmentStore.
func (s *IncomingStore) CountPendingAdjustments(ctx context.Context) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM control_requests WHERE control = 'adjustment.approve' AND status = 'pending'`)
	return n, Translate(err)
}
