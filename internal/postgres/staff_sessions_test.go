package postgres_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/kernel"
	staffsvc "emi/internal/service/staff"
)

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// insertStaff adds a bare staff user row (sessions reference staff users).
func insertStaff(t *testing.T, db *postgres.DB, email string) string {
	t.Helper()
	id := kernel.NewToken()
	_, err := db.ExecContext(context.Background(),
		`INSERT INTO staff_users (id, email, name, password_hash, roles, password_set_at)
		 VALUES ($1, $2, 'T', '$argon2id$v=19$m=19456,t=2,p=1$x$y', '{auditor}', now())`, id, email)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func sessionData(t *testing.T, values map[string]any) []byte {
	t.Helper()
	b, err := scs.GobCodec{}.Encode(time.Now().Add(time.Hour), values)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func countSessions(t *testing.T, db *postgres.DB, where string, args ...any) int {
	t.Helper()
	var n int
	if err := db.GetContext(context.Background(), &n, `SELECT count(*) FROM sessions WHERE `+where, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSessionStore(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	clock := &testClock{t: time.Now()}
	store := postgres.NewSessionStore(db, clock.Now)
	alice, bob := insertStaff(t, db, "alice@x.test"), insertStaff(t, db, "bob@x.test")
	ctx := context.Background()

	t.Run("the table holds the SHA-256 of the token, never the token", func(t *testing.T) {
		token := "raw-token-" + randSuffix(t)
		if err := store.Commit(token, []byte("data"), clock.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(token))
		if n := countSessions(t, db, `token_hash = $1`, sum[:]); n != 1 {
			t.Fatalf("%d rows keyed by the token's SHA-256, want 1", n)
		}
		if n := countSessions(t, db, `token_hash = $1 OR strpos(encode(token_hash, 'escape'), $2) > 0 OR strpos(encode(data, 'escape'), $2) > 0`,
			[]byte(token), token); n != 0 {
			t.Fatalf("%d rows hold the raw token", n)
		}
	})
	t.Run("find returns a live session and nothing for unknown, expired or deleted tokens", func(t *testing.T) {
		if err := store.Commit("live", []byte("v1"), clock.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := store.Commit("live", []byte("v2"), clock.Now().Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		b, found, err := store.Find("live")
		if err != nil || !found || string(b) != "v2" {
			t.Fatalf("live session after a second commit: %q %v %v", b, found, err)
		}
		for _, token := range []string{"unknown", "", strings.Repeat("x", 5000)} {
			if _, found, err := store.Find(token); found || err != nil {
				t.Fatalf("token %.10q: found %v err %v", token, found, err)
			}
		}
		if err := store.Commit("short", []byte("v"), clock.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if _, found, err := store.Find("short"); found || err != nil {
			t.Fatalf("a session at its expiry: found %v err %v", found, err)
		}
		if err := store.Delete("live"); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := store.Find("live"); found {
			t.Fatal("a deleted session is found")
		}
		if err := store.Delete("never-existed"); err != nil {
			t.Fatalf("deleting an unknown token: %v", err)
		}
	})
	t.Run("commit tags the row with the staff id in the session data, and DeleteStaffSessions deletes only that user's sessions", func(t *testing.T) {
		exp := clock.Now().Add(time.Hour)
		for _, s := range []struct {
			token string
			data  map[string]any
		}{
			{"alice-1", map[string]any{staffsvc.SessionStaffKey: alice, "stage": "full"}},
			{"alice-2", map[string]any{staffsvc.SessionStaffKey: alice}},
			{"bob-1", map[string]any{staffsvc.SessionStaffKey: bob}},
			{"anonymous", map[string]any{"flash": "hello"}},
			{"not-a-uuid", map[string]any{staffsvc.SessionStaffKey: "admin"}},
		} {
			if err := store.CommitCtx(ctx, s.token, sessionData(t, s.data), exp); err != nil {
				t.Fatalf("%s: %v", s.token, err)
			}
		}
		if err := store.Commit("not-gob", []byte("not gob data"), exp); err != nil {
			t.Fatalf("undecodable data must still be stored: %v", err)
		}
		if n, err := store.CountStaffSessions(ctx, alice); err != nil || n != 2 {
			t.Fatalf("alice has %d sessions (%v), want 2", n, err)
		}
		n, err := store.DeleteStaffSessions(ctx, alice)
		if err != nil || n != 2 {
			t.Fatalf("deleted %d (%v), want 2", n, err)
		}
		for token, want := range map[string]bool{"alice-1": false, "alice-2": false, "bob-1": true, "anonymous": true, "not-a-uuid": true, "not-gob": true} {
			if _, found, _ := store.Find(token); found != want {
				t.Errorf("%s: found %v, want %v", token, found, want)
			}
		}
	})
	t.Run("TagSession ties an already saved session to a staff user", func(t *testing.T) {
		if err := store.Commit("untagged", []byte("x"), clock.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := store.TagSession(ctx, "untagged", bob); err != nil {
			t.Fatal(err)
		}
		if _, err := store.DeleteStaffSessions(ctx, bob); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := store.Find("untagged"); found {
			t.Fatal("a tagged session survived DeleteStaffSessions")
		}
	})
	t.Run("DeleteExpired removes the sessions expired by the store's clock", func(t *testing.T) {
		if err := store.Commit("stays", []byte("x"), clock.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := store.Commit("goes", []byte("x"), clock.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if _, err := store.DeleteExpired(ctx); err != nil {
			t.Fatal(err)
		}
		if n := countSessions(t, db, `expiry <= $1`, clock.Now()); n != 0 {
			t.Fatalf("%d expired sessions left", n)
		}
		if _, found, _ := store.Find("stays"); !found {
			t.Fatal("DeleteExpired removed a live session")
		}
	})
}

// TestSessionStoreUnderSCS drives the store through a real scs session
// manager, as the portal does: the sign-in renews the token and puts the
// staff id in the session; the row is tagged without any further call.
func TestSessionStoreUnderSCS(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	store := postgres.NewSessionStore(db, nil)
	staff := insertStaff(t, db, "scs@x.test")
	sm := scs.New()
	sm.Store = store
	mux := http.NewServeMux()
	mux.HandleFunc("/anon", func(w http.ResponseWriter, r *http.Request) { sm.Put(r.Context(), "flash", "hi") })
	mux.HandleFunc("/signin", func(w http.ResponseWriter, r *http.Request) {
		if err := sm.RenewToken(r.Context()); err != nil {
			t.Error(err)
		}
		sm.Put(r.Context(), staffsvc.SessionStaffKey, staff)
	})
	mux.HandleFunc("/me", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(sm.GetString(r.Context(), staffsvc.SessionStaffKey)))
	})
	srv := httptest.NewServer(sm.LoadAndSave(mux))
	defer srv.Close()

	get := func(path string, cookie *http.Cookie) (*http.Cookie, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body strings.Builder
		buf := make([]byte, 512)
		n, _ := res.Body.Read(buf)
		body.Write(buf[:n])
		for _, c := range res.Cookies() {
			if c.Name == sm.Cookie.Name {
				return c, body.String()
			}
		}
		return cookie, body.String()
	}
	before, _ := get("/anon", nil)
	after, _ := get("/signin", before)
	if after.Value == before.Value {
		t.Fatal("the token was not renewed at sign-in")
	}
	if _, body := get("/me", after); body != staff {
		t.Fatalf("the session does not carry the staff id: %q", body)
	}
	if _, body := get("/me", before); body != "" {
		t.Fatal("the token from before the sign-in still works")
	}
	if n := countSessions(t, db, `staff_id = $1`, staff); n != 1 {
		t.Fatalf("%d session rows tagged with the staff user, want 1", n)
	}
	if n := countSessions(t, db, `strpos(encode(token_hash, 'escape'), $1) > 0`, after.Value); n != 0 {
		t.Fatal("the raw token is stored")
	}
	if _, err := store.DeleteStaffSessions(context.Background(), staff); err != nil {
		t.Fatal(err)
	}
	if _, body := get("/me", after); body != "" {
		t.Fatal("the session still works after DeleteStaffSessions")
	}
}

// TestSignOutWinsOverRequestsInFlight performs the revived-session attack
// under scs: a request that loaded the session before a sign-out commits it
// after (scs saves each request's session at its end). The old commit was
// an upsert, so it wrote the deleted session back and the old cookie kept
// working. Now the sign-out leaves a tombstone and the in-flight commit is
// dropped: the old cookie is refused, also with 20 such requests in flight
// at once, and after "sign out everywhere" (DeleteStaffSessions).
func TestSignOutWinsOverRequestsInFlight(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	store := postgres.NewSessionStore(db, nil)
	staff := insertStaff(t, db, "inflight@x.test")
	sm := scs.New()
	sm.Store = store
	loaded := make(chan struct{}, 64)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/signin", func(w http.ResponseWriter, r *http.Request) {
		if err := sm.RenewToken(r.Context()); err != nil {
			t.Error(err)
		}
		sm.Put(r.Context(), staffsvc.SessionStaffKey, staff)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// A request that touches its session (as every back-office page
		// does) and is still running when the sign-out happens.
		sm.Put(r.Context(), "last_seen", time.Now().String())
		loaded <- struct{}{}
		<-release
	})
	mux.HandleFunc("/signout", func(w http.ResponseWriter, r *http.Request) {
		if err := sm.Destroy(r.Context()); err != nil {
			t.Error(err)
		}
	})
	mux.HandleFunc("/me", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(sm.GetString(r.Context(), staffsvc.SessionStaffKey)))
	})
	srv := httptest.NewServer(sm.LoadAndSave(mux))
	defer srv.Close()
	do := func(path string, cookie *http.Cookie) (*http.Cookie, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil, ""
		}
		defer res.Body.Close()
		b := make([]byte, 512)
		n, _ := res.Body.Read(b)
		for _, c := range res.Cookies() {
			if c.Name == sm.Cookie.Name {
				return c, string(b[:n])
			}
		}
		return cookie, string(b[:n])
	}

	for _, inFlight := range []int{1, 20} {
		cookie, _ := do("/signin", nil)
		if _, me := do("/me", cookie); me != staff {
			t.Fatalf("signed in as %q", me)
		}
		var wg sync.WaitGroup
		for range inFlight {
			wg.Add(1)
			go func() { defer wg.Done(); do("/slow", cookie) }()
		}
		for range inFlight {
			<-loaded
		}
		do("/signout", cookie)
		if _, me := do("/me", cookie); me != "" {
			t.Fatalf("%d in flight: the cookie works right after sign-out", inFlight)
		}
		close(release)
		wg.Wait()
		release = make(chan struct{})
		if _, me := do("/me", cookie); me != "" {
			t.Fatalf("%d in flight: the signed-out cookie works again after the requests in flight ended", inFlight)
		}
		if n := countSessions(t, db, "token_hash = $1", tokenSHA(cookie.Value)); n != 0 {
			t.Fatalf("%d in flight: the signed-out session was written back", inFlight)
		}
	}

	// "Sign out everywhere" (every revocation deletes by staff user) wins too.
	cookie, _ := do("/signin", nil)
	done := make(chan struct{})
	go func() { defer close(done); do("/slow", cookie) }()
	<-loaded
	if _, err := store.DeleteStaffSessions(context.Background(), staff); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	if _, me := do("/me", cookie); me != "" {
		t.Fatal("a revoked session was written back by a request in flight")
	}
}

func tokenSHA(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
