// Package postgres implements the service areas' stores on PostgreSQL with
// sqlx and lib/pq. It owns transactions and turns database errors into
// catalogue errors, so nothing above it sees sql.ErrNoRows or *pq.Error.
//
// # Direction
//
// The store imports the area packages (internal/service/<area>) for their
// interfaces and row types, never the other way round: each area declares
// the store interfaces and row types it needs, this package implements
// them, and only the composition root (internal/app), cmd and tests import
// it (internal/archtest).
//
// # Layout
//
// One package, organised by the service areas. Every file that is not a
// test is named after its area, <area>.go or <area>_<topic>.go, and each
// store type, with all its methods and row types, lives in the files of
// one area:
//
//	kernel      Jobs (kernel_jobs.go), LimitStore (kernel_limits.go),
//	            AuditStore (kernel_audit.go), IdempotencyStore (kernel_idempotency.go)
//	staff       StaffStore (staff.go, staff_changes.go),
//	            SessionStore (staff_sessions.go), InboxStore (staff_inbox.go)
//	partners    PartnerStore (partners.go, partners_signatures.go),
//	            WebhookStore (partners_webhooks.go)
//	people      PeopleStore (people.go, people_aml.go, people_merchants.go,
//	            people_kyc.go, people_documents.go, people_watchlist.go)
//	onboarding  OnboardingStore (onboarding.go, onboarding_review.go)
//	accounts    AccountStore (accounts.go, accounts_programs.go),
//	            LedgerStore (accounts_ledger.go), StatementStore (accounts_statements.go)
//	transfers   TransferStore (transfers.go),
//	            IncomingStore (transfers_incoming.go, transfers_adjustments.go)
//	cards       CardStore (cards.go, cards_generate.go),
//	            AuthorizationStore (cards_authorizations.go)
//	monitoring  MonitoringStore (monitoring.go)
//	ops         AlertStore (ops_alerts.go), RekeyStore (ops_rekey.go)
//
// The files of no area are the infrastructure: db.go (Open, DB, ambient
// transactions, error translation, and the small value helpers several
// areas use), migrate.go (goose migrations), listen.go (LISTEN/NOTIFY for
// the job queue and the API key cache), pooler.go (what a pooler or a
// replica in front of PostgreSQL allows: EMI_DB_POOLER, host lists, the
// writable check), replicas.go (reads that tolerate lag go to a read
// replica) and sort.go (keyset-paged sorting).
// layout_test.go fails on a file, or a method, outside this layout.
//
// An area may have more than one store type: a type is the store that
// internal/app gives one service (or two close ones), so it matches the
// interfaces that service declares. One type per area would only put
// unrelated tables behind one name (the kernel's job queue, rate limits,
// audit trail and idempotency keys share nothing but the area), which is
// what the old mixed types did: Store (partners, keys, replay guard,
// idempotency and audit) is now PartnerStore in partners and AuditStore
// and IdempotencyStore in the kernel, one per kernel interface;
// ComplianceStore (alert claims and staff inbox) is now AlertStore in ops
// and InboxStore in staff.
//
// A store type may also serve another area that reads the same tables
// through it; the method stays with the area that owns the table:
// AccountStore is also cards.CardAccounts, PeopleStore also
// onboarding.FalsePositiveReader and cards.CardUsers, OnboardingStore
// also people.MerchantScreeningApps (onboarding writes the onboarded
// merchants), StaffStore also onboarding.StaffDirectory. WebhookStore is
// also kernel.EventStore, which partners.WebhookStore embeds: the kernel's
// event outbox writes into the webhook tables (migration 00004), so the
// type stays whole in partners. Beside each constructor a compile-time
// assertion lists every interface the type is wired as, so a missing
// method fails the build beside the store.
//
// # Transactions
//
// Transactions are ambient: InTx puts the transaction in the context, and
// every store method runs its statements on the transaction found in its
// context (or on the pool when there is none). This lets one request's work,
// e.g. a business change plus its stored Idempotency-Key response, commit
// atomically although several stores take part. A transaction in a context is
// used by one goroutine at a time; never share such a context across
// goroutines.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/emi"
)

