package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/transfers"
)

// IncomingStore implements transfers.IncomingStore (suspense items) and
// transfers.AdjustmentStore (manual adjustments).
type IncomingStore struct {
	db *DB
}

// NewIncomingStore returns the store.
func NewIncomingStore(db *DB) *IncomingStore { return &IncomingStore{db: db} }

var (
	_ transfers.IncomingStore   = (*IncomingStore)(nil)
	_ transfers.AdjustmentStore = (*IncomingStore)(nil)
)

// InsertSuspenseItem implements transfers.IncomingStore.
func (s *IncomingStore) InsertSuspenseItem(ctx context.Context, it emi.SuspenseItem) error {
	payer, err := json.Marshal(it.Payer)
	if err != nil {
		return emi.Internal(fmt.Errorf("payer: %w", err))
	}
	dest, err := json.Marshal(it.Destination)
	if err != nil {
		return emi.Internal(fmt.Errorf("destination: %w", err))
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO suspense_items (token, scheme, amount, currency, payer, identifier,
		destination, reason, reference, account, partner_id, txn, status, created_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8, $9, $10, $11, $12, 'open', $13)`,
		it.Token, it.Scheme, it.Amount, it.Currency, jsonText(payer), it.Identifier, jsonText(dest), it.Reason, it.Reference,
		nullString(it.Account), nullString(it.PartnerID), it.Txn, it.CreatedAt)
	return Translate(err)
}

type suspenseRow struct {
	Token            string         `db:"token"`
	Scheme           string         `db:"scheme"`
	Amount           int64          `db:"amount"`
	Currency         string         `db:"currency"`
	Payer            []byte         `db:"payer"`
	Identifier       string         `db:"identifier"`
	Destination      []byte         `db:"destination"`
	Reason           string         `db:"reason"`
	Reference        string         `db:"reference"`
	Account          sql.NullString `db:"account"`
	PartnerID        sql.NullString `db:"partner_id"`
	Txn              int64          `db:"txn"`
	Status           string         `db:"status"`
	CreatedAt        time.Time      `db:"created_at"`
	ResolvedBy       sql.NullString `db:"resolved_by"`
	ResolvedByName   string         `db:"resolved_by_name"`
	ResolvedAt       sql.NullTime   `db:"resolved_at"`
	ResolutionReason string         `db:"resolution_reason"`
	ResolutionTxn    sql.NullInt64  `db:"resolution_txn"`
	Transfer         sql.NullString `db:"transfer"`
	AssignedAccount  sql.NullString `db:"assigned_account"`
	AssignReqBy      sql.NullString `db:"assign_requested_by"`
	AssignReqByName  string         `db:"assign_requested_by_name"`
}

func (r suspenseRow) item() emi.SuspenseItem {
	it := emi.SuspenseItem{Token: r.Token, Scheme: r.Scheme, Amount: r.Amount, Currency: r.Currency, Identifier: r.Identifier,
		Reason: r.Reason, Reference: r.Reference, Account: r.Account.String, PartnerID: r.PartnerID.String, Txn: r.Txn,
		Status: r.Status, CreatedAt: r.CreatedAt.UTC(), ResolvedBy: r.ResolvedBy.String, ResolvedByName: r.ResolvedByName,
		ResolutionReason: r.ResolutionReason,
		ResolutionTxn:    r.ResolutionTxn.Int64, Transfer: r.Transfer.String, AssignedAccount: r.AssignedAccount.String,
		AssignRequestedBy: r.AssignReqBy.String, AssignRequestedByName: r.AssignReqByName}
	if r.ResolvedAt.Valid {
		at := r.ResolvedAt.Time.UTC()
		it.ResolvedAt = &at
	}
	_ = json.Unmarshal(r.Payer, &it.Payer)
	_ = json.Unmarshal(r.Destination, &it.Destination)
	return it
}

const suspenseColumns = `s.token, s.scheme, s.amount, s.currency, s.payer, s.identifier, s.destination, s.reason, s.reference,
	s.account, s.partner_id, s.txn, s.status, s.created_at, s.resolved_by, coalesce(st.name, '') AS resolved_by_name, s.resolved_at,
	s.resolution_reason, s.resolution_txn, s.transfer, s.assigned_account,
	acr.proposed_by AS assign_requested_by, coalesce(ars.name, '') AS assign_requested_by_name
	FROM suspense_items s LEFT JOIN staff_users st ON st.id = s.resolved_by
	LEFT JOIN (suspense_assignment_requests ar JOIN control_requests acr ON acr.id = ar.token AND acr.status = 'approved')
	  ON ar.item = s.token
	LEFT JOIN staff_users ars ON ars.id = acr.proposed_by`

// SuspenseItem implements transfers.IncomingStore.
func (s *IncomingStore) SuspenseItem(ctx context.Context, token string, forUpdate bool) (emi.SuspenseItem, error) {
	if !validUUID(token) {
		return emi.SuspenseItem{}, emi.ErrSuspenseNotFound
	}
	q := `SELECT ` + suspenseColumns + ` WHERE s.token = $1`
	if forUpdate {
		q += ` FOR UPDATE OF s`
	}
	var r suspenseRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, token); err != nil {
		return emi.SuspenseItem{}, NotFound(err, emi.ErrSuspenseNotFound)
	}
	return r.item(), nil
}

// suspenseSort is the suspense queue's orders; it pages by offset. An order
// without a key is the tab's usual one.
var suspenseSort = sortable{def: "received", table: "suspense_items s", tie: "s.token", cols: map[string]string{
	"received": "s.created_at",
	"amount":   "s.currency || lpad(s.amount::text, 19, '0')",
	"payer":    "lower(coalesce(s.payer->>'name', ''))",
	"reason":   "s.reason",
	"resolved": "coalesce(s.resolved_at, s.created_at)",
}}

// SuspenseItems implements transfers.IncomingStore.
func (s *IncomingStore) SuspenseItems(ctx context.Context, open bool, page, limit int, o emi.SortOrder) ([]emi.SuspenseItem, int64, error) {
	where, order := `s.status = 'open'`, ` ORDER BY s.created_at, s.token`
	if !open {
		where, order = `s.status <> 'open'`, ` ORDER BY s.resolved_at DESC, s.token`
	}
	if o.Key != "" {
		order = suspenseSort.orderBy(o)
	}
	var total int64
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &total, `SELECT count(*) FROM suspense_items s WHERE `+where); err != nil {
		return nil, 0, Translate(err)
	}
	var rows []suspenseRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+suspenseColumns+` WHERE `+where+
		order+` LIMIT $1 OFFSET $2`, limit, (page-1)*limit); err != nil {
		return nil, 0, Translate(err)
	}
	out := make([]emi.SuspenseItem, len(rows))
	for i, r := range rows {
		out[i] = r.item()
	}
	return out, total, nil
}

// ResolveSuspenseItem implements transfers.IncomingStore. The status guard
// is a second line behind the caller's row lock.
func (s *IncomingStore) ResolveSuspenseItem(ctx context.Context, token string, r emi.SuspenseResolution) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE suspense_items SET status = $2, resolved_by = $3, resolved_at = $4,
		resolution_reason = $5, resolution_txn = $6, transfer = $7, assigned_account = $8 WHERE token = $1 AND status = 'open'`,
		token, r.Status, r.By, r.At, r.Reason, r.Txn, nullString(r.Transfer), nullString(r.AssignedAccount))
	if err != nil {
		return Translate(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return emi.ErrSuspenseResolved
	}
	return nil
}

// CountOpenSuspense implements transfers.IncomingStore.
func (s *IncomingStore) CountOpenSuspense(ctx context.Context) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM suspense_items WHERE status = 'open'`)
	return n, Translate(err)
}

// InsertSuspenseAssignment implements transfers.IncomingStore: the item
// and target of the request a.Token.
func (s *IncomingStore) InsertSuspenseAssignment(ctx context.Context, a emi.SuspenseAssignment) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO suspense_assignment_requests (token, item, target, target_account,
		target_balance, partner_id) VALUES ($1, $2, $3, $4, $5, $6)`,
		a.Token, a.Item, a.Target, a.Account, a.Balance, a.PartnerID)
	return Translate(err)
}

