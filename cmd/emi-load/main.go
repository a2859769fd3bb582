// Command emi-load is emi's load harness: it signs requests as a partner
// does (contract §2) and drives a running `emi serve` with a set number of
// concurrent clients for a set time, then reports throughput, latency
// percentiles and answers by HTTP status and envelope code.
//
// A signature is accepted once, and an identical request signed in the same
// second has the same signature, so one API key can send at most one
// identical read per second. The harness therefore mints -keys API keys for
// one load partner (directly through the service layer, which is why it needs
// DATABASE_URL and EMI_MASTER_KEY of the server) and gives each request a
// (key, second) pair nobody used before; the offered load is capped at -keys
// requests per second.
//
//	emi-load -url http://127.0.0.1:8080 -keys 5000 -c 32 -d 20s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "emi-load:", err)
		os.Exit(1)
	}
}

type key struct{ apiKey, secret string }

func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := flag.NewFlagSet("emi-load", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080", "base URL of the running server")
	nkeys := fs.Int("keys", 2000, "API keys to mint (caps the request rate per second)")
	clients := fs.Int("c", 32, "concurrent clients")
	dur := fs.Duration("d", 20*time.Second, "duration of the run")
	opName := fs.String("op", "partner_details", "operation: partner_details, account_details, accounts_list, account_create, card_details, card_create, transfer, transfer_hot_out or transfer_hot_in")
	nAccounts := fs.Int("accounts", 50, "transfer: how many accounts the transfers move money between (funded before the run); transfer_hot_*: the cold accounts beside the hot one")
	partnerID := fs.String("partner", "", "existing partner whose accounts and users the account operations use (e.g. the Bench Partner of `emi generate accounts`); default a new partner")
	if err := fs.Parse(args); err != nil {
		return err
	}
	keys, fx, err := mintKeys(ctx, getenv, *nkeys, *partnerID, *opName, *nAccounts)
	if err != nil {
		return err
	}
	op, err := newOperation(*opName, fx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "minted %d keys; running %d clients for %s against %s (operation %s)\n", len(keys), *clients, *dur, *url, *opName)

	d := &dispenser{n: len(keys)}
	tr := &http.Transport{MaxIdleConnsPerHost: *clients, MaxConnsPerHost: *clients}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	runCtx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	results := make([]*result, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range results {
		results[i] = &result{codes: map[string]int{}}
		wg.Add(1)
		go func(r *result) {
			defer wg.Done()
			for runCtx.Err() == nil {
				k, ts, ok := d.next(runCtx)
				if !ok {
					return
				}
				r.do(runCtx, client, *url, keys[k], ts, op)
			}
		}(results[i])
	}
	wg.Wait()
	elapsed := time.Since(start)
	return report(out, results, elapsed)
}

// fixtures are the tokens the account operations pick from.
type fixtures struct {
	accounts, users, cards, free []string
	// balances are the EUR balances the transfer operations move money
	// between (funded by mintKeys); balances[0] is the hot one.
	balances []string
}

// mintKeys creates n API keys for a load-test partner (a new one, or
// partnerID) and loads up to 20,000 of its accounts and users.
func mintKeys(ctx context.Context, getenv func(string) string, n int, partnerID, opName string, nAccounts int) ([]key, fixtures, error) {
	var fx fixtures
	cfg, err := config.Load(getenv, "db", "key")
	if err != nil {
		return nil, fx, fmt.Errorf("configuration (the server's DATABASE_URL and EMI_MASTER_KEY): %w", err)
	}
	a, err := app.Open(ctx, cfg, app.NewLogger(cfg, io.Discard), nil)
	if err != nil {
		return nil, fx, err
	}
	defer a.Close()
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("emi-load"))
	var keys []key
	if partnerID == "" {
		c, err := a.Partners.Create(ctx, emi.PartnerCreate{Name: "load test " + time.Now().UTC().Format(time.RFC3339)})
		if err != nil {
			return nil, fx, err
		}
		keys, partnerID = append(keys, key{c.APIKey, c.APISecret}), c.Partner.ID
	}
	for len(keys) < n {
		k, err := a.Partners.CreateKey(ctx, partnerID)
		if err != nil {
			return nil, fx, err
		}
		keys = append(keys, key{k.APIKey, k.APISecret})
	}
	if err := a.DB.SelectContext(ctx, &fx.accounts, `SELECT token FROM accounts WHERE partner_id = $1 ORDER BY random() LIMIT 20000`, partnerID); err != nil {
		return nil, fx, err
	}
	if err := a.DB.SelectContext(ctx, &fx.users, `SELECT token FROM users WHERE partner_id = $1 AND status = 'active' ORDER BY random() LIMIT 20000`, partnerID); err != nil {
		return nil, fx, err
	}
	if err := a.DB.SelectContext(ctx, &fx.cards, `SELECT token FROM cards WHERE partner_id = $1 ORDER BY random() LIMIT 20000`, partnerID); err != nil {
		return nil, fx, err
	}
	// Accounts that can take a card: card_create uses each once.
	if err := a.DB.SelectContext(ctx, &fx.free, `SELECT a.token FROM accounts a WHERE a.partner_id = $1 AND a.status = 'active'
		AND NOT a.virtual AND a.program = 'account_eur'
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.account = a.token AND c.status <> 'terminated') LIMIT 200000`, partnerID); err != nil {
		return nil, fx, err
	}
	if strings.HasPrefix(opName, "transfer") {
		want := nAccounts
		if opName != "transfer" {
			want++ // the hot account
		}
		if fx.balances, err = fundBalances(ctx, a, partnerID, want); err != nil {
			return nil, fx, err
		}
	}
	return keys, fx, nil
}

