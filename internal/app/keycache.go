package app

import (
	"context"
	"emi/internal/service/partners"
	"sync"
	"time"
)

// KeyCacheBound is the longest an instance may go on accepting a key after
// the change that revoked or rotated it committed: the cache serves an
// entry only while its listener has proved, within this bound, that it has
// seen every committed change (postgres.ListenPartnerKeys' heartbeats).
// 800 ms leaves room, inside the promised 1 s, for the heartbeat's own
// round trip and a request already past authentication.
const KeyCacheBound = 800 * time.Millisecond

// keyCacheMax is the most keys kept; past it the cache starts afresh (a
// flood of distinct valid keys is not a real load, and memory stays small).
const keyCacheMax = 100_000

// keyCache keeps partner API keys in memory, so that authenticating a
// request does not read partner_keys each time. It wraps the partner store:
// every method but PartnerKeyByAPIKey passes through, and the ones that
// change a key or a partner drop the cache of this process at once.
//
// Changes made by other processes (or by SQL) reach it through
// postgres.ListenPartnerKeys (LISTEN/NOTIFY on a trigger of partner_keys
// and partners), which calls the KeyChanges methods. Its guarantees:
//   - an entry is served only while the listener is confirmed (Confirmed
//     within KeyCacheBound): a change committed at time X is acted on
//     before a heartbeat sent after X is confirmed, so no entry outlives a
//     change by more than KeyCacheBound, disconnected listener or not;
//   - while the listener is down (Lost, or no confirmation) nothing is
//     served from or stored in the cache: every request reads the store;
//   - a load that started before an invalidation is not stored after it
//     (gen), so a row read just before a revocation commits cannot
//     repopulate the cache once the revocation has been seen.
//
// Only successful lookups are cached: an unknown key reads the store every
// time, as before (and a key created later needs no invalidation).
type keyCache struct {
	partners.PartnerStore
	now func() time.Time

	mu      sync.Mutex
	entries map[string]partners.StoredKey
	gen     uint64
	// liveUntil is when the last confirmation runs out; lostAt is when
	// the listener last reported its connection lost: confirmations of
	// heartbeats sent before it do not count.
	liveUntil, lostAt time.Time
	hits, misses      uint64
}

func newKeyCache(store partners.PartnerStore, now func() time.Time) *keyCache {
	if now == nil {
		now = time.Now
	}
	return &keyCache{PartnerStore: store, now: now, entries: map[string]partners.StoredKey{}}
}

// PartnerKeyByAPIKey returns the key from memory when the cache is live
// and holds it, and from the store otherwise. The StoredKey returned is
// shared: callers must not modify it (service.Auth only reads it).
func (c *keyCache) PartnerKeyByAPIKey(ctx context.Context, apiKey string) (partners.StoredKey, error) {
	c.mu.Lock()
	if c.liveLocked() {
		if k, ok := c.entries[apiKey]; ok {
			c.hits++
			c.mu.Unlock()
			return k, nil
		}
	} else if len(c.entries) > 0 {
		c.dropLocked()
	}
	gen := c.gen
	c.misses++
	c.mu.Unlock()

	k, err := c.PartnerStore.PartnerKeyByAPIKey(ctx, apiKey)
	if err != nil {
		return k, err
	}
	c.mu.Lock()
	if c.gen == gen && c.liveLocked() {
		if len(c.entries) >= keyCacheMax {
			clear(c.entries)
		}
		c.entries[apiKey] = k
	}
	c.mu.Unlock()
	return k, nil
}

func (c *keyCache) liveLocked() bool { return c.now().Before(c.liveUntil) }

// dropLocked empties the cache and makes every load under way stale.
func (c *keyCache) dropLocked() {
	clear(c.entries)
	c.gen++
}

// KeyChanged implements postgres.KeyChanges.
func (c *keyCache) KeyChanged(apiKey string) {
	c.mu.Lock()
	delete(c.entries, apiKey)
	c.gen++
	c.mu.Unlock()
}

// PartnerChanged implements postgres.KeyChanges: it drops the partner's
// keys, or every key for "".
func (c *keyCache) PartnerChanged(partnerID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if partnerID == "" {
		c.dropLocked()
		return
	}
	for k, v := range c.entries {
		if v.PartnerID == partnerID {
			delete(c.entries, k)
		}
	}
	c.gen++
}

// Confirmed implements postgres.KeyChanges.
func (c *keyCache) Confirmed(sentAt time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sentAt.After(c.lostAt) {
		return // sent before the connection was lost: proves nothing now
	}
	if until := sentAt.Add(KeyCacheBound); until.After(c.liveUntil) {
		c.liveUntil = until
	}
}

// Lost implements postgres.KeyChanges.
func (c *keyCache) Lost() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lostAt = c.now()
	c.liveUntil = time.Time{}
	c.dropLocked()
}

// The store methods that change a key or a partner: this process drops
// its cache at once (the trigger's notification, on commit, tells every
// process, this one included, again; a load between the two is made stale
// by it).

func (c *keyCache) UpdatePartnerKeySecret(ctx context.Context, keyID string, secretEnc, previousEnc []byte, previousValidUntil time.Time) error {
	defer c.PartnerChanged("")
	return c.PartnerStore.UpdatePartnerKeySecret(ctx, keyID, secretEnc, previousEnc, previousValidUntil)
}

func (c *keyCache) UpdatePartnerKeySignatureVersion(ctx context.Context, keyID string, version int) error {
	defer c.PartnerChanged("")
	return c.PartnerStore.UpdatePartnerKeySignatureVersion(ctx, keyID, version)
}

func (c *keyCache) RevokePartnerKey(ctx context.Context, keyID string) error {
	defer c.PartnerChanged("")
	return c.PartnerStore.RevokePartnerKey(ctx, keyID)
}

// KeyCacheStats are the cache's counters since the process started.
type KeyCacheStats struct {
	Hits, Misses uint64
	Entries      int
	Live         bool
}

// Stats returns the counters.
func (c *keyCache) Stats() KeyCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return KeyCacheStats{Hits: c.hits, Misses: c.misses, Entries: len(c.entries), Live: c.liveLocked()}
}