type assignmentRow struct {
	emi.SuspenseAssignment
	DecidedByN sql.NullString `db:"decided_by_n"`
	DecidedAtN sql.NullTime   `db:"decided_at_n"`
	TransferN  sql.NullString `db:"transfer_n"`
}

func (r assignmentRow) assignment() emi.SuspenseAssignment {
	a := r.SuspenseAssignment
	a.DecidedBy, a.Transfer = r.DecidedByN.String, r.TransferN.String
	a.RequestedAt = a.RequestedAt.UTC()
	if r.DecidedAtN.Valid {
		at := r.DecidedAtN.Time.UTC()
		a.DecidedAt = &at
	}
	return a
}

const assignmentColumns = `r.token, r.item, r.target, r.target_account, r.target_balance, r.partner_id, c.reason, c.status,
	c.proposed_by AS requested_by, coalesce(rq.name, '') AS requested_by_name, c.proposed_at AS requested_at, c.decided_by AS decided_by_n,
	coalesce(dc.name, '') AS decided_by_name, c.decided_at AS decided_at_n, c.note AS decision_note, r.transfer AS transfer_n
	FROM suspense_assignment_requests r JOIN control_requests c ON c.id = r.token
	LEFT JOIN staff_users rq ON rq.id = c.proposed_by LEFT JOIN staff_users dc ON dc.id = c.decided_by`

