// Command emi-load is emi's load harness: it signs requests as a partner
// does (contract §2) and drives a running `emi serve` through a scenario,
// with a set number of closed-loop clients (-c) or at a set rate of flow
// starts (-rate, open loop) for a set time (-d), then reports throughput,
// p50/p95/p99/max latency and the answers by HTTP status and envelope code,
// per flow and per signed operation.
//
// Scenarios (-op): the single operations partner_details, account_details,
// accounts_list, account_create, card_details, card_create, transfer,
// transfer_hot_out and transfer_hot_in; the flows onboarding (application to
// an underwriter's approval), people (user, AML check, KYC), issue (account
// and card) and card_ops (card reads and status changes); and mixed, a
// realistic ratio of all of them (mixedRatio).
//
// It signs as a partner does: one API key carries the whole load by default.
// The server refuses only the same request twice (contract §2: API key,
// x-timestamp, method, request target, x-hash), so the harness signs each
// request (version 1) with the current second and, when that second already
// carried the identical request with that key (card_ops reads a card twice),
// signs it with version 2 and a nonce of its own; the report counts those
// repeats. -keys N models N
// partners, each with its one key: every flow signs all its requests with
// one key (flow n with key n mod N). With -partner P the N keys all belong
// to P, because the reads need P's accounts and cards: the server then sees
// N keys (replay guard, key cache and rate limit are per key) of one
// partner (per-partner ordering, such as events, is shared). Keys are
// minted through the service layer, which is why emi-load needs
// DATABASE_URL and EMI_MASTER_KEY of the server.
//
//	emi-load -url http://127.0.0.1:8080 -c 32 -d 20s
//	emi-load -op mixed -partner P -rate 300 -d 20s
//	emi-load bench -d 10s -report cmd/emi-load/REPORT.md   (what `make bench` runs)
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/emi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		err = benchMain(ctx, os.Args[2:], os.Getenv, os.Stdout)
	} else {
		err = runMain(ctx, os.Args[1:], os.Getenv, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "emi-load:", err)
		os.Exit(1)
	}
}

type key struct{ apiKey, secret string }

// shape is how a scenario is driven.
type shape struct {
	clients  int
	rate     float64
	inflight int
	d        time.Duration
}

func (s shape) String() string {
	if s.rate > 0 {
		return fmt.Sprintf("%g/s open loop, ≤ %d in flight", s.rate, s.inflight)
	}
	return fmt.Sprintf("%d clients", s.clients)
}

func runMain(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	fs := newFlags()
	url := fs.String("url", "http://127.0.0.1:8080", "base URL of the running server; several, comma-separated, share the flows round-robin (instances on one database)")
	nkeys := fs.Int("keys", 1, "partners to model, each signing with its own one API key (with -partner P: N keys of P, since the reads need P's data)")
	clients := fs.Int("c", 32, "concurrent clients (closed loop; ignored with -rate)")
	rate := fs.Float64("rate", 0, "flow starts per second (open loop); 0: closed loop with -c clients")
	inflight := fs.Int("inflight", 256, "open loop: most flows in flight at once (a start waits for a slot and counts as late)")
	dur := fs.Duration("d", 20*time.Second, "duration of the run")
	opName := fs.String("op", "partner_details", "scenario: "+strings.Join(scenarios, ", "))
	nAccounts := fs.Int("accounts", 50, "transfer: how many accounts the transfers move money between (funded before the run); transfer_hot_*: the cold accounts beside the hot one")
	partnerID := fs.String("partner", "", "existing partner whose accounts, users and cards the operations use (the Bench Partner of `emi generate cards`); default a new partner")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := prepareOpts{keys: *nkeys, partner: *partnerID, pairs: *nAccounts, cold: *nAccounts,
		fund: strings.HasPrefix(*opName, "transfer") || *opName == "mixed"}
	h, c, err := prepare(ctx, getenv, *url, opts)
	if err != nil {
		return err
	}
	defer h.app.Close()
	sh := shape{clients: *clients, rate: *rate, inflight: *inflight, d: *dur}
	fmt.Fprintf(out, "%d API key(s); %s for %s against %s (scenario %s)\n", len(c.keys), sh, *dur, *url, *opName)
	res, err := h.scenario(ctx, c, *opName, sh)
	if err != nil {
		return err
	}
	writeText(out, res)
	if res.Total().Count == 0 {
		return fmt.Errorf("no flow completed")
	}
	return nil
}

// scenario runs one scenario with a fresh recorder.
func (h *harness) scenario(ctx context.Context, c *caller, name string, sh shape) (Result, error) {
	pick, flows, err := h.pickFlow(name)
	if err != nil {
		return Result{}, err
	}
	cc := *c
	cc.rec = newRecorder()
	conns := max(sh.clients, sh.inflight)
	cc.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}, Timeout: 30 * time.Second}
	defer cc.http.CloseIdleConnections()
	repeats := c.stamp.repeats.Load()
	elapsed := run(ctx, &cc, pick, sh.clients, sh.rate, sh.inflight, sh.d)
	res := cc.rec.result(name, sh.String(), flows, elapsed)
	res.Repeats = c.stamp.repeats.Load() - repeats
	return res, nil
}

