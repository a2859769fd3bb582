package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Pooler says what stands between emi and PostgreSQL (EMI_DB_POOLER), and so
// which protocol features are safe on the connections of a pool.
//
// A transaction-mode pooler (PgBouncer pool_mode=transaction, the pooler of
// most managed PostgreSQL offers) gives a client's connection a server
// connection for one transaction at a time. Everything a statement leaves on
// the server connection outside a transaction then belongs to whichever
// client gets that server connection next:
//
//   - a named prepared statement (lib/pq names them "1", "2", … per client
//     connection): another client's statement "1" runs with this client's
//     parameters, or "already exists" (42P05), or "does not exist" (26000);
//   - an unnamed statement parsed in one round trip and bound in the next
//     (lib/pq without binary_parameters): the bind can reach another server
//     connection, whose unnamed statement is someone else's;
//   - LISTEN: the notifications go to a server connection nobody listens on.
//
// All three were seen through PgBouncer 1.18. Under PoolerTransaction emi
// sends each statement with parameters as one message batch (parse, bind,
// describe, execute, sync: lib/pq's binary_parameters, which Open insists
// on), prepares nothing, and never LISTENs through the pool (the listeners
// need EMI_LISTEN_DATABASE_URL, a direct connection).
type Pooler string

const (
	// PoolerTransaction: a transaction-mode pooler that does not keep
	// prepared statements. The default, because it is right whatever
	// stands in front of PostgreSQL: on a direct connection it only gives
	// up the prepared fast path of the hot reads.
	PoolerTransaction Pooler = "transaction"
	// PoolerNone: a direct connection, or a session-mode pooler (one
	// server connection per client connection for its whole life). The
	// hot reads run as prepared statements (see getPrepared).
	PoolerNone Pooler = "none"
	// PoolerTransactionPrepared: a transaction-mode pooler that tracks
	// protocol-level prepared statements itself and prepares them on
	// whichever server connection it hands out (PgBouncer 1.21 or later
	// with max_prepared_statements > 0). Prepared statements are safe;
	// LISTEN still is not.
	PoolerTransactionPrepared Pooler = "transaction-prepared"
)

// Poolers lists the values EMI_DB_POOLER takes.
var Poolers = []Pooler{PoolerTransaction, PoolerNone, PoolerTransactionPrepared}

// ParsePooler reads an EMI_DB_POOLER value ("" is the default).
func ParsePooler(v string) (Pooler, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return PoolerTransaction, nil
	}
	if v == "session" || v == "direct" {
		return PoolerNone, nil
	}
	for _, p := range Poolers {
		if string(p) == v {
			return p, nil
		}
	}
	return "", fmt.Errorf("must be one of transaction, none (or session, direct), transaction-prepared")
}

// Prepares reports whether the pool may use server-side prepared
// statements.
func (p Pooler) Prepares() bool { return p == PoolerNone || p == PoolerTransactionPrepared }

// Listens reports whether LISTEN works on the pool's connections.
func (p Pooler) Listens() bool { return p == PoolerNone }

// Options configure a pool (OpenWith).
type Options struct {
	// Pooler is what stands in front of the database ("": PoolerNone, for
	// the tools and tests that connect directly; emi serve passes
	// EMI_DB_POOLER, whose default is PoolerTransaction).
	Pooler Pooler
	// MaxOpen is the pool's size (0: MaxOpenConns).
	MaxOpen int
}

// OpenWith connects to dsn as opts say, checks the connection and sizes
// the pool. Returns an error naming the problem when the database does not
// answer, or when dsn turns off binary_parameters behind a transaction-mode
// pooler (each statement would then take two round trips that the pooler
// may send to two server connections).
func OpenWith(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if opts.Pooler == "" {
		opts.Pooler = PoolerNone
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = MaxOpenConns
	}
	dsn, err := NormalizeURL(dsn)
	if err != nil {
		return nil, err
	}
	dsn = withBinaryParameters(dsn)
	if opts.Pooler != PoolerNone && !binaryParametersOn(dsn) {
		return nil, fmt.Errorf("DATABASE_URL sets binary_parameters off, which is unsafe behind a %s pooler (EMI_DB_POOLER): remove it", opts.Pooler)
	}
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(opts.MaxOpen)
	db.SetMaxIdleConns(opts.MaxOpen)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &DB{DB: db, pooler: opts.Pooler}, nil
}

// Pooler returns what the pool was opened for.
func (db *DB) Pooler() Pooler { return db.pooler }

// binaryParametersOn reports whether a dsn that went through
// withBinaryParameters leaves lib/pq's binary_parameters on.
func binaryParametersOn(dsn string) bool {
	var v string
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return false
		}
		v = u.Query().Get("binary_parameters")
	} else {
		for _, f := range strings.Fields(dsn) {
			if k, val, ok := strings.Cut(f, "="); ok && strings.TrimSpace(k) == "binary_parameters" {
				v = strings.Trim(val, `'`)
			}
		}
	}
	switch strings.ToLower(v) {
	case "yes", "on", "true", "1":
		return true
	}
	return false
}

// NormalizeURL rewrites a postgres:// URL that names several hosts in its
// authority, the form most people write ("postgres://u@h1:5432,h2:5433/db",
// as libpq takes it), into the form lib/pq reads: the hosts and ports as the
// host and port parameters ("postgres://u@/db?host=h1,h2&port=5432,5433"). A
// host without a port gets 5432 (or the port parameter's value when the URL
// also has one). Every other URL, and key=value strings, are returned as
// they are. The host list works with target_session_attrs=read-write: lib/pq
// tries the hosts in order and keeps the one that accepts writes, which is
// how a connection finds the new primary after a failover.
func NormalizeURL(dsn string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn, nil
	}
	scheme, rest, _ := strings.Cut(dsn, "://")
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	if !strings.Contains(hosts, ",") {
		return dsn, nil
	}
	u, err := url.Parse(scheme + "://" + userinfo + "placeholder" + tail)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	q := u.Query()
	if q.Has("host") {
		return "", fmt.Errorf("database URL: names hosts both before the path (%s) and in the host parameter: keep one", hosts)
	}
	defaultPort := "5432"
	if p := q.Get("port"); p != "" && !strings.Contains(p, ",") {
		defaultPort = p
	}
	var hs, ps []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return "", fmt.Errorf("database URL: an empty host in the list %q", hosts)
		}
		host, port := h, defaultPort
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			host, port = hh, pp
		} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			host = h[1 : len(h)-1]
		} else if strings.Contains(h, ":") {
			return "", fmt.Errorf("database URL: %q is not host:port", h)
		}
		hs, ps = append(hs, host), append(ps, port)
	}
	q.Set("host", strings.Join(hs, ","))
	q.Set("port", strings.Join(ps, ","))
	u.Host = ""
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// ErrReadOnly: the database answers but takes no writes (a standby in
// recovery, or default_transaction_read_only on).
var ErrReadOnly = errors.New("database is read-only (a standby, or default_transaction_read_only)")

// CheckWritable returns ErrReadOnly when the server the pool reaches
// would refuse writes: an instance pointed at a standby (or left on the
// old primary's address after a failover that demoted it) must fail its
// health check so a load balancer takes it out, rather than answer every
// call 503. Other errors are the database's.
func (db *DB) CheckWritable(ctx context.Context) error {
	var recovery bool
	var readOnly string
	if err := db.QueryRowContext(ctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only')`).Scan(&recovery, &readOnly); err != nil {
		return Translate(err)
	}
	if recovery || readOnly == "on" {
		return ErrReadOnly
	}
	return nil
}
