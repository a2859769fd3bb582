package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/accounts"
)

// StatementStore implements accounts.StatementStore.
type StatementStore struct {
	db *DB
}

// NewStatementStore returns the statement store.
func NewStatementStore(db *DB) *StatementStore { return &StatementStore{db: db} }

var _ accounts.StatementStore = (*StatementStore)(nil)

// statementWhere is the filter of a statement's entries: the accounts
// ($1) through ledger_entries_account (account, created_at, id), and the
// range when given.
func statementWhere(accounts []string, from, to time.Time) (string, []any) {
	where, args := `e.account = ANY($1::uuid[])`, []any{pq.StringArray(accounts)}
	if !from.IsZero() {
		args = append(args, from.UTC())
		where += ` AND e.created_at >= $` + strconv.Itoa(len(args))
	}
	if !to.IsZero() {
		args = append(args, to.UTC())
		where += ` AND e.created_at < $` + strconv.Itoa(len(args))
	}
	return where, args
}

// statementAfter narrows where (args its arguments) to the entries after
// a line's position, newest first: a range of the same index.
func statementAfter(where string, args []any, after accounts.LinePosition) (string, []any) {
	args = append(args, after.At.UTC(), after.EntryID)
	n := len(args)
	return where + ` AND (e.created_at, e.id) < ($` + strconv.Itoa(n-1) + `::timestamptz, $` + strconv.Itoa(n) + `::bigint)`, args
}

// TransactionLine implements accounts.StatementStore: the transaction by
// its token (unique), its entries through ledger_entries_txn; should it
// show as more than one line, the oldest, so the cursor is after all of
// them.
func (s *StatementStore) TransactionLine(ctx context.Context, statementAccounts []string, txn string) (accounts.LinePosition, bool, error) {
	var valid []string
	for _, a := range statementAccounts {
		if validUUID(a) {
			valid = append(valid, a)
		}
	}
	var pos accounts.LinePosition
	if len(valid) == 0 || !validUUID(txn) {
		return pos, false, nil
	}
	err := s.db.Ext(ctx).QueryRowxContext(ctx, `SELECT e.created_at, e.id FROM ledger_transactions t
		JOIN ledger_entries e ON e.txn = t.id
		WHERE t.token = $1 AND e.account = ANY($2::uuid[]) ORDER BY e.created_at, e.id LIMIT 1`, txn, pq.StringArray(valid)).Scan(&pos.At, &pos.EntryID)
	if errors.Is(err, sql.ErrNoRows) {
		return pos, false, nil
	}
	if err != nil {
		return pos, false, Translate(err)
	}
	return pos, true, nil
}

type statementRow struct {
	ID           int64          `db:"id"`
	TxnToken     string         `db:"txn_token"`
	Kind         string         `db:"kind"`
	Transfer     string         `db:"transfer"`
	Account      string         `db:"account"`
	Balance      string         `db:"balance"`
	Currency     string         `db:"currency"`
	Amount       int64          `db:"amount"`
	BalanceAfter int64          `db:"balance_after"`
	Reference    string         `db:"reference"`
	CreatedAt    time.Time      `db:"created_at"`
	External     []byte         `db:"external"`
	OtherName    sql.NullString `db:"other_name"`
	OtherIBAN    sql.NullString `db:"other_iban"`
	OtherNumber  sql.NullString `db:"other_number"`
	OtherSort    sql.NullString `db:"other_sort"`
	OtherPartner sql.NullString `db:"other_partner"`
}

// StatementLines implements accounts.StatementStore. The page is chosen
// first (index order), then each line is joined to its transaction, the
// transfer it belongs to (as its transaction or its return) and, for an
// internal transfer, the other side: its owner's name, IBAN (a virtual
// account's own) and UK identifiers. The other side is chosen by position,
// not by the sign of the amount: a line on the transfer's source (account
// and balance) names its destination and any other line its source, so a
// reversal's lines, whose signs are flipped, still name the other side. An external side comes from the
// transfer's counterparty.
func (s *StatementStore) StatementLines(ctx context.Context, accounts []string, from, to time.Time, after *accounts.LinePosition, limit, offset int) ([]emi.StatementLine, int64, error) {
	var valid []string
	for _, a := range accounts {
		if validUUID(a) {
			valid = append(valid, a)
		}
	}
	if len(valid) == 0 {
		return nil, 0, nil
	}
	where, args := statementWhere(valid, from, to)
	var total int64
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &total, `SELECT count(*) FROM ledger_entries e WHERE `+where, args...); err != nil {
		return nil, 0, Translate(err)
	}
	if total == 0 || int64(offset) >= total {
		return []emi.StatementLine{}, total, nil
	}
	if after != nil {
		// The cursor applies to the page only: total is the range's.
		where, args = statementAfter(where, args, *after)
	}
	out, err := s.lines(ctx, where, args, limit, offset)
	return out, total, err
}