// fundBalances picks n active EUR balances of the partner (oldest accounts
// first, so runs reuse them) and credits each, through the ledger as an
// incoming payment would, up to 10,000,000.00: enough that the benchmark
// measures transfers, not refusals.
func fundBalances(ctx context.Context, a *app.App, partnerID string, n int) ([]string, error) {
	var rows []struct {
		Account string `db:"account"`
		Balance string `db:"balance"`
		Posted  int64  `db:"posted"`
	}
	if err := a.DB.SelectContext(ctx, &rows, `SELECT a.token AS account, b.token AS balance, b.posted FROM accounts a
		JOIN balances b ON b.account = a.token AND b.currency = 'EUR'
		WHERE a.partner_id = $1 AND a.status = 'active' AND NOT a.virtual ORDER BY a.created_at, a.token LIMIT $2`, partnerID, n); err != nil {
		return nil, err
	}
	if len(rows) < n {
		return nil, fmt.Errorf("transfers need %d active EUR accounts of the partner, it has %d (emi generate accounts)", n, len(rows))
	}
	const target = 1_000_000_000
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Balance
		if r.Posted >= target {
			continue
		}
		if _, err := a.Ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnIncoming, Reference: "emi-load funding", Entries: []emi.Entry{
			{Internal: emi.LedgerIncomingClearing, Currency: "EUR", Amount: r.Posted - target},
			{Balance: r.Balance, Account: r.Account, Currency: "EUR", Amount: target - r.Posted}}}); err != nil {
			return nil, fmt.Errorf("fund %s: %w", r.Balance, err)
		}
	}
	return out, nil
}

// operation builds one request: method, path, operation name and body.
type operation func(i int) (method, path, name string, body []byte)

