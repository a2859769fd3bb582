package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/transfers"
)

// TransferStore implements transfers.TransferStore.
type TransferStore struct {
	db *DB
}

// NewTransferStore returns the transfer store.
func NewTransferStore(db *DB) *TransferStore { return &TransferStore{db: db} }

var _ transfers.TransferStore = (*TransferStore)(nil)

type partyRow struct {
	Account   string         `db:"account"`
	Main      string         `db:"main"`
	Virtual   bool           `db:"virtual"`
	Balance   string         `db:"balance"`
	Currency  string         `db:"currency"`
	PartnerID string         `db:"partner_id"`
	IBAN      sql.NullString `db:"iban"`
}

// partySelect returns, for the account a (the side) and the balance b
// (on a's main account for a virtual a), the party's columns. The IBAN is
// a virtual account's own IBAN in the balance's currency, else the
// balance's.
const partySelect = `SELECT a.token AS account, coalesce(a.main, a.token) AS main, a.virtual, b.token AS balance, b.currency,
	a.partner_id, coalesce((SELECT i.iban FROM ibans i WHERE i.account = a.token AND i.balance = b.token AND i.virtual LIMIT 1), b.iban) AS iban`

// FindParty implements transfers.TransferStore.
func (s *TransferStore) FindParty(ctx context.Context, p emi.TransferParty, currency string) (accounts.Party, bool, error) {
	var q string
	var args []any
	switch {
	case strings.TrimSpace(p.Balance) != "":
		if !validUUID(p.Balance) {
			return accounts.Party{}, false, nil
		}
		q, args = partySelect+` FROM balances b JOIN accounts a ON a.token = b.account WHERE b.token = $1`, []any{p.Balance}
	case strings.TrimSpace(p.Account) != "":
		if !validUUID(p.Account) {
			return accounts.Party{}, false, nil
		}
		// The balance in the currency, else any (reported as a mismatch).
		q, args = partySelect+` FROM accounts a JOIN balances b ON b.account = coalesce(a.main, a.token)
			WHERE a.token = $1 ORDER BY (b.currency = $2) DESC, b.position LIMIT 1`, []any{p.Account, currency}
	case strings.TrimSpace(p.IBAN) != "":
		iban := strings.ToUpper(strings.ReplaceAll(p.IBAN, " ", ""))
		q, args = partySelect+` FROM ibans i JOIN accounts a ON a.token = i.account JOIN balances b ON b.token = i.balance
			WHERE i.iban = $1`, []any{iban}
	default:
		num := strings.ReplaceAll(p.AccountNumber, " ", "")
		sort := strings.NewReplacer("-", "", " ", "").Replace(p.SortCode)
		q, args = partySelect+` FROM balances b JOIN accounts a ON a.token = b.account
			WHERE b.account_number = $1 AND b.sort_code = $2`, []any{num, sort}
	}
	var r partyRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, args...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return accounts.Party{}, false, nil
		}
		return accounts.Party{}, false, Translate(err)
	}
	return accounts.Party{Account: r.Account, Main: r.Main, Virtual: r.Virtual, Balance: r.Balance, Currency: r.Currency,
		PartnerID: r.PartnerID, IBAN: r.IBAN.String}, true, nil
}

