package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"

	"emi/internal/app/apptest"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/kernel"
	"emi/internal/service/ops"
	partnerssvc "emi/internal/service/partners"
	"emi/internal/testwait"
)

// Several `emi serve` processes on one database behind a round-robin proxy
// (production runs more than one). What must behave as one system does so
// because it lives in PostgreSQL: the replay guard (api_signatures),
// Idempotency-Keys, jobs and their leases, the webhook outbox, and every
// limit that counts rows (the PIN-by-SMS cap, sign-in throttling and
// lockout). The API rate limit (EMI_RATE_LIMIT, go-chi/httprate) counts in
// each process: behind N instances a key gets up to N times the configured
// budget.

// soak reports whether EMI_SOAK=1 asks for the longer, larger form.
func soak() bool { return os.Getenv("EMI_SOAK") == "1" }

// rrProxy is a round-robin reverse proxy in front of several instances. It
// counts the requests each instance got and, for every signed request,
// notes whether its signature (key, timestamp, hash) had passed through the
// proxy before and what the answer's envelope code was.
type rrProxy struct {
	*httptest.Server
	next atomic.Uint64

	// mu guards everything below. The backends are set after the proxy
	// serves, and a request reaches it over a socket, which gives the race
	// detector no happens-before edge to the write.
	mu       sync.Mutex
	backends []*url.URL
	counts   []int64
	seen     map[string]bool
	records  []proxyRecord
}

// proxyRecord is one signed request seen by the proxy.
type proxyRecord struct {
	at          time.Time
	instance    int
	method      string
	path        string
	seenBefore  bool // the same request (contract §2's replay tuple) had already been accepted
	idempotency bool // the request carried an Idempotency-Key
	status      int
	code        int
}

// replayTuple is contract §2's "same request", written independently of the
// server's code: (API key, x-timestamp, method, request target, x-hash) for
// version 1; in version 2 the signature covers method, target and nonce, so
// (API key, x-timestamp, x-hash).
func replayTuple(in *http.Request) string {
	key, ts, hash := in.Header.Get("x-api-key"), in.Header.Get("x-timestamp"), strings.ToLower(in.Header.Get("x-hash"))
	if in.Header.Get("x-signature-version") == "2" {
		return strings.Join([]string{"2", key, ts, hash}, "\x00")
	}
	return strings.Join([]string{"1", key, ts, in.Method, in.URL.RequestURI(), hash}, "\x00")
}

// consumed reports whether an answer comes from past the replay guard:
// refusals before it (authentication 10001/10002, malformed or oversized
// body 10005/10013, rate limit 429) leave the request unused, so the same
// request may still be accepted once.
func consumed(status, code int) bool {
	switch code {
	case 10001, 10002, 10005, 10013:
		return false
	}
	return status != http.StatusTooManyRequests
}

func newRRProxy(t *testing.T) *rrProxy {
	p := &rrProxy{seen: map[string]bool{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			p.mu.Lock()
			i := int((p.next.Add(1) - 1) % uint64(len(p.backends)))
			p.counts[i]++
			backend := p.backends[i]
			p.mu.Unlock()
			pr.SetURL(backend)
			pr.Out.Header.Set("X-Emi-Test-Instance", strconv.Itoa(i)) // read back in ModifyResponse
		},
		ModifyResponse: func(res *http.Response) error {
			in := res.Request
			key, ts, hash := in.Header.Get("x-api-key"), in.Header.Get("x-timestamp"), in.Header.Get("x-hash")
			if key == "" || ts == "" || hash == "" {
				return nil
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				return err
			}
			res.Body = io.NopCloser(bytes.NewReader(body))
			var env struct {
				Code int `json:"code"`
			}
			_ = json.Unmarshal(body, &env)
			i, _ := strconv.Atoi(in.Header.Get("X-Emi-Test-Instance"))
			sig := replayTuple(in)
			p.mu.Lock()
			p.records = append(p.records, proxyRecord{at: time.Now(), instance: i, method: in.Method, path: in.URL.Path,
				seenBefore: p.seen[sig], idempotency: in.Header.Get("Idempotency-Key") != "", status: res.StatusCode, code: env.Code})
			if consumed(res.StatusCode, env.Code) {
				p.seen[sig] = true
			}
			p.mu.Unlock()
			return nil
		},
	}
	p.Server = httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return p
}

func (p *rrProxy) setBackends(urls []string) error {
	var backends []*url.URL
	for _, u := range urls {
		pu, err := url.Parse(u)
		if err != nil {
			return err
		}
		backends = append(backends, pu)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends, p.counts = backends, make([]int64, len(urls))
	return nil
}

func (p *rrProxy) perInstance() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.counts)
}

// checkBalanced fails unless every instance got a fair share of the
// requests (round robin: each within half of the mean).
func (p *rrProxy) checkBalanced(t *testing.T) []int64 {
	t.Helper()
	c := p.perInstance()
	var total int64
	for _, n := range c {
		total += n
	}
	for i, n := range c {
		if n == 0 || n*2*int64(len(c)) < total {
			t.Errorf("instance %d got %d of %d requests: the proxy did not spread them (%v)", i, n, total, c)
		}
	}
	return c
}