// DB is the connection pool plus transaction handling.
type DB struct {
	*sqlx.DB
	// stmts holds the prepared statements of the hot paths (query text →
	// *sqlx.Stmt), see getPrepared.
	stmts sync.Map
	// pooler is what stands in front of the database: it decides whether
	// getPrepared prepares (Pooler.Prepares).
	pooler Pooler
	// replicas serve the reads that tolerate lag (nil: none).
	replicas *replicas
}

// MaxOpenConns is the size of a process's connection pool. The partner API
// admits as many requests at once by default (EMI_API_MAX_INFLIGHT).
const MaxOpenConns = 40

// Open connects to dsn directly (no pooler in between: the tools and tests
// that own their database), checks the connection and sizes the pool; see
// OpenWith. Returns an error naming the problem when the database does not
// answer.
//
// Unless dsn sets binary_parameters itself, Open turns it on (see
// withBinaryParameters): each parameterised statement then costs one round
// trip to the server instead of two.
func Open(ctx context.Context, dsn string) (*DB, error) {
	return OpenWith(ctx, dsn, Options{Pooler: PoolerNone})
}

// getPrepared is sqlx.GetContext for the statements of the hot paths (the
// reads behind account_details and card_details, the replay guard's batch),
// run as server-side prepared statements: PostgreSQL then parses and plans
// the query once per connection instead of on every request. Measured with
// pgbench on account_details' statements (2 cores, 16 clients): 4,380 tps
// in simple and 3,730 in unnamed extended protocol (what lib/pq does for a
// query with parameters), 14,034 prepared; planning the JSON aggregate was
// most of the statement's cost.
//
// query must be a constant (one of a few fixed texts): each distinct text
// stays prepared on every connection of the pool until the pool closes, so
// a query built from input would grow without bound. database/sql prepares
// it lazily on each connection and, inside a transaction, reuses the
// connection's prepared statement (sql.Tx.StmtContext).
//
// Three things prepared statements change, handled or stated:
//   - a migration that changes the result type of a prepared query (a
//     column's type) makes PostgreSQL refuse the next execution with
//     "cached plan must not change result type" (SQLSTATE 0A000);
//   - a statement the server no longer has (DEALLOCATE ALL or DISCARD ALL
//     on the connection, a pooler's reset query, a pooler that moved the
//     session to another server connection) fails with "prepared statement
//     does not exist" (SQLSTATE 26000), and would on every later call on
//     that connection, since database/sql keeps using its name there;
//   - a pooler in transaction mode must support prepared statements
//     (PgBouncer 1.21 or later with max_prepared_statements set), or the
//     statements collide and run with another client's parameters: unless
//     the pool was opened with PoolerNone or PoolerTransactionPrepared
//     (EMI_DB_POOLER), getPrepared prepares nothing and runs the query as
//     every other statement runs (see Pooler).
//
// On either error getPrepared forgets the statement (the next call
// prepares it again, under a new name) and, on the pool, runs the query
// unprepared once. Inside a transaction it cannot: the failed execution
// aborted the transaction, so every later statement in it would fail with
// "current transaction is aborted" (SQLSTATE 25P02), which is what the old
// fallback ran into. There it returns an error InTx retries (see
// retryable), and the transaction runs again from the start with the
// statement prepared afresh.
func (db *DB) getPrepared(ctx context.Context, dest any, query string, args ...any) error {
	if ambient(ctx) == nil && readOnlyStatement(query) {
		if r := db.reader(ctx); r != nil {
			return sqlx.GetContext(ctx, routedExt{primary: db.DB, replica: r}, dest, query, args...)
		}
	}
	if !db.pooler.Prepares() {
		return sqlx.GetContext(ctx, db.primaryExt(ctx), dest, query, args...)
	}
	st, err := db.prepared(ctx, query)
	if err != nil {
		return err
	}
	run := st
	if a := ambient(ctx); a != nil {
		run = a.tx.StmtxContext(ctx, st)
	}
	err = run.GetContext(ctx, dest, args...)
	if !isStalePrepared(err) {
		return err
	}
	db.forget(query, st)
	if ambient(ctx) != nil {
		return stalePreparedError{err}
	}
	return sqlx.GetContext(ctx, db.DB, dest, query, args...)
}

