package frame

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2/memstore"

	"emi/internal/emi"
)

// TestPagesReadAReplicaButAfterTheStaffMembersOwnChange: with read
// replicas, a back-office GET is marked lag-tolerant (its store reads may
// go to a replica within EMI_READ_MAX_LAG), except for the bound after the
// same session changed something (read-your-writes); another session is not
// held back by it; without replicas nothing is marked.
func TestPagesReadAReplicaButAfterTheStaffMembersOwnChange(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	const bound = 5 * time.Second

	run := func(bound time.Duration) (do func(method string, cookie *http.Cookie) (bool, *http.Cookie)) {
		p := New(Deps{Sessions: memstore.New(), Config: Config{ReadLagBound: bound, Now: clock}})
		var tolerant bool
		h := p.sessions.LoadAndSave(p.lagTolerance(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tolerant = emi.LagTolerant(r.Context())
			// A session exists from the first request on, as a signed-in
			// staff member's does.
			p.sessions.Put(r.Context(), keyStaff, "staff-1")
		})))
		return func(method string, cookie *http.Cookie) (bool, *http.Cookie) {
			req := httptest.NewRequest(method, "/backoffice/accounts", nil)
			if cookie != nil {
				req.AddCookie(cookie)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			for _, c := range rec.Result().Cookies() {
				cookie = c
			}
			return tolerant, cookie
		}
	}

	do := run(bound)
	tolerant, me := do(http.MethodGet, nil)
	if !tolerant {
		t.Fatal("a page with no change behind it is not lag-tolerant")
	}
	if tolerant, me = do(http.MethodPost, me); tolerant {
		t.Fatal("a POST was marked lag-tolerant")
	}
	if tolerant, me = do(http.MethodGet, me); tolerant {
		t.Fatal("the page right after the staff member's own change may read a replica that lacks it")
	}
	if tolerant, _ = do(http.MethodGet, nil); !tolerant {
		t.Fatal("another session's page was held to the primary by someone else's change")
	}
	advance(bound - time.Millisecond)
	if tolerant, me = do(http.MethodGet, me); tolerant {
		t.Fatal("lag-tolerant before the bound passed")
	}
	advance(time.Millisecond)
	if tolerant, _ = do(http.MethodGet, me); !tolerant {
		t.Fatal("still held to the primary once the bound passed")
	}

	if tolerant, _ := run(0)(http.MethodGet, nil); tolerant {
		t.Fatal("marked lag-tolerant with no replica configured")
	}
}

// TestASearchFormIsNoChange: the header search and the card search are
// POSTed (what is typed stays out of URLs) but change nothing, so they
// neither hold the session's next pages to the primary nor, after a
// change, let it read a replica early.
func TestASearchFormIsNoChange(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	const bound = 5 * time.Second
	p := New(Deps{Sessions: memstore.New(), Config: Config{ReadLagBound: bound, Now: clock}})
	var tolerant bool
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tolerant = emi.LagTolerant(r.Context())
		p.sessions.Put(r.Context(), keyStaff, "staff-1")
	})
	mux := http.NewServeMux()
	mux.Handle("POST /search", p.ReadForm(page))
	mux.Handle("/", page)
	h := p.sessions.LoadAndSave(p.lagTolerance(mux))
	var me *http.Cookie
	do := func(method, path string) bool {
		req := httptest.NewRequest(method, path, nil)
		if me != nil {
			req.AddCookie(me)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		for _, c := range rec.Result().Cookies() {
			me = c
		}
		return tolerant
	}
	if !do(http.MethodGet, "/accounts") {
		t.Fatal("the first page is not lag-tolerant")
	}
	if !do(http.MethodPost, "/search") {
		t.Fatal("a search with no change behind it was held to the primary")
	}
	if !do(http.MethodGet, "/accounts") {
		t.Fatal("a search counted as a change: the next page was held to the primary")
	}
	if do(http.MethodPost, "/accounts/x/status") {
		t.Fatal("a change was marked lag-tolerant")
	}
	advance(time.Second)
	if do(http.MethodPost, "/search") {
		t.Fatal("a search a second after a change may read a replica that lacks it")
	}
	if do(http.MethodGet, "/accounts") {
		t.Fatal("the search reset the change's time: the next page may read a replica that lacks the change")
	}
	advance(bound)
	if !do(http.MethodPost, "/search") || !do(http.MethodGet, "/accounts") {
		t.Fatal("still held to the primary once the bound passed")
	}
}