// SuspenseAssignment implements transfers.IncomingStore.
func (s *IncomingStore) SuspenseAssignment(ctx context.Context, token string, forUpdate bool) (emi.SuspenseAssignment, error) {
	if !validUUID(token) {
		return emi.SuspenseAssignment{}, emi.ErrSuspenseAssignmentNotFound
	}
	q := `SELECT ` + assignmentColumns + ` WHERE r.token = $1`
	if forUpdate {
		q += ` FOR UPDATE OF r`
	}
	var r assignmentRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, token); err != nil {
		return emi.SuspenseAssignment{}, NotFound(err, emi.ErrSuspenseAssignmentNotFound)
	}
	return r.assignment(), nil
}

// PendingSuspenseAssignments implements transfers.IncomingStore.
func (s *IncomingStore) PendingSuspenseAssignments(ctx context.Context, items []string) (map[string]emi.SuspenseAssignment, error) {
	out := map[string]emi.SuspenseAssignment{}
	if len(items) == 0 {
		return out, nil
	}
	var rows []assignmentRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT `+assignmentColumns+
		` WHERE c.status = 'pending' AND r.item = ANY($1::uuid[])`, pq.Array(items)); err != nil {
		return nil, Translate(err)
	}
	for _, r := range rows {
		out[r.Item] = r.assignment()
	}
	return out, nil
}

// SetSuspenseAssignmentTransfer implements transfers.IncomingStore.
func (s *IncomingStore) SetSuspenseAssignmentTransfer(ctx context.Context, token, transfer string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE suspense_assignment_requests SET transfer = $2 WHERE token = $1`, token, transfer)
	return Translate(err)
}

const adjustmentColumns = `r.token, r.account, r.balance, r.partner_id, r.direction, r.amount, r.currency, c.reason, c.status,
	c.proposed_by AS requested_by, coalesce(rq.name, '') AS requested_by_name, c.proposed_at AS requested_at, c.decided_by AS decided_by_n,
	coalesce(dc.name, '') AS decided_by_name, c.decided_at AS decided_at_n, c.note AS decision_note, r.txn AS txn_n
	FROM adjustment_requests r JOIN control_requests c ON c.id = r.token
	LEFT JOIN staff_users rq ON rq.id = c.proposed_by LEFT JOIN staff_users dc ON dc.id = c.decided_by`
