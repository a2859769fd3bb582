package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/accounts"
)

// balanceQueueLock is the advisory lock class of the per-balance queues
// (LockBalances); see partnerEventsLock for the other classes.
const balanceQueueLock = 0x62616c // "bal"

// LedgerStore implements accounts.LedgerStore.
type LedgerStore struct {
	db *DB
}

// NewLedgerStore returns the ledger store.
func NewLedgerStore(db *DB) *LedgerStore { return &LedgerStore{db: db} }

var _ accounts.LedgerStore = (*LedgerStore)(nil)

// LockBalances implements accounts.LedgerStore. The rows are locked in
// token order (LockRows sits above the sort), then the account statuses
// are read in a second statement: in READ COMMITTED a new statement sees
// every change committed before the locks were granted, where the first
// statement's join would still show the account as it was when it began.
func (s *LedgerStore) LockBalances(ctx context.Context, tokens []string) (map[string]emi.BalanceState, error) {
	out := map[string]emi.BalanceState{}
	var valid []string
	for _, t := range tokens {
		if validUUID(t) {
			valid = append(valid, t)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	// A fair queue per balance first: a transaction-scoped advisory lock
	// per balance, taken in token order. PostgreSQL grants heavyweight
	// locks in arrival order, whereas a row lock lets a newcomer take a
	// row that was just released ahead of the transactions already
	// waiting for it, which on a hot balance starves some of them for
	// seconds. The row locks below then never wait on this path.
	if _, err := s.db.Ext(ctx).ExecContext(ctx, `SELECT pg_advisory_xact_lock($1::int4, hashtext(t))
		FROM unnest($2::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n`, balanceQueueLock, pq.StringArray(valid)); err != nil {
		return nil, Translate(err)
	}
	var rows []emi.BalanceState
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT token, account, currency, posted, held, available, overdraft, '' AS account_status
		FROM balances WHERE token = ANY($1::uuid[]) ORDER BY token FOR UPDATE`, pq.StringArray(valid)); err != nil {
		return nil, Translate(err)
	}
	accounts := make([]string, 0, len(rows))
	for _, r := range rows {
		accounts = append(accounts, r.Account)
	}
	st, err := s.AccountStatuses(ctx, accounts)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		r.AccountStatus = st[r.Account]
		out[r.Token] = r
	}
	return out, nil
}

// AccountStatuses implements accounts.LedgerStore.
func (s *LedgerStore) AccountStatuses(ctx context.Context, accounts []string) (map[string]string, error) {
	out := map[string]string{}
	var valid []string
	for _, a := range accounts {
		if validUUID(a) {
			valid = append(valid, a)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	var rows []struct {
		Token  string `db:"token"`
		Status string `db:"status"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT token, status FROM accounts WHERE token = ANY($1::uuid[])`,
		pq.StringArray(valid)); err != nil {
		return nil, Translate(err)
	}
	for _, r := range rows {
		out[r.Token] = r.Status
	}
	return out, nil
}

// MoveBalance implements accounts.LedgerStore with one guarded UPDATE: the
// guard and the change are one statement under the row lock, so no
// concurrent debit can slip between a check and a write (the
// balances_no_overdraft CHECK is the last line of defence).
func (s *LedgerStore) MoveBalance(ctx context.Context, token string, posted, held int64) (emi.BalanceState, bool, error) {
	if !validUUID(token) {
		return emi.BalanceState{}, false, emi.ErrAccountNotFound
	}
	var st emi.BalanceState
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &st, `UPDATE balances
		SET posted = posted + $2::bigint, held = held + $3::bigint, available = available + $2::bigint - $3::bigint
		WHERE token = $1 AND (overdraft OR $2::bigint - $3::bigint >= 0 OR available + $2::bigint - $3::bigint >= 0)
		RETURNING token, account, currency, posted, held, available, overdraft, '' AS account_status`, token, posted, held)
	if err == nil {
		return st, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return emi.BalanceState{}, false, Translate(err)
	}
	var exists bool
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &exists, `SELECT EXISTS (SELECT 1 FROM balances WHERE token = $1)`, token); err != nil {
		return emi.BalanceState{}, false, Translate(err)
	}
	if !exists {
		return emi.BalanceState{}, false, emi.ErrAccountNotFound
	}
	return emi.BalanceState{}, false, nil
}

// InsertLedgerTxn implements accounts.LedgerStore: the transaction, then
// its entries in one statement (unnest keeps their order, so the ids
// follow it).
func (s *LedgerStore) InsertLedgerTxn(ctx context.Context, t emi.LedgerTxn, entries []emi.PostedEntry, at time.Time) (int64, []int64, error) {
	var id int64
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &id, `INSERT INTO ledger_transactions (token, kind, reverses, partner_id, reference, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
		t.Token, t.Kind, nullInt(t.Reverses), nullString(t.PartnerID), t.Reference, at); err != nil {
		if UniqueViolation(err, "ledger_transactions_reverses_key") {
			return 0, nil, emi.ErrTransferInvalidTransition.WithDetail("transaction %d is already reversed", t.Reverses)
		}
		return 0, nil, Translate(err)
	}
	n := len(entries)
	balances, accounts, internals := make([]sql.NullString, n), make([]sql.NullString, n), make([]sql.NullString, n)
	currencies, amounts, afters := make([]string, n), make([]int64, n), make([]sql.NullInt64, n)
	for i, e := range entries {
		balances[i] = sql.NullString{String: e.Balance, Valid: e.Balance != ""}
		accounts[i] = sql.NullString{String: e.Account, Valid: e.Balance != ""}
		internals[i] = sql.NullString{String: e.Internal, Valid: e.Internal != ""}
		currencies[i], amounts[i] = e.Currency, e.Amount
		afters[i] = sql.NullInt64{Int64: e.BalanceAfter, Valid: e.Balance != ""}
	}
	var ids []int64
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ids, `INSERT INTO ledger_entries (txn, balance, account, internal, currency, amount, balance_after, created_at)
		SELECT $1, b::uuid, a::uuid, i, c, m, f, $8
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[]) WITH ORDINALITY AS e(b, a, i, c, m, f, n)
		ORDER BY n RETURNING id`,
		id, nullArray(balances), nullArray(accounts), nullArray(internals), pq.StringArray(currencies), pq.Int64Array(amounts),
		nullIntArray(afters), at); err != nil {
		return 0, nil, Translate(err)
	}
	return id, ids, nil
}

// InsertLedgerTxns implements accounts.LedgerStore: the transactions in
// one statement, then all their entries in another, as InsertLedgerTxn
// writes them (unnest keeps the entries' order, so their ids follow the
// order of the transactions and of each one's entries).
func (s *LedgerStore) InsertLedgerTxns(ctx context.Context, ts []emi.LedgerTxn, entries [][]emi.PostedEntry, at []time.Time) ([]int64, [][]int64, error) {
	if len(ts) != len(entries) || len(ts) != len(at) {
		return nil, nil, emi.Internal(fmt.Errorf("%d transactions, %d entry lists, %d times", len(ts), len(entries), len(at)))
	}
	if len(ts) == 0 {
		return nil, nil, nil
	}
	n := len(ts)
	tokens, kinds, refs, ats := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	reverses, partners := make([]sql.NullInt64, n), make([]sql.NullString, n)
	for i, t := range ts {
		tokens[i], kinds[i], refs[i], ats[i] = t.Token, t.Kind, t.Reference, at[i].UTC().Format(time.RFC3339Nano)
		reverses[i], partners[i] = nullInt(t.Reverses), nullString(t.PartnerID)
	}
	var rows []struct {
		ID    int64  `db:"id"`
		Token string `db:"token"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `INSERT INTO ledger_transactions (token, kind, reverses, partner_id, reference, created_at)
		SELECT t::uuid, k, r, p::uuid, f, c::timestamptz
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS x(t, k, r, p, f, c, n)
		ORDER BY n RETURNING id, token::text AS token`,
		pq.StringArray(tokens), pq.StringArray(kinds), nullIntArray(reverses), nullArray(partners), pq.StringArray(refs),
		pq.StringArray(ats)); err != nil {
		if UniqueViolation(err, "ledger_transactions_reverses_key") {
			return nil, nil, emi.ErrTransferInvalidTransition.WithDetail("a transaction of the batch is already reversed")
		}
		return nil, nil, Translate(err)
	}
	byToken := make(map[string]int64, len(rows))
	for _, r := range rows {
		byToken[r.Token] = r.ID
	}
	ids := make([]int64, n)
	var txnOf []int64
	var balances, accounts, internals []sql.NullString
	var currencies, created []string
	var amounts []int64
	var afters []sql.NullInt64
	for i, t := range ts {
		id, ok := byToken[strings.ToLower(t.Token)]
		if !ok {
			return nil, nil, emi.Internal(fmt.Errorf("ledger transaction %s was not written", t.Token))
		}
		ids[i] = id
		for _, e := range entries[i] {
			txnOf = append(txnOf, id)
			balances = append(balances, sql.NullString{String: e.Balance, Valid: e.Balance != ""})
			accounts = append(accounts, sql.NullString{String: e.Account, Valid: e.Balance != ""})
			internals = append(internals, sql.NullString{String: e.Internal, Valid: e.Internal != ""})
			currencies, amounts = append(currencies, e.Currency), append(amounts, e.Amount)
			afters = append(afters, sql.NullInt64{Int64: e.BalanceAfter, Valid: e.Balance != ""})
			created = append(created, ats[i])
		}
	}
	var entryIDs []int64
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &entryIDs, `INSERT INTO ledger_entries (txn, balance, account, internal, currency, amount, balance_after, created_at)
		SELECT x, b::uuid, a::uuid, i, c, m, f, w::timestamptz
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[])
		  WITH ORDINALITY AS e(x, b, a, i, c, m, f, w, n)
		ORDER BY n RETURNING id`,
		pq.Int64Array(txnOf), nullArray(balances), nullArray(accounts), nullArray(internals), pq.StringArray(currencies),
		pq.Int64Array(amounts), nullIntArray(afters), pq.StringArray(created)); err != nil {
		return nil, nil, Translate(err)
	}
	if len(entryIDs) != len(txnOf) {
		return nil, nil, emi.Internal(fmt.Errorf("%d ledger entries written of %d", len(entryIDs), len(txnOf)))
	}
	out := make([][]int64, n)
	k := 0
	for i := range entries {
		out[i] = entryIDs[k : k+len(entries[i]) : k+len(entries[i])]
		k += len(entries[i])
	}
	return ids, out, nil
}

// MoveBalances implements accounts.LedgerStore with one guarded UPDATE of
// all the balances (MoveBalance's guard per balance); each balance is
// named once (an UPDATE moves a row once however many rows it joins).
func (s *LedgerStore) MoveBalances(ctx context.Context, moves []accounts.BalanceMove) (map[string]emi.BalanceState, error) {
	out := map[string]emi.BalanceState{}
	var tokens []string
	var posted, held []int64
	seen := map[string]bool{}
	for _, m := range moves {
		if seen[m.Balance] {
			return nil, emi.Internal(fmt.Errorf("balance %s moved twice in one statement", m.Balance))
		}
		seen[m.Balance] = true
		if validUUID(m.Balance) {
			tokens, posted, held = append(tokens, m.Balance), append(posted, m.Posted), append(held, m.Held)
		}
	}
	if len(tokens) == 0 {
		return out, nil
	}
	var rows []emi.BalanceState
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `UPDATE balances b
		SET posted = b.posted + m.p, held = b.held + m.h, available = b.available + m.p - m.h
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS m(t, p, h)
		WHERE b.token = m.t AND (b.overdraft OR m.p - m.h >= 0 OR b.available + m.p - m.h >= 0)
		RETURNING b.token, b.account, b.currency, b.posted, b.held, b.available, b.overdraft, '' AS account_status`,
		pq.StringArray(tokens), pq.Int64Array(posted), pq.Int64Array(held)); err != nil {
		return nil, Translate(err)
	}
	for _, r := range rows {
		out[r.Token] = r
	}
	return out, nil
}

// nullArray is a text[] parameter with NULL elements.
func nullArray(v []sql.NullString) any {
	a := make([]*string, len(v))
	for i := range v {
		if v[i].Valid {
			s := v[i].String
			a[i] = &s
		}
	}
	return pq.GenericArray{A: a}
}

// nullIntArray is a bigint[] parameter with NULL elements.
func nullIntArray(v []sql.NullInt64) any {
	a := make([]*int64, len(v))
	for i := range v {
		if v[i].Valid {
			n := v[i].Int64
			a[i] = &n
		}
	}
	return pq.GenericArray{A: a}
}

// LedgerTxn implements accounts.LedgerStore.
func (s *LedgerStore) LedgerTxn(ctx context.Context, id int64) (emi.PostedTxn, error) {
	var t struct {
		ID        int64     `db:"id"`
		Token     string    `db:"token"`
		Kind      string    `db:"kind"`
		CreatedAt time.Time `db:"created_at"`
	}
	if err := sqlx.GetContext(ctx, s.db.Ext(ctx), &t, `SELECT id, token, kind, created_at FROM ledger_transactions WHERE id = $1`, id); err != nil {
		return emi.PostedTxn{}, NotFound(err, emi.ErrTransferNotFound)
	}
	var rows []struct {
		ID           int64          `db:"id"`
		Balance      sql.NullString `db:"balance"`
		Account      sql.NullString `db:"account"`
		Internal     sql.NullString `db:"internal"`
		Currency     string         `db:"currency"`
		Amount       int64          `db:"amount"`
		BalanceAfter sql.NullInt64  `db:"balance_after"`
	}
	if err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows, `SELECT id, balance, account, internal, currency, amount, balance_after
		FROM ledger_entries WHERE txn = $1 ORDER BY id`, id); err != nil {
		return emi.PostedTxn{}, Translate(err)
	}
	out := emi.PostedTxn{ID: t.ID, Token: t.Token, Kind: t.Kind, CreatedAt: t.CreatedAt.UTC()}
	for _, r := range rows {
		out.Entries = append(out.Entries, emi.PostedEntry{ID: r.ID, BalanceAfter: r.BalanceAfter.Int64, Entry: emi.Entry{
			Balance: r.Balance.String, Account: r.Account.String, Internal: r.Internal.String, Currency: r.Currency, Amount: r.Amount}})
	}
	return out, nil
}

// VerifyLedger implements accounts.LedgerStore: each rule is one query,
// all in one REPEATABLE READ read-only transaction, so the checks see the
// same committed state while transfers go on.
func (s *LedgerStore) VerifyLedger(ctx context.Context) (emi.LedgerReport, error) {
	var rep emi.LedgerReport
	tx, err := s.db.ReadPool(ctx).BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return rep, Translate(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, c := range []struct {
		dst *int64
		q   string
	}{
		{&rep.Transactions, `SELECT count(*) FROM ledger_transactions`},
		{&rep.Entries, `SELECT count(*) FROM ledger_entries`},
		{&rep.Balances, `SELECT count(*) FROM balances`},
	} {
		if err := tx.GetContext(ctx, c.dst, c.q); err != nil {
			return rep, Translate(err)
		}
	}
	rules := []struct{ name, q string }{
		{"transactions that do not sum to zero in a currency",
			`SELECT count(*) FROM (SELECT txn FROM ledger_entries GROUP BY txn, currency HAVING sum(amount) <> 0) x`},
		{"transactions with fewer than two entries",
			`SELECT count(*) FROM ledger_transactions t WHERE (SELECT count(*) FROM ledger_entries e WHERE e.txn = t.id) < 2`},
		{"balances whose posted figure is not the sum of their entries",
			`SELECT count(*) FROM balances b LEFT JOIN (SELECT balance, sum(amount) AS s FROM ledger_entries WHERE balance IS NOT NULL GROUP BY balance) e
			 ON e.balance = b.token WHERE b.posted <> coalesce(e.s, 0)`},
		{"balances whose available is not posted minus held",
			`SELECT count(*) FROM balances WHERE available <> posted - held`},
		{"balances below zero without an overdraft",
			`SELECT count(*) FROM balances WHERE NOT overdraft AND available < 0`},
		{"balances whose held figure is not the sum of their open card holds",
			`SELECT count(*) FROM balances b LEFT JOIN (SELECT balance, sum(hold_amount) AS s FROM card_authorizations
			   WHERE status = 'approved' GROUP BY balance) h ON h.balance = b.token WHERE b.held <> coalesce(h.s, 0)`},
		{"entries whose running balance does not follow the previous one",
			`SELECT count(*) FROM (SELECT balance_after - amount AS before,
			   lag(balance_after) OVER (PARTITION BY balance ORDER BY id) AS prev FROM ledger_entries WHERE balance IS NOT NULL) x
			 WHERE before <> coalesce(prev, 0)`},
	}
	for _, r := range rules {
		var n int64
		if err := tx.GetContext(ctx, &n, r.q); err != nil {
			return rep, Translate(err)
		}
		if n > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%d %s", n, r.name))
		}
	}
	if err := tx.SelectContext(ctx, &rep.Positions, `SELECT currency, coalesce(c.s, 0) AS customers, coalesce(i.s, 0) AS institution FROM
		(SELECT currency, sum(posted) AS s FROM balances GROUP BY currency) c
		FULL JOIN (SELECT currency, sum(amount) AS s FROM ledger_entries WHERE internal IS NOT NULL GROUP BY currency) i USING (currency)
		ORDER BY currency`); err != nil {
		return rep, Translate(err)
	}
	for _, p := range rep.Positions {
		if p.Customers+p.Institution != 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: customer balances %d and the institution's accounts %d do not net to zero",
				p.Currency, p.Customers, p.Institution))
		}
	}
	return rep, nil
}
