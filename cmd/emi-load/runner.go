package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"emi/internal/service/partners"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// caller sends signed requests for the flows of one run and records each.
// Every request of one flow is signed with one key (forFlow): a key stands
// for one partner, and a partner's flow never hops between partners.
type caller struct {
	http *http.Client
	base string
	// bases are the servers of a run over several instances (-url a,b,c):
	// the n-th flow sends every request to bases[n mod len(bases)], as a
	// round-robin load balancer in front of them would (one flow's
	// requests stay on one instance, like a client's keep-alive
	// connection).
	bases []string
	keys  []key
	stamp *stamper
	rec   *recorder
	// key is the index in keys of the key this flow signs with.
	key int
}

// forFlow returns the caller of the n-th flow: the same caller, signing
// with key n mod len(keys), so N keys share the load evenly.
func (c *caller) forFlow(n int64) *caller {
	cc := *c
	if len(c.keys) > 0 {
		cc.key = int(n % int64(len(c.keys)))
	}
	if len(c.bases) > 1 {
		cc.base = c.bases[n%int64(len(c.bases))]
	}
	return &cc
}

// codeReplayed is the envelope code of a replayed request (contract §2):
// always an error in a report, whatever status a flow expects, since the
// harness never sends the same request twice on purpose.
const codeReplayed = 10003

// answer is what a request got back.
type answer struct {
	status, code int
	data         json.RawMessage
}

func (a answer) String() string { return fmt.Sprintf("HTTP %d code %d", a.status, a.code) }

// errUnexpected is a flow step that got an answer it did not expect.
type errUnexpected struct {
	op string
	a  answer
}

func (e errUnexpected) Error() string { return e.op + ": " + e.a.String() }

// do signs and sends one request (contract §2) and records it under its
// operation name. want lists the HTTP statuses the flow expects; any
// other answer is an error of the request and of its flow.
func (c *caller) do(ctx context.Context, method, path, name string, body []byte, want ...int) (answer, error) {
	kk := c.keys[c.key]
	sig, ok := c.stamp.sign(ctx, c.key, kk, method, path, name, body)
	if !ok {
		return answer{}, ctx.Err()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-api-key", kk.apiKey)
	req.Header.Set("x-timestamp", sig.ts)
	req.Header.Set("x-hash", sig.hash)
	if sig.nonce != "" {
		req.Header.Set("x-signature-version", "2")
		req.Header.Set("x-nonce", sig.nonce)
	}
	t0 := time.Now()
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		c.rec.add(name, 0, false, "transport error", true)
		return answer{}, err
	}
	rb, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		c.rec.add(name, 0, false, "transport error", true)
		return answer{}, err
	}
	lat := time.Since(t0)
	var env struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(rb, &env)
	a := answer{status: res.StatusCode, code: env.Code, data: env.Data}
	expected := len(want) == 0 && a.status < 300
	for _, w := range want {
		expected = expected || a.status == w
	}
	if a.code == codeReplayed {
		expected = false
	}
	c.rec.add(name, lat, true, a.String(), !expected || a.status >= 500)
	if !expected {
		return a, errUnexpected{name, a}
	}
	return a, nil
}