// queryPrepared is QueryContext on the pool (never in a transaction) for a
// constant query, prepared as getPrepared explains.
func (db *DB) queryPrepared(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if !db.pooler.Prepares() {
		return db.QueryContext(ctx, query, args...)
	}
	st, err := db.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, args...)
	if isStalePrepared(err) {
		db.forget(query, st)
		return db.QueryContext(ctx, query, args...)
	}
	return rows, err
}

// forget drops the pool's prepared statement for query, unless another
// goroutine has already replaced it with a fresh one (which must stay).
// The statement is not closed: calls that loaded it a moment ago may still
// be running on it, and database/sql refuses a closed statement; it costs
// one stale server-side statement per connection it was prepared on, until
// that connection closes, once per schema change or reset.
func (db *DB) forget(query string, st *sqlx.Stmt) {
	db.stmts.CompareAndDelete(query, st)
}

// prepared returns the pool's prepared statement for query, preparing it
// on first use.
func (db *DB) prepared(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if st, ok := db.stmts.Load(query); ok {
		return st.(*sqlx.Stmt), nil
	}
	st, err := db.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.stmts.LoadOrStore(query, st); loaded {
		_ = st.Close() // another goroutine prepared it first
		return prev.(*sqlx.Stmt), nil
	}
	return st, nil
}

// isStalePrepared reports the errors of a prepared statement the server
// cannot run any more: SQLSTATE 0A000, which PostgreSQL answers when the
// statement's result type changed under it, and 26000, when the statement
// is gone from the connection.
func isStalePrepared(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && (pe.Code == "0A000" || pe.Code == "26000")
}

// stalePreparedError is a stale prepared statement's error inside a
// transaction, which it aborted: InTx runs the transaction again
// (retryable), by then with the statement prepared again.
type stalePreparedError struct{ err error }

func (e stalePreparedError) Error() string { return "stale prepared statement: " + e.err.Error() }
func (e stalePreparedError) Unwrap() error { return e.err }

// withBinaryParameters returns dsn (a postgres:// URL or a key=value
// connection string) with lib/pq's binary_parameters=yes added, unless dsn
// already sets binary_parameters (to anything): the user's choice wins, and
// every other option is kept as written.
//
// Why: without it lib/pq runs each statement that has parameters in two round
// trips (parse and describe, then bind and execute); with it, in one (parse,
// bind, describe and execute sent together). The price is that lib/pq then
// sends every []byte parameter in binary format. That is right for bytea
// columns (sealed secrets, hashes, documents, stored bodies: they are passed
// as []byte and must stay so), but jsonb's binary format starts with a version
// byte, so JSON sent as []byte fails with "unsupported jsonb version number".
// JSON parameters are therefore always passed as text, through jsonText.
//
// A dsn that cannot be parsed is returned unchanged, so lib/pq reports the
// problem as it always did.
func withBinaryParameters(dsn string) string {
	const opt = "binary_parameters"
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn
		}
		if q, err := url.ParseQuery(u.RawQuery); err != nil || q.Has(opt) {
			return dsn
		}
		// Appended to the text as written, so the user's options keep their
		// order and escaping.
		base, fragment, hasFragment := strings.Cut(dsn, "#")
		switch {
		case u.RawQuery != "":
			base += "&" + opt + "=yes"
		case strings.HasSuffix(base, "?"):
			base += opt + "=yes"
		default:
			base += "?" + opt + "=yes"
		}
		if hasFragment {
			base += "#" + fragment
		}
		return base
	}
	keys, ok := dsnKeys(dsn)
	if !ok || keys[opt] {
		return dsn
	}
	if strings.TrimSpace(dsn) == "" {
		return opt + "=yes"
	}
	return dsn + " " + opt + "=yes"
}

