package main

import (
	"bytes"
	"context"
	"emi/internal/service/partners"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{.50, 50 * time.Millisecond}, {.95, 95 * time.Millisecond}, {.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("p%.0f of 1..100 ms = %s, want %s", c.p*100, got, c.want)
		}
	}
	if got := percentile([]time.Duration{7}, .99); got != 7 {
		t.Errorf("p99 of one value = %s", got)
	}
	if got := percentile(nil, .5); got != 0 {
		t.Errorf("p50 of nothing = %s", got)
	}
	// 3 values: p50 is the 2nd, p95 and p99 the 3rd.
	three := []time.Duration{1, 2, 3}
	if percentile(three, .5) != 2 || percentile(three, .95) != 3 || percentile(three, .34) != 2 || percentile(three, .33) != 1 {
		t.Errorf("nearest rank on 3 values: %d %d %d %d", percentile(three, .5), percentile(three, .95), percentile(three, .34), percentile(three, .33))
	}
}

func TestRecorderResultTotalsAMixedRun(t *testing.T) {
	r := newRecorder()
	for i := 1; i <= 10; i++ {
		r.add("flow reads", time.Duration(i)*time.Millisecond, true, "ok", false)
		r.add("partner_details", time.Duration(i)*time.Millisecond, true, "HTTP 200 code 0", false)
	}
	r.add("flow writes", 100*time.Millisecond, true, "ok", false)
	r.add("flow writes", 0, false, "transfer_create: HTTP 500 code 10000", true)
	r.add("transfer_create", 90*time.Millisecond, true, "HTTP 500 code 10000", true)
	r.addLate()
	res := r.result("mixed", "5/s open loop, ≤ 4 in flight", []string{"reads", "writes"}, 2*time.Second)
	if len(res.Flows) != 3 || res.Flows[2].Name != "total" {
		t.Fatalf("flows: %+v", res.Flows)
	}
	tot := res.Total()
	if tot.Count != 11 || tot.Errors != 1 || tot.Max != 100*time.Millisecond || tot.Rate != 5.5 {
		t.Fatalf("total: %+v", tot)
	}
	if tot.Codes["ok"] != 11 || tot.Codes["transfer_create: HTTP 500 code 10000"] != 1 {
		t.Fatalf("total answers: %v", tot.Codes)
	}
	if res.Late != 1 || len(res.Requests) != 2 || res.Requests[1].Name != "transfer_create" || res.Requests[1].Errors != 1 {
		t.Fatalf("requests: %+v late %d", res.Requests, res.Late)
	}
	// A single-flow run has no separate total.
	r2 := newRecorder()
	r2.add("flow partner_details", time.Millisecond, true, "ok", false)
	if res := r2.result("partner_details", "1 clients", []string{"partner_details"}, time.Second); len(res.Flows) != 1 || res.Total().Name != "partner_details" {
		t.Fatalf("single: %+v", res.Flows)
	}
}

func TestSchedulerTimetableAndLateness(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := scheduler{start: start, rate: 200}
	if got := s.at(0); !got.Equal(start) {
		t.Fatalf("first start %s", got)
	}
	if got := s.at(200); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("200th start at 200/s: %s", got.Sub(start))
	}
	if got := s.at(3); got.Sub(start) != 15*time.Millisecond {
		t.Fatalf("3rd start at 200/s: %s", got.Sub(start))
	}
	due := s.at(10)
	if s.late(due, due.Add(lateAfter)) || !s.late(due, due.Add(lateAfter+time.Microsecond)) {
		t.Fatal("lateness threshold")
	}
}

