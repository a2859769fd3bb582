package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"emi/internal/app"
	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/partners"
	"emi/internal/testwait"
)

// ledgerRig is a migrated, seeded database with funded accounts of one
// partner, an API key of it, and the built binary.
type ledgerRig struct {
	vars     map[string]string
	bin      string
	a        *app.App
	balances []string
	apiKey   string
	secret   string
	partner  string       // the partner of the accounts and the key
	base     atomic.Value // string: the running server's URL
}

func newLedgerRig(t *testing.T, accounts int, opening int64) *ledgerRig {
	t.Helper()
	return newLedgerRigOn(t, pgtest.URL(t), accounts, opening, nil)
}

// newLedgerRigOn builds a ledgerRig on the database at dbURL; extra
// overrides or adds environment variables of the processes it runs.
func newLedgerRigOn(t *testing.T, dbURL string, accounts int, opening int64, extra map[string]string) *ledgerRig {
	t.Helper()
	r := &ledgerRig{vars: map[string]string{"DATABASE_URL": dbURL, "EMI_MASTER_KEY": newKey(),
		"EMI_MODE": "sandbox", "EMI_ADDR": "127.0.0.1:0", "EMI_RATE_LIMIT": "0", "EMI_LOG_LEVEL": "error"}}
	for k, v := range extra {
		r.vars[k] = v
	}
	for _, args := range [][]string{{"migrate"}, {"seed"}, {"generate", "accounts", "--count", strconv.Itoa(accounts)}} {
		if _, stderr, err := runCmd(t, r.vars, args...); err != nil {
			t.Fatalf("emi %v: %v\n%s", args, err, stderr)
		}
	}
	cfg, err := config.Load(env(r.vars), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	if r.a, err = app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.a.Close() })
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	var rows []struct {
		Account string `db:"account"`
		Balance string `db:"balance"`
		Partner string `db:"partner_id"`
	}
	if err := r.a.DB.Select(&rows, `SELECT a.token AS account, b.token AS balance, a.partner_id FROM accounts a
		JOIN balances b ON b.account = a.token ORDER BY a.token`); err != nil || len(rows) != accounts {
		t.Fatalf("%d accounts (%v)", len(rows), err)
	}
	for _, row := range rows {
		r.balances = append(r.balances, row.Balance)
		if _, err := r.a.Ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnIncoming, Entries: []emi.Entry{
			{Internal: emi.LedgerIncomingClearing, Currency: "EUR", Amount: -opening},
			{Balance: row.Balance, Account: row.Account, Currency: "EUR", Amount: opening}}}); err != nil {
			t.Fatal(err)
		}
	}
	r.partner = rows[0].Partner
	k, err := r.a.Partners.CreateKey(ctx, r.partner)
	if err != nil {
		t.Fatal(err)
	}
	r.apiKey, r.secret = k.APIKey, k.APISecret
	r.bin = filepath.Join(t.TempDir(), "emi")
	if b, err := exec.Command("go", "build", "-o", r.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return r
}

var servingOn = regexp.MustCompile(`serving on (http://\S+)`)

// serve starts `emi serve` and publishes its URL once it serves.
func (r *ledgerRig) serve(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd, base := startServe(t, r.bin, r.vars, nil)
	r.base.Store(base)
	return cmd
}

// startServe starts `emi serve` with vars and returns the process and its
// URL once it serves. Everything it writes to stdout and stderr goes to
// logs (kept in memory when logs is nil). The process is killed when the
// test ends.
func startServe(t *testing.T, bin string, vars map[string]string, logs io.Writer) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "PATH="+os.Getenv("PATH"))
	// Everything is also kept here, so a failed test prints what explains
	// it (apptest.LogExcerpt), whoever else reads the log.
	own := &syncBuffer{}
	if logs == nil {
		logs = own
	} else {
		logs = io.MultiWriter(logs, own)
	}
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = io.MultiWriter(&stderr, logs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("emi serve (pid %d): warnings, errors and the failed requests' lines:\n%s", cmd.Process.Pid, apptest.LogExcerpt(own.String(), 200))
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		_, _ = fmt.Fprintln(logs, sc.Text())
		if m := servingOn.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(logs, stdout) }()
			return cmd, m[1]
		}
	}
	t.Fatalf("emi serve did not start: %s", stderr.String())
	return nil, ""
}

