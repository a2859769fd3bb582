package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	cardssvc "emi/internal/service/cards"
	"emi/internal/testwait"
)

// pgBindir finds the PostgreSQL client programs as .ci/postgres.sh does.
func pgBindir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { // newest major version first
		vi, vj := filepath.Base(filepath.Dir(dirs[i])), filepath.Base(filepath.Dir(dirs[j]))
		if len(vi) != len(vj) {
			return len(vi) > len(vj)
		}
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_dump")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL bindir with pg_dump")
}

// faultInstance is one `emi serve` process of the fault run; its URL
// changes when it is restarted, its logs accumulate over its lives.
type faultInstance struct {
	name string
	base atomic.Value // string
	cmd  *exec.Cmd
	logs syncBuffer
}

// attempt is one HTTP request a client made: failed means no answer or a
// 5xx.
type attempt struct {
	start, end time.Time
	inst       int
	failed     bool
}

// poll is one /healthz request: status 0 means no answer.
type poll struct {
	start, end time.Time
	status     int
	reason     string
}

// faultAnswer is a definitive answer to a request.
type faultAnswer struct {
	status   int
	code     int
	data     json.RawMessage
	replayed bool
	attempts int
}

func (a faultAnswer) token() string {
	var d struct {
		Token string `json:"token"`
	}
	_ = json.Unmarshal(a.data, &d)
	return d.Token
}

// keyed is a POST answered with a definitive answer, kept to check its
// effect and its replay.
type keyed struct {
	kind, path, op, key string
	body                []byte
	ans                 faultAnswer
}

type faultCard struct {
	token, key, pin string
	pan, cvv        string
	statusChanges   int
}

// faultRun is the shared state of TestFaultsUnderMixedLoad.
type faultRun struct {
	r        *ledgerRig
	inst     [2]*faultInstance
	client   *http.Client
	deadline time.Time // bounds a hang: every request gives up after it
	merchant string
	keys     []*signer // one per client and per replay worker

	mu         sync.Mutex
	attempts   []attempt
	polls      [2][]poll
	posts      []keyed
	cards      []*faultCard
	unexpected []string
}

func (f *faultRun) record(a attempt) { f.mu.Lock(); f.attempts = append(f.attempts, a); f.mu.Unlock() }

func (f *faultRun) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.unexpected) < 50 {
		f.unexpected = append(f.unexpected, fmt.Sprintf(format, args...))
	}
}

