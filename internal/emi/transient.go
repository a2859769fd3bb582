package emi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
)

// The two answers for a request the service could not finish for a reason
// that is neither the client's fault nor a bug: the database was
// briefly unreachable, every connection stayed busy past the wait, a lock
// stayed contended after the transaction was retried, the server shed load.
// Both are HTTP 503 with Retry-After; they differ in what the client knows.
var (
	// ErrUnavailable: nothing was changed; the same request may be sent
	// again after Retry-After.
	ErrUnavailable = def(10503, "services.general.unavailable", KindUnavailable)
	// ErrOutcomeUnknown: the connection to the database was lost while the
	// change was being committed (or while a single-statement write ran),
	// so it may or may not have been made. The client retries with the
	// same Idempotency-Key (the stored answer comes back if it was made) or
	// reads the resource before acting again; never "nothing was changed".
	ErrOutcomeUnknown = def(10504, "services.general.outcome_unknown", KindUnavailable)
)

// sqlState is what lib/pq's *pq.Error (and pgx's) answer: the SQLSTATE, read
// here without importing a driver.
type sqlState interface{ SQLState() string }

// Transient classifies an error that is not a catalogue error: ErrUnavailable
// or ErrOutcomeUnknown (wrapping err, for the logs) when err is an overload
// or an outage of the database, nil when it is anything else (a bug, an
// internal error). Internal and AsError use it, so every surface answers
// 503 for these, wherever the error was wrapped.
//
// ErrOutcomeUnknown is for a connection lost after a statement was sent
// (reset, EOF, the server terminated the session); a statement that never
// reached the server (refused connection, too many clients, the server
// starting or in recovery, the pool wait past the deadline) or that the
// server refused as a whole (lock or statement timeout, a deadlock or a
// serialization failure left after the retries, a read-only standby) is
// ErrUnavailable. Inside a transaction a lost connection means the
// transaction never committed, and the transaction runner says so
// (postgres.DB.InTx); at COMMIT it is unknown.
func Transient(err error) *Error {
	if err == nil {
		return nil
	}
	var s sqlState
	if errors.As(err, &s) {
		switch code := s.SQLState(); {
		case code == "08001", code == "08004": // cannot connect, server rejected the connection
			return ErrUnavailable.Wrap(err)
		case code == "08007": // transaction resolution unknown
			return ErrOutcomeUnknown.Wrap(err)
		case len(code) == 5 && code[:2] == "08": // connection exception
			return ErrOutcomeUnknown.Wrap(err)
		case code == "57P01", code == "57P02": // admin or crash shutdown: the session was terminated
			return ErrOutcomeUnknown.Wrap(err)
		case code == "57P03", // cannot connect now (starting, in recovery)
			code == "57014",                  // query canceled: statement timeout or the request's deadline
			code == "55P03",                  // lock not available: lock timeout
			code == "40001", code == "40P01", // serialization failure, deadlock: left after the retries
			code == "25006": // read-only transaction: a standby, or a primary being demoted
			return ErrUnavailable.Wrap(err)
		case len(code) == 5 && code[:2] == "53": // insufficient resources: too many connections, out of memory, disk full
			return ErrUnavailable.Wrap(err)
		}
		return nil
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// The request's own deadline passed while it waited for a
		// connection or a statement; the statement was cancelled.
		return ErrUnavailable.Wrap(err)
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		// database/sql surfaces ErrBadConn only when nothing was sent
		// (it retries those itself).
		return ErrUnavailable.Wrap(err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrUnavailable.Wrap(err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return ErrOutcomeUnknown.Wrap(err)
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		if ne.Op == "dial" {
			return ErrUnavailable.Wrap(err)
		}
		return ErrOutcomeUnknown.Wrap(err)
	}
	return nil
}