// signer signs partner API requests so that each attempt's signature is
// new (a signature is single-use across instances): it picks a timestamp
// within the accepted window (15 s either way) that has not signed the
// same operation and body before.
type signer struct {
	apiKey, secret string
	used           map[string]bool
}

func newSigner(apiKey, secret string) *signer {
	return &signer{apiKey: apiKey, secret: secret, used: map[string]bool{}}
}

// sign sets the authentication headers of req, or reports false when every
// timestamp of the window near now was used (wait a second and retry).
func (s *signer) sign(req *http.Request, op string, body []byte) bool {
	now := time.Now().Unix()
	// now, then up to 10 s back, then up to 10 s ahead: all inside the
	// window on one machine's clock.
	for i := int64(0); i <= 20; i++ {
		off := i
		if i > 10 {
			off = 10 - i
		}
		ts := strconv.FormatInt(now-off, 10)
		sig := partners.Signature([]byte(s.secret), s.apiKey, ts, op, body)
		if s.used[sig] {
			continue
		}
		s.used[sig] = true
		req.Header.Set("x-api-key", s.apiKey)
		req.Header.Set("x-timestamp", ts)
		req.Header.Set("x-hash", sig)
		return true
	}
	return false
}

// transfer sends transfer i with its Idempotency-Key until it gets a
// definitive answer (201, or 14003 for insufficient funds), re-signing each
// attempt with a new timestamp (a signature is single-use). Transport
// errors (the server is down), 5xx (it is restarting or its database
// connections were cut) and 10409 (the first attempt is still in flight)
// are retried. Returns the final code and how many attempts it took.
func (r *ledgerRig) transfer(client *http.Client, i int, body []byte, deadline time.Time) (code int, attempts int) {
	sg := newSigner(r.apiKey, r.secret)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		base, _ := r.base.Load().(string)
		req, _ := http.NewRequest(http.MethodPost, base+"/v2/transfers", bytes.NewReader(body))
		if !sg.sign(req, "transfer_create", body) {
			time.Sleep(time.Second)
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("l6-%d", i))
		res, err := client.Do(req)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var env struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(raw, &env)
		if res.StatusCode == http.StatusCreated || env.Code == 14003 {
			return env.Code, attempt + 1
		}
		if res.StatusCode < 500 && env.Code != 10409 {
			return env.Code, attempt + 1 // a definitive refusal we did not expect: reported by the caller
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1, 0
}

// TestLedgerCrashConsistency is L6: transfers run from 16 clients, each
// with its own Idempotency-Key, while the serving process is killed with
// SIGKILL and restarted, and later while every database connection of the
// server is terminated. Clients retry with their key until they get a
// definitive answer. Afterwards: every key that was answered 201 moved
// money exactly once and every key answered 14003 moved none (no transfer
// is lost, doubled or half-applied), the total is unchanged, and the
// ledger verification finds nothing broken.
func TestLedgerCrashConsistency(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills emi serve")
	}
	const accounts, clients, opening = 40, 16, 50_000
	total := 1500
	r := newLedgerRig(t, accounts, opening)
	first := r.serve(t)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var next, finished atomic.Int64
	results := make([]int, total)
	deadline := time.Now().Add(3 * time.Minute)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				h := uint64(i+1) * 0x9E3779B97F4A7C15
				from := int(h % accounts)
				to := (from + 1 + int((h>>20)%(accounts-1))) % accounts
				body, _ := json.Marshal(map[string]any{"source": map[string]any{"balance": r.balances[from]},
					"destination": map[string]any{"balance": r.balances[to]}, "amount": emi.FormatMinor(1 + int64((h>>32)%20_000)),
					"currency": "EUR", "reference": fmt.Sprintf("L6 #%d", i)})
				results[i], _ = r.transfer(client, i, body, deadline)
				finished.Add(1)
			}
		}()
	}
	// The faults come mid-run, at a fixed pause; the clients' deadline
	// bounds the wait, and a run that never gets there fails below.
	waitFor := func(n int64) {
		testwait.Try(func() bool { return finished.Load() >= n }, testwait.Within(time.Until(deadline)), testwait.Every(5*time.Millisecond))
	}

	// 1. kill -9 mid-run, then restart.
	waitFor(int64(total / 3))
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	killedAt := finished.Load()
	time.Sleep(300 * time.Millisecond) // clients keep retrying against a dead server
	r.serve(t)

	// 2. Terminate every database connection of the server mid-run.
	waitFor(int64(2 * total / 3))
	var cut int
	if err := r.a.DB.Get(&cut, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend') x`); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("%d transfers; killed after %d answers; %d database connections terminated later", total, killedAt, cut)

	ctx := context.Background()
	r.a.DB.SetMaxIdleConns(0) // the test's own connections were cut too
	var ok, refused int
	for i, code := range results {
		var n int
		if err := r.a.DB.GetContext(ctx, &n, `SELECT count(*) FROM transfers WHERE reference = $1`, fmt.Sprintf("L6 #%d", i)); err != nil {
			t.Fatal(err)
		}
		switch {
		case code == 0 && n == 1:
			ok++
		case code == 14003 && n == 0:
			refused++
		default:
			t.Errorf("transfer %d: final answer code %d, %d transfers recorded", i, code, n)
		}
	}
	var sum int64
	if err := r.a.DB.GetContext(ctx, &sum, `SELECT sum(posted) FROM balances`); err != nil {
		t.Fatal(err)
	}
	if sum != accounts*opening {
		t.Fatalf("total %d after the faults, want %d", sum, accounts*opening)
	}
	rep, err := r.a.Ledger.Verify(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("ledger verification: %v %v", rep.Problems, err)
	}
	t.Logf("%d completed, %d refused for insufficient funds; ledger verified (%d transactions)", ok, refused, rep.Transactions)
}

