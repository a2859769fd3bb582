package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

func TestIdempotencyKeyReplaysTheStoredResponse(t *testing.T) { // I1
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})

	first := p.Do(t, widgetRequest(map[string]any{"name": "one"}, "key-1"))
	apptest.Expect(t, "first", first, 0, 201)
	env.Clock.Advance(time.Second)
	retry := p.Do(t, widgetRequest(map[string]any{"name": "one"}, "key-1"))
	if retry.Status != first.Status || !bytes.Equal(retry.Raw, first.Raw) {
		t.Fatalf("retry differs:\n first %s\n retry %s", first, retry)
	}
	if retry.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("Idempotent-Replayed header missing on the replay or present on the first answer")
	}
	if n := countWidgets(t, env); n != 1 {
		t.Fatalf("%d widgets after a retry, want 1", n)
	}

	t.Run("the same signed request with its key is also a replay, not an auth failure", func(t *testing.T) {
		rq := widgetRequest(map[string]any{"name": "samesec"}, "key-same")
		p.Sign(&rq)
		a, b := p.Do(t, rq), p.Do(t, rq)
		apptest.Expect(t, "first", a, 0, 201)
		if !bytes.Equal(a.Raw, b.Raw) {
			t.Fatalf("identical retry got %s", b)
		}
	})
	t.Run("a business error after the handler began is replayed too", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		apptest.Expect(t, "create dup", p.Do(t, widgetRequest(map[string]any{"name": "dup"}, "")), 0, 201)
		env.Clock.Advance(time.Second)
		conflict := p.Do(t, widgetRequest(map[string]any{"name": "dup"}, "key-dup"))
		apptest.Expect(t, "duplicate name", conflict, 11004, 409)
		// Remove the conflicting row: a replay must still give the stored
		// answer, not run again.
		if _, err := env.App.DB.Exec(`DELETE FROM widgets WHERE name = 'dup'`); err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(time.Second)
		again := p.Do(t, widgetRequest(map[string]any{"name": "dup"}, "key-dup"))
		if !bytes.Equal(again.Raw, conflict.Raw) || again.Status != 409 {
			t.Fatalf("replayed business error differs: %s", again)
		}
		if n := countWidgetsNamed(t, env, "dup"); n != 0 {
			t.Fatal("the replay ran the request again")
		}
	})
	t.Run("a validation error is stored as well", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		bad := p.Do(t, widgetRequest(map[string]any{"name": ""}, "key-bad"))
		apptest.Expect(t, "invalid", bad, 11001, 400)
		env.Clock.Advance(time.Second)
		again := p.Do(t, widgetRequest(map[string]any{"name": ""}, "key-bad"))
		if !bytes.Equal(again.Raw, bad.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("validation error not replayed: %s", again)
		}
	})
}

