package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/service/partners"
)

// fakeKeys is a partner store holding one key, whose lookups can be held
// half-way (read done, not yet returned) to open the race a cache must
// close.
type fakeKeys struct {
	partners.PartnerStore
	mu      sync.Mutex
	key     partners.StoredKey
	reads   int
	hold    chan struct{} // when set, a lookup waits on it after reading
	reading chan struct{} // signalled when a held lookup has read
}

func (f *fakeKeys) PartnerKeyByAPIKey(_ context.Context, apiKey string) (partners.StoredKey, error) {
	f.mu.Lock()
	f.reads++
	k, hold, reading := f.key, f.hold, f.reading
	f.mu.Unlock()
	if k.APIKey != apiKey {
		return partners.StoredKey{}, emi.ErrPartnerKeyNotFound
	}
	if hold != nil {
		reading <- struct{}{}
		<-hold
	}
	return k, nil
}

func (f *fakeKeys) revoke() {
	f.mu.Lock()
	now := time.Now()
	f.key.RevokedAt = &now
	f.mu.Unlock()
}

func (f *fakeKeys) readCount() int { f.mu.Lock(); defer f.mu.Unlock(); return f.reads }

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newTestCache() (*keyCache, *fakeKeys, *testClock) {
	clock := &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	store := &fakeKeys{key: partners.StoredKey{PartnerKey: emi.PartnerKey{ID: "k1", PartnerID: "p1", APIKey: "ak_1"}}}
	return newKeyCache(store, clock.now), store, clock
}

func lookup(t *testing.T, c *keyCache) partners.StoredKey {
	t.Helper()
	k, err := c.PartnerKeyByAPIKey(context.Background(), "ak_1")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeyCacheServesOnlyWhileConfirmed(t *testing.T) {
	c, store, clock := newTestCache()
	lookup(t, c)
	lookup(t, c)
	if store.readCount() != 2 {
		t.Fatalf("never confirmed: %d store reads for 2 lookups, want 2 (no caching)", store.readCount())
	}
	c.Confirmed(clock.now())
	lookup(t, c)
	lookup(t, c)
	if store.readCount() != 3 {
		t.Fatalf("confirmed: %d store reads, want 3 (one miss, then hits)", store.readCount())
	}
	// No confirmation for longer than the bound: the entry is not served,
	// and the stale load is not stored.
	clock.advance(KeyCacheBound)
	lookup(t, c)
	lookup(t, c)
	if store.readCount() != 5 {
		t.Fatalf("bound run out: %d store reads, want 5", store.readCount())
	}
	if c.Stats().Entries != 0 {
		t.Fatalf("%d entries kept past the bound", c.Stats().Entries)
	}
	// A confirmation of a heartbeat sent long ago does not revive it.
	c.Confirmed(clock.now().Add(-KeyCacheBound - time.Millisecond))
	lookup(t, c)
	lookup(t, c)
	if store.readCount() != 7 {
		t.Fatalf("stale confirmation: %d store reads, want 7", store.readCount())
	}
}

func TestKeyCacheInvalidations(t *testing.T) {
	c, store, clock := newTestCache()
	c.Confirmed(clock.now())
	lookup(t, c)
	store.revoke()
	if lookup(t, c).RevokedAt != nil {
		t.Fatal("the test needs the cached copy first")
	}
	c.KeyChanged("ak_other")
	if lookup(t, c).RevokedAt != nil {
		t.Fatal("another key's change dropped this one")
	}
	c.KeyChanged("ak_1")
	if lookup(t, c).RevokedAt == nil {
		t.Fatal("served the revoked key after its change notification")
	}
	// A partner change drops the partner's keys only.
	c.PartnerChanged("p2")
	reads := store.readCount()
	lookup(t, c)
	if store.readCount() != reads {
		t.Fatal("another partner's change dropped this key")
	}
	c.PartnerChanged("p1")
	lookup(t, c)
	if store.readCount() != reads+1 {
		t.Fatal("the partner's change did not drop its key")
	}
	// Lost: nothing served nor stored until a heartbeat sent after it is
	// confirmed; one sent before (still in flight) does not count.
	sentBefore := clock.now()
	clock.advance(time.Millisecond)
	c.Lost()
	c.Confirmed(sentBefore)
	reads = store.readCount()
	lookup(t, c)
	lookup(t, c)
	if store.readCount() != reads+2 {
		t.Fatal("the cache served or stored while its listener was lost")
	}
	clock.advance(time.Millisecond)
	c.Confirmed(clock.now())
	lookup(t, c)
	lookup(t, c)
	if store.readCount() != reads+3 {
		t.Fatal("the cache did not resume after a fresh confirmation")
	}
}

// A lookup that read the key before a revocation committed, and returns
// after the revocation's notification was handled, must not store the old
// row: otherwise the revoked key would be served until the next change.
func TestKeyCacheLoadStartedBeforeAnInvalidationIsNotStored(t *testing.T) {
	c, store, clock := newTestCache()
	c.Confirmed(clock.now())
	store.mu.Lock()
	store.hold, store.reading = make(chan struct{}), make(chan struct{})
	hold := store.hold
	store.mu.Unlock()
	done := make(chan partners.StoredKey)
	go func() {
		k, _ := c.PartnerKeyByAPIKey(context.Background(), "ak_1")
		done <- k
	}()
	<-store.reading // the old row is read
	store.mu.Lock()
	store.hold = nil
	store.mu.Unlock()
	store.revoke()
	c.KeyChanged("ak_1") // the revocation's notification
	close(hold)
	if k := <-done; k.RevokedAt != nil {
		t.Fatal("the held lookup should return the row it read")
	}
	if k := lookup(t, c); k.RevokedAt == nil {
		t.Fatal("the lookup that started before the invalidation was stored: the revoked key is served from the cache")
	}
}

// Concurrent lookups and invalidations (go test -race): after the last
// invalidation, every lookup sees the last state.
func TestKeyCacheConcurrentLookupsAndInvalidations(t *testing.T) {
	c, store, clock := newTestCache()
	c.Confirmed(clock.now().Add(time.Hour))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_, _ = c.PartnerKeyByAPIKey(context.Background(), "ak_1")
				}
			}
		}()
	}
	for range 200 {
		c.KeyChanged("ak_1")
		c.PartnerChanged("")
	}
	store.revoke()
	c.KeyChanged("ak_1")
	for range 100 {
		if lookup(t, c).RevokedAt == nil {
			close(stop)
			wg.Wait()
			t.Fatal("the revoked key was served after its invalidation")
		}
	}
	close(stop)
	wg.Wait()
}