// multiRig is a migrated, seeded database, the built binary and several
// `emi serve` processes on it behind a round-robin proxy.
type multiRig struct {
	vars  map[string]string
	bin   string
	urls  []string // each instance's own address
	pids  []int
	proxy *rrProxy
	db    *sql.DB
}

// newMultiRig starts n instances; extra adds or overrides variables (an
// empty value removes one).
func newMultiRig(t *testing.T, n int, extra map[string]string) *multiRig {
	t.Helper()
	r := &multiRig{proxy: newRRProxy(t), vars: map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(),
		"EMI_MODE": "sandbox", "EMI_ADDR": "127.0.0.1:0", "EMI_RATE_LIMIT": "0", "EMI_LOG_LEVEL": "warn",
		// The sinks (here and in the conformance suite) listen on ports the
		// system picks; each instance's own port and the proxy's
		// (EMI_PUBLIC_URL) stay refused (a webhook must not reach emi
		// itself).
		"EMI_SANDBOX_WEBHOOK_PORTS": "1024-65535"}}
	r.vars["EMI_PUBLIC_URL"] = r.proxy.URL
	for k, v := range extra {
		if v == "" {
			delete(r.vars, k)
		} else {
			r.vars[k] = v
		}
	}
	for _, args := range [][]string{{"migrate"}, {"seed"}} {
		if _, stderr, err := runCmd(t, r.vars, args...); err != nil {
			t.Fatalf("emi %v: %v\n%s", args, err, stderr)
		}
	}
	var err error
	if r.db, err = sql.Open("postgres", r.vars["DATABASE_URL"]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.db.Close() })
	// EMI_POOLED_DATABASE_URL (a test-only name): migrate and seed ran on
	// DATABASE_URL, directly, as an operator runs migrations; the
	// instances get this one (a pooler's) as their DATABASE_URL.
	if pooled := r.vars["EMI_POOLED_DATABASE_URL"]; pooled != "" {
		delete(r.vars, "EMI_POOLED_DATABASE_URL")
		r.vars["DATABASE_URL"] = pooled
	}
	r.bin = filepath.Join(t.TempDir(), "emi")
	if b, err := exec.Command("go", "build", "-o", r.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	for i := 0; i < n; i++ {
		u, pid := r.serve(t)
		r.urls, r.pids = append(r.urls, u), append(r.pids, pid)
	}
	if err := r.proxy.setBackends(r.urls); err != nil {
		t.Fatal(err)
	}
	return r
}

// serve starts one `emi serve` and returns its address once it serves; the
// process is stopped with SIGTERM when the test ends, and its log is shown
// when the test failed.
func (r *multiRig) serve(t *testing.T) (string, int) {
	t.Helper()
	logs := &syncBuffer{}
	cmd, url := startServe(t, r.bin, r.vars, logs)
	// Registered after startServe's kill, so it runs first: a graceful
	// stop, then the log when the test failed.
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("emi serve (pid %d): warnings, errors and the failed requests' lines:\n%s", cmd.Process.Pid, apptest.LogExcerpt(logs.String(), 200))
		}
	})
	return url, cmd.Process.Pid
}

// partner creates a partner (with its webhook endpoint when hook is not
// empty) and returns a client of its first API key.
func (r *multiRig) partner(t *testing.T, hook string) *apiClient {
	t.Helper()
	args := []string{"partner", "create", "--name", "Multi " + strconv.FormatInt(time.Now().UnixNano(), 36), "--json"}
	if hook != "" {
		args = append(args, "--webhook-url", hook)
	}
	out, stderr, err := runCmd(t, r.vars, args...)
	if err != nil {
		t.Fatalf("emi partner create: %v\n%s", err, stderr)
	}
	c := &apiClient{used: map[string]bool{}, http: &http.Client{Timeout: 30 * time.Second}}
	var creds struct {
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
		Merchant  string `json:"merchant"`
	}
	if err := json.Unmarshal([]byte(out), &creds); err != nil {
		t.Fatalf("partner create printed %q: %v", out, err)
	}
	c.key, c.secret, c.merchant = creds.APIKey, creds.APISecret, creds.Merchant
	return c
}

// apiClient signs requests (contract §2) with one API key. Every request
// it signs gets a signature never used before, although only the same
// request (the replay tuple: key, timestamp, method, target, signature) is
// single-use: tests that need one signature on many requests build them
// with sameSecond.
type apiClient struct {
	key, secret, merchant string
	http                  *http.Client
	mu                    sync.Mutex
	used                  map[string]bool
}

// answer is a decoded API answer.
type answer struct {
	Status int
	Code   int
	Data   map[string]any
	Raw    []byte
	Header http.Header
}

func (a answer) String() string {
	s := string(a.Raw)
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return fmt.Sprintf("HTTP %d code %d %s", a.Status, a.Code, s)
}