// TestLedgerVerifyFindsCorruption checks that `emi ledger verify` is not
// a rubber stamp: a sound ledger passes, and one changed behind the
// ledger's back (its triggers disabled, as only a database owner could)
// fails, naming the broken rules.
func TestLedgerVerifyFindsCorruption(t *testing.T) {
	t.Parallel()
	r := &ledgerRig{vars: map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox"}}
	for _, args := range [][]string{{"migrate"}, {"seed"}, {"generate", "accounts", "--count", "2"}} {
		if _, stderr, err := runCmd(t, r.vars, args...); err != nil {
			t.Fatalf("emi %v: %v\n%s", args, err, stderr)
		}
	}
	cfg, _ := config.Load(env(r.vars), "db", "key")
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var acc, bal string
	if err := a.DB.QueryRow(`SELECT account, token FROM balances LIMIT 1`).Scan(&acc, &bal); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ledger.Post(context.Background(), emi.LedgerTxn{Kind: emi.TxnIncoming, Entries: []emi.Entry{
		{Internal: emi.LedgerIncomingClearing, Currency: "EUR", Amount: -1000},
		{Balance: bal, Account: acc, Currency: "EUR", Amount: 1000}}}); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, r.vars, "ledger", "verify")
	if err != nil || !bytes.Contains([]byte(out), []byte("every invariant holds")) || !bytes.Contains([]byte(out), []byte("EUR: customers 10.00, institution -10.00")) {
		t.Fatalf("sound ledger: %v\n%s", err, out)
	}
	a.DB.MustExec(`ALTER TABLE ledger_entries DISABLE TRIGGER USER`)
	a.DB.MustExec(`UPDATE ledger_entries SET amount = 900, balance_after = 900 WHERE balance = $1`, bal)
	a.DB.MustExec(`ALTER TABLE ledger_entries ENABLE TRIGGER USER`)
	out, _, err = runCmd(t, r.vars, "ledger", "verify")
	for _, want := range []string{"BROKEN: 1 transactions that do not sum to zero", "BROKEN: 1 balances whose posted figure is not the sum"} {
		if err == nil || !bytes.Contains([]byte(out), []byte(want)) {
			t.Fatalf("corrupt ledger: want %q, got %v\n%s", want, err, out)
		}
	}
	// The usage is checked too.
	if _, _, err := runCmd(t, r.vars, "ledger"); err == nil {
		t.Fatal("emi ledger without verify succeeded")
	}
}