// The open loop starts flows on time while there are free slots, counts
// starts that waited for a slot as late, and measures from the intended
// time: a slow flow's wait for a slot is in its latency.
func TestOpenLoopBoundsInFlightAndCountsLateStarts(t *testing.T) {
	var running, most atomic.Int64
	slow := flow{name: "slow", run: func(ctx context.Context, _ *caller, _ int64) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(100 * time.Millisecond)
		running.Add(-1)
		return nil
	}}
	c := &caller{rec: newRecorder()}
	// 100/s with 2 slots and 100 ms flows: at most 20/s can start on time.
	elapsed := run(context.Background(), c, func(int64) flow { return slow }, 0, 100, 2, time.Second)
	res := c.rec.result("slow", "", []string{"slow"}, elapsed)
	if most.Load() > 2 {
		t.Fatalf("%d flows in flight at once, bound 2", most.Load())
	}
	st := res.Total()
	if st.Count < 5 || st.Count > 40 {
		t.Fatalf("%d flows completed in %s", st.Count, elapsed)
	}
	if res.Late < st.Count/2 {
		t.Fatalf("%d late starts of %d: starts that waited for a slot must count", res.Late, st.Count)
	}
	if st.Max < 300*time.Millisecond {
		t.Fatalf("max latency %s: latency must run from the intended start, not the actual one", st.Max)
	}
}

func TestClosedLoopRunsEveryClient(t *testing.T) {
	var seen [4]atomic.Int64
	var next atomic.Int64
	f := flow{name: "f", run: func(ctx context.Context, _ *caller, n int64) error {
		seen[next.Add(1)%4].Add(1)
		time.Sleep(5 * time.Millisecond)
		return nil
	}}
	c := &caller{rec: newRecorder()}
	elapsed := run(context.Background(), c, func(int64) flow { return f }, 4, 0, 0, 300*time.Millisecond)
	res := c.rec.result("f", "4 clients", []string{"f"}, elapsed)
	if res.Total().Count < 20 || res.Late != 0 {
		t.Fatalf("%+v", res.Total())
	}
}

func TestMixedPickerFollowsTheRatio(t *testing.T) {
	var ws []int
	total := 0
	for _, m := range mixedRatio {
		ws = append(ws, m.Weight)
		total += m.Weight
	}
	if total != 100 {
		t.Fatalf("the mix adds up to %d%%", total)
	}
	p := newPicker(ws)
	for i := range ws {
		if got := p.pickWithRound(int64(i)); got != i {
			t.Fatalf("start %d took choice %d: the first round takes each once", i, got)
		}
	}
	const n = 200000
	counts := make([]int, len(ws))
	for i := int64(0); i < n; i++ {
		counts[p.pickWithRound(i)]++
	}
	for i, w := range ws {
		share := float64(counts[i]) / n * 100
		if math.Abs(share-float64(w)) > 0.5 {
			t.Errorf("%s: %.2f%% of starts, want %d%%", mixedRatio[i].Flow, share, w)
		}
	}
	one := newPicker([]int{0, 5, 0})
	for i := int64(3); i < 100; i++ {
		if one.pickWithRound(i) != 1 {
			t.Fatal("a zero weight was picked")
		}
	}
}