func countWidgetsNamed(t *testing.T, env *apptest.Env, name string) int {
	t.Helper()
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM widgets WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIdempotencyKeyWithAnotherBodyConflicts(t *testing.T) { // I2
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	apptest.Expect(t, "first", p.Do(t, widgetRequest(map[string]any{"name": "a"}, "k")), 0, 201)
	var auditBefore int
	_ = env.App.DB.Get(&auditBefore, `SELECT count(*) FROM audit_log`)
	env.Clock.Advance(time.Second)
	r := p.Do(t, widgetRequest(map[string]any{"name": "b"}, "k"))
	apptest.Expect(t, "same key, other body", r, 10409, 409)
	var auditAfter int
	_ = env.App.DB.Get(&auditAfter, `SELECT count(*) FROM audit_log`)
	if countWidgets(t, env) != 1 || auditAfter != auditBefore {
		t.Fatal("the mismatching request had a side effect")
	}
}

func TestIdempotencyKeyUnderConcurrency(t *testing.T) { // I3
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	for round := 0; round < 20; round++ {
		env.Clock.Advance(time.Second)
		key := fmt.Sprintf("race-%d", round)
		body := map[string]any{"name": fmt.Sprintf("r%d", round)}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var created [][]byte
		other := map[string]int{}
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := p.HTTPRequest(t, widgetRequest(body, key))
				<-start
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				r := apptest.Decode(t, res.StatusCode, res.Header, raw)
				switch {
				case r.Status == 201:
					created = append(created, raw)
				case r.Status == 409 && r.Code == 10409:
					other["10409"]++
				default:
					other[fmt.Sprintf("%d/%d", r.Status, r.Code)]++
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(other) > 1 || (len(other) == 1 && other["10409"] == 0) {
			t.Fatalf("round %d: unexpected answers %v", round, other)
		}
		if len(created) == 0 {
			t.Fatalf("round %d: no request succeeded (%v)", round, other)
		}
		for _, c := range created[1:] {
			if !bytes.Equal(c, created[0]) {
				t.Fatalf("round %d: successful answers differ:\n%s\n%s", round, created[0], c)
			}
		}
		if n := countWidgetsNamed(t, env, body["name"].(string)); n != 1 {
			t.Fatalf("round %d: %d widgets, want exactly 1", round, n)
		}
	}
}

func TestIdempotencyKeyIsScopedPerPartner(t *testing.T) { // I4
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	a := env.NewPartner(t, emi.PartnerCreate{})
	b := env.NewPartner(t, emi.PartnerCreate{})
	ra := a.Do(t, widgetRequest(map[string]any{"name": "shared"}, "same-key"))
	rb := b.Do(t, widgetRequest(map[string]any{"name": "shared"}, "same-key"))
	apptest.Expect(t, "partner A", ra, 0, 201)
	apptest.Expect(t, "partner B", rb, 0, 201)
	if ra.Data["token"] == rb.Data["token"] || countWidgets(t, env) != 2 {
		t.Fatal("two partners with one key string did not get two resources")
	}
}

func TestIdempotencyKeyExpiresAfter24Hours(t *testing.T) { // I5
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	first := p.Do(t, widgetRequest(map[string]any{"name": "old"}, "day"))
	apptest.Expect(t, "first", first, 0, 201)
	if _, err := env.App.DB.Exec(`DELETE FROM widgets`); err != nil {
		t.Fatal(err)
	}

	env.Clock.Advance(24*time.Hour - time.Second)
	apptest.Expect(t, "just before expiry: replayed", p.Do(t, widgetRequest(map[string]any{"name": "old"}, "day")), 0, 201)
	if countWidgets(t, env) != 0 {
		t.Fatal("a retry inside 24 h ran again")
	}
	env.Clock.Advance(2 * time.Second)
	again := p.Do(t, widgetRequest(map[string]any{"name": "old"}, "day"))
	apptest.Expect(t, "after 24 h", again, 0, 201)
	if again.Data["token"] == first.Data["token"] || countWidgets(t, env) != 1 {
		t.Fatal("after 24 h the key did not create a new resource")
	}

	// The reaper deletes what expired and keeps what did not.
	env.Clock.Advance(time.Second)
	apptest.Expect(t, "fresh key", p.Do(t, widgetRequest(map[string]any{"name": "fresh"}, "fresh")), 0, 201)
	env.Clock.Advance(24*time.Hour - time.Minute)
	if _, err := env.App.DB.Exec(`UPDATE idempotency_keys SET created_at = created_at - interval '1 day' WHERE key = 'day'`); err != nil {
		t.Fatal(err)
	}
	if err := env.App.Maintenance.Run(context.Background(), emi.Job{}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := env.App.DB.Select(&keys, `SELECT key FROM idempotency_keys ORDER BY key`); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "fresh" {
		t.Fatalf("after the reaper: keys %v, want [fresh]", keys)
	}
}

// panicOnWrite is a ResponseWriter whose connection "dies" at the first
// write of the body: the handler has finished and committed by then.
type panicOnWrite struct {
	h       http.Header
	written bool
}

func (w *panicOnWrite) Header() http.Header { return w.h }
func (w *panicOnWrite) WriteHeader(int)     {}
func (w *panicOnWrite) Write(b []byte) (int, error) {
	if !w.written {
		w.written = true
		panic("connection lost after commit")
	}
	return len(b), nil
}

func TestIdempotencyKeySurvivesACrashAroundCommit(t *testing.T) { // I6
	t.Parallel()
	env, wg := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})

	t.Run("a crash after the commit leaves a stored response for the retry", func(t *testing.T) {
		req := p.HTTPRequest(t, widgetRequest(map[string]any{"name": "crash"}, "crash-key"))
		w := &panicOnWrite{h: http.Header{}}
		func() {
			defer func() { _ = recover() }()
			env.Handler.ServeHTTP(w, req)
		}()
		if !w.written {
			t.Fatal("the response was never written")
		}
		env.Clock.Advance(time.Second)
		r := p.Do(t, widgetRequest(map[string]any{"name": "crash"}, "crash-key"))
		apptest.Expect(t, "retry after the crash", r, 0, 201)
		if r.Header.Get("Idempotent-Replayed") != "true" || countWidgetsNamed(t, env, "crash") != 1 {
			t.Fatal("the retry did not get the stored response of the committed request")
		}
	})
	t.Run("a crash before the commit leaves nothing and the retry runs once", func(t *testing.T) {
		wg.panics.Store(1)
		r := p.Do(t, widgetRequest(map[string]any{"name": "boom"}, "boom-key"))
		apptest.Expect(t, "crash inside the transaction", r, 10000, 500)
		if countWidgetsNamed(t, env, "boom") != 0 {
			t.Fatal("a crashed request left its row")
		}
		env.Clock.Advance(time.Second)
		r = p.Do(t, widgetRequest(map[string]any{"name": "boom"}, "boom-key"))
		apptest.Expect(t, "retry", r, 0, 201)
		if r.Header.Get("Idempotent-Replayed") != "" || countWidgetsNamed(t, env, "boom") != 1 {
			t.Fatal("the retry did not run exactly once")
		}
	})
	t.Run("a GET ignores Idempotency-Key", func(t *testing.T) {
		rq := partnerDetails()
		rq.Header = map[string]string{"Idempotency-Key": "get-key"}
		apptest.Expect(t, "GET with a key", p.Do(t, rq), 0, 200)
		var n int
		_ = env.App.DB.Get(&n, `SELECT count(*) FROM idempotency_keys WHERE key = 'get-key'`)
		if n != 0 {
			t.Fatal("a GET response was stored")
		}
	})
}

// Each keyed request holds its transaction's connection for its whole run;
// it must never need a second one, or requests beyond the pool size wait for
// each other forever.
func TestIdempotencyKeysBeyondThePoolSizeDoNotDeadlock(t *testing.T) {
	t.Parallel()
	env, _ := newWidgetEnv(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{})
	const n = 120 // three times the pool's 40 connections
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = p.HTTPRequest(t, widgetRequest(map[string]any{"name": fmt.Sprintf("p%d", i)}, fmt.Sprintf("pool-%d", i)))
	}
	start := make(chan struct{})
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for _, req := range reqs {
		wg.Add(1)
		go func(req *http.Request) {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := http.DefaultClient.Do(req.WithContext(ctx))
			if err != nil {
				statuses <- 0
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			statuses <- res.StatusCode
		}(req)
	}
	close(start)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 201 {
			t.Fatalf("a keyed request answered %d (0 = timed out): the pool deadlocked or failed", s)
		}
	}
	if countWidgets(t, env) != n {
		t.Fatalf("%d widgets, want %d", countWidgets(t, env), n)
	}
}