func newOperation(name string, fx fixtures) (operation, error) {
	pick := func(xs []string, i int) string { return xs[(i*7919)%len(xs)] }
	switch name {
	case "partner_details":
		return func(int) (string, string, string, []byte) { return http.MethodGet, "/v2/partner", name, nil }, nil
	case "account_details":
		if len(fx.accounts) == 0 {
			return nil, fmt.Errorf("account_details needs -partner with accounts (emi generate accounts)")
		}
		return func(i int) (string, string, string, []byte) {
			return http.MethodGet, "/v2/accounts/" + pick(fx.accounts, i), name, nil
		}, nil
	case "accounts_list":
		if len(fx.users) == 0 {
			return nil, fmt.Errorf("accounts_list needs -partner with users (emi generate accounts)")
		}
		return func(i int) (string, string, string, []byte) {
			return http.MethodGet, "/v2/accounts/1/10?user=" + pick(fx.users, i), name, nil
		}, nil
	case "card_details":
		if len(fx.cards) == 0 {
			return nil, fmt.Errorf("card_details needs -partner with cards (emi generate cards)")
		}
		return func(i int) (string, string, string, []byte) {
			return http.MethodGet, "/v2/cards/" + pick(fx.cards, i), name, nil
		}, nil
	case "card_create":
		if len(fx.free) == 0 {
			return nil, fmt.Errorf("card_create needs -partner with accounts without a card (emi generate cards --free M)")
		}
		var next atomic.Int64
		return func(int) (string, string, string, []byte) {
			i := next.Add(1) - 1
			if int(i) >= len(fx.free) {
				// Out of free accounts: the answer is 12004, which the
				// report shows; give -free more accounts.
				i %= int64(len(fx.free))
			}
			body := fmt.Sprintf(`{"account":"%s","type":"virtual","pin":"4821"}`, fx.free[i])
			return http.MethodPost, "/v2/cards", name, []byte(body)
		}, nil
	case "transfer", "transfer_hot_out", "transfer_hot_in":
		if len(fx.balances) < 2 {
			return nil, fmt.Errorf("%s needs funded balances", name)
		}
		var seq atomic.Int64
		return func(i int) (string, string, string, []byte) {
			n := seq.Add(1)
			cold := fx.balances[1:]
			var from, to string
			switch name {
			case "transfer":
				f := mix(n, 0) % len(fx.balances)
				t := (f + 1 + mix(n, 20)%(len(fx.balances)-1)) % len(fx.balances)
				from, to = fx.balances[f], fx.balances[t]
			case "transfer_hot_out":
				from, to = fx.balances[0], cold[mix(n, 0)%len(cold)]
			default:
				from, to = cold[mix(n, 0)%len(cold)], fx.balances[0]
			}
			body := fmt.Sprintf(`{"source":{"balance":"%s"},"destination":{"balance":"%s"},"amount":"%s","currency":"EUR","reference":"load %d"}`,
				from, to, emi.FormatMinor(1+int64(mix(n, 34)%100)), n)
			return http.MethodPost, "/v2/transfers", "transfer_create", []byte(body)
		}, nil
	case "account_create":
		if len(fx.users) == 0 {
			return nil, fmt.Errorf("account_create needs -partner with users (emi generate accounts)")
		}
		return func(i int) (string, string, string, []byte) {
			body := fmt.Sprintf(`{"program":"account_eur","user":"%s","alias":"load %d"}`, pick(fx.users, i), i)
			return http.MethodPost, "/v2/accounts", name, []byte(body)
		}, nil
	}
	return nil, fmt.Errorf("unknown -op %q", name)
}

// mix spreads n over non-negative ints (a cheap deterministic shuffle of
// transfer pairs and amounts): Fibonacci hashing, bits from shift on.
func mix(n int64, shift uint) int {
	h := uint64(n) * 0x9E3779B97F4A7C15   // #nosec G115 -- a hash input: wrapping is the point
	return int((h >> shift) & 0x3fffffff) // #nosec G115 -- masked to 30 bits
}

// dispenser hands out (key index, timestamp) pairs, each at most once: every
// key once per second.
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

type result struct {
	n     int
	lat   []time.Duration
	codes map[string]int
	errs  int
}

func (r *result) do(ctx context.Context, c *http.Client, base string, k key, ts string, op operation) {
	r.n++
	method, path, name, body := op(r.n*1000003 + len(r.lat))
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-api-key", k.apiKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-hash", service.Signature([]byte(k.secret), k.apiKey, ts, name, body))
	t0 := time.Now()
	res, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.errs++
		}
		return
	}
	rb, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	r.lat = append(r.lat, time.Since(t0))
	var env struct {
		Code int `json:"code"`
	}
	_ = json.Unmarshal(rb, &env)
	r.codes[fmt.Sprintf("HTTP %d code %d", res.StatusCode, env.Code)]++
}

func report(out io.Writer, results []*result, elapsed time.Duration) error {
	var lat []time.Duration
	codes := map[string]int{}
	errs := 0
	for _, r := range results {
		lat = append(lat, r.lat...)
		errs += r.errs
		for k, v := range r.codes {
			codes[k] += v
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("no request completed (%d transport errors)", errs)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	fmt.Fprintf(out, "requests:   %d in %s (%.0f req/s)\n", len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds())
	fmt.Fprintf(out, "latency:    p50 %s  p95 %s  p99 %s  max %s\n", pct(.50), pct(.95), pct(.99), lat[len(lat)-1])
	fmt.Fprintf(out, "transport errors: %d\n", errs)
	names := make([]string, 0, len(codes))
	for k := range codes {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(out, "  %-24s %d\n", k, codes[k])
	}
	return nil
}