// run drives flows for d with either clients closed-loop clients or, when
// rate > 0, an open loop of rate flows per second with at most inflight
// flows running; pick chooses the flow of the n-th start. After d no flow
// starts, and the flows under way finish (their requests are not
// cancelled: a client hanging up mid-request is not what is measured).
// The elapsed time returned includes that drain.
func run(ctx context.Context, c *caller, pick func(n int64) flow, clients int, rate float64, inflight int, d time.Duration) time.Duration {
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var seq atomic.Int64
	var wg sync.WaitGroup
	one := func(n int64, intended time.Time) {
		f := pick(n)
		err := f.run(ctx, c.forFlow(n), n)
		var ue errUnexpected
		if err != nil && !errors.As(err, &ue) && ctx.Err() != nil {
			return // interrupted: not counted
		}
		switch {
		case err == nil:
			c.rec.add("flow "+f.name, time.Since(intended), true, "ok", false)
		case errors.As(err, &ue):
			c.rec.add("flow "+f.name, 0, false, ue.Error(), true)
		default:
			c.rec.add("flow "+f.name, 0, false, err.Error(), true)
		}
	}
	start := time.Now()
	if rate <= 0 {
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for runCtx.Err() == nil {
					one(seq.Add(1)-1, time.Now())
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	s := scheduler{start: start, rate: rate}
	slots := make(chan struct{}, inflight)
	for n := int64(0); ; n++ {
		intended := s.at(n)
		if !sleepUntil(runCtx, intended) {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-runCtx.Done():
		}
		if runCtx.Err() != nil {
			break
		}
		if s.late(intended, time.Now()) {
			c.rec.addLate()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			one(n, intended)
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// scheduler is the open loop's timetable: the n-th flow is due at
// start + n/rate. A flow's latency is measured from that intended time, so
// a stalled server cannot hide its queue (coordinated omission).
type scheduler struct {
	start time.Time
	rate  float64
}

// lateAfter is how far behind its intended time a start counts as late:
// every in-flight slot was busy, or the scheduler itself fell behind (a
// timer on a loaded machine wakes a few milliseconds late, which is noise).
const lateAfter = 10 * time.Millisecond

func (s scheduler) at(n int64) time.Time {
	return s.start.Add(time.Duration(float64(n) / s.rate * float64(time.Second)))
}

func (s scheduler) late(intended, started time.Time) bool { return started.Sub(intended) > lateAfter }

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// signedMethod reports whether the body is part of a version 1 signature:
// POST and PUT only (contract §2).
func signedMethod(m string) bool { return m == http.MethodPost || m == http.MethodPut }

// stamper signs requests as a partner must (contract §2): the server
// refuses the same request twice, the same request being the tuple (API key,
// x-timestamp, method, request target, x-hash). One key sends many requests
// per second, all signed with version 1 and the current second, which makes
// different requests (another account, page or card) different even when
// their x-hash is equal. When that second already carried the identical
// request with that key (card_ops reads one card twice in a flow; a poll
// loop), the request is signed with version 2 and a nonce of its own, as a
// partner that means to repeat a request does: no wait, and the repeat is
// counted (Repeats in the report).
type stamper struct {
	mu      sync.Mutex
	sec     int64
	used    map[[sha256.Size]byte]struct{}
	repeats atomic.Int64
	nonces  atomic.Int64
	// now and wait are the clock and the sleep until a time (time.Now and
	// sleepUntil; tests use a fake clock).
	now  func() time.Time
	wait func(ctx context.Context, t time.Time) bool
}

func newStamper() *stamper {
	return &stamper{now: time.Now, wait: sleepUntil, used: map[[sha256.Size]byte]struct{}{}}
}

// signature is what a request carries: x-timestamp, x-hash and, for a
// version 2 signature, x-nonce.
type signature struct{ ts, hash, nonce string }

// sign returns the signature of a request never sent before in that second
// with that key; false when ctx ended while waiting for a clock that
// stepped back.
func (s *stamper) sign(ctx context.Context, keyIdx int, k key, method, target, op string, body []byte) (signature, bool) {
	var v1Body []byte
	if signedMethod(method) {
		v1Body = body
	}
	for {
		sec := s.now().Unix()
		ts := strconv.FormatInt(sec, 10)
		hash := partners.Signature([]byte(k.secret), k.apiKey, ts, op, v1Body)
		id := requestID(keyIdx, method, target, hash)
		s.mu.Lock()
		if ahead := s.sec; sec < ahead {
			// The clock stepped back: the second ahead may hold this
			// request, wait until it has passed.
			s.mu.Unlock()
			if !s.wait(ctx, time.Unix(ahead+1, 0)) {
				return signature{}, false
			}
			continue
		} else if sec > ahead {
			s.sec = sec
			clear(s.used)
		}
		_, dup := s.used[id]
		if !dup {
			s.used[id] = struct{}{}
		}
		s.mu.Unlock()
		if !dup {
			return signature{ts: ts, hash: hash}, true
		}
		s.repeats.Add(1)
		nonce := "emi-load-" + strconv.FormatInt(s.nonces.Add(1), 36)
		return signature{ts: ts, nonce: nonce,
			hash: partners.SignatureV2([]byte(k.secret), k.apiKey, ts, op, method, target, nonce, body)}, true
	}
}

// requestID is the replay identity of a request within one second, as the
// server computes it (contract §2), the timestamp aside.
func requestID(keyIdx int, method, target, hash string) [sha256.Size]byte {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s", keyIdx, method, target, hash)
	var id [sha256.Size]byte
	h.Sum(id[:0])
	return id
}
