package kernel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
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
	// ID is the stored row's id: the body is sealed bound to it.
	ID          string
	Fingerprint []byte
	Status      int
	Headers     map[string]string
	Body        []byte
	// BodySealed tells that Body is sealed (the store's side); Do hands
	// out and takes bodies in clear.
	BodySealed bool
	CreatedAt  time.Time
}

// IdempotencyBodyContext binds a stored response's sealed body to its row
// (a stored answer may carry the hosted KYC page's capability URL and
// personal data for 24 hours).
func IdempotencyBodyContext(id string) string { return "idempotency_keys.body:" + id }

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
	keys  IdempotencyKeys
	now   Clock
}

// IdempotencyKeys computes the request fingerprints and seals the stored
// bodies (internal/seal.Keyring).
type IdempotencyKeys interface {
	LookupKeys
	Sealer
}

// LookupKeys computes keyed digests (internal/seal.Keyring): under the
// current key, and under every loaded key during a rotation.
type LookupKeys interface {
	Lookup(context string, value []byte) []byte
	LookupAll(context string, value []byte) [][]byte
}

// IdempotencyDeps is what Idempotency needs; NewIdempotency checks that none is nil.
type IdempotencyDeps struct {
	Tx    TxRunner
	Store IdempotencyStore
	Keys  IdempotencyKeys
	Now   Clock
}

// NewIdempotency returns the idempotency service.
func NewIdempotency(d IdempotencyDeps) *Idempotency {
	MustHave("Idempotency", d)
	return &Idempotency{tx: d.Tx, store: d.Store, keys: d.Keys, now: d.Now}
}

// fingerprintContext is the Lookup context of request fingerprints.
const fingerprintContext = "idempotency.fingerprint"

// Fingerprints identify a request for the "same body" comparison: a keyed
// digest (HMAC-SHA256 under the master key's lookup key) of the method, the
// path and the exact body bytes, under the current key first and then
// under each previous key (so a retry spanning a key rotation still
// matches). Keyed, not a plain hash: a body may carry a PIN (card_create,
// sandbox_card_authorize) whose few possible values a plain stored hash
// would give away to anyone who can read the table.
func (s *Idempotency) Fingerprints(method, path string, body []byte) [][]byte {
	msg := make([]byte, 0, len(method)+len(path)+2+len(body))
	msg = append(append(append(append(append(msg, method...), 0), path...), 0), body...)
	return s.keys.LookupAll(fingerprintContext, msg)
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
func (s *Idempotency) Do(ctx context.Context, partnerID, key string, fingerprints [][]byte,
	guard func(ctx context.Context) error,
	run func(ctx context.Context) StoredResponse,
) (resp StoredResponse, replayed bool, err error) {
	if len(fingerprints) == 0 {
		return StoredResponse{}, false, emi.Internal(errors.New("idempotency: no fingerprint (no master key loaded)"))
	}
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
			if !slices.ContainsFunc(fingerprints, func(f []byte) bool { return bytes.Equal(f, stored.Fingerprint) }) {
				return emi.ErrIdempotencyConflict.WithDetail("key reused with another request")
			}
			if stored.BodySealed {
				body, err := s.keys.Open(stored.Body, IdempotencyBodyContext(stored.ID))
				if err != nil {
					return emi.Internal(fmt.Errorf("idempotency: stored body does not open: %w", err))
				}
				stored.Body, stored.BodySealed = body, false
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
		resp.Fingerprint, resp.CreatedAt = fingerprints[0], now
		save := resp
		save.ID = NewToken()
		if save.Body, err = s.keys.Seal(resp.Body, IdempotencyBodyContext(save.ID)); err != nil {
			return emi.Internal(err)
		}
		save.BodySealed = true
		return s.store.SaveResponse(ctx, partnerID, key, save)
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