// fixtures are the tokens the operations pick from.
type fixtures struct {
	accounts, users, cards, free []string
	// balances are the EUR balances the transfer operations move money
	// between (funded by prepare); balances[0] is the hot one. transfer
	// uses the first pairs, transfer_hot_* the hot one and cold others.
	balances    []string
	pairs, cold int
}

type prepareOpts struct {
	keys        int
	partner     string
	pairs, cold int
	fund        bool
}

// prepare opens the service layer with the server's configuration, creates
// opts.keys API keys (without opts.partner: that many new partners with one
// key each; with it: that many keys of opts.partner, whose data the
// operations read), an
// underwriter, loads up to 20,000 of the partner's accounts, users and
// cards and funds the transfer balances.
func prepare(ctx context.Context, getenv func(string) string, url string, opts prepareOpts) (*harness, *caller, error) {
	cfg, err := config.Load(getenv, "db", "key")
	if err != nil {
		return nil, nil, fmt.Errorf("configuration (the server's DATABASE_URL and EMI_MASTER_KEY): %w", err)
	}
	a, err := app.Open(ctx, cfg, app.NewLogger(cfg, io.Discard), nil)
	if err != nil {
		return nil, nil, err
	}
	h, c, err := prepareWith(ctx, a, url, opts)
	if err != nil {
		_ = a.Close()
		return nil, nil, err
	}
	return h, c, nil
}

func prepareWith(ctx context.Context, a *app.App, url string, opts prepareOpts) (*harness, *caller, error) {
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("emi-load"))
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	h := &harness{app: a, tag: tag}
	fx := &h.fx
	fx.pairs, fx.cold = opts.pairs, opts.cold
	var keys []key
	partnerID := opts.partner
	for len(keys) < max(1, opts.keys) {
		if opts.partner == "" {
			// A partner of its own per key: the fixtures (none without
			// -partner) and the transfers' balances are the first one's.
			c, err := a.Partners.Create(ctx, emi.PartnerCreate{Name: fmt.Sprintf("load test %s #%d", time.Now().UTC().Format(time.RFC3339), len(keys)+1), Processing: emi.ProcessingSemiAutomatic})
			if err != nil {
				return nil, nil, err
			}
			keys = append(keys, key{c.APIKey, c.APISecret})
			if partnerID == "" {
				partnerID = c.Partner.ID
			}
			continue
		}
		k, err := a.Partners.CreateKey(ctx, partnerID)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, key{k.APIKey, k.APISecret})
	}
	out, err := a.Staff.Create(ctx, emi.StaffCreate{Email: "underwriter." + tag + "@emi-load.example", Name: "emi-load underwriter",
		Roles: []emi.Role{emi.RoleUnderwriter}, Password: "Load-Harness-Underwriter-" + tag})
	if err != nil {
		return nil, nil, fmt.Errorf("underwriter: %w", err)
	}
	h.underwriter = emi.WithPrincipal(context.WithoutCancel(ctx), emi.Principal{Type: emi.ActorStaff, ActorID: out.User.ID, StaffRoles: []string{string(emi.RoleUnderwriter)}})
	if err := a.DB.SelectContext(ctx, &fx.accounts, `SELECT token FROM accounts WHERE partner_id = $1 ORDER BY random() LIMIT 20000`, partnerID); err != nil {
		return nil, nil, err
	}
	if err := a.DB.SelectContext(ctx, &fx.users, `SELECT token FROM users WHERE partner_id = $1 AND status = 'active' ORDER BY random() LIMIT 20000`, partnerID); err != nil {
		return nil, nil, err
	}
	if err := a.DB.SelectContext(ctx, &fx.cards, `SELECT token FROM cards WHERE partner_id = $1 AND status = 'active' ORDER BY random() LIMIT 20000`, partnerID); err != nil {
		return nil, nil, err
	}
	// Accounts that can take a card: card_create uses each once.
	if err := a.DB.SelectContext(ctx, &fx.free, `SELECT a.token FROM accounts a WHERE a.partner_id = $1 AND a.status = 'active'
		AND NOT a.virtual AND a.program = 'account_eur'
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.account = a.token AND c.status <> 'terminated') LIMIT 200000`, partnerID); err != nil {
		return nil, nil, err
	}
	// card_ops leases the cards the reads do not use, when there are
	// enough.
	h.cards = make(chan string, len(fx.cards))
	for _, c := range fx.cards {
		h.cards <- c
	}
	if opts.fund {
		if fx.balances, err = fundBalances(ctx, a, partnerID, max(opts.pairs, opts.cold+1)); err != nil {
			return nil, nil, err
		}
	}
	bases := strings.Split(url, ",")
	return h, &caller{base: bases[0], bases: bases, keys: keys, stamp: newStamper()}, nil
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