// dsnKeys returns the keys of a key=value connection string, parsed as lib/pq
// parses it (values may be single-quoted, with backslash escapes); ok is false
// when the string is malformed.
func dsnKeys(dsn string) (keys map[string]bool, ok bool) {
	keys = map[string]bool{}
	s := []rune(dsn)
	i := 0
	skipSpaces := func() {
		for i < len(s) && unicode.IsSpace(s[i]) {
			i++
		}
	}
	for {
		skipSpaces()
		if i >= len(s) {
			return keys, true
		}
		start := i
		for i < len(s) && !unicode.IsSpace(s[i]) && s[i] != '=' {
			i++
		}
		key := string(s[start:i])
		skipSpaces()
		if i >= len(s) || s[i] != '=' || key == "" {
			return nil, false
		}
		i++ // '='
		keys[key] = true
		skipSpaces()
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return nil, false // unterminated quote
			}
			i++ // closing quote
			continue
		}
		for i < len(s) && !unicode.IsSpace(s[i]) {
			if s[i] == '\\' {
				i++
			}
			i++
		}
	}
}

// jsonText returns JSON for a json or jsonb parameter. It is passed as text
// (a string), never as []byte: with binary_parameters on (see Open) lib/pq
// sends []byte in binary format, which jsonb rejects. nil stays NULL.
func jsonText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

type txKey struct{}

type ambientTx struct {
	tx         *sqlx.Tx
	savepoints atomic.Int64
	// escalated is the first deadlock or serialization failure that left a
	// savepoint (see savepoint): the whole transaction must run again,
	// whatever the code between turned that error into.
	escalated atomic.Pointer[error]
	// committed are what AfterCommit registered, run once COMMIT
	// succeeded (a savepoint rolled back drops its own).
	mu        sync.Mutex
	committed []func()
}

// AfterCommit runs fn once the transaction of ctx has committed, or at once
// when ctx carries none. fn runs on the goroutine that committed, after
// COMMIT returned: it must be quick and must not fail the request (queue
// work, wake a worker). A transaction that rolls back, or a savepoint of it
// that rolls back, never runs what was registered in it; an attempt that
// InTx runs again starts with none.
func (db *DB) AfterCommit(ctx context.Context, fn func()) {
	a := ambient(ctx)
	if a == nil {
		fn()
		return
	}
	a.mu.Lock()
	a.committed = append(a.committed, fn)
	a.mu.Unlock()
}

// hooks returns how many functions are registered, for a savepoint to drop
// its own when it rolls back.
func (a *ambientTx) hooks() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.committed)
}

// dropHooks forgets the functions registered after the first n.
func (a *ambientTx) dropHooks(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.committed[n:])
	a.committed = a.committed[:n]
}

// Ext returns what a store method should run its statements on: the ambient
// transaction of ctx, or the pool.
//
// A read outside a transaction whose context tolerates lag
// (emi.WithLagTolerant) goes to a read replica within the lag bound, when there is
// one (see AddReplicas).
func (db *DB) Ext(ctx context.Context) sqlx.ExtContext {
	if a := ambient(ctx); a != nil {
		return a.tx
	}
	if r := db.reader(ctx); r != nil {
		return routedExt{primary: db.DB, replica: r}
	}
	return db.DB
}

// primaryExt is Ext without the replicas.
func (db *DB) primaryExt(ctx context.Context) sqlx.ExtContext {
	if a := ambient(ctx); a != nil {
		return a.tx
	}
	return db.DB
}

// TxAttempts bounds how many times InTx runs a top-level transaction that
// keeps failing with a deadlock, a serialization failure or a stale
// prepared statement. Between attempts it waits a random pause under an
// exponential bound (txBackoff), so transactions that collided do not
// collide again in step; under a saturated CPU the old five tries within
// 150 ms could all meet the same contention.
const TxAttempts = 10