// StatementExportLines implements accounts.StatementStore: StatementLines'
// first limit lines without counting them all.
func (s *StatementStore) StatementExportLines(ctx context.Context, accounts []string, from, to time.Time, limit int) ([]emi.StatementLine, error) {
	var valid []string
	for _, a := range accounts {
		if validUUID(a) {
			valid = append(valid, a)
		}
	}
	if len(valid) == 0 {
		return []emi.StatementLine{}, nil
	}
	where, args := statementWhere(valid, from, to)
	return s.lines(ctx, where, args, limit, 0)
}

// lines reads the page of the entries matching where (args its
// arguments) and joins each to what it names.
func (s *StatementStore) lines(ctx context.Context, where string, args []any, limit, offset int) ([]emi.StatementLine, error) {
	args = append(args, limit, offset)
	n := len(args)
	q := `WITH page AS (
		SELECT e.id, e.txn, e.account, e.balance, e.currency, e.amount, e.balance_after, e.created_at
		FROM ledger_entries e WHERE ` + where + `
		ORDER BY e.created_at DESC, e.id DESC LIMIT $` + strconv.Itoa(n-1) + ` OFFSET $` + strconv.Itoa(n) + `)
	SELECT p.id, lt.token AS txn_token, lt.kind, coalesce(t.token::text, '') AS transfer, p.account, p.balance, p.currency,
		p.amount, p.balance_after, lt.reference, p.created_at,
		CASE WHEN t.type IS NOT NULL AND t.type <> 'internal' THEN t.counterparty ELSE '{}'::jsonb END AS external,
		o.name AS other_name, o.iban AS other_iban, o.account_number AS other_number, o.sort_code AS other_sort,
		o.partner_id AS other_partner
	FROM page p
	JOIN ledger_transactions lt ON lt.id = p.txn
	LEFT JOIN LATERAL (
		SELECT x.token, x.type, x.counterparty,
			CASE WHEN p.account = x.source_account AND p.balance = x.source_balance
				THEN x.destination_account ELSE x.source_account END AS other_account,
			CASE WHEN p.account = x.source_account AND p.balance = x.source_balance
				THEN x.destination_balance ELSE x.source_balance END AS other_balance
		FROM transfers x WHERE x.txn = p.txn OR x.return_txn = p.txn OR x.release_txn = p.txn LIMIT 1) t ON true
	LEFT JOIN LATERAL (
		SELECT coalesce((SELECT u.first_name || ' ' || u.last_name FROM users u WHERE u.token = a.user_token),
				(SELECT m.name FROM merchants m WHERE m.token = a.merchant), '') AS name,
			coalesce((SELECT i.iban FROM ibans i WHERE i.account = a.token AND i.balance = b.token AND i.virtual LIMIT 1),
				CASE WHEN a.virtual THEN NULL ELSE b.iban END) AS iban,
			CASE WHEN a.virtual THEN NULL ELSE b.account_number END AS account_number,
			CASE WHEN a.virtual THEN NULL ELSE b.sort_code END AS sort_code,
			a.partner_id::text AS partner_id
		FROM accounts a JOIN balances b ON b.token = t.other_balance
		WHERE t.type = 'internal' AND a.token = t.other_account) o ON true
	ORDER BY p.created_at DESC, p.id DESC`
	var rows []statementRow
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, q, args...); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.StatementLine, len(rows))
	for i, r := range rows {
		l := emi.StatementLine{EntryID: r.ID, Transaction: r.TxnToken, Kind: r.Kind, Transfer: r.Transfer, Account: r.Account,
			Balance: r.Balance, Currency: r.Currency, Amount: r.Amount, BalanceAfter: r.BalanceAfter, Reference: r.Reference,
			CreatedAt: r.CreatedAt.UTC()}
		if len(r.External) > 0 {
			_ = json.Unmarshal(r.External, &l.Counterparty)
		}
		if r.OtherName.Valid {
			l.Counterparty = emi.Counterparty{Name: r.OtherName.String, IBAN: r.OtherIBAN.String, AccountNumber: r.OtherNumber.String,
				SortCode: r.OtherSort.String}
			l.CounterpartyPartner = r.OtherPartner.String
		}
		out[i] = l
	}
	return out, nil
}

// PostedBefore implements accounts.StatementStore through
// ledger_entries_balance (balance, id): per balance, the newest entry
// before t. Entries of a balance are written under its row lock with the
// time read under it, so posting order and time order agree per balance.
func (s *StatementStore) PostedBefore(ctx context.Context, balances []string, t time.Time) (map[string]int64, error) {
	out := map[string]int64{}
	var valid []string
	for _, b := range balances {
		if validUUID(b) {
			valid = append(valid, b)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	var rows []struct {
		Balance string `db:"balance"`
		Posted  int64  `db:"posted"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT b AS balance,
		coalesce((SELECT e.balance_after FROM ledger_entries e WHERE e.balance = b::uuid AND e.created_at < $2
			ORDER BY e.id DESC LIMIT 1), 0) AS posted
		FROM unnest($1::text[]) AS b`, pq.StringArray(valid), t.UTC()); err != nil {
		return nil, Translate(err)
	}
	for _, r := range rows {
		out[r.Balance] = r.Posted
	}
	return out, nil
}