// signed builds a request for base with a fresh signature.
func (c *apiClient) signed(t *testing.T, base, method, path, op string, body any, header map[string]string) *http.Request {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	var ts, hash string
	for {
		c.mu.Lock()
		now := time.Now().Unix()
		// Within the accepted window (15 s either way), with a margin.
		for i := int64(0); i < 25 && hash == ""; i++ {
			off := (i + 1) / 2
			if i%2 == 1 {
				off = -off
			}
			ts = strconv.FormatInt(now+off, 10)
			h := partnerssvc.Signature([]byte(c.secret), c.key, ts, op, raw)
			if !c.used[h] {
				c.used[h], hash = true, h
			}
		}
		c.mu.Unlock()
		if hash != "" {
			break
		}
		time.Sleep(time.Second)
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-api-key", c.key)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-hash", hash)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req
}

func (c *apiClient) send(t *testing.T, req *http.Request) answer {
	t.Helper()
	res, err := c.http.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", req.Method, req.URL.Path, err)
		return answer{}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	a := answer{Status: res.StatusCode, Raw: raw, Header: res.Header}
	var env struct {
		Code int            `json:"code"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Errorf("%s %s: HTTP %d, not a JSON envelope: %.300s", req.Method, req.URL.Path, res.StatusCode, raw)
	}
	a.Code, a.Data = env.Code, env.Data
	if res.StatusCode >= 500 {
		t.Errorf("%s %s: %s", req.Method, req.URL.Path, a)
	}
	return a
}

func (c *apiClient) do(t *testing.T, base, method, path, op string, body any, header map[string]string) answer {
	t.Helper()
	return c.send(t, c.signed(t, base, method, path, op, body, header))
}

func want(t *testing.T, what string, a answer, status, code int) answer {
	t.Helper()
	if a.Status != status || a.Code != code {
		t.Fatalf("%s: want HTTP %d code %d, got %s", what, status, code, a)
	}
	return a
}

func userBody(email string) map[string]any {
	return map[string]any{"email": email, "first_name": "Elin", "last_name": "Sandqvist", "birthday": "1987-03-02",
		"country": "SE", "nationality": "SE", "mobile_phone": "+46701234567"}
}

// TestMultiInstance runs the behaviours that must hold across instances
// against two `emi serve` processes on one database (four with EMI_SOAK=1),
// each addressed directly or through the round-robin proxy.
func TestMultiInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs several emi serve processes")
	}
	t.Parallel()
	n := 2
	if soak() {
		n = 4
	}
	limit := 50
	if soak() {
		limit = 1000 // above what one key sends to one instance in the other subtests
	}
	r := newMultiRig(t, n, map[string]string{"EMI_RATE_LIMIT": strconv.Itoa(limit), "EMI_RATE_WINDOW": "1h"})
	t.Run("Idempotency", func(t *testing.T) { multiIdempotency(t, r) })
	t.Run("ReplayProtection", func(t *testing.T) { multiReplay(t, r) })
	t.Run("ReplayTuple", func(t *testing.T) { multiReplayTuple(t, r) })
	t.Run("JobsAndWebhooksRunOnce", func(t *testing.T) { multiJobs(t, r) })
	t.Run("RateLimits", func(t *testing.T) { multiRateLimits(t, r, limit) })
	c := r.proxy.checkBalanced(t)
	t.Logf("requests through the round-robin proxy per instance: %v", c)
}

// Idempotency: one Idempotency-Key sent to instance A, then to B, then to
// every instance at once: one effect, one answer replayed byte for byte; the
// key with another body is 409 / 10409 (contract: idempotency).
func multiIdempotency(t *testing.T, r *multiRig) {
	c := r.partner(t, "")
	a, b := r.urls[0], r.urls[1]
	email := "idem-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.com"
	hdr := map[string]string{"Idempotency-Key": "multi-" + email}
	first := want(t, "user_create on A", c.do(t, a, http.MethodPost, "/v2/users", "user_create", userBody(email), hdr), http.StatusCreated, 0)
	again := want(t, "same key on B", c.do(t, b, http.MethodPost, "/v2/users", "user_create", userBody(email), hdr), http.StatusCreated, 0)
	if !bytes.Equal(first.Raw, again.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("B did not replay A's answer: %s (Idempotent-Replayed %q) vs %s", again, again.Header.Get("Idempotent-Replayed"), first)
	}
	other := userBody(email)
	other["first_name"] = "Karin"
	want(t, "same key, another body, on B", c.do(t, b, http.MethodPost, "/v2/users", "user_create", other, hdr), http.StatusConflict, 10409)

	// Concurrent: every key is sent by `senders` clients at once, spread
	// over the instances; each must create one user.
	keys, senders := 8, 2*len(r.urls)
	if soak() {
		keys = 100
	}
	type result struct {
		key int
		a   answer
	}
	results := make(chan result, keys*senders)
	var wg sync.WaitGroup
	for k := 0; k < keys; k++ {
		body := userBody(fmt.Sprintf("conc-%d-%s", k, email))
		h := map[string]string{"Idempotency-Key": fmt.Sprintf("conc-%d-%s", k, email)}
		reqs := make([]*http.Request, senders)
		for s := range reqs {
			reqs[s] = c.signed(t, r.urls[s%len(r.urls)], http.MethodPost, "/v2/users", "user_create", body, h)
		}
		for _, req := range reqs {
			wg.Add(1)
			go func() { defer wg.Done(); results <- result{k, c.send(t, req)} }()
		}
	}
	wg.Wait()
	close(results)
	created := map[int][]byte{}
	var replays, inFlight int
	for res := range results {
		switch {
		case res.a.Status == http.StatusCreated && res.a.Header.Get("Idempotent-Replayed") == "true":
			replays++
			if prev, ok := created[res.key]; ok && !bytes.Equal(prev, res.a.Raw) {
				t.Errorf("key %d: two different 201 answers: %s vs %s", res.key, prev, res.a.Raw)
			}
			created[res.key] = res.a.Raw
		case res.a.Status == http.StatusCreated:
			if prev, ok := created[res.key]; ok && !bytes.Equal(prev, res.a.Raw) {
				t.Errorf("key %d: two different 201 answers: %s vs %s", res.key, prev, res.a.Raw)
			}
			created[res.key] = res.a.Raw
		case res.a.Status == http.StatusConflict && res.a.Code == 10409:
			inFlight++
		default:
			t.Errorf("key %d: unexpected answer %s", res.key, res.a)
		}
	}
	var users int
	if err := r.db.QueryRow(`SELECT count(*) FROM users WHERE email LIKE $1`, "%"+email).Scan(&users); err != nil {
		t.Fatal(err)
	}
	if users != keys+1 {
		t.Fatalf("%d users for %d keys (plus the first): a key took effect more than once or not at all", users, keys)
	}
	// Every key settles to its one stored answer, whichever instance asks.
	for k := 0; k < keys; k++ {
		h := map[string]string{"Idempotency-Key": fmt.Sprintf("conc-%d-%s", k, email)}
		got := want(t, "settled key", c.do(t, r.proxy.URL, http.MethodPost, "/v2/users", "user_create", userBody(fmt.Sprintf("conc-%d-%s", k, email)), h),
			http.StatusCreated, 0)
		if prev, ok := created[k]; ok && !bytes.Equal(prev, got.Raw) {
			t.Fatalf("key %d replays %s, a sender got %s", k, got.Raw, prev)
		}
	}
	t.Logf("%d keys × %d concurrent senders over %d instances: %d users created, %d replays, %d answered 10409 (in flight)",
		keys, senders, len(r.urls), users-1, replays, inFlight)
}

// ReplayProtection: a signed request accepted by one instance is refused as
// a replay (401 / 10003, contract §2) by every other, and the same signed
// request sent to all instances at once is accepted exactly once.
func multiReplay(t *testing.T, r *multiRig) {
	c := r.partner(t, "")
	for i, base := range r.urls {
		req := c.signed(t, base, http.MethodGet, "/v2/partner", "partner_details", nil, nil)
		want(t, "partner_details", c.send(t, req), http.StatusOK, 0)
		for j, other := range r.urls {
			again := req.Clone(req.Context())
			again.URL, _ = url.Parse(other + "/v2/partner")
			again.Body = http.NoBody
			want(t, fmt.Sprintf("accepted by %d, sent again to %d", i, j), c.send(t, again), http.StatusUnauthorized, 10003)
		}
	}
	email := "replay-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.com"
	post := c.signed(t, r.urls[0], http.MethodPost, "/v2/users", "user_create", userBody(email), nil)
	raw, _ := io.ReadAll(post.Body)
	want(t, "user_create on A", c.send(t, cloneTo(post, r.urls[0], raw)), http.StatusCreated, 0)
	want(t, "the same POST on B", c.send(t, cloneTo(post, r.urls[1], raw)), http.StatusUnauthorized, 10003)

	// One signed POST sent to every instance at once (twice each): one
	// creates the user, every other copy is a replay.
	rounds := 10
	if soak() {
		rounds = 300
	}
	for round := 0; round < rounds; round++ {
		body := userBody(fmt.Sprintf("round-%d-%s", round, email))
		req := c.signed(t, r.urls[0], http.MethodPost, "/v2/users", "user_create", body, nil)
		raw, _ := io.ReadAll(req.Body)
		var wg sync.WaitGroup
		answers := make([]answer, 2*len(r.urls))
		for i := range answers {
			wg.Add(1)
			go func() { defer wg.Done(); answers[i] = c.send(t, cloneTo(req, r.urls[i%len(r.urls)], raw)) }()
		}
		wg.Wait()
		ok := 0
		for _, a := range answers {
			switch {
			case a.Status == http.StatusCreated && a.Code == 0:
				ok++
			case a.Status == http.StatusUnauthorized && a.Code == 10003:
			default:
				t.Errorf("round %d: unexpected %s", round, a)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: one signature sent %d times at once over %d instances was accepted %d times", round, len(answers), len(r.urls), ok)
		}
	}
	var users int
	if err := r.db.QueryRow(`SELECT count(*) FROM users WHERE email = $1`, email).Scan(&users); err != nil || users != 1 {
		t.Fatalf("%d users after a replayed POST (%v)", users, err)
	}
	if err := r.db.QueryRow(`SELECT count(*) FROM users WHERE email LIKE $1`, "round-%-"+email).Scan(&users); err != nil || users != rounds {
		t.Fatalf("%d users for %d signatures each accepted once (%v)", users, rounds, err)
	}
	t.Logf("%d signed POSTs each sent %d times at once over %d instances: each accepted once, %d users", rounds, 2*len(r.urls), len(r.urls), users)
}

// multiReplayTuple: contract §2's replay guard refuses the same request,
// not the same signature. 50 accounts_list pages signed at one x-timestamp
// carry one x-hash (version 1 signs neither method nor path); sent at once,
// spread over every instance, each is accepted; sent again to another
// instance, each is refused; and an identical request sent to every
// instance at once is accepted exactly once. (Two keys, so that neither
// crosses the rig's rate limit of 50 per instance.)
func multiReplayTuple(t *testing.T, r *multiRig) {
	c := r.partner(t, "")
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	hash := partnerssvc.Signature([]byte(c.secret), c.key, ts, "accounts_list", nil)
	page := func(base string, n int) *http.Request {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v2/accounts/%d/10", base, n), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-api-key", c.key)
		req.Header.Set("x-timestamp", ts)
		req.Header.Set("x-hash", hash)
		return req
	}
	const pages = 50
	burst := func(count int, mk func(i int) *http.Request) []answer {
		out := make([]answer, count)
		var wg sync.WaitGroup
		for i := range out {
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = c.send(t, mk(i)) }()
		}
		wg.Wait()
		return out
	}
	n := len(r.urls)
	for i, a := range burst(pages, func(i int) *http.Request { return page(r.urls[i%n], i+1) }) {
		want(t, fmt.Sprintf("page %d, one x-hash for all, instance %d", i+1, i%n), a, http.StatusOK, 0)
	}
	// Every fifth page again, on the next instance.
	for i, a := range burst(pages/5, func(i int) *http.Request { return page(r.urls[(5*i+1)%n], 5*i+1) }) {
		want(t, fmt.Sprintf("page %d again on instance %d", 5*i+1, (5*i+1)%n), a, http.StatusUnauthorized, 10003)
	}
	// With another key: pages 1..10, each sent to every instance twice at
	// once: one answer per page is 200, the others 10003.
	c = r.partner(t, "")
	ts = strconv.FormatInt(time.Now().Unix(), 10)
	hash = partnerssvc.Signature([]byte(c.secret), c.key, ts, "accounts_list", nil)
	for p := 1; p <= 10; p++ {
		answers := make([]answer, 2*n)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Add(1)
			go func() { defer wg.Done(); answers[i] = c.send(t, page(r.urls[i%n], p)) }()
		}
		wg.Wait()
		ok := 0
		for _, a := range answers {
			switch {
			case a.Status == http.StatusOK && a.Code == 0:
				ok++
			case a.Status == http.StatusUnauthorized && a.Code == 10003:
			default:
				t.Errorf("page %d: unexpected %s", p, a)
			}
		}
		if ok != 1 {
			t.Fatalf("page %d: the same request sent %d times at once over %d instances was accepted %d times", p, len(answers), n, ok)
		}
	}
	t.Logf("one x-hash: %d different requests accepted at once over %d instances, %d of them refused when sent again; 10 identical requests each accepted once of %d copies", pages, n, pages/5, 2*n)
}

func cloneTo(req *http.Request, base string, body []byte) *http.Request {
	out, _ := http.NewRequest(req.Method, base+req.URL.Path, bytes.NewReader(body))
	out.Header = req.Header.Clone()
	return out
}

// JobsAndWebhooksRunOnce: events created through the proxy (so by every
// instance) are delivered exactly once overall, each delivery job runs one
// attempt in one process and the processes share the work; the periodic
// maintenance job, scheduled by every instance, is never pending twice and
// each run is one attempt.
func multiJobs(t *testing.T, r *multiRig) {
	sink := newHookSink(t)
	// account_status sends one body for every account, and the path is not
	// signed: each key can sign about 25 of them at once, then one a
	// second. Several partners keep it quick.
	accounts, partners := 30, 2
	if soak() {
		accounts, partners = 1000, 40
	}
	var clients []*apiClient
	var users, merchants []string
	for i := 0; i < partners; i++ {
		c := r.partner(t, sink.URL+"/hooks")
		clients, merchants = append(clients, c), append(merchants, c.merchant)
		users = append(users, want(t, "user", c.do(t, r.proxy.URL, http.MethodPost, "/v2/users", "user_create",
			userBody(fmt.Sprintf("hooks-%d@example.com", time.Now().UnixNano())), nil), http.StatusCreated, 0).Data["token"].(string))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := 0; i < accounts; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, user := clients[i%partners], users[i%partners]
			a := c.do(t, r.proxy.URL, http.MethodPost, "/v2/accounts", "account_create", map[string]any{"program": "account_eur", "user": user}, nil)
			if a.Status != http.StatusCreated {
				t.Errorf("account_create: %s", a)
				return
			}
			// account.status_changed, emitted by whichever instance the proxy picks.
			a = c.do(t, r.proxy.URL, http.MethodPut, "/v2/accounts/"+a.Data["token"].(string)+"/status", "account_status", map[string]any{"status": "blocked"}, nil)
			if a.Status != http.StatusOK {
				t.Errorf("account_status: %s", a)
			}
		}()
	}
	wg.Wait()
	var events int
	if err := r.db.QueryRow(`SELECT count(*) FROM events e JOIN partners p ON p.id = e.partner_id WHERE p.master_merchant = ANY($1)`, pq.Array(merchants)).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events < accounts {
		t.Fatalf("%d events for %d accounts blocked", events, accounts)
	}
	// Not a failure here: the count below says what arrived.
	testwait.Try(func() bool { return sink.received() >= events })
	// A late duplicate would come from a delivery job still running or
	// due: wait until none is, instead of a fixed 500 ms that a loaded
	// machine may not give the workers.
	testwait.For(t, "no webhook delivery job running or due (jobs running or due)", func() (int, bool) {
		var busy int
		if err := r.db.QueryRow(`SELECT count(*) FROM jobs WHERE kind = $1
			AND (state = 'running' OR (state = 'available' AND run_at <= now()))`, kernel.JobWebhookDeliver).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		return busy, busy == 0
	})
	sink.mu.Lock()
	got, dups := len(sink.bodies), sink.dups
	sink.mu.Unlock()
	if got != events || dups != 0 {
		t.Fatalf("%d events: the receiver saw %d distinct ids and %d duplicates", events, got, dups)
	}
	rows, err := r.db.Query(`SELECT split_part(locked_by, '-', array_length(string_to_array(locked_by, '-'), 1) - 1) AS pid,
		count(*), max(attempt), bool_and(state = 'succeeded')
		FROM jobs WHERE kind = $1 GROUP BY 1 ORDER BY 1`, kernel.JobWebhookDeliver)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	perPid := map[string]int{}
	for rows.Next() {
		var pid string
		var n, maxAttempt int
		var ok bool
		if err := rows.Scan(&pid, &n, &maxAttempt, &ok); err != nil {
			t.Fatal(err)
		}
		if maxAttempt != 1 || !ok {
			t.Errorf("jobs run by pid %s: max attempt %d, all succeeded %v", pid, maxAttempt, ok)
		}
		perPid[pid] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range r.pids {
		if perPid[strconv.Itoa(pid)] == 0 {
			t.Errorf("instance pid %d ran no delivery job (%v): the processes did not share the work", pid, perPid)
		}
	}
	var maint, maxAttempt, pendingTwice int
	if err := r.db.QueryRow(`SELECT count(*), coalesce(max(attempt), 0) FROM jobs WHERE kind = $1`, ops.JobMaintenance).Scan(&maint, &maxAttempt); err != nil {
		t.Fatal(err)
	}
	if err := r.db.QueryRow(`SELECT count(*) FROM jobs WHERE kind = $1 AND state IN ('available', 'running')`, ops.JobMaintenance).Scan(&pendingTwice); err != nil {
		t.Fatal(err)
	}
	if maint == 0 || maxAttempt > 1 || pendingTwice > 1 {
		t.Errorf("maintenance jobs: %d in all, max attempt %d, %d pending at once", maint, maxAttempt, pendingTwice)
	}
	t.Logf("%d events created through %d instances, delivered once each, 0 duplicates; delivery jobs per process %v; %d maintenance job(s), never two pending, each run once",
		events, len(r.urls), perPid, maint)
}

// RateLimits: the API rate limit (EMI_RATE_LIMIT) counts per instance: a key
// that spent its budget on A is refused there (429 / 10029 with
// Retry-After) and still served by B. Limits kept in PostgreSQL hold across
// instances: card_send_pin's 5 texts per card and day, sent alternately
// through A and B, refuses the sixth on either.
func multiRateLimits(t *testing.T, r *multiRig, limit int) {
	// Requests with distinct bodies: identical ones would need distinct
	// timestamps, at most one new one per second (contract §2).
	seq := 0
	create := func(c *apiClient, base string) answer {
		seq++
		return c.do(t, base, http.MethodPost, "/v2/users", "user_create", userBody(fmt.Sprintf("rl-%d-%d@example.com", seq, time.Now().UnixNano())), nil)
	}
	c := r.partner(t, "")
	a, b := r.urls[0], r.urls[1]
	for i := 0; i < limit; i++ {
		want(t, fmt.Sprintf("request %d on A", i+1), create(c, a), http.StatusCreated, 0)
	}
	over := want(t, "over the limit on A", create(c, a), http.StatusTooManyRequests, 10029)
	if over.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After: %v", over.Header)
	}
	want(t, "same key on B (per-instance limit)", create(c, b), http.StatusCreated, 0)

	// Through the proxy a key gets about N × the limit.
	p := r.partner(t, "")
	ok := 0
	for i := 0; i < (len(r.urls)+1)*limit; i++ {
		if a := create(p, r.proxy.URL); a.Status == http.StatusCreated {
			ok++
		} else {
			want(t, "over the limit", a, http.StatusTooManyRequests, 10029)
		}
	}
	if ok != len(r.urls)*limit {
		t.Errorf("through the proxy one key was served %d times, want %d (%d instances × %d)", ok, len(r.urls)*limit, len(r.urls), limit)
	}

	// A limit kept in PostgreSQL: the PIN of a card texted at most 5 times a day.
	s := r.partner(t, "")
	user := want(t, "user", s.do(t, a, http.MethodPost, "/v2/users", "user_create", userBody(fmt.Sprintf("pin-%d@example.com", time.Now().UnixNano())), nil),
		http.StatusCreated, 0).Data["token"].(string)
	acc := want(t, "account", s.do(t, b, http.MethodPost, "/v2/accounts", "account_create", map[string]any{"program": "account_eur", "user": user}, nil),
		http.StatusCreated, 0).Data["token"].(string)
	delivery := map[string]any{"first_name": "Elin", "last_name": "Sandqvist", "address1": "Drottninggatan 1",
		"city": "Stockholm", "zip": "11151", "country": "SE", "phone": "+46701234567", "method": "standard"}
	card := want(t, "plastic card", s.do(t, a, http.MethodPost, "/v2/cards", "card_create",
		map[string]any{"account": acc, "type": "plastic", "delivery_details": delivery, "pin": "4821"}, nil), http.StatusCreated, 0).Data["token"].(string)
	want(t, "activate", s.do(t, b, http.MethodPut, "/v2/cards/"+card+"/activate", "card_activate", map[string]any{}, nil), http.StatusOK, 0)
	for i := 0; i < 5; i++ {
		want(t, fmt.Sprintf("text %d via instance %d", i+1, i%2), s.do(t, r.urls[i%2], http.MethodPost, "/v2/cards/"+card+"/pin/send", "card_send_pin", nil, nil),
			http.StatusOK, 0)
	}
	for i, base := range []string{a, b} {
		want(t, fmt.Sprintf("sixth text via instance %d", i), s.do(t, base, http.MethodPost, "/v2/cards/"+card+"/pin/send", "card_send_pin", nil, nil),
			http.StatusTooManyRequests, 10029)
	}
	t.Logf("EMI_RATE_LIMIT=%d: refused on A after %d, still served by B; through the proxy %d served (= %d instances × %d); card_send_pin: 5 texts over both, the 6th refused on each",
		limit, limit, ok, len(r.urls), limit)
}

// conformanceDir is the black-box suite: $EMI_CONFORMANCE_DIR, or
// ../shared/conformance next to the project's root.
func conformanceDir() string {
	d := os.Getenv("EMI_CONFORMANCE_DIR")
	if d == "" {
		d = filepath.Join("..", "..", "..", "shared", "conformance")
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		return d
	}
	return abs
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}

type testEvent struct {
	Time    time.Time
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

type caseResult struct {
	start, end time.Time
	action     string
	output     strings.Builder
}

// TestConformanceOverSeveralInstances runs the conformance suite
// (../shared/conformance) against two `emi serve` processes on one database
// (EMI_CONFORMANCE_INSTANCES for more) behind a round-robin proxy, as
// run.sh does for one: migrate and seed a fresh database, then `go test`
// in the suite's directory with EMI_BASE_URL pointing at the proxy. Every
// case must pass. Over the whole run the proxy also checks that no
// instance accepted a request another had accepted (contract §2's replay
// tuple, code 0 without Idempotency-Key), refused a fresh one as a replay,
// or answered 5xx. `make conformance` runs it; EMI_CONFORMANCE_FLAGS adds go
// test flags (-run TestCard).
func TestConformanceOverSeveralInstances(t *testing.T) {
	conformanceOver(t, false)
}

// TestConformanceThroughPgBouncer runs the suite the same way with both
// instances reaching PostgreSQL through PgBouncer in transaction mode
// (.ci/pgbouncer.sh: 10 server connections per database for the two pools
// of 40), as a payments team deploys it: EMI_DB_POOLER at its default,
// EMI_LISTEN_DATABASE_URL the direct connection for LISTEN, the migrations
// run directly. Before emi handled a pooler it passed 13 to 30 of 40 cases.
func TestConformanceThroughPgBouncer(t *testing.T) {
	conformanceOver(t, true)
}

func conformanceOver(t *testing.T, viaPooler bool) {
	if testing.Short() {
		t.Skip("runs the conformance suite against several emi serve processes")
	}
	t.Parallel()
	dir := conformanceDir()
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Skipf("no conformance suite at %s (set EMI_CONFORMANCE_DIR to run it): %v", dir, err)
	}
	n := 2
	if s := os.Getenv("EMI_CONFORMANCE_INSTANCES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 2 {
			t.Fatalf("EMI_CONFORMANCE_INSTANCES=%q: want a number of at least 2 (one instance: run.sh)", s)
		}
		n = v
	}
	began := time.Now()
	// The rate limit at its default (600 a minute per instance), as run.sh
	// leaves it.
	// The sanctions lists next to the suite, which run.sh's server finds
	// relative to the project's root.
	extra := map[string]string{"EMI_RATE_LIMIT": ""}
	if d := filepath.Join(dir, "..", "data", "sanctions"); dirExists(d) {
		extra["EMI_SANCTIONS_DIR"] = d
	}
	if viaPooler {
		direct := pgtest.URL(t)
		extra["DATABASE_URL"] = direct
		extra["EMI_LISTEN_DATABASE_URL"] = direct
		extra["EMI_DB_POOLER"] = "transaction"
		extra["EMI_POOLED_DATABASE_URL"] = pgtest.ThroughPooler(t, direct)
	}
	r := newMultiRig(t, n, extra)
	args := append([]string{"test", "-count=1", "-json", "-timeout", "15m"}, strings.Fields(os.Getenv("EMI_CONFORMANCE_FLAGS"))...)
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EMI_BASE_URL="+r.proxy.URL, "EMI_BIN="+r.bin, "DATABASE_URL="+r.vars["DATABASE_URL"],
		"EMI_MASTER_KEY="+r.vars["EMI_MASTER_KEY"], "EMI_MODE=sandbox", "EMI_PUBLIC_URL="+r.proxy.URL,
		"EMI_SANDBOX_WEBHOOK_PORTS="+r.vars["EMI_SANDBOX_WEBHOOK_PORTS"])
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()

	cases := map[string]*caseResult{}
	var order []string
	var pkgOutput strings.Builder
	for _, line := range bytes.Split(out, []byte("\n")) {
		var ev testEvent
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			pkgOutput.Write(line)
			pkgOutput.WriteByte('\n')
			continue
		}
		if ev.Test == "" {
			pkgOutput.WriteString(ev.Output)
			continue
		}
		name := strings.SplitN(ev.Test, "/", 2)[0]
		c := cases[name]
		if c == nil {
			c = &caseResult{start: ev.Time}
			cases[name] = c
			order = append(order, name)
		}
		c.output.WriteString(ev.Output)
		if ev.Test == name && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
			c.action, c.end = ev.Action, ev.Time
		}
	}
	if len(cases) == 0 {
		t.Fatalf("the conformance suite ran no case: %v\n%s\n%s", runErr, pkgOutput.String(), stderr.String())
	}

	r.proxy.mu.Lock()
	records := append([]proxyRecord(nil), r.proxy.records...)
	r.proxy.mu.Unlock()
	var passed, skipped int
	var unexpected []string
	for _, name := range order {
		c := cases[name]
		switch c.action {
		case "pass":
			passed++
		case "skip":
			skipped++
		case "fail":
			unexpected = append(unexpected, name)
			t.Errorf("%s failed:\n%s", name, c.output.String())
		default:
			unexpected = append(unexpected, name)
			t.Errorf("%s did not finish (%q):\n%s", name, c.action, c.output.String())
		}
	}
	if runErr != nil && len(unexpected) == 0 {
		t.Errorf("go test in %s: %v\n%s\n%s", dir, runErr, pkgOutput.String(), stderr.String())
	}

	// What the proxy saw over the whole run.
	var repeats, replayRefused, repeatsIdem int
	for _, rec := range records {
		switch {
		case rec.status >= 500:
			t.Errorf("instance %d answered %s %s with HTTP %d", rec.instance, rec.method, rec.path, rec.status)
		case rec.seenBefore && rec.code == 10003:
			replayRefused++
		case rec.seenBefore && rec.idempotency:
			repeatsIdem++ // a retry with its Idempotency-Key gets the stored answer (contract §5)
		case rec.seenBefore && rec.code == 0:
			t.Errorf("instance %d accepted %s %s although the same request had been accepted before (contract §2)", rec.instance, rec.method, rec.path)
		case !rec.seenBefore && rec.code == 10003:
			t.Errorf("instance %d refused %s %s as a replay although the request was new", rec.instance, rec.method, rec.path)
		}
		if rec.seenBefore {
			repeats++
		}
	}
	counts := r.proxy.checkBalanced(t)
	through := "direct"
	if viaPooler {
		through = "through PgBouncer (transaction mode)"
	}
	t.Logf("conformance over %d instances, %s, in %s: %d cases, %d passed, %d skipped, %d failed %v",
		n, through, time.Since(began).Round(time.Second), len(cases), passed, skipped, len(unexpected), unexpected)
	t.Logf("requests per instance through the round-robin proxy: %v; %d signed requests, %d repeated an accepted request: %d refused 10003, %d answered from an Idempotency-Key",
		counts, len(records), repeats, replayRefused, repeatsIdem)
}