func TestLettersAreDistinctNames(t *testing.T) {
	seen := map[string]bool{}
	for i := int64(0); i < 2000; i++ {
		l := letters(i)
		if seen[l] || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("letters(%d) = %q", i, l)
		}
		seen[l] = true
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
pkg: emi/web/api
cpu: Intel(R) Xeon(R) Processor
BenchmarkAuthMiddleware-2   	    1286	    880123 ns/op	   20480 B/op	     175 allocs/op
BenchmarkApplicationToApproval-2   	      20	  98765432 ns/op	        95.00 p50-ms	       120.0 p95-ms	  123 B/op	 4 allocs/op
PASS
pkg: emi/internal/seal
BenchmarkSeal16-2   	  500000	      2100 ns/op
ok  	emi/web/api	12.3s
`
	got := parseGoBench(out)
	if len(got) != 3 {
		t.Fatalf("%+v", got)
	}
	if got[0].Pkg != "emi/web/api" || got[0].Name != "BenchmarkAuthMiddleware-2" || got[0].N != "1286" || got[0].Metrics[0] != [2]string{"880123", "ns/op"} || got[0].Metrics[2] != [2]string{"175", "allocs/op"} {
		t.Fatalf("%+v", got[0])
	}
	if got[1].Metrics[1] != [2]string{"95.00", "p50-ms"} || got[2].Pkg != "emi/internal/seal" {
		t.Fatalf("%+v %+v", got[1], got[2])
	}
}

func TestRenderReport(t *testing.T) {
	single := Result{Scenario: "partner_details", Shape: "32 clients", Elapsed: 10 * time.Second,
		Flows:    []Stats{{Name: "partner_details", Count: 20000, Rate: 2000, P50: 11 * time.Millisecond, P95: 40 * time.Millisecond, P99: 87 * time.Millisecond, Max: 338 * time.Millisecond, Errors: 1, Codes: map[string]int{"ok": 19999}}},
		Requests: []Stats{{Name: "partner_details", Count: 20000, Rate: 2000, Codes: map[string]int{"HTTP 200 code 0": 19999, "HTTP 500 code 10000": 1}, Errors: 1}}}
	mixed := Result{Scenario: "mixed", Shape: "100/s open loop, ≤ 256 in flight", Elapsed: 10 * time.Second, Late: 3,
		Flows: []Stats{{Name: "people", Count: 30, Rate: 3, P50: 40 * time.Millisecond}, {Name: "total", Count: 1000, Rate: 100, P99: 150 * time.Millisecond}},
		Requests: []Stats{{Name: "kyc_init", Count: 30, Rate: 3, Codes: map[string]int{"HTTP 201 code 0": 30}},
			{Name: "user_create", Count: 30, Rate: 3, Codes: map[string]int{"HTTP 201 code 0": 30}}}}
	r := report{Date: time.Date(2026, 11, 23, 1, 2, 0, 0, time.UTC), Duration: 10 * time.Second,
		Machine: machine{CPU: "Xeon", Cores: "2", Memory: "8.0 GiB", OS: "Debian", Go: "go1.26", Postgres: "PostgreSQL 15.18"},
		Setup:   []string{"$TMP/emi migrate"}, Results: []Result{single, mixed}, Sources: []string{"issue 2", "issue 11"},
		Commands:     []string{"emi-load -op partner_details -c 32", "emi-load -op mixed -rate 100"},
		GoCmds:       []string{"go test -bench . ./internal/seal/"},
		GoBench:      []goBench{{Pkg: "emi/internal/seal", Name: "BenchmarkSeal16-2", N: "500000", Metrics: [][2]string{{"2100", "ns/op"}, {"64", "B/op"}, {"2", "allocs/op"}, {"95", "p50-ms"}}}},
		ServerErrors: []string{`{"level":"ERROR"}`}, Data: "2000 accounts", Took: 9*time.Minute + 30*time.Second,
		PGCmds: []string{"pgbench -c 32 -f cmd/emi-load/account_create.pgbench.sql"}, PGBench: []pgbenchRun{{Op: "account_create", Emi: 500, TPS: 800, Latency: "40.0 ms"}}}
	var buf bytes.Buffer
	renderReport(&buf, r)
	md := buf.String()
	for _, want := range []string{
		"2026-11-23 01:02 UTC", "| CPU | Xeon |", "| PostgreSQL | PostgreSQL 15.18 |", "$TMP/emi migrate",
		"| partner_details | 32 clients | 20000 | 2000/s | 11.0 ms | 40.0 ms | 87.0 ms | 338.0 ms | 1 | HTTP 200 code 0 ×19999, HTTP 500 code 10000 ×1 |",
		"| mixed | 100/s open loop, ≤ 256 in flight, 3 late starts | 1000 | 100/s |",
		"### mixed, 100/s open loop, ≤ 256 in flight: per flow and per request",
		"| flow | people | 30 | 3.0/s | 40.0 ms |", "| request | kyc_init | 30 | 3.0/s |",
		"Mix (percent of flow starts): partner_details 10, account_details 20",
		"| issue 11 | `emi-load -op mixed -rate 100` |",
		"| internal/seal | BenchmarkSeal16-2 | 500000 | 2.10 µs | 64 | 2 | 95 p50-ms |",
		"## Errors the server logged", "Data: 2000 accounts.", "The whole `make bench` took 9m30s.",
		"| account_create | 500 req/s | 800 tps (latency average 40.0 ms) | 0.62 |", "pgbench -c 32 -f cmd/emi-load/account_create.pgbench.sql",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "### partner_details") {
		t.Error("a single-request scenario got a breakdown table")
	}
}

// fakeClock is a clock that moves only when the stamper waits.
type fakeClock struct{ t time.Time }

func (f *fakeClock) stamper() *stamper {
	s := newStamper()
	s.now = func() time.Time { return f.t }
	s.wait = func(_ context.Context, t time.Time) bool {
		if t.After(f.t) {
			f.t = t
		}
		return true
	}
	return s
}

// One key signs many different requests in one second, but never the same
// request twice (contract §2's replay tuple): the identical one goes with
// signature version 2 and a nonce of its own.
func TestStamperNeverSignsTheSameRequestTwiceInASecond(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 400e6, time.UTC)}
	s := clock.stamper()
	k := key{apiKey: "k1", secret: "s1"}
	sec := strconv.FormatInt(clock.t.Unix(), 10)
	sign := func(keyIdx int, kk key, method, target, op string, body []byte) signature {
		t.Helper()
		sig, ok := s.sign(context.Background(), keyIdx, kk, method, target, op, body)
		if !ok || sig.ts != sec {
			t.Fatalf("sign %s %s: ok %v, ts %s (want the current second %s)", method, target, ok, sig.ts, sec)
		}
		if sig.nonce == "" {
			var v1 []byte
			if method == "POST" || method == "PUT" {
				v1 = body
			}
			if sig.hash != partners.Signature([]byte(kk.secret), kk.apiKey, sig.ts, op, v1) {
				t.Fatalf("%s %s: wrong version 1 signature", method, target)
			}
		} else if sig.hash != partners.SignatureV2([]byte(kk.secret), kk.apiKey, sig.ts, op, method, target, sig.nonce, body) {
			t.Fatalf("%s %s: wrong version 2 signature", method, target)
		}
		return sig
	}
	// Two accounts, two pages, one body to two cards: same x-hash, other
	// requests, all version 1 in the same second.
	for _, r := range []struct{ m, target, op, body string }{
		{"GET", "/v2/accounts/a", "account_details", ""},
		{"GET", "/v2/accounts/b", "account_details", ""},
		{"GET", "/v2/accounts/1/10", "accounts_list", ""},
		{"GET", "/v2/accounts/2/10", "accounts_list", ""},
		{"PUT", "/v2/cards/c1/status", "card_status", `{"status":"inactive"}`},
		{"PUT", "/v2/cards/c2/status", "card_status", `{"status":"inactive"}`},
		{"PUT", "/v2/cards/c1/status", "card_status", `{"status":"active"}`},
	} {
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		if sig := sign(0, k, r.m, r.target, r.op, body); sig.nonce != "" {
			t.Fatalf("%s %s %s: a different request was signed as a repeat", r.m, r.target, r.body)
		}
	}
	// Another key (another partner) may send the identical request.
	if sig := sign(1, key{apiKey: "k2", secret: "s2"}, "GET", "/v2/accounts/a", "account_details", nil); sig.nonce != "" {
		t.Fatal("another key's identical request was signed as a repeat")
	}
	// The identical request again, twice: version 2, two nonces.
	a := sign(0, k, "GET", "/v2/accounts/a", "account_details", nil)
	b := sign(0, k, "GET", "/v2/accounts/a", "account_details", nil)
	if a.nonce == "" || b.nonce == "" || a.nonce == b.nonce || a.hash == b.hash {
		t.Fatalf("repeats: %+v %+v", a, b)
	}
	// Whitespace is not signed by version 1: this body is the same request.
	if sig := sign(0, k, "PUT", "/v2/cards/c1/status", "card_status", []byte(`{"status": "inactive"}`)); sig.nonce == "" {
		t.Fatal("a body differing only in whitespace has the same x-hash: it is a repeat")
	}
	if s.repeats.Load() != 3 {
		t.Fatalf("repeats %d, want 3", s.repeats.Load())
	}
	// The next second: version 1 again.
	clock.t = clock.t.Add(time.Second)
	sec = strconv.FormatInt(clock.t.Unix(), 10)
	if sig := sign(0, k, "GET", "/v2/accounts/a", "account_details", nil); sig.nonce != "" {
		t.Fatal("a new second starts afresh")
	}
}

// Concurrent clients on one key: no two requests carry the same replay
// identity (second, method, target, x-hash), whatever the interleaving.
func TestStamperConcurrentClientsOneKey(t *testing.T) {
	s := newStamper()
	k := key{apiKey: "k", secret: "s"}
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				target := fmt.Sprintf("/v2/accounts/%d", (c*50+i)%300)
				sig, ok := s.sign(context.Background(), 0, k, "GET", target, "account_details", nil)
				if !ok {
					t.Error("sign failed")
					return
				}
				id := sig.ts + " " + target + " " + sig.hash
				mu.Lock()
				if seen[id] {
					t.Errorf("%s signed twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// Flow n signs with key n mod N, and a 10003 is an error of the request
// and its flow even where the flow accepts a 401.
func TestCallerKeyPerFlowAndReplayIsAnError(t *testing.T) {
	var gotKeys []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotKeys = append(gotKeys, r.Header.Get("x-api-key"))
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":10003,"message":"replayed"}`))
	}))
	defer srv.Close()
	c := &caller{http: srv.Client(), base: srv.URL, keys: []key{{"a", "1"}, {"b", "2"}, {"c", "3"}}, stamp: newStamper(), rec: newRecorder()}
	for n := int64(0); n < 6; n++ {
		if _, err := c.forFlow(n).do(context.Background(), http.MethodGet, fmt.Sprintf("/v2/accounts/%d", n), "account_details", nil, http.StatusUnauthorized); err == nil {
			t.Fatal("a 10003 answer passed as expected")
		}
	}
	if strings.Join(gotKeys, "") != "abcabc" {
		t.Fatalf("keys per flow: %v", gotKeys)
	}
	res := c.rec.result("x", "", nil, time.Second)
	if len(res.Requests) != 1 || res.Requests[0].Errors != 6 {
		t.Fatalf("%+v", res.Requests)
	}
}

// TestFlowsShareSeveralInstancesRoundRobin: with -url a,b,c the n-th flow
// goes to instance n mod 3 and keeps its key choice (n mod keys).
func TestFlowsShareSeveralInstancesRoundRobin(t *testing.T) {
	c := &caller{base: "http://a", bases: []string{"http://a", "http://b", "http://c"}, keys: []key{{"k1", "s1"}, {"k2", "s2"}}}
	seen := map[string]int{}
	for n := int64(0); n < 12; n++ {
		f := c.forFlow(n)
		if want := c.bases[n%3]; f.base != want {
			t.Fatalf("flow %d goes to %s, want %s", n, f.base, want)
		}
		if f.key != int(n%2) {
			t.Fatalf("flow %d signs with key %d, want %d", n, f.key, n%2)
		}
		seen[f.base]++
	}
	if len(seen) != 3 || seen["http://a"] != 4 {
		t.Fatalf("flows per instance: %v", seen)
	}
	if one := (&caller{base: "http://a", bases: []string{"http://a"}}).forFlow(5); one.base != "http://a" {
		t.Fatalf("one instance: %s", one.base)
	}
}