// FindAccountParties resolves many accounts at once, each in a currency,
// as FindParty resolves one named by its account token: the balance in
// the currency, else the account's first one (a mismatch for the
// caller). found[i] is false when accounts[i] is not an account. For
// ops.HistoryImport, which resolves every account of a history file with
// one query.
func (s *TransferStore) FindAccountParties(ctx context.Context, accts, currencies []string) ([]accounts.Party, []bool, error) {
	if len(accts) != len(currencies) {
		return nil, nil, emi.Internal(fmt.Errorf("%d accounts, %d currencies", len(accts), len(currencies)))
	}
	parties, found := make([]accounts.Party, len(accts)), make([]bool, len(accts))
	var qa, qc []string
	var at []int
	for i, a := range accts {
		if validUUID(a) {
			qa, qc, at = append(qa, a), append(qc, currencies[i]), append(at, i)
		}
	}
	if len(qa) == 0 {
		return parties, found, nil
	}
	var rows []struct {
		partyRow
		N int `db:"n"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, partySelect+`, q.n
		FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS q(account, currency, n)
		JOIN accounts a ON a.token = q.account
		CROSS JOIN LATERAL (SELECT * FROM balances b WHERE b.account = coalesce(a.main, a.token)
			ORDER BY (b.currency = q.currency) DESC, b.position LIMIT 1) b`,
		pq.StringArray(qa), pq.StringArray(qc)); err != nil {
		return nil, nil, Translate(err)
	}
	for _, r := range rows {
		i := at[r.N-1]
		parties[i] = accounts.Party{Account: r.Account, Main: r.Main, Virtual: r.Virtual, Balance: r.Balance, Currency: r.Currency,
			PartnerID: r.PartnerID, IBAN: r.IBAN.String}
		found[i] = true
	}
	return parties, found, nil
}

// InsertTransfer implements transfers.TransferStore.
func (s *TransferStore) InsertTransfer(ctx context.Context, t emi.Transfer) error {
	cp, err := json.Marshal(t.Counterparty)
	if err != nil {
		return emi.Internal(fmt.Errorf("counterparty: %w", err))
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO transfers (token, partner_id, type, status, source_account, source_balance,
		destination_account, destination_balance, counterparty, amount, currency, reference, txn, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13, $14, $15)`,
		t.Token, nullString(t.PartnerID), t.Type, t.Status, nullString(t.SourceAccount), nullString(t.SourceBalance),
		nullString(t.DestinationAccount), nullString(t.DestinationBalance), jsonText(cp), t.Amount, t.Currency, t.Reference, t.Txn,
		t.CreatedAt, t.UpdatedAt)
	return Translate(err)
}

type transferRow struct {
	Token              string         `db:"token"`
	PartnerID          sql.NullString `db:"partner_id"`
	Type               string         `db:"type"`
	Status             string         `db:"status"`
	SourceAccount      sql.NullString `db:"source_account"`
	SourceBalance      sql.NullString `db:"source_balance"`
	DestinationAccount sql.NullString `db:"destination_account"`
	DestinationBalance sql.NullString `db:"destination_balance"`
	Counterparty       []byte         `db:"counterparty"`
	Amount             int64          `db:"amount"`
	Currency           string         `db:"currency"`
	Reference          string         `db:"reference"`
	Txn                int64          `db:"txn"`
	ReturnTxn          sql.NullInt64  `db:"return_txn"`
	ReleaseTxn         sql.NullInt64  `db:"release_txn"`
	ReturnReason       string         `db:"return_reason"`
	CreatedAt          sql.NullTime   `db:"created_at"`
	UpdatedAt          sql.NullTime   `db:"updated_at"`
	SourceIBAN         sql.NullString `db:"source_iban"`
	DestinationIBAN    sql.NullString `db:"destination_iban"`
	SourcePartner      sql.NullString `db:"source_partner"`
	DestinationPartner sql.NullString `db:"destination_partner"`
}

func (r transferRow) transfer() emi.Transfer {
	t := emi.Transfer{Token: r.Token, PartnerID: r.PartnerID.String, Type: r.Type, Status: r.Status,
		SourceAccount: r.SourceAccount.String, SourceBalance: r.SourceBalance.String,
		DestinationAccount: r.DestinationAccount.String, DestinationBalance: r.DestinationBalance.String,
		Amount: r.Amount, Currency: r.Currency, Reference: r.Reference, Txn: r.Txn, ReturnTxn: r.ReturnTxn.Int64,
		ReleaseTxn: r.ReleaseTxn.Int64, ReturnReason: r.ReturnReason, CreatedAt: r.CreatedAt.Time.UTC(), UpdatedAt: r.UpdatedAt.Time.UTC(),
		SourceIBAN: r.SourceIBAN.String, DestinationIBAN: r.DestinationIBAN.String,
		SourcePartner: r.SourcePartner.String, DestinationPartner: r.DestinationPartner.String}
	_ = json.Unmarshal(r.Counterparty, &t.Counterparty)
	return t
}

