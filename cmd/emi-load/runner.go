package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"emi/internal/service"
)

// caller sends signed requests for the flows of one run and records each.
type caller struct {
	http *http.Client
	base string
	keys []key
	disp *dispenser
	rec  *recorder
}

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
	k, ts, ok := c.disp.next(ctx)
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
	kk := c.keys[k]
	req.Header.Set("x-api-key", kk.apiKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-hash", service.Signature([]byte(kk.secret), kk.apiKey, ts, name, body))
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
		err := f.run(ctx, c, n)
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

// dispenser hands out (key index, timestamp) pairs, each at most once: every
// key once per second. One dispenser serves every run of a process, so
// consecutive runs in the same second never reuse a pair.
type dispenser struct {
	mu  sync.Mutex
	n   int
	sec int64
	idx int
}

func (d *dispenser) next(ctx context.Context) (int, string, bool) {
	for {
		d.mu.Lock()
		now := time.Now().Unix()
		if now != d.sec {
			d.sec, d.idx = now, 0
		}
		if d.idx < d.n {
			i := d.idx
			d.idx++
			d.mu.Unlock()
			return i, strconv.FormatInt(now, 10), true
		}
		d.mu.Unlock()
		wait := time.Until(time.Unix(now+1, 0))
		select {
		case <-ctx.Done():
			return 0, "", false
		case <-time.After(wait):
		}
	}
}