// TestStoredResponsesAreSealed: kyc_init sent with an Idempotency-Key
// stored its answer, the hosted KYC page's capability URL included, in
// clear in idempotency_keys.body for 24 hours (and stored answers carry
// personal data). Now the stored body is sealed (body_enc, bound to the
// row) and holds neither the URL nor its secret nor the user's name; the
// retry still gets the answer byte for byte; a sealed body moved to another
// row does not open. On the old code the URL was in the clear body.
func TestStoredResponsesAreSealed(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "P"})
	body := validUser(p)
	body["first_name"], body["last_name"] = "Zlatomira", "Kostadinova"
	user := createUser(t, env, p, body)
	b, _ := json.Marshal(map[string]any{"user": user})
	rq := apptest.Request{Method: http.MethodPost, Path: "/v1/kyc", Operation: "kyc_init", Body: b,
		Header: map[string]string{"Idempotency-Key": "kyc-1"}}
	first := p.Do(t, rq)
	if first.Code != 0 {
		t.Fatalf("kyc_init: %s", first)
	}
	url, _ := first.Data["url"].(string)
	secret := url[strings.LastIndex(url, "/")+1:]
	if len(secret) < 16 {
		t.Fatalf("kyc url %q", url)
	}
	var row struct {
		Body    []byte `db:"body"`
		BodyEnc []byte `db:"body_enc"`
	}
	if err := env.App.DB.Get(&row, `SELECT body, body_enc FROM idempotency_keys WHERE key = 'kyc-1'`); err != nil {
		t.Fatal(err)
	}
	if row.Body != nil || len(row.BodyEnc) == 0 {
		t.Fatalf("stored body in clear (%d bytes) or not sealed (%d bytes)", len(row.Body), len(row.BodyEnc))
	}
	for _, s := range []string{url, secret, user, "Kostadinova", `"code"`} {
		if bytes.Contains(row.BodyEnc, []byte(s)) {
			t.Fatalf("the sealed body holds %q", s)
		}
	}
	env.Clock.Advance(time.Second)
	again := p.Do(t, rq)
	if !bytes.Equal(again.Raw, first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s", again)
	}
	// A sealed body copied onto another row does not open there: the
	// replay is refused as an internal error rather than served.
	user2 := createUser(t, env, p, validUser(p))
	b2, _ := json.Marshal(map[string]any{"user": user2})
	rq2 := apptest.Request{Method: http.MethodPost, Path: "/v1/kyc", Operation: "kyc_init", Body: b2,
		Header: map[string]string{"Idempotency-Key": "kyc-2"}}
	if r := p.Do(t, rq2); r.Code != 0 {
		t.Fatalf("second kyc_init: %s", r)
	}
	if _, err := env.App.DB.Exec(`UPDATE idempotency_keys SET body_enc = (SELECT body_enc FROM idempotency_keys WHERE key = 'kyc-1')
		WHERE key = 'kyc-2'`); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Second)
	rq2.SkipOpenAPI = true
	moved := p.Do(t, rq2)
	if moved.Status != http.StatusInternalServerError || bytes.Contains(moved.Raw, []byte(secret)) {
		t.Fatalf("a moved sealed body: %s", moved)
	}
}