// TransferColumns selects a transfer (alias t) with the IBANs and partners
// of its two customer sides.
const TransferColumns = `t.token, t.partner_id, t.type, t.status, t.source_account, t.source_balance, t.destination_account,
	t.destination_balance, t.counterparty, t.amount, t.currency, t.reference, t.txn, t.return_txn, t.release_txn,
	t.return_reason, t.created_at, t.updated_at,
	coalesce((SELECT i.iban FROM ibans i WHERE i.account = t.source_account AND i.balance = t.source_balance AND i.virtual LIMIT 1),
		(SELECT b.iban FROM balances b WHERE b.token = t.source_balance)) AS source_iban,
	coalesce((SELECT i.iban FROM ibans i WHERE i.account = t.destination_account AND i.balance = t.destination_balance AND i.virtual LIMIT 1),
		(SELECT b.iban FROM balances b WHERE b.token = t.destination_balance)) AS destination_iban,
	(SELECT a.partner_id FROM accounts a WHERE a.token = t.source_account) AS source_partner,
	(SELECT a.partner_id FROM accounts a WHERE a.token = t.destination_account) AS destination_partner`

// Transfer implements transfers.TransferStore.
func (s *TransferStore) Transfer(ctx context.Context, token string, forUpdate bool) (emi.Transfer, error) {
	if !validUUID(token) {
		return emi.Transfer{}, emi.ErrTransferNotFound
	}
	q := `SELECT ` + TransferColumns + ` FROM transfers t WHERE t.token = $1`
	if forUpdate {
		q += ` FOR UPDATE OF t`
	}
	var r transferRow
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, q, token); err != nil {
		return emi.Transfer{}, NotFound(err, emi.ErrTransferNotFound)
	}
	return r.transfer(), nil
}

// SetTransferReturned implements transfers.TransferStore. The guard
// (return_txn IS NULL) makes the return happen once even for a caller
// that did not lock the row.
func (s *TransferStore) SetTransferReturned(ctx context.Context, token string, returnTxn int64, reason string) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE transfers SET status = 'returned', return_txn = $2, return_reason = $3,
		updated_at = greatest(now(), updated_at) WHERE token = $1 AND return_txn IS NULL`, token, returnTxn, reason)
	if err != nil {
		return Translate(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Translate(err)
	} else if n == 0 {
		return emi.ErrTransferInvalidTransition.WithDetail("transfer %s is already returned (or unknown)", token)
	}
	return nil
}

// SetTransferReleased implements transfers.TransferStore: only a held
// transfer is released, once.
func (s *TransferStore) SetTransferReleased(ctx context.Context, token string, releaseTxn int64, status string) error {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE transfers SET status = $3, release_txn = $2, updated_at = greatest(now(), updated_at)
		WHERE token = $1 AND status = 'held_for_review' AND release_txn IS NULL`, token, releaseTxn, status)
	if err != nil {
		return Translate(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Translate(err)
	} else if n == 0 {
		return emi.ErrTransferInvalidTransition.WithDetail("transfer %s is not held for review", token)
	}
	return nil
}

