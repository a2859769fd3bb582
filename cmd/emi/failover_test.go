package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"emi/internal/postgres/pgtest"
	"emi/internal/testwait"
)

// failoverWrite is one user_create of the load and its answer.
type failoverWrite struct {
	email    string
	at       time.Time
	status   int // 0: no answer (connection error)
	code     int
	instance int
}

// TestFailoverLosesNoAcknowledgedWrite: two `emi serve` on a primary with a
// synchronous streaming standby, both named in DATABASE_URL in libpq's
// host-list form with target_session_attrs=read-write (the form that
// stopped emi at start before). Under a write load (user_create, each with
// its own e-mail) the primary crashes and the standby is promoted, with no
// restart of emi:
//
//   - every write answered 201 is on the new primary (0 lost);
//   - no write that is on the new primary was answered as failed, except
//     with the outcome-unknown code 10504 (or no answer at all: the client
//     cannot know), and nothing answers 500;
//   - writes succeed again on their own after the promote;
//   - /healthz fails on an instance whose database is a standby;
//   - a key revoked after the failover is refused by every instance
//     within 1 s (the listeners found the new primary);
//   - webhooks: a second partner sends test events (webhook_endpoint_test)
//     through the failover. Every event acknowledged 202 reaches its
//     endpoint, and none twice, except a delivery in flight at the crash
//     (sent, its "delivered" row not yet committed): that one is sent
//     again with the same webhook-id and body, which the receiver drops
//     (contract §9). At most one per worker can be in flight.
func TestFailoverLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a primary, a standby and two emi serve processes")
	}
	t.Parallel()
	primary := pgtest.NewCluster(t)
	standby := primary.Standby(t)
	primary.Do(t, "sync")

	// The database emi uses, on the primary (the standby replays it).
	adm, err := sql.Open("postgres", primary.Admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(`CREATE DATABASE emi`); err != nil {
		t.Fatal(err)
	}
	_ = adm.Close()
	hostList := fmt.Sprintf("postgres://postgres@127.0.0.1:%s,127.0.0.1:%s/emi?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		primary.Port, standby.Port)
	r := &multiRig{proxy: newRRProxy(t), vars: map[string]string{"DATABASE_URL": hostList, "EMI_MASTER_KEY": newKey(),
		"EMI_MODE": "sandbox", "EMI_ADDR": "127.0.0.1:0", "EMI_RATE_LIMIT": "0", "EMI_LOG_LEVEL": "warn",
		"EMI_SANDBOX_WEBHOOK_PORTS": "1024-65535", "EMI_SHUTDOWN_TIMEOUT": "5s"}}
	r.vars["EMI_PUBLIC_URL"] = r.proxy.URL
	for _, args := range [][]string{{"migrate"}, {"seed"}} {
		if _, stderr, err := runCmd(t, r.vars, args...); err != nil {
			t.Fatalf("emi %v: %v\n%s", args, err, stderr)
		}
	}
	r.bin = filepath.Join(t.TempDir(), "emi")
	if b, err := exec.Command("go", "build", "-o", r.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	for range 2 {
		u, pid := r.serve(t)
		r.urls, r.pids = append(r.urls, u), append(r.pids, pid)
	}
	c := r.partner(t, "")
	revoked := r.partner(t, "")
	for i, u := range r.urls {
		want(t, fmt.Sprintf("instance %d before the failover", i), c.do(t, u, http.MethodPost, "/v2/users", "user_create", userBody(uniqueMail()), nil), 201, 0)
	}
	sink := newHookSink(t)
	hooked := r.partner(t, sink.URL+"/hooks")
	eps := want(t, "the hooked partner's endpoints", hooked.do(t, r.urls[0], http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil, nil), 200, 0)
	items, _ := eps.Data["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("the hooked partner has %d endpoints: %s", len(items), eps.Raw)
	}
	endpoint, _ := items[0].(map[string]any)["id"].(string)

	// An instance pointed at the standby alone is taken out of a load
	// balancer: its /healthz fails (it used to answer 200).
	onStandby := map[string]string{}
	for k, v := range r.vars {
		onStandby[k] = v
	}
	onStandby["DATABASE_URL"] = strings.Replace(standby.Admin, "/postgres?", "/emi?", 1)
	sb := &multiRig{bin: r.bin, vars: onStandby}
	sbURL, sbPID := sb.serve(t)
	if res, err := http.Get(sbURL + "/healthz"); err != nil || res.StatusCode == http.StatusOK {
		status := 0
		if res != nil {
			status = res.StatusCode
			_ = res.Body.Close()
		}
		t.Fatalf("/healthz of an instance on the standby: %d (%v), want a failure", status, err)
	} else {
		_ = res.Body.Close()
	}
	// And it stops on SIGTERM within EMI_SHUTDOWN_TIMEOUT (5 s here): its
	// listeners used to wait for ever for a LISTEN the standby refuses, and
	// one process stayed up 16 minutes.
	if err := syscall.Kill(sbPID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termAt := time.Now()
	testwait.Until(t, "the instance on the standby to stop within 10 s of SIGTERM (EMI_SHUTDOWN_TIMEOUT is 5 s)",
		func() bool { return exited(sbPID) }, testwait.Within(10*time.Second), testwait.Every(20*time.Millisecond))
	t.Logf("the instance on the standby stopped %v after SIGTERM", time.Since(termAt).Round(time.Millisecond))

	var (
		mu      sync.Mutex
		writes  []failoverWrite
		stop    atomic.Bool
		wg      sync.WaitGroup
		crashAt time.Time
		promAt  time.Time
	)
	var (
		events   []string    // acknowledged test events
		eventsAt []time.Time // when each was acknowledged
	)
	eventsAfter := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, at := range eventsAt {
			if at.After(after) {
				n++
			}
		}
		return n
	}
	wg.Go(func() {
		for n := 0; !stop.Load(); n++ {
			a := hooked.try(t, r.urls[n%len(r.urls)], http.MethodPost, "/v2/webhooks/"+endpoint+"/test", "webhook_endpoint_test", map[string]any{})
			if a.Status == http.StatusAccepted {
				if ev, _ := a.Data["event"].(string); ev != "" {
					mu.Lock()
					events, eventsAt = append(events, ev), append(eventsAt, time.Now())
					mu.Unlock()
				}
			} else {
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	const clients = 8
	for w := range clients {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				inst := (w + n) % len(r.urls)
				e := uniqueMail()
				a := c.try(t, r.urls[inst], http.MethodPost, "/v2/users", "user_create", userBody(e))
				mu.Lock()
				writes = append(writes, failoverWrite{email: e, at: time.Now(), status: a.Status, code: a.Code, instance: inst})
				mu.Unlock()
				if a.Status != 201 {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	acked := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, w := range writes {
			if w.status == 201 && w.at.After(after) {
				n++
			}
		}
		return n
	}
	// A condition, not a time: the load is under way on both instances.
	testwait.Until(t, "100 writes acknowledged before the crash", func() bool { return acked(time.Time{}) >= 100 })
	testwait.Until(t, "10 test events acknowledged before the crash", func() bool { return eventsAfter(time.Time{}) >= 10 })
	crashAt = time.Now()
	primary.Do(t, "crash")
	standby.Do(t, "promote")
	promAt = time.Now()
	// Writes must come back on their own; then a while more of load.
	firstOK := time.Time{}
	testwait.Until(t, "a write acknowledged after the promote", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range writes {
			if w.status == 201 && w.at.After(promAt) {
				firstOK = w.at
				return true
			}
		}
		return false
	})
	testwait.Until(t, "100 writes acknowledged after the promote", func() bool { return acked(promAt) >= 100 })
	testwait.Until(t, "10 test events acknowledged after the promote", func() bool { return eventsAfter(promAt) >= 10 })
	stop.Store(true)
	wg.Wait()

	// The revoked key, on every instance, within a second.
	db, err := sql.Open("postgres", standby.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	emi, err := sql.Open("postgres", strings.Replace(standby.Admin, "/postgres?", "/emi?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer emi.Close()
	for i, u := range r.urls {
		want(t, fmt.Sprintf("the key to revoke, on instance %d", i), revoked.do(t, u, http.MethodGet, "/v2/partner", "partner_details", nil, nil), 200, 0)
	}
	revokedAt := time.Now()
	if _, err := emi.Exec(`UPDATE partner_keys SET revoked_at = now() WHERE api_key = $1`, revoked.key); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	for i, u := range r.urls {
		testwait.For(t, fmt.Sprintf("instance %d to refuse the revoked key within 10 s (answer)", i), func() (string, bool) {
			a := revoked.try(t, u, http.MethodGet, "/v2/partner", "partner_details", nil)
			if a.Status == http.StatusUnauthorized {
				slowest = max(slowest, time.Since(revokedAt))
				return "", true
			}
			return fmt.Sprintf("%d %d", a.Status, a.Code), false
		}, testwait.Within(10*time.Second-time.Since(revokedAt)), testwait.Every(20*time.Millisecond))
	}
	if slowest > time.Second {
		t.Errorf("the revoked key was refused by every instance after %v, want within 1 s", slowest)
	}

	// Every acknowledged test event reaches the endpoint; duplicates only
	// from deliveries in flight at the crash, each with the same body.
	testwait.Until(t, "every acknowledged test event delivered", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for _, ev := range events {
			if _, ok := sink.bodies[ev]; !ok {
				return false
			}
		}
		return true
	})
	// A redelivery counts only once no delivery job is left on the new
	// primary (a condition, not a pause).
	jobsDB, err := sql.Open("postgres", strings.Replace(standby.Admin, "/postgres?", "/emi?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer jobsDB.Close()
	testwait.Until(t, "no webhook delivery job left", func() bool {
		var n int
		err := jobsDB.QueryRow(`SELECT count(*) FROM jobs WHERE kind = 'webhook.deliver' AND state IN ('available', 'running')`).Scan(&n)
		return err == nil && n == 0
	})
	sink.mu.Lock()
	dups, mismatched := sink.dups, sink.mismatched
	sink.mu.Unlock()
	workers := 2 * 4 // EMI_WORKERS' default on each of the two instances
	if dups > workers || mismatched > 0 {
		t.Errorf("%d events delivered twice (at most %d can be in flight at the crash), %d of them with another body", dups, workers, mismatched)
	}

	// Every answer against what the new primary holds.
	stored := map[string]bool{}
	rows, err := emi.Query(`SELECT lower(email) FROM users`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		stored[e] = true
	}
	_ = rows.Close()
	counts := map[string]int{}
	var lost, failedButStored, unknownStored, unknownNot []string
	for _, w := range writes {
		key := fmt.Sprintf("%d/%d", w.status, w.code)
		counts[key]++
		in := stored[strings.ToLower(w.email)]
		switch {
		case w.status == 201 && !in:
			lost = append(lost, w.email)
		case w.status == 201:
		case w.status == 0 || w.code == 10504:
			if in {
				unknownStored = append(unknownStored, w.email)
			} else {
				unknownNot = append(unknownNot, w.email)
			}
		case w.status >= 500 && w.code != 10503:
			t.Errorf("%s answered %d / %d (want 201, or 503 with 10503 or 10504)", w.email, w.status, w.code)
		case in:
			failedButStored = append(failedButStored, fmt.Sprintf("%s (%s)", w.email, key))
		}
	}
	var keys []string
	for k, n := range counts {
		keys = append(keys, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(keys)
	t.Logf("%d writes by %d clients over 2 instances; answers (status/code): %s", len(writes), clients, strings.Join(keys, " "))
	t.Logf("crash → promote %v; first write acknowledged %v after the promote; revoked key refused everywhere after %v; outcome unknown: %d stored, %d not",
		promAt.Sub(crashAt).Round(time.Millisecond), firstOK.Sub(promAt).Round(time.Millisecond), slowest.Round(time.Millisecond), len(unknownStored), len(unknownNot))
	t.Logf("webhooks: %d test events acknowledged, all delivered, %d delivered twice", len(events), dups)
	if len(lost) > 0 {
		t.Errorf("%d writes answered 201 are not on the new primary: %v", len(lost), lost)
	}
	if len(failedButStored) > 0 {
		t.Errorf("%d writes are stored but were answered as failed (not 10504): %v", len(failedButStored), failedButStored)
	}
}

// try is do without failing the test: a request that gets no answer has
// status 0.
func (c *apiClient) try(t *testing.T, base, method, path, op string, body any) answer {
	req := c.signed(t, base, method, path, op, body, nil)
	res, err := c.http.Do(req)
	if err != nil {
		return answer{}
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	a := answer{Status: res.StatusCode, Raw: buf.Bytes(), Header: res.Header}
	var env struct {
		Code int            `json:"code"`
		Data map[string]any `json:"data"`
	}
	if json.Unmarshal(buf.Bytes(), &env) == nil {
		a.Code, a.Data = env.Code, env.Data
	}
	return a
}

// exited reports whether process pid has ended (gone, or a zombie its
// parent has not reaped yet).
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// freePort is a TCP port nothing listens on at the moment.
var mailSeq atomic.Int64

func uniqueMail() string {
	return fmt.Sprintf("failover-%d-%d@example.com", os.Getpid(), mailSeq.Add(1))
}