// do sends one request until it gets a definitive answer: transport
// errors, 5xx and 10409 (the first attempt is still in flight) are retried,
// each attempt freshly signed and sent to the other instance than the
// previous one (so a dead instance is failed over). first picks the
// instance of the first attempt.
func (f *faultRun) do(sg *signer, first int, method, path, op, key string, body []byte) faultAnswer {
	for n := 0; time.Now().Before(f.deadline); n++ {
		inst := (first + n) % 2
		base, _ := f.inst[inst].base.Load().(string)
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		if !sg.sign(req, op, body) {
			time.Sleep(time.Second)
			continue
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		start := time.Now()
		res, err := f.client.Do(req)
		if err != nil {
			f.record(attempt{start: start, end: time.Now(), inst: inst, failed: true})
			time.Sleep(100 * time.Millisecond)
			continue
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		end := time.Now()
		var env struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(raw, &env)
		f.record(attempt{start: start, end: end, inst: inst, failed: res.StatusCode >= 500})
		if res.StatusCode >= 500 || env.Code == 10409 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return faultAnswer{status: res.StatusCode, code: env.Code, data: env.Data, replayed: res.Header.Get("Idempotent-Replayed") == "true", attempts: n + 1}
	}
	return faultAnswer{status: -1}
}

// transfer moves a pseudo-random amount between two funded accounts.
func (f *faultRun) transfer(sg *signer, n int) {
	h := uint64(n+1) * 0x9E3779B97F4A7C15
	accounts := len(f.r.balances)
	from := int(h % uint64(accounts))
	to := (from + 1 + int((h>>20)%uint64(accounts-1))) % accounts
	key := fmt.Sprintf("fault-tr-%d", n)
	body, _ := json.Marshal(map[string]any{"source": map[string]any{"balance": f.r.balances[from]},
		"destination": map[string]any{"balance": f.r.balances[to]}, "amount": emi.FormatMinor(1 + int64((h>>32)%20_000)),
		"currency": "EUR", "reference": key})
	a := f.do(sg, n, http.MethodPost, "/v2/transfers", "transfer_create", key, body)
	if a.status != http.StatusCreated && a.code != 14003 {
		f.fail("transfer %s: %d / %d", key, a.status, a.code)
		return
	}
	f.mu.Lock()
	f.posts = append(f.posts, keyed{kind: "transfer", path: "/v2/transfers", op: "transfer_create", key: key, body: body, ans: a})
	f.mu.Unlock()
}

// cardFlow opens an account, issues a card on it (with a PIN on every
// other card) and freezes and unfreezes it toggles times.
func (f *faultRun) cardFlow(sg *signer, n, toggles int) {
	key := fmt.Sprintf("fault-acc-%d", n)
	body, _ := json.Marshal(map[string]any{"program": "account_eur", "merchant": f.merchant, "alias": key})
	a := f.do(sg, n, http.MethodPost, "/v2/accounts", "account_create", key, body)
	if a.status != http.StatusCreated {
		f.fail("account %s: %d / %d", key, a.status, a.code)
		return
	}
	account := a.token()
	f.mu.Lock()
	f.posts = append(f.posts, keyed{kind: "account", path: "/v2/accounts", op: "account_create", key: key, body: body, ans: a})
	f.mu.Unlock()

	c := &faultCard{key: fmt.Sprintf("fault-card-%d", n)}
	in := map[string]any{"account": account, "type": "virtual", "alias": c.key}
	if n%2 == 0 {
		// Six digits from 900000: no id, count or amount of this run
		// comes near, so a hit in the scan is the PIN.
		c.pin = fmt.Sprintf("%06d", 900000+(uint64(n+7)*0x9E3779B97F4A7C15>>40)%100000)
		in["pin"] = c.pin
	}
	body, _ = json.Marshal(in)
	a = f.do(sg, n+1, http.MethodPost, "/v2/cards", "card_create", c.key, body)
	if a.status != http.StatusCreated {
		f.fail("card %s: %d / %d", c.key, a.status, a.code)
		return
	}
	c.token = a.token()
	f.mu.Lock()
	f.posts = append(f.posts, keyed{kind: "card", path: "/v2/cards", op: "card_create", key: c.key, body: body, ans: a})
	f.cards = append(f.cards, c)
	f.mu.Unlock()
	for i := 0; i < 2*toggles; i++ {
		status := map[bool]string{true: "inactive", false: "active"}[i%2 == 0]
		body, _ := json.Marshal(map[string]string{"status": status})
		// A PUT takes no Idempotency-Key: setting the status the card has
		// is a no-op, so a retry after a lost answer changes nothing.
		a := f.do(sg, n+i, http.MethodPut, "/v2/cards/"+c.token+"/status", "card_status", "", body)
		if a.status != http.StatusOK {
			f.fail("card %s status %s: %d / %d", c.token, status, a.status, a.code)
			return
		}
		f.mu.Lock()
		c.statusChanges++
		f.mu.Unlock()
	}
}

// pollHealth asks each instance's /healthz every 100 ms until stop closes.
func (f *faultRun) pollHealth(stop <-chan struct{}, wg *sync.WaitGroup) {
	hc := &http.Client{Timeout: 3 * time.Second} // the check itself gives up after 2 s
	for i := range f.inst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				base, _ := f.inst[i].base.Load().(string)
				p := poll{start: time.Now()}
				if res, err := hc.Get(base + "/healthz"); err == nil {
					var body struct {
						Reason string `json:"reason"`
					}
					_ = json.NewDecoder(res.Body).Decode(&body)
					res.Body.Close()
					p.status, p.reason = res.StatusCode, body.Reason
				}
				p.end = time.Now()
				f.mu.Lock()
				f.polls[i] = append(f.polls[i], p)
				f.mu.Unlock()
			}
		}()
	}
}

// phase is one fault: from its start to the next fault's start.
type phase struct {
	name       string
	start, end time.Time // the fault's own action
	next       time.Time // the next phase's start, or the end of the load
	killed     int       // the instance killed, or -1
}

// errorWindow is from the first failed request seen in the phase to the
// first successful answer after the last failed one (0 when none failed);
// inst -1 is the whole system.
func (f *faultRun) errorWindow(p phase, inst int) (window time.Duration, failed int) {
	var firstFail, lastFail time.Time
	for _, a := range f.attempts {
		if !a.failed || a.end.Before(p.start) || !a.end.Before(p.next) || (inst >= 0 && a.inst != inst) {
			continue
		}
		failed++
		if firstFail.IsZero() || a.end.Before(firstFail) {
			firstFail = a.end
		}
		if a.end.After(lastFail) {
			lastFail = a.end
		}
	}
	if failed == 0 {
		return 0, 0
	}
	var recovered time.Time
	for _, a := range f.attempts {
		if a.failed || !a.end.After(lastFail) || (inst >= 0 && a.inst != inst) {
			continue
		}
		if recovered.IsZero() || a.end.Before(recovered) {
			recovered = a.end
		}
	}
	if recovered.IsZero() {
		recovered = p.next
	}
	return recovered.Sub(firstFail), failed
}

