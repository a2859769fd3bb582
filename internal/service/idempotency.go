package service

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"emi/internal/emi"
)

// IdempotencyStore keeps stored responses per (partner, key).
type IdempotencyStore interface {
	// TryLockIdempotencyKey takes a transaction-scoped lock on (partner,
	// key) without waiting; false means another request holds it.
	TryLockIdempotencyKey(ctx context.Context, partnerID, key string) (bool, error)
	// StoredResponse returns the response stored for (partner, key) no
	// earlier than since, or ok=false.
	StoredResponse(ctx context.Context, partnerID, key string, since time.Time) (resp StoredResponse, ok bool, err error)
	// SaveResponse stores resp, replacing an expired row for the same key.
	SaveResponse(ctx context.Context, partnerID, key string, resp StoredResponse) error
	// PruneIdempotencyKeys deletes rows created before the cutoff.
	PruneIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)
}

// StoredResponse is a response kept for replay, byte for byte.
type StoredResponse struct {
	Fingerprint []byte
	Status      int
	Headers     map[string]string
	Body        []byte
	CreatedAt   time.Time
}

// IdempotencyTTL is how long a stored response is replayed (contract §5).
const IdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKeyLen is the longest Idempotency-Key accepted.
const MaxIdempotencyKeyLen = 255

// Idempotency implements the Idempotency-Key protocol of contract §5.
//
// The request runs inside one transaction that also stores its response, so
// the response is stored if and only if the change committed: a process that
// dies after the commit but before answering leaves a stored response that
// the client's retry receives, and one that dies before leaves nothing, so
// the retry runs once. A transaction-scoped advisory lock on (partner, key)
// makes a concurrent duplicate fail fast with 10409 instead of waiting.
type Idempotency struct {
	tx    TxRunner
	store IdempotencyStore
	now   Clock
}

// NewIdempotency returns the idempotency service.
func NewIdempotency(tx TxRunner, store IdempotencyStore, now Clock) *Idempotency {
	return &Idempotency{tx: tx, store: store, now: now}
}

// Fingerprint identifies a request for the "same body" comparison: method,
// path and the exact body bytes.
func Fingerprint(method, path string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// errDiscard makes InTx roll back a run whose response must not be stored.
var errDiscard = errors.New("idempotency: discard")

// Do runs the request once per (partner, key). guard (the signature replay
// guard) runs first for a request that is not a replay of a stored response;
// run executes the request. Both get the transaction in their context, so the
// request needs one database connection however many stores take part (two
// connections per request could exhaust the pool under load and deadlock).
//
// Do returns the response to send and whether it is a replay of a stored one.
// A 5xx from run (or a panic) is not stored and its changes are rolled back,
// so the client may retry; the guard is then recorded again on its own, once
// the transaction is gone, so that the signature stays single-use. Returns
// emi.ErrIdempotencyConflict when the key is in use by a running request or
// was used with another fingerprint, and the error of guard when it refuses.
func (s *Idempotency) Do(ctx context.Context, partnerID, key string, fingerprint []byte,
	guard func(ctx context.Context) error,
	run func(ctx context.Context) StoredResponse,
) (resp StoredResponse, replayed bool, err error) {
	committed := false
	guarded := false
	defer func() {
		// The transaction rolled back after the guard passed (a 5xx or a
		// panic): record the signature outside it. Its result does not
		// matter: the request was already answered or is panicking.
		if guarded && !committed {
			_ = guard(ctx)
		}
	}()
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		committed, guarded, replayed = false, false, false
		ok, err := s.store.TryLockIdempotencyKey(ctx, partnerID, key)
		if err != nil {
			return err
		}
		if !ok {
			return emi.ErrIdempotencyConflict.WithDetail("key in flight")
		}
		now := s.now().UTC()
		stored, found, err := s.store.StoredResponse(ctx, partnerID, key, now.Add(-IdempotencyTTL))
		if err != nil {
			return err
		}
		if found {
			if string(stored.Fingerprint) != string(fingerprint) {
				return emi.ErrIdempotencyConflict.WithDetail("key reused with another request")
			}
			resp, replayed = stored, true
			return nil
		}
		if err := guard(ctx); err != nil {
			return err
		}
		guarded = true
		resp = run(ctx)
		if resp.Status >= 500 {
			return errDiscard
		}
		resp.Fingerprint, resp.CreatedAt = fingerprint, now
		return s.store.SaveResponse(ctx, partnerID, key, resp)
	})
	if errors.Is(err, errDiscard) {
		return resp, false, nil
	}
	if err != nil {
		return StoredResponse{}, false, err
	}
	committed = true
	return resp, replayed, nil
}

// Prune deletes stored responses older than the TTL and returns how many.
func (s *Idempotency) Prune(ctx context.Context) (int64, error) {
	return s.store.PruneIdempotencyKeys(ctx, s.now().UTC().Add(-IdempotencyTTL))
}
