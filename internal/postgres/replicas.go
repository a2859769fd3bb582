package postgres

import (
	"context"
	"database/sql"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// Read replicas (EMI_READ_DATABASE_URL), to take reads off the primary. A
// read may go to a replica only when its context says it tolerates a
// bounded lag (emi.WithLagTolerant) and it runs outside a transaction: Ext
// then picks a replica whose replay lag, measured on the replica, is within
// the bound, and the primary otherwise. Everything else (every write, every
// transaction, every read whose context says nothing) reads the primary.
//
// The lag is measured from the replica, as PostgreSQL's documentation
// suggests: 0 when it has replayed everything it received, otherwise the
// age of the last transaction it replayed. A replica that does not answer
// within a second, or that is not in recovery any more (promoted: it takes
// writes and is nobody's replica), is not used until a later check says
// otherwise. Checks run at most every replicaCheckEvery, on demand.

// replicaOK: the reads of ctx tolerate the replicas' lag bound
// (emi.WithLagTolerant).
func replicaOK(ctx context.Context) bool { return emi.LagTolerant(ctx) }

// replicaCheckEvery is how long a lag measurement is trusted.
const replicaCheckEvery = 500 * time.Millisecond

// replica is one read replica's pool and its last measured lag.
type replica struct {
	db *sqlx.DB
	mu sync.Mutex
	// checked is when lag and usable were measured; usable: it answered,
	// is in recovery and its lag is within the bound.
	checked time.Time
	lag     time.Duration
	usable  bool
}

// ReplicaStats count the reads that tolerated lag, by where they went.
type ReplicaStats struct {
	Replica, Primary int64
}

// replicas is the DB's set of read replicas.
type replicas struct {
	list          []*replica
	maxLag        time.Duration
	next          atomic.Int64
	served, spent atomic.Int64 // reads sent to a replica / to the primary instead
}

// AddReplicas opens a pool on each replica URL (with the primary's pooler
// options) for the reads that tolerate maxLag (see ReplicaReads). The
// replicas need not answer now: a replica down is simply not used.
// Call it once, before the DB is used.
func (db *DB) AddReplicas(urls []string, maxLag time.Duration) error {
	if len(urls) == 0 {
		return nil
	}
	rs := &replicas{maxLag: maxLag}
	for _, u := range urls {
		u, err := NormalizeURL(u)
		if err != nil {
			return err
		}
		x, err := sqlx.Open("postgres", withBinaryParameters(u))
		if err != nil {
			return err
		}
		x.SetMaxOpenConns(MaxOpenConns)
		x.SetMaxIdleConns(MaxOpenConns)
		x.SetConnMaxIdleTime(5 * time.Minute)
		rs.list = append(rs.list, &replica{db: x})
	}
	db.replicas = rs
	return nil
}

// ReplicaStats returns how many lag-tolerant reads went to a replica and
// how many to the primary (no replica within the bound, or none at all).
func (db *DB) ReplicaStats() ReplicaStats {
	if db.replicas == nil {
		return ReplicaStats{}
	}
	return ReplicaStats{Replica: db.replicas.served.Load(), Primary: db.replicas.spent.Load()}
}

// closeReplicas closes the replicas' pools.
func (db *DB) closeReplicas() {
	if db.replicas == nil {
		return
	}
	for _, r := range db.replicas.list {
		_ = r.db.Close()
	}
}

// Close closes the primary's pool and the replicas'.
func (db *DB) Close() error {
	db.closeReplicas()
	return db.DB.Close()
}

// ReadPool is the pool a read-only transaction of ctx should begin on: a
// replica within the bound when ctx tolerates lag (emi.WithLagTolerant),
// the primary's otherwise. For reads that need one snapshot across several
// statements (ledger verify).
func (db *DB) ReadPool(ctx context.Context) *sqlx.DB {
	if ambient(ctx) == nil {
		if r := db.reader(ctx); r != nil {
			return r.db
		}
	}
	return db.DB
}

// reader returns a replica for a lag-tolerant read of ctx, or nil for the
// primary.
func (db *DB) reader(ctx context.Context) *replica {
	rs := db.replicas
	if rs == nil || !replicaOK(ctx) {
		return nil
	}
	n := int64(len(rs.list))
	start := rs.next.Add(1) % n
	for i := range n {
		r := rs.list[(start+i)%n]
		if r.fresh(ctx, rs.maxLag) {
			rs.served.Add(1)
			return r
		}
	}
	rs.spent.Add(1)
	return nil
}

// fresh reports whether r may serve a read: measured within
// replicaCheckEvery, or measured now (one caller measures, the others
// wait for its answer under the mutex).
func (r *replica) fresh(ctx context.Context, maxLag time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < replicaCheckEvery {
		return r.usable
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	var recovery bool
	var lag sql.NullFloat64
	// Caught up with what it received counts as no lag only while it is
	// receiving: a replica cut off from its primary has replayed all it
	// got and falls behind without knowing it.
	err := r.db.QueryRowContext(cctx, `SELECT pg_is_in_recovery(),
		CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
		      AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming') THEN 0
		     ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END`).Scan(&recovery, &lag)
	r.checked = time.Now()
	r.lag = time.Duration(lag.Float64 * float64(time.Second))
	r.usable = err == nil && recovery && lag.Valid && r.lag <= maxLag
	return r.usable
}

// routedExt runs the reads of a lag-tolerant context on a replica and
// everything else on the primary: a page that records something while it
// reads (an audit row of a view, a counter) must not send its write to a
// server that refuses writes.
//
// A read the replica cannot serve because it is out of reach (it went down
// since its last check) runs again on the primary, and the replica is
// checked again before its next use.
type routedExt struct {
	primary *sqlx.DB
	replica *replica
}

func (e routedExt) pick(query string) *sqlx.DB {
	if readOnlyStatement(query) {
		return e.replica.db
	}
	return e.primary
}

// unreachable reports whether err says the replica is out of reach, and
// then makes it be checked again before its next use.
func (e routedExt) unreachable(err error) bool {
	// Any transient failure: a read is safe to run again, even one whose
	// connection broke after it was sent.
	if err == nil || emi.Transient(err) == nil {
		return false
	}
	e.replica.mu.Lock()
	e.replica.checked, e.replica.usable = time.Time{}, false
	e.replica.mu.Unlock()
	return true
}

func (e routedExt) DriverName() string     { return e.primary.DriverName() }
func (e routedExt) Rebind(q string) string { return e.primary.Rebind(q) }
func (e routedExt) BindNamed(q string, arg any) (string, []any, error) {
	return e.primary.BindNamed(q, arg)
}
func (e routedExt) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := e.pick(query).QueryContext(ctx, query, args...)
	if e.pick(query) != e.primary && e.unreachable(err) {
		return e.primary.QueryContext(ctx, query, args...)
	}
	return rows, err
}
func (e routedExt) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	rows, err := e.pick(query).QueryxContext(ctx, query, args...)
	if e.pick(query) != e.primary && e.unreachable(err) {
		return e.primary.QueryxContext(ctx, query, args...)
	}
	return rows, err
}
func (e routedExt) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	row := e.pick(query).QueryRowxContext(ctx, query, args...)
	if e.pick(query) != e.primary && e.unreachable(row.Err()) {
		return e.primary.QueryRowxContext(ctx, query, args...)
	}
	return row
}
func (e routedExt) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return e.primary.ExecContext(ctx, query, args...)
}

// writeWords are what makes a statement more than a plain read: a
// data-modifying statement (also inside WITH), a row lock, a sequence, a
// notification, an advisory lock.
var writeWords = regexp.MustCompile(`(?i)\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|FOR\s+(NO\s+KEY\s+)?UPDATE|FOR\s+(KEY\s+)?SHARE|NEXTVAL|SETVAL|PG_NOTIFY|PG_ADVISORY\w*|PG_TRY_ADVISORY\w*)\b`)

// readOnlyStatement reports whether query is a plain read a replica can
// run: it starts with SELECT, WITH, VALUES or TABLE and holds none of
// writeWords.
func readOnlyStatement(query string) bool {
	fields := strings.Fields(strings.TrimLeft(query, " \t\r\n("))
	if len(fields) == 0 {
		return false
	}
	switch strings.ToUpper(strings.TrimLeft(fields[0], "(")) {
	case "SELECT", "WITH", "VALUES", "TABLE":
	default:
		return false
	}
	return !writeWords.MatchString(query)
}