// unhealthyWindow is from the first /healthz poll of the phase that did not
// answer 200 to the first 200 after the last such poll.
func (f *faultRun) unhealthyWindow(p phase, inst int) time.Duration {
	var first, last time.Time
	for _, q := range f.polls[inst] {
		// A poll belongs to the phase it ended in: one in flight when
		// an instance was killed started before the fault and failed
		// because of it.
		if q.status == http.StatusOK || q.end.Before(p.start) || !q.end.Before(p.next) {
			continue
		}
		if first.IsZero() {
			first = q.start
			if first.Before(p.start) {
				first = p.start
			}
		}
		last = q.start
	}
	if first.IsZero() {
		return 0
	}
	for _, q := range f.polls[inst] {
		if q.status == http.StatusOK && q.start.After(last) {
			return q.end.Sub(first)
		}
	}
	return p.next.Sub(first)
}

// timeline is the /healthz status runs of inst during the phase, times in
// seconds from the fault's start ("0" is no answer), with the reason and
// the answer time of the first poll of a run of 503s.
func (f *faultRun) timeline(p phase, inst int) string {
	var b strings.Builder
	last := -1
	for _, q := range f.polls[inst] {
		if q.start.Before(p.start.Add(-time.Second)) || !q.end.Before(p.next) {
			continue
		}
		if q.status != last {
			fmt.Fprintf(&b, " %+.1fs:%d", q.start.Sub(p.start).Seconds(), q.status)
			if q.reason != "" {
				fmt.Fprintf(&b, "(%s, answered in %.1fs)", q.reason, q.end.Sub(q.start).Seconds())
			}
			last = q.status
		}
	}
	return strings.TrimSpace(b.String())
}