// TxnEntries implements transfers.TransferStore.
func (s *TransferStore) TxnEntries(ctx context.Context, ids []int64) ([]emi.LedgerEntryView, error) {
	var rows []struct {
		ID           int64          `db:"id"`
		Txn          int64          `db:"txn"`
		TxnToken     string         `db:"txn_token"`
		Kind         string         `db:"kind"`
		Balance      sql.NullString `db:"balance"`
		Account      sql.NullString `db:"account"`
		Internal     sql.NullString `db:"internal"`
		Currency     string         `db:"currency"`
		Amount       int64          `db:"amount"`
		BalanceAfter sql.NullInt64  `db:"balance_after"`
		CreatedAt    time.Time      `db:"created_at"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT e.id, e.txn, lt.token AS txn_token, lt.kind, e.balance, e.account,
		e.internal, e.currency, e.amount, e.balance_after, e.created_at
		FROM ledger_entries e JOIN ledger_transactions lt ON lt.id = e.txn
		WHERE e.txn = ANY($1::bigint[]) ORDER BY e.id`, pq.Int64Array(ids)); err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.LedgerEntryView, len(rows))
	for i, r := range rows {
		out[i] = emi.LedgerEntryView{ID: r.ID, Txn: r.Txn, TxnToken: r.TxnToken, Kind: r.Kind, Balance: r.Balance.String,
			Account: r.Account.String, Internal: r.Internal.String, Currency: r.Currency, Amount: r.Amount,
			BalanceAfter: r.BalanceAfter.Int64, CreatedAt: r.CreatedAt.UTC()}
	}
	return out, nil
}

// SetTransferStatus implements transfers.TransferStore.
func (s *TransferStore) SetTransferStatus(ctx context.Context, token, status string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE transfers SET status = $2, updated_at = greatest(now(), updated_at) WHERE token = $1`,
		token, status)
	return Translate(err)
}

// HolderOnHold implements transfers.TransferStore.
func (s *TransferStore) HolderOnHold(ctx context.Context, account string) (bool, error) {
	return holderOnHold(ctx, s.db, account)
}

// ListTransfers implements transfers.TransferStore. Each of the three ways
// a transfer is the partner's (made by it, paid from or to one of its
// accounts) is read newest first through its own index and cut at the
// page, and the union is cut again: a page costs three bounded index
// scans, not the partner's whole history.
func (s *TransferStore) ListTransfers(ctx context.Context, partnerID string, q emi.TransferList) ([]emi.Transfer, error) {
	ext := s.db.Ext(ctx)
	var account, status, after any
	if q.Account != "" {
		var owned bool
		if err := sqlx.GetContext(ctx, ext, &owned, `SELECT EXISTS (SELECT FROM accounts WHERE token = $1 AND partner_id = $2)`,
			q.Account, partnerID); err != nil {
			return nil, Translate(err)
		}
		if !owned {
			return nil, emi.ErrTransferValidation.Field("account", "is not one of your accounts")
		}
		account = q.Account
	}
	if q.Status != "" {
		status = q.Status
	}
	if q.StartingAfter != "" {
		after = q.StartingAfter
	}
	var from, to any
	if !q.From.IsZero() {
		from = q.From
	}
	if !q.To.IsZero() {
		to = q.To
	}
	const common = `($2::uuid IS NULL OR t.source_account = $2 OR t.destination_account = $2)
		AND ($3::text IS NULL OR t.status = $3) AND ($4::timestamptz IS NULL OR t.created_at >= $4)
		AND ($5::timestamptz IS NULL OR t.created_at < $5)
		AND ($6::uuid IS NULL OR (t.created_at, t.token) < (SELECT c.created_at, c.token FROM transfers c WHERE c.token = $6))
		ORDER BY t.created_at DESC, t.token DESC LIMIT $7`
	var rows []transferRow
	err := sqlx.SelectContext(ctx, ext, &rows, `WITH mine AS (
			(SELECT t.token, t.created_at FROM transfers t WHERE t.partner_id = $1 AND `+common+`)
			UNION
			(SELECT t.token, t.created_at FROM transfers t JOIN accounts a ON a.token = t.source_account WHERE a.partner_id = $1 AND `+common+`)
			UNION
			(SELECT t.token, t.created_at FROM transfers t JOIN accounts a ON a.token = t.destination_account WHERE a.partner_id = $1 AND `+common+`))
		SELECT `+TransferColumns+` FROM transfers t JOIN (SELECT token, created_at FROM mine ORDER BY created_at DESC, token DESC LIMIT $7) m
			ON m.token = t.token
		ORDER BY t.created_at DESC, t.token DESC`,
		partnerID, account, status, from, to, after, q.Limit+1)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.Transfer, len(rows))
	for i, r := range rows {
		out[i] = r.transfer()
	}
	return out, nil
}