// txBackoff is the bound of the pause after attempt n (0-based): 4 ms
// doubling up to 256 ms; the pause is uniform in [1 ms, bound]. Ten
// attempts wait about 0.6 s on average in all, well inside a request's
// deadline.
func txBackoff(n int) time.Duration {
	return time.Duration(4<<min(n, 6)) * time.Millisecond
}

// InTx runs fn in a transaction and commits when fn returns nil. When ctx
// already carries a transaction, fn runs inside a savepoint of it instead, so
// an error from fn undoes only fn's own changes.
//
// A top-level transaction that fails with a serialization failure, a
// deadlock or a stale prepared statement (see getPrepared) runs again, up to
// TxAttempts times with a random pause, so these never reach clients; fn
// must therefore be safe to run again. A deadlock inside a savepoint runs
// the whole top-level transaction again (see savepoint), even when the code
// in between turned the error into something else (an error answer the
// idempotency layer discards). When the attempts run out, or the request's
// deadline leaves no time for another, the error is emi.ErrUnavailable
// (503, nothing was changed), never an internal error.
//
// The outcome is reported as it is: an error from fn means nothing was
// committed, so a lost connection there is emi.ErrUnavailable; a lost
// connection during COMMIT is emi.ErrOutcomeUnknown.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if a := ambient(ctx); a != nil {
		return a.savepoint(ctx, fn)
	}
	var err error
	for attempt := 0; attempt < TxAttempts; attempt++ {
		err = db.runTx(ctx, fn)
		if !retryable(err) {
			return err
		}
		pause := time.Duration(1+rand.Int64N(int64(txBackoff(attempt)/time.Millisecond))) * time.Millisecond // #nosec G404 -- retry jitter, not a secret
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pause {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return emi.ErrUnavailable.Wrap(errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
	return emi.ErrUnavailable.WithDetail("transaction still failing after its retries").Wrap(err)
}

func (db *DB) runTx(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return Translate(fmt.Errorf("begin: %w", err))
	}
	a := &ambientTx{tx: tx}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(context.WithValue(ctx, txKey{}, a)); err != nil {
		if esc := a.escalated.Load(); esc != nil && !retryable(err) {
			return *esc
		}
		if errors.Is(err, emi.ErrOutcomeUnknown) {
			// The connection was lost inside the transaction: it never
			// committed, so nothing was changed.
			return emi.ErrUnavailable.Wrap(err)
		}
		return err
	}
	if err = tx.Commit(); err != nil {
		return commitError(ctx, err)
	}
	for _, fn := range a.committed {
		fn()
	}
	return nil
}

// commitError reports a failed COMMIT as what the client may conclude:
// database/sql refuses to send it once the request's context is done (it
// rolls the transaction back: nothing was changed); the server refusing it
// (a deferred constraint, a serialization failure) means it rolled back; a
// connection lost on the way (or a server that went away) leaves the outcome
// unknown.
func commitError(ctx context.Context, err error) error {
	err = fmt.Errorf("commit: %w", err)
	if errors.Is(err, sql.ErrTxDone) || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		return emi.ErrUnavailable.Wrap(err)
	}
	if retryable(err) {
		return err
	}
	var pe *pq.Error
	if errors.As(err, &pe) && !strings.HasPrefix(string(pe.Code), "08") && pe.Code != "57P01" && pe.Code != "57P02" {
		return Translate(err)
	}
	return emi.ErrOutcomeUnknown.Wrap(err)
}