// TestFaultsUnderMixedLoad is the fault test: two `emi serve` processes on
// one database (a private PostgreSQL cluster) take a mixed load from 16
// clients (transfers, account and card issuing, card freezes and
// unfreezes), each write retried with its Idempotency-Key, failing over to
// the other instance, while (a) one instance is killed with SIGKILL and
// restarted, (b) PostgreSQL is stopped and started again, and (c) every
// database connection of the service is terminated. Afterwards: every
// answered write has exactly its one effect and replays the same answer,
// every event reached the webhook sink (W4), the ledger verifies and holds
// the same total (L6), /healthz reported the database outage, and (P1)
// neither a pg_dump of the database nor the servers' logs hold card data or
// secrets in clear. EMI_SOAK=1 runs more clients, three rounds of faults
// and longer quiet periods.
func TestFaultsUnderMixedLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL cluster and two emi serve processes")
	}
	runStart := time.Now()
	clients, rounds, quiet, toggles := 16, 1, 3*time.Second, 1
	if os.Getenv("EMI_SOAK") == "1" {
		clients, rounds, quiet, toggles = 32, 3, 15*time.Second, 2
	}
	const accounts, opening = 40, 50_000
	cluster := pgtest.NewCluster(t)
	adm, err := sql.Open("postgres", cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(`CREATE DATABASE emi_fault`); err != nil {
		t.Fatal(err)
	}
	_ = adm.Close()
	dbURL := pgtest.WithDatabase(cluster.Admin, "emi_fault")
	sink := newHookSink(t)
	r := newLedgerRigOn(t, dbURL, accounts, opening, map[string]string{
		"EMI_LOG_LEVEL": "debug", "EMI_JOB_LEASE": "2s", "EMI_WORKERS": "4", "EMI_SANDBOX_WEBHOOK_PORTS": sink.port(t)})
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	if _, _, err := r.a.Webhooks.AddEndpoint(ctx, r.partner, sink.URL+"/hooks", "fault sink", nil); err != nil {
		t.Fatal(err)
	}
	var seq0 int64
	bound := 4 * time.Minute
	if os.Getenv("EMI_SOAK") == "1" {
		bound = 15 * time.Minute
	}
	f := &faultRun{r: r, deadline: time.Now().Add(bound),
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}}
	if err := r.a.DB.Get(&seq0, `SELECT coalesce(max(seq), 0) FROM events`); err != nil {
		t.Fatal(err)
	}
	if err := r.a.DB.Get(&f.merchant, `SELECT master_merchant FROM partners WHERE id = $1`, r.partner); err != nil {
		t.Fatal(err)
	}
	// One API key per client (and per replay worker): card_status signs
	// the same operation and body for every card, and a signature is
	// single-use per partner, so two clients of one key could collide.
	for i := 0; i < clients+8; i++ {
		k, err := r.a.Partners.CreateKey(ctx, r.partner)
		if err != nil {
			t.Fatal(err)
		}
		f.keys = append(f.keys, newSigner(k.APIKey, k.APISecret))
	}
	for i := range f.inst {
		f.inst[i] = &faultInstance{name: string(rune('A' + i))}
		var base string
		f.inst[i].cmd, base = startServe(t, r.bin, r.vars, &f.inst[i].logs)
		f.inst[i].base.Store(base)
	}
	stopPolls := make(chan struct{})
	var polls sync.WaitGroup
	f.pollHealth(stopPolls, &polls)

	// The load: task n is a transfer, or every fourth a card flow.
	var next atomic.Int64
	var stopLoad atomic.Bool
	var load sync.WaitGroup
	for c := 0; c < clients; c++ {
		load.Add(1)
		go func() {
			defer load.Done()
			sg := f.keys[c]
			for !stopLoad.Load() && time.Now().Before(f.deadline) {
				n := int(next.Add(1)) - 1
				if n%4 == 3 {
					f.cardFlow(sg, n, toggles)
				} else {
					f.transfer(sg, n)
				}
			}
		}()
	}

	// The faults, in sequence, with quiet periods between them.
	var phases []phase
	time.Sleep(quiet)
	for round := 0; round < rounds; round++ {
		// (a) kill -9 one instance, start it again 2 s later.
		k := round % 2
		p := phase{name: "kill -9 instance " + f.inst[k].name, start: time.Now(), killed: k}
		if err := f.inst[k].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = f.inst[k].cmd.Wait()
		time.Sleep(2 * time.Second)
		var base string
		f.inst[k].cmd, base = startServe(t, r.bin, r.vars, &f.inst[k].logs)
		f.inst[k].base.Store(base)
		p.end = time.Now()
		phases = append(phases, p)
		time.Sleep(quiet)

		// (b) restart PostgreSQL: a fast stop, 2 s down, a start.
		p = phase{name: "PostgreSQL restart", start: time.Now(), killed: -1}
		cluster.Stop(t)
		stopped := time.Now()
		time.Sleep(2 * time.Second)
		restarting := time.Now()
		cluster.Start(t)
		p.end = time.Now()
		phases = append(phases, p)
		// /healthz must not say 200 while the database is down.
		f.mu.Lock()
		for i := range f.inst {
			seen := 0
			for _, q := range f.polls[i] {
				if q.start.After(stopped) && q.end.Before(restarting) {
					seen++
					if q.status == http.StatusOK {
						t.Errorf("instance %s: /healthz answered 200 at %s while PostgreSQL was down", f.inst[i].name, q.start.Format("15:04:05.000"))
					}
				}
			}
			if seen == 0 {
				t.Errorf("instance %s: no /healthz poll during the PostgreSQL outage", f.inst[i].name)
			}
		}
		f.mu.Unlock()
		time.Sleep(quiet)

		// (c) terminate every connection of the service's database.
		p = phase{name: "pg_terminate_backend", start: time.Now(), killed: -1}
		adm, err := sql.Open("postgres", cluster.Admin)
		if err != nil {
			t.Fatal(err)
		}
		var cut int
		if err := adm.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = 'emi_fault' AND backend_type = 'client backend'`).Scan(&cut); err != nil {
			t.Fatal(err)
		}
		_ = adm.Close()
		p.end = time.Now()
		p.name = fmt.Sprintf("pg_terminate_backend (%d connections)", cut)
		phases = append(phases, p)
		time.Sleep(quiet)
	}
	stopLoad.Store(true)
	load.Wait()
	loadEnd := time.Now()
	// The checks below send requests too (replays, reveals): a fresh
	// bound for them, whatever the load took.
	f.deadline = loadEnd.Add(bound)
	// Both instances must be healthy again.
	testwait.Until(t, "/healthz to return to 200 on both instances", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		ok := 0
		for i := range f.inst {
			if n := len(f.polls[i]); n > 0 && f.polls[i][n-1].status == http.StatusOK {
				ok++
			}
		}
		return ok == len(f.inst)
	})
	close(stopPolls)
	polls.Wait()
	for i := range phases {
		phases[i].next = loadEnd
		if i+1 < len(phases) {
			phases[i].next = phases[i+1].start
		}
	}
	for _, u := range f.unexpected {
		t.Error(u)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The figures.
	var retried int
	var longestAnswer time.Duration
	for _, p := range f.posts {
		if p.ans.attempts > 1 {
			retried++
		}
	}
	failedAttempts := 0
	for _, a := range f.attempts {
		if a.failed {
			failedAttempts++
		}
		if d := a.end.Sub(a.start); d > longestAnswer {
			longestAnswer = d
		}
	}
	t.Logf("%d clients, %d HTTP requests (%d failed: no answer or 5xx), %d keyed writes (%d retried), %d cards, load %s",
		clients, len(f.attempts), failedAttempts, len(f.posts), retried, len(f.cards), loadEnd.Sub(runStart).Round(time.Millisecond))
	var headline time.Duration
	var headlineName string
	for _, p := range phases {
		sys, nsys := f.errorWindow(p, -1)
		a, na := f.errorWindow(p, 0)
		b, nb := f.errorWindow(p, 1)
		t.Logf("fault %-40s action %5.2fs  error window: system %5.2fs (%d failed), A %5.2fs (%d), B %5.2fs (%d); /healthz not 200: A %5.2fs, B %5.2fs",
			p.name, p.end.Sub(p.start).Seconds(), sys.Seconds(), nsys, a.Seconds(), na, b.Seconds(), nb,
			f.unhealthyWindow(p, 0).Seconds(), f.unhealthyWindow(p, 1).Seconds())
		t.Logf("    /healthz A: %s", f.timeline(p, 0))
		t.Logf("    /healthz B: %s", f.timeline(p, 1))
		if p.killed >= 0 {
			dead := 0
			for _, q := range f.polls[p.killed] {
				if q.start.After(p.start) && q.end.Before(p.end) && q.status == 0 {
					dead++
				}
			}
			if dead == 0 {
				t.Errorf("%s: its /healthz never went unanswered", p.name)
			}
		}
		if sys > headline {
			headline, headlineName = sys, p.name
		}
	}
	t.Logf("longest error window: %.2fs (%s); slowest single answer %s", headline.Seconds(), headlineName, longestAnswer.Round(time.Millisecond))

	// No committed change lost, none doubled; each key replays its answer.
	bg := context.Background()
	r.a.DB.SetMaxIdleConns(0) // its connections were cut too
	db := r.a.DB
	counts := map[string]int{}
	for _, p := range f.posts {
		var n int
		var q string
		switch p.kind {
		case "transfer":
			q = `SELECT count(*) FROM transfers WHERE reference = $1 AND ($2 = '' OR token::text = $2)`
		case "account":
			q = `SELECT count(*) FROM accounts WHERE alias = $1 AND token::text = $2`
		case "card":
			q = `SELECT count(*) FROM cards WHERE alias = $1 AND token::text = $2`
		}
		if err := db.GetContext(bg, &n, q, p.key, p.ans.token()); err != nil {
			t.Fatal(err)
		}
		want := 1
		if p.ans.code == 14003 {
			want = 0
		} else {
			counts[p.kind]++
		}
		if n != want {
			t.Errorf("%s %s answered %d / %d: %d rows hold its effect, want %d", p.kind, p.key, p.ans.status, p.ans.code, n, want)
		}
	}
	for kind, q := range map[string]string{
		"transfer": `SELECT count(*) FROM transfers WHERE reference LIKE 'fault-tr-%'`,
		"account":  `SELECT count(*) FROM accounts WHERE alias LIKE 'fault-acc-%'`,
		"card":     `SELECT count(*) FROM cards WHERE alias LIKE 'fault-card-%'`,
	} {
		var n int
		if err := db.GetContext(bg, &n, q); err != nil {
			t.Fatal(err)
		}
		if n != counts[kind] {
			t.Errorf("%d %ss in the database, %d answered: a retried key took effect twice", n, kind, counts[kind])
		}
	}
	f.replayAll(t)
	if t.Failed() {
		f.diagnose(t, cluster.Admin)
	}

	// Each status change took effect once, with its event; the events of
	// every transfer exist.
	for _, c := range f.cards {
		var changes, events int
		var status string
		if err := db.GetContext(bg, &changes, `SELECT count(*) FROM card_history WHERE card = $1 AND change = 'status'`, c.token); err != nil {
			t.Fatal(err)
		}
		if err := db.GetContext(bg, &events, `SELECT count(*) FROM events WHERE resource_token = $1 AND type = $2`, c.token, emi.EventCardStatusChanged); err != nil {
			t.Fatal(err)
		}
		if err := db.GetContext(bg, &status, `SELECT status FROM cards WHERE token = $1`, c.token); err != nil {
			t.Fatal(err)
		}
		if changes != c.statusChanges || events != c.statusChanges || status != "active" {
			t.Errorf("card %s: %d status changes answered, %d recorded, %d events, status %s", c.token, c.statusChanges, changes, events, status)
		}
	}
	for _, p := range f.posts {
		if p.kind != "transfer" || p.ans.code != 0 {
			continue
		}
		var n int
		if err := db.GetContext(bg, &n, `SELECT count(*) FROM events WHERE resource_token = $1 AND type = $2`, p.ans.token(), emi.EventTransferCompleted); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("transfer %s: %d transfer.completed events, want 1", p.ans.token(), n)
		}
	}

	// W4: every event reached the sink at least once, with one body.
	var ids []string
	if err := db.SelectContext(bg, &ids, `SELECT id::text FROM events WHERE seq > $1 AND partner_id = $2`, seq0, r.partner); err != nil {
		t.Fatal(err)
	}
	waitStart := time.Now()
	// Not a failure here: the lost ones are listed below.
	testwait.Try(func() bool { return sink.received() >= len(ids) })
	sink.mu.Lock()
	var lost []string
	for _, id := range ids {
		if _, ok := sink.bodies[id]; !ok {
			lost = append(lost, id)
		}
	}
	t.Logf("%d events, all delivered %s after the load ended; %d duplicate deliveries, %d with another body", len(ids), time.Since(waitStart).Round(time.Millisecond), sink.dups, sink.mismatched)
	if len(lost) > 0 || sink.mismatched > 0 {
		t.Errorf("%d events never reached the sink (e.g. %v); %d duplicates with another body", len(lost), lost[:min(3, len(lost))], sink.mismatched)
	}
	sink.mu.Unlock()

	// L6: the ledger verifies and the money is all there.
	var sum int64
	if err := db.GetContext(bg, &sum, `SELECT coalesce(sum(posted), 0) FROM balances`); err != nil {
		t.Fatal(err)
	}
	if sum != accounts*opening {
		t.Errorf("customer money %d after the faults, want %d", sum, accounts*opening)
	}
	rep, err := r.a.Ledger.Verify(bg)
	if err != nil || !rep.OK() {
		t.Errorf("ledger verification: %v %v", rep.Problems, err)
	}
	f.scanForCardData(t, dbURL)
	t.Logf("ledger verified (%d transactions); whole test %s", rep.Transactions, time.Since(runStart).Round(time.Millisecond))
}

// replayAll sends every answered keyed write again with its key and body:
// each must return the stored answer (same status, code and resource)
// marked as a replay.
func (f *faultRun) replayAll(t *testing.T) {
	work := make(chan keyed)
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sg := f.keys[len(f.keys)-1-w]
			for p := range work {
				a := f.do(sg, w, http.MethodPost, p.path, p.op, p.key, p.body)
				if a.status != p.ans.status || a.code != p.ans.code || a.token() != p.ans.token() || !a.replayed {
					mu.Lock()
					if bad++; bad <= 10 {
						t.Errorf("replay of %s %s: %d / %d %q (replayed %v), first answer %d / %d %q",
							p.kind, p.key, a.status, a.code, a.token(), a.replayed, p.ans.status, p.ans.code, p.ans.token())
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range f.posts {
		work <- p
	}
	close(work)
	wg.Wait()
}

// luhn reports whether the digits pass the Luhn check.
func luhn(digits string) bool {
	sum := 0
	for i := 0; i < len(digits); i++ {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// cardNumberLike finds runs of 13 to 19 digits, optionally grouped by
// single spaces or dashes, that no letter or digit touches.
var cardNumberLike = regexp.MustCompile(`(?:^|[^0-9A-Za-z])([0-9](?:[ -]?[0-9]){12,18})(?:[^0-9A-Za-z]|$)`)

// digitRun finds runs of digits that are not part of a word, a number with
// a fraction, a time or a UUID.
var digitRun = regexp.MustCompile(`(?:^|[^0-9A-Za-z.:+-])([0-9]+)(?:[^0-9A-Za-z.:+-]|$)`)

// scanForCardData is P1: the full PAN, CVV2 and PIN of every card of the
// run (opened through the service's audited reveal), looked for in a
// plain pg_dump of the database and in both servers' logs, along with any
// Luhn-valid 13-19 digit number and the secrets of the run.
func (f *faultRun) scanForCardData(t *testing.T, dbURL string) {
	bindir, err := pgBindir()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bindir, "pg_dump"), "--no-owner", "--format=plain", "--dbname="+dbURL) // #nosec G204 -- the test's own database
	cmd.Stderr = &stderr
	dump, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, stderr.String())
	}
	partner := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: "fault-test", PartnerID: f.r.partner})
	for _, c := range f.cards {
		first, err := f.r.a.Cards.Reveal(partner, c.token, cardssvc.RevealFirstHalf)
		if err != nil {
			t.Fatal(err)
		}
		second, err := f.r.a.Cards.Reveal(partner, c.token, cardssvc.RevealSecondHalf)
		if err != nil {
			t.Fatal(err)
		}
		pin, err := f.r.a.Cards.Reveal(partner, c.token, cardssvc.RevealPIN)
		if err != nil {
			t.Fatal(err)
		}
		c.pan, c.cvv = first.FirstHalf+second.SecondHalf, first.CVV
		if len(c.pan) != 16 || !luhn(c.pan) || len(c.cvv) != 3 {
			t.Fatalf("card %s revealed a PAN of %d digits (Luhn %v) and a CVV2 of %d", c.token, len(c.pan), luhn(c.pan), len(c.cvv))
		}
		if c.pin != "" && pin.PIN != c.pin {
			t.Fatalf("card %s: the PIN set at issue does not reveal", c.token)
		}
		c.pin = pin.PIN
	}
	// A few reveals through the API too, so that card data passed through
	// the servers' answer path before their logs are read.
	sg := newSigner(f.r.apiKey, f.r.secret)
	for i, c := range f.cards[:min(4, len(f.cards))] {
		for _, q := range []struct{ path, op string }{{"/first-half", "card_number"}, {"/second-half", "card_number"}, {"/pin", "card_retrieve_pin"}} {
			if a := f.do(sg, i, http.MethodGet, "/v2/cards/"+c.token+q.path, q.op, "", nil); a.status != http.StatusOK {
				t.Fatalf("reveal %s of %s: %d / %d", q.path, c.token, a.status, a.code)
			}
		}
	}
	var bins []string
	if err := f.r.a.DB.Select(&bins, `SELECT DISTINCT bin_prefix FROM programs WHERE bin_prefix <> ''`); err != nil || len(bins) == 0 {
		t.Fatalf("issuing ranges %v (%v)", bins, err)
	}
	sources := map[string][]byte{"pg_dump": dump, "instance A's logs": []byte(f.inst[0].logs.String()), "instance B's logs": []byte(f.inst[1].logs.String())}
	hits := 0
	hit := func(format string, args ...any) {
		if hits++; hits <= 20 {
			t.Errorf(format, args...)
		}
	}
	// Every PAN in every form, found in one pass per form: each window of
	// a run of the form's alphabet is looked up in a set (searching the
	// text once per card is quadratic, and took minutes in the soak with
	// 2,000 cards and 100 MB of debug logs).
	plain, b64, hexed := map[string]*faultCard{}, map[string]*faultCard{}, map[string]*faultCard{}
	for _, c := range f.cards {
		plain[c.pan] = c
		b64[strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(c.pan)), "=")] = c
		hexed[hex.EncodeToString([]byte(c.pan))] = c
	}
	isDigit := func(b byte) bool { return b >= '0' && b <= '9' }
	isHex := func(b byte) bool { return isDigit(b) || (b >= 'a' && b <= 'f') }
	isB64 := func(b byte) bool { return isDigit(b) || (b|0x20 >= 'a' && b|0x20 <= 'z') || b == '+' || b == '/' }
	spacedPAN := regexp.MustCompile(`[0-9]{4}[ -][0-9]{4}[ -][0-9]{4}[ -][0-9]{4}`)
	for where, text := range sources {
		for _, form := range []struct {
			name  string
			set   map[string]*faultCard
			n     int
			alpha func(byte) bool
		}{{"plain", plain, 16, isDigit}, {"base64", b64, 22, isB64}, {"hex", hexed, 32, isHex}} {
			for i := 0; i < len(text); {
				if !form.alpha(text[i]) {
					i++
					continue
				}
				j := i
				for j < len(text) && form.alpha(text[j]) {
					j++
				}
				for k := i; k+form.n <= j; k++ {
					if c := form.set[string(text[k:k+form.n])]; c != nil {
						hit("%s holds the PAN of card %s (%s)", where, c.token, form.name)
					}
				}
				i = j
			}
		}
		for _, m := range spacedPAN.FindAll(text, -1) {
			if c := plain[strings.NewReplacer(" ", "", "-", "").Replace(string(m))]; c != nil {
				hit("%s holds the PAN of card %s (spaced or dashed)", where, c.token)
			}
		}
		// Any Luhn-valid number in one of the BIN ranges emi issues from
		// (every program's prefix), as a PAN scanner looks for card
		// numbers by issuer range: about one in ten of all long numbers
		// is Luhn-valid, and the soak's 32 MB dump holds such numbers
		// (outside any BIN) that are not card data.
		for _, m := range cardNumberLike.FindAllSubmatch(text, -1) {
			digits := strings.NewReplacer(" ", "", "-", "").Replace(string(m[1]))
			if len(digits) >= 13 && luhn(digits) && slices.ContainsFunc(bins, func(b string) bool { return strings.HasPrefix(digits, b) }) {
				hit("%s holds a Luhn-valid number in an issuing range %s…", where, digits[:6])
			}
		}
		// A CVV2 or PIN in clear: as a JSON value anywhere, or as a value
		// of its own on a line that names the card.
		if m := regexp.MustCompile(`(?i)"(cvv2?|pin)"\s*:\s*"?[0-9]`).Find(text); m != nil {
			hit("%s holds %s", where, m)
		}
		byToken := map[string]*faultCard{}
		for _, c := range f.cards {
			byToken[c.token] = c
		}
		tokenRe := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
		for _, line := range bytes.Split(text, []byte("\n")) {
			for _, tok := range tokenRe.FindAll(line, -1) {
				c := byToken[string(tok)]
				if c == nil {
					continue
				}
				if bytes.Contains(line, []byte(`"`+c.cvv+`"`)) || (len(c.pin) == 6 && bytes.Contains(line, []byte(`"`+c.pin+`"`))) {
					hit("%s: a line naming card %s holds its CVV2 or PIN as a string", where, c.token)
				}
				for _, run := range digitRun.FindAllSubmatch(line, -1) {
					if string(run[1]) == c.pin && len(c.pin) == 6 {
						hit("%s: a line naming card %s holds its PIN", where, c.token)
					}
				}
			}
		}
		for name, secret := range map[string]string{"API secret": f.r.secret, "master key": f.r.vars["EMI_MASTER_KEY"]} {
			if bytes.Contains(text, []byte(secret)) {
				hit("%s holds the %s", where, name)
			}
		}
	}
	// The six-digit PINs are unusual enough to look for anywhere in the logs.
	for _, where := range []string{"instance A's logs", "instance B's logs"} {
		runs := map[string]bool{}
		for _, run := range digitRun.FindAllSubmatch(sources[where], -1) {
			runs[string(run[1])] = true
		}
		for _, c := range f.cards {
			if len(c.pin) == 6 && runs[c.pin] {
				hit("%s holds the PIN of card %s", where, c.token)
			}
		}
	}
	t.Logf("P1: %d cards (PAN, CVV2, PIN) looked for in a %d KiB pg_dump and %d + %d KiB of server logs: %d hits",
		len(f.cards), len(dump)/1024, len(sources["instance A's logs"])/1024, len(sources["instance B's logs"])/1024, hits)
}

// diagnose logs what the database and the servers were doing when a check
// failed: the sessions of the test database and the servers' last log lines.
func (f *faultRun) diagnose(t *testing.T, admin string) {
	adm, err := sql.Open("postgres", admin)
	if err != nil {
		t.Log(err)
		return
	}
	defer adm.Close()
	rows, err := adm.Query(`SELECT pid, coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''),
		coalesce(extract(epoch FROM now() - xact_start)::int, -1), left(coalesce(query, ''), 160)
		FROM pg_stat_activity WHERE datname = 'emi_fault' ORDER BY xact_start NULLS LAST`)
	if err != nil {
		t.Log(err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pid, age int
		var state, wt, we, q string
		if err := rows.Scan(&pid, &state, &wt, &we, &age, &q); err == nil {
			t.Logf("session %d %s wait %s/%s xact %ds: %s", pid, state, wt, we, age, q)
		}
	}
	for _, in := range f.inst {
		lines := strings.Split(strings.TrimSpace(in.logs.String()), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		for _, l := range lines {
			if len(l) > 400 {
				l = l[:400]
			}
			t.Logf("instance %s log: %s", in.name, l)
		}
	}
}
