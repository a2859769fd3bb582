package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// mixups runs the hot-path statement kinds the stores use (getPrepared, as
// account_details and card_details do; plain parameterised reads and
// writes; a transaction) from many goroutines at once, each with its own
// statement text and parameters, and counts the answers that are not its
// own and the errors. Through a transaction pooler with fewer server
// connections than clients, a statement parsed for one client and run for
// another shows as either. With untilHarm, every client stops at its next
// round once one answer was wrong or failed: the run only has to show the
// hazard, not measure it.
func mixups(t *testing.T, db *postgres.DB, untilHarm bool) (wrong, failed int64, firstErr error) {
	t.Helper()
	const clients, rounds = 24, 60
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			ctx := context.Background()
			// A text per client: prepared statements of different texts
			// under the same per-connection names ("1", "2", …).
			q := fmt.Sprintf(`SELECT $1::bigint * 1000 + %d AS v`, c)
			for r := range rounds {
				if untilHarm && atomic.LoadInt64(&wrong)+atomic.LoadInt64(&failed) > 0 {
					return
				}
				want := int64(r)*1000 + int64(c)
				var got int64
				var err error
				switch r % 3 {
				case 0:
					err = postgres.GetPrepared(ctx, db, &got, q, r)
				case 1:
					err = db.GetContext(ctx, &got, q, r)
				default:
					err = db.InTx(ctx, func(ctx context.Context) error {
						return postgres.GetPrepared(ctx, db, &got, q, r)
					})
				}
				if err != nil {
					atomic.AddInt64(&failed, 1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				if got != want {
					atomic.AddInt64(&wrong, 1)
				}
			}
		})
	}
	wg.Wait()
	return wrong, failed, firstErr
}

// TestNoStatementRunsWithAnotherClientsParametersBehindATransactionPooler:
// through PgBouncer in transaction mode (10 server connections, 24
// clients), with EMI_DB_POOLER's default every statement answers its own
// client with its own parameters, and none fails. Before, the hot reads
// were always prepared: the same run through the same PgBouncer gets errors
// (42P05 "prepared statement already exists", 26000 "does not exist",
// 08P01) and answers computed from another client's statement, which the
// second half shows (it is the measurement that makes the first half mean
// something; PoolerNone is what the code did whatever stood in front). The
// second half ends at the first harm: a client whose reply went to another
// client waits for ever, and the pooler then parks the others for its
// query_wait_timeout (120 s; three such waits made this test take six
// minutes inside the suite), so its connections give up on a silent server
// after a few seconds.
func TestNoStatementRunsWithAnotherClientsParametersBehindATransactionPooler(t *testing.T) {
	t.Parallel()
	u := pgtest.ThroughPooler(t, pgtest.URL(t))
	ctx := context.Background()

	safe, err := postgres.OpenWith(ctx, u, postgres.Options{Pooler: postgres.PoolerTransaction})
	if err != nil {
		t.Fatal(err)
	}
	defer safe.Close()
	start := time.Now()
	wrong, failed, first := mixups(t, safe, false)
	t.Logf("EMI_DB_POOLER=transaction through PgBouncer: %v", time.Since(start))
	if wrong != 0 || failed != 0 {
		t.Fatalf("EMI_DB_POOLER=transaction through PgBouncer: %d answers of another client's statement, %d errors (first: %v)", wrong, failed, first)
	}

	old := hazardPool(t, u)
	start = time.Now()
	wrong, failed, first = mixups(t, old, true)
	t.Logf("%v: the same run with statements prepared (the old code, EMI_DB_POOLER=none) through PgBouncer: %d wrong answers, %d errors (first: %v)", time.Since(start), wrong, failed, first)
	if wrong+failed == 0 {
		t.Fatal("prepared statements through a transaction pooler went unharmed: this test no longer shows the hazard it guards against")
	}
}

// hazardPool opens u as OpenWith(…, PoolerNone) would, on connections that
// fail a read or write the server leaves unanswered for 3 s: the prepared
// statements through a transaction pooler leave some clients waiting for a
// reply that another client took.
func hazardPool(t *testing.T, u string) *postgres.DB {
	t.Helper()
	dsn, err := postgres.NormalizeURL(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pq.NewConnector(postgres.WithBinaryParameters(dsn))
	if err != nil {
		t.Fatal(err)
	}
	c.Dialer(silenceDialer{idle: 3 * time.Second})
	db := sqlx.NewDb(sql.OpenDB(c), "postgres")
	db.SetMaxOpenConns(postgres.MaxOpenConns)
	db.SetMaxIdleConns(postgres.MaxOpenConns)
	t.Cleanup(func() { _ = db.Close() })
	return postgres.OverPool(db, postgres.PoolerNone)
}

// silenceDialer's connections fail an I/O that waits longer than idle.
type silenceDialer struct{ idle time.Duration }

func (d silenceDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialTimeout(network, address, 0)
}

func (d silenceDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return silenceConn{Conn: c, idle: d.idle}, nil
}

type silenceConn struct {
	net.Conn
	idle time.Duration
}

func (c silenceConn) Read(p []byte) (int, error) {
	if err := c.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c silenceConn) Write(p []byte) (int, error) {
	if err := c.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// TestOpenRefusesBinaryParametersOffBehindAPooler: without
// binary_parameters lib/pq parses in one round trip and binds in the
// next, which a transaction pooler may send to two server connections.
func TestOpenRefusesBinaryParametersOffBehindAPooler(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t) + "&binary_parameters=no"
	if _, err := postgres.OpenWith(context.Background(), u, postgres.Options{Pooler: postgres.PoolerTransaction}); err == nil {
		t.Fatal("binary_parameters=no accepted behind a transaction pooler")
	}
	db, err := postgres.OpenWith(context.Background(), u, postgres.Options{Pooler: postgres.PoolerNone})
	if err != nil {
		t.Fatalf("a direct connection may turn it off: %v", err)
	}
	_ = db.Close()
}