// savepoint runs fn inside a savepoint of the ambient transaction. A stale
// prepared statement aborts only the statement that failed, so after
// rolling back to the savepoint fn runs again. A deadlock or a
// serialization failure is not retried here: the transaction still holds
// every lock it took before the savepoint, which is what the other
// transaction waits for, so a second try inside it meets the same cycle.
// The error is returned and remembered, and the top-level InTx runs the
// whole transaction again.
// (emi runs at READ COMMITTED, where serialization failures do not occur.)
func (a *ambientTx) savepoint(ctx context.Context, fn func(ctx context.Context) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = a.savepointOnce(ctx, fn)
		if !errors.As(err, new(stalePreparedError)) {
			break
		}
	}
	if retryable(err) {
		e := err
		a.escalated.CompareAndSwap(nil, &e)
	}
	return err
}

func (a *ambientTx) savepointOnce(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	name := "sp" + strconv.FormatInt(a.savepoints.Add(1), 10)
	if _, err := a.tx.ExecContext(ctx, "SAVEPOINT "+name); err != nil {
		return Translate(err)
	}
	hooks := a.hooks()
	defer func() {
		if p := recover(); p != nil {
			_, _ = a.tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT "+name)
			panic(p)
		}
	}()
	if err = fn(ctx); err != nil {
		a.dropHooks(hooks)
		if _, rerr := a.tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT "+name); rerr != nil {
			return errors.Join(err, Translate(rerr))
		}
		return err
	}
	if _, err := a.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+name); err != nil {
		return Translate(err)
	}
	return nil
}

// InTransaction reports whether ctx carries a transaction.
func InTransaction(ctx context.Context) bool { return ambient(ctx) != nil }

func ambient(ctx context.Context) *ambientTx {
	a, _ := ctx.Value(txKey{}).(*ambientTx)
	return a
}

// WithoutTx returns ctx without its ambient transaction, for statements that
// must commit on their own whatever happens to the surrounding transaction
// (the replay guard, for one).
func WithoutTx(ctx context.Context) context.Context {
	if !InTransaction(ctx) {
		return ctx
	}
	return context.WithValue(ctx, txKey{}, (*ambientTx)(nil))
}

// PostgreSQL error codes we translate.
const (
	pgUniqueViolation      = "23505"
	pgForeignKeyViolation  = "23503"
	pgCheckViolation       = "23514"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
)

func retryable(err error) bool {
	if errors.As(err, new(stalePreparedError)) {
		return true
	}
	var pe *pq.Error
	if errors.As(err, &pe) {
		return pe.Code == pgSerializationFailure || pe.Code == pgDeadlockDetected
	}
	return false
}

// Translate turns a database error into a catalogue error: no rows becomes
// nil-safe not-found handling at the call site (it is returned unchanged so
// callers can map it to their own not-found error with NotFound), a unique
// violation becomes ErrNonUniqueValue, anything else an internal error that
// wraps the original for the logs. Serialization failures and deadlocks are
// kept as they are so InTx can retry them.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	var ee *emi.Error
	if errors.As(err, &ee) || errors.Is(err, sql.ErrNoRows) || retryable(err) {
		return err
	}
	var pe *pq.Error
	if errors.As(err, &pe) && pe.Code == pgUniqueViolation {
		return emi.ErrNonUniqueValue.Wrap(err)
	}
	return emi.Internal(err)
}

// NotFound maps sql.ErrNoRows to notFound and translates anything else.
func NotFound(err error, notFound *emi.Error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return notFound
	}
	return Translate(err)
}

// UniqueViolation reports whether err is a unique violation of the named
// constraint (or of any constraint when constraint is "").
func UniqueViolation(err error, constraint string) bool {
	var pe *pq.Error
	if !errors.As(err, &pe) || pe.Code != pgUniqueViolation {
		return false
	}
	return constraint == "" || pe.Constraint == constraint
}

// validUUID reports whether s is a syntactically valid UUID, so that a
// malformed token in a path is "not found" instead of a database error.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

func nullDate(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullUUID(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// escapeLike escapes LIKE wildcards so a search for "50%" means 50%.
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

func nullInt(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: v != 0} }

func nullString(v string) sql.NullString { return sql.NullString{String: v, Valid: v != ""} }
