package accounts_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/accounts"
	"emi/internal/service/kernel"
)

// batchWorld is a set of EUR accounts of one partner's merchant, each
// funded, with their parties (as the history import resolves them).
type batchWorld struct {
	env     *apptest.Env
	partner *apptest.Partner
	parties []accounts.Party
}

func newBatchWorld(t *testing.T, env *apptest.Env, p *apptest.Partner, n int, funds ...int64) *batchWorld {
	t.Helper()
	ctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID, PartnerID: p.ID,
		MasterMerchant: p.Merchant})
	w := &batchWorld{env: env, partner: p}
	for i := range n {
		a, err := env.App.Accounts.Create(ctx, emi.AccountCreate{Program: "account_eur", Merchant: p.Merchant})
		if err != nil {
			t.Fatalf("open an account: %v", err)
		}
		party, found, err := env.App.TransferStore.FindParty(context.Background(), emi.TransferParty{Account: a.Token}, "EUR")
		if err != nil || !found {
			t.Fatalf("find the account's party: %v %v", found, err)
		}
		w.parties = append(w.parties, party)
		if i < len(funds) && funds[i] > 0 {
			env.Fund(t, party.Account, party.Balance, "EUR", funds[i])
		}
	}
	return w
}

// step is one movement of a scenario, on the world's accounts by index.
type step struct {
	kind     string // in, out, transfer, card, mismatch, netting, unknown
	from, to int
	amount   int64
	release  int64 // card: the part of a hold it settles
}

// line is the step as a batch line in w.
func (w *batchWorld) line(i int, s step) accounts.BatchLine {
	src := w.parties[s.from]
	own := emi.Entry{Balance: src.Balance, Account: src.Account, Currency: "EUR"}
	t := emi.LedgerTxn{PartnerID: w.partner.ID, Reference: fmt.Sprintf("batch test %d", i)}
	sides := []accounts.Side{{Field: "account", Party: src}}
	switch s.kind {
	case "in":
		own.Amount = s.amount
		t.Kind, t.Entries = emi.TxnIncoming, []emi.Entry{{Internal: emi.LedgerIncomingClearing, Currency: "EUR", Amount: -s.amount}, own}
	case "out":
		own.Amount = -s.amount
		t.Kind, t.Entries = emi.TxnOutgoing, []emi.Entry{own, {Internal: emi.LedgerOutgoingClearing, Currency: "EUR", Amount: s.amount}}
	case "transfer":
		dst := w.parties[s.to]
		own.Amount = -s.amount
		t.Kind, t.Entries = emi.TxnTransfer, []emi.Entry{own, {Balance: dst.Balance, Account: dst.Account, Currency: "EUR", Amount: s.amount}}
		sides = append(sides, accounts.Side{Field: "to_account", Party: dst})
	case "card":
		own.Amount, own.Release = -s.amount, s.release
		t.Kind, t.Entries = emi.TxnCardClearing, []emi.Entry{own, {Internal: emi.LedgerCardClearing, Currency: "EUR", Amount: s.amount}}
	case "mismatch": // a GBP entry on the EUR balance
		own.Amount, own.Currency = -s.amount, "GBP"
		t.Kind, t.Entries = emi.TxnOutgoing, []emi.Entry{own, {Internal: emi.LedgerOutgoingClearing, Currency: "GBP", Amount: s.amount}}
	case "netting": // a debit and a credit of one balance
		own.Amount = -s.amount
		back := own
		back.Amount = s.amount
		t.Kind, t.Entries = emi.TxnTransfer, []emi.Entry{own, back}
	case "unknown": // a balance that does not exist, checked by nobody before the ledger
		own.Balance, own.Amount = kernel.NewToken(), -s.amount
		t.Kind, t.Entries = emi.TxnOutgoing, []emi.Entry{own, {Internal: emi.LedgerOutgoingClearing, Currency: "EUR", Amount: s.amount}}
		sides = nil
	}
	return accounts.BatchLine{Sides: sides, Txn: t}
}

// postOneByOne books the steps as the history import did before
// PostBatch: one transaction, each line LockUsable then Post in a savepoint.
func (w *batchWorld) postOneByOne(t *testing.T, steps []step) []error {
	t.Helper()
	out := make([]error, len(steps))
	err := w.env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
		for i, s := range steps {
			ln := w.line(i, s)
			out[i] = w.env.App.DB.InTx(ctx, func(ctx context.Context) error {
				if err := w.env.App.Ledger.LockUsable(ctx, ln.Sides...); err != nil {
					return err
				}
				_, err := w.env.App.Ledger.Post(ctx, ln.Txn)
				return err
			})
			if out[i] != nil && emi.AsError(out[i]).Kind == emi.KindInternal {
				return out[i]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("post one by one: %v", err)
	}
	return out
}

// postBatch books the steps with PostBatch, in batches of size.
func (w *batchWorld) postBatch(t *testing.T, steps []step, size int) []accounts.BatchResult {
	t.Helper()
	var out []accounts.BatchResult
	for start := 0; start < len(steps); start += size {
		var lines []accounts.BatchLine
		for i := start; i < min(start+size, len(steps)); i++ {
			lines = append(lines, w.line(i, steps[i]))
		}
		err := w.env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
			res, err := w.env.App.Ledger.PostBatch(ctx, lines)
			out = append(out[:start], res...)
			return err
		})
		if err != nil {
			t.Fatalf("post batch: %v", err)
		}
	}
	return out
}

// rows is what the world's balances hold: per account (by index), each
// entry of its balance in order with its transaction, and the figures.
type worldRow struct {
	Kind, Reference, Internal, Currency string
	Amount, After                       int64
	Own                                 bool // the entry is on the balance (else: the transaction's other side)
}

func (w *batchWorld) rows(t *testing.T) ([][]worldRow, [][3]int64) {
	t.Helper()
	db := w.env.App.DB
	entries := make([][]worldRow, len(w.parties))
	figures := make([][3]int64, len(w.parties))
	index := map[string]int{}
	for i, p := range w.parties {
		index[p.Balance] = i
	}
	for i, p := range w.parties {
		var rs []struct {
			Txn       int64  `db:"txn"`
			Kind      string `db:"kind"`
			Reference string `db:"reference"`
			Balance   *string
			Internal  *string
			Currency  string `db:"currency"`
			Amount    int64  `db:"amount"`
			After     *int64 `db:"balance_after"`
		}
		// Every entry of every transaction that touches the balance, in id
		// order: the balance's own and the other side (another account of
		// the world by index, or an internal account).
		if err := db.Select(&rs, `SELECT e.txn, t.kind, t.reference, e.balance::text AS balance, e.internal, e.currency, e.amount, e.balance_after
			FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.txn
			WHERE e.txn IN (SELECT txn FROM ledger_entries WHERE balance = $1) ORDER BY e.id`, p.Balance); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			row := worldRow{Kind: r.Kind, Reference: r.Reference, Currency: r.Currency, Amount: r.Amount}
			switch {
			case r.Internal != nil:
				row.Internal = *r.Internal
			case *r.Balance == p.Balance:
				row.Own, row.After = true, *r.After
			default:
				row.Internal = fmt.Sprintf("account %d", index[*r.Balance])
			}
			entries[i] = append(entries[i], row)
		}
		if err := db.QueryRow(`SELECT posted, held, available FROM balances WHERE token = $1`, p.Balance).Scan(
			&figures[i][0], &figures[i][1], &figures[i][2]); err != nil {
			t.Fatal(err)
		}
	}
	return entries, figures
}

func verified(t *testing.T, env *apptest.Env) {
	t.Helper()
	if rep, err := env.App.Ledger.Verify(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("ledger verification: %v %v", rep.Problems, err)
	}
}

// TestPostBatchBooksWhatPostBooks: the same lines booked line by line
// (LockUsable, then Post, in a savepoint each) and with PostBatch, on two
// sets of accounts alike, refuse the same lines for the same reasons and
// leave the same entries (running balances included) and figures; the
// refusals sit in the middle of a batch, and the lines after one see the
// figures without it.
func TestPostBatchBooksWhatPostBooks(t *testing.T) {
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Batch Partner"})
	funds := []int64{10000, 500, 0, 2500, 700}
	one, batch := newBatchWorld(t, env, p, len(funds), funds...), newBatchWorld(t, env, p, len(funds), funds...)
	for _, w := range []*batchWorld{one, batch} {
		// Account 4 is blocked; account 3 holds 300 for a card payment.
		if _, err := env.App.DB.Exec(`UPDATE accounts SET status = 'blocked' WHERE token = $1`, w.parties[4].Account); err != nil {
			t.Fatal(err)
		}
		if _, err := env.App.Ledger.Hold(context.Background(), w.parties[3].Balance, 300); err != nil {
			t.Fatal(err)
		}
	}
	steps := []step{
		{kind: "out", from: 1, amount: 400},           // 500 → 100
		{kind: "out", from: 1, amount: 101},           // refused: 100 left
		{kind: "transfer", from: 0, to: 1, amount: 1}, // 100 → 101
		{kind: "out", from: 1, amount: 101},           // now it fits: 0
		{kind: "in", from: 2, amount: 50},
		{kind: "transfer", from: 2, to: 1, amount: 60}, // refused: 50
		{kind: "transfer", from: 2, to: 1, amount: 50},
		{kind: "out", from: 4, amount: 1},             // refused: account blocked
		{kind: "transfer", from: 0, to: 4, amount: 1}, // refused: the receiving account is blocked
		{kind: "in", from: 4, amount: 1},              // refused too (LockUsable refuses any movement)
		{kind: "card", from: 3, amount: 300, release: 300},
		{kind: "card", from: 3, amount: 2201}, // refused: 2200 available
		{kind: "card", from: 3, amount: 2200},
		{kind: "mismatch", from: 0, amount: 5},           // refused: a GBP entry on a EUR balance
		{kind: "netting", from: 0, amount: 5},            // refused: nets to nothing
		{kind: "unknown", from: 0, amount: 5},            // refused: no such balance
		{kind: "transfer", from: 0, to: 2, amount: 9999}, // 10000 - 1 - 9999 = 0
		{kind: "out", from: 0, amount: 1},                // refused
		{kind: "transfer", from: 3, to: 0, amount: 1},    // refused: 3 is empty
		{kind: "out", from: 1, amount: 51},               // refused: 50 left
	}
	errs := one.postOneByOne(t, steps)
	results := batch.postBatch(t, steps, len(steps))
	refusedSomewhere := 0
	for i := range steps {
		want, got := errs[i], results[i].Err
		if (want == nil) != (got == nil) {
			t.Fatalf("line %d (%+v): one by one %v, batch %v", i, steps[i], want, got)
		}
		if want == nil {
			continue
		}
		refusedSomewhere++
		we, ge := emi.AsError(want), emi.AsError(got)
		if we.Code != ge.Code || we.Public != ge.Public || !reflect.DeepEqual(we.Fields, ge.Fields) || ge.Kind == emi.KindInternal {
			t.Errorf("line %d (%+v): one by one refused %+v, batch %+v", i, steps[i], we, ge)
		}
		if results[i].Posted.ID != 0 {
			t.Errorf("line %d: refused and posted as %d", i, results[i].Posted.ID)
		}
	}
	if refusedSomewhere != 12 {
		t.Errorf("%d lines refused, the scenario refuses 12", refusedSomewhere)
	}
	oneRows, oneFigures := one.rows(t)
	batchRows, batchFigures := batch.rows(t)
	for i := range funds {
		if !reflect.DeepEqual(oneRows[i], batchRows[i]) {
			t.Errorf("account %d: one by one\n%+v\nbatch\n%+v", i, oneRows[i], batchRows[i])
		}
		if oneFigures[i] != batchFigures[i] {
			t.Errorf("account %d: figures one by one %v, batch %v", i, oneFigures[i], batchFigures[i])
		}
	}
	// What PostBatch returns is what it wrote.
	for i, r := range results {
		if r.Err != nil {
			continue
		}
		stored, err := env.App.Ledger.Txn(context.Background(), r.Posted.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Token != r.Posted.Token || stored.Kind != r.Posted.Kind || len(stored.Entries) != len(r.Posted.Entries) ||
			stored.CreatedAt.Sub(r.Posted.CreatedAt).Abs() > time.Microsecond {
			t.Errorf("line %d: stored %+v, returned %+v", i, stored, r.Posted)
			continue
		}
		for j := range stored.Entries {
			returned := r.Posted.Entries[j]
			returned.Release = 0 // not stored
			if stored.Entries[j] != returned {
				t.Errorf("line %d entry %d: stored %+v, returned %+v", i, j, stored.Entries[j], r.Posted.Entries[j])
			}
		}
	}
	verified(t, env)
}

// TestPostBatchInSmallBatchesAgrees: a longer random scenario booked in
// batches of 7 agrees with booking it line by line, and the ledger's
// invariants hold (running balances follow each other across batches).
func TestPostBatchInSmallBatchesAgrees(t *testing.T) {
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Batch Partner"})
	funds := []int64{3000, 1000, 0, 500, 0, 2000}
	one, batch := newBatchWorld(t, env, p, len(funds), funds...), newBatchWorld(t, env, p, len(funds), funds...)
	r := rand.New(rand.NewPCG(7, 32))
	var steps []step
	for range 120 {
		s := step{from: r.IntN(len(funds)), amount: 1 + r.Int64N(900)}
		switch r.IntN(4) {
		case 0:
			s.kind = "in"
		case 1:
			s.kind = "out"
		case 2:
			s.kind = "card"
		default:
			s.kind, s.to = "transfer", (s.from+1+r.IntN(len(funds)-1))%len(funds)
		}
		steps = append(steps, s)
	}
	errs := one.postOneByOne(t, steps)
	results := batch.postBatch(t, steps, 7)
	refused := 0
	for i := range steps {
		if (errs[i] == nil) != (results[i].Err == nil) || (errs[i] != nil && emi.AsError(errs[i]).Code != emi.AsError(results[i].Err).Code) {
			t.Fatalf("line %d (%+v): one by one %v, batch %v", i, steps[i], errs[i], results[i].Err)
		}
		if errs[i] != nil {
			refused++
		}
	}
	if refused == 0 || refused == len(steps) {
		t.Fatalf("%d of %d lines refused: the scenario should refuse some", refused, len(steps))
	}
	oneRows, oneFigures := one.rows(t)
	batchRows, batchFigures := batch.rows(t)
	if !reflect.DeepEqual(oneRows, batchRows) || !reflect.DeepEqual(oneFigures, batchFigures) {
		t.Errorf("one by one and in batches differ:\n%v\n%v\n%v\n%v", oneFigures, batchFigures, oneRows, batchRows)
	}
	verified(t, env)
}

// TestPostBatchAndAPIPostingsOnOneBalance: a batch and postings of the
// API on the same balance wait for each other, whichever comes first, and
// each sees the other's figures: nothing is lost, nothing goes below zero.
func TestPostBatchAndAPIPostingsOnOneBalance(t *testing.T) {
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Batch Partner"})
	ledger := env.App.Ledger

	t.Run("the batch first", func(t *testing.T) {
		w := newBatchWorld(t, env, p, 1, 1000)
		x := w.parties[0]
		locked, release := make(chan struct{}), make(chan struct{})
		batchDone := make(chan error, 1)
		go func() {
			batchDone <- env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
				res, err := ledger.PostBatch(ctx, []accounts.BatchLine{w.line(0, step{kind: "out", amount: 400}), w.line(1, step{kind: "out", amount: 300})})
				if err == nil && (res[0].Err != nil || res[1].Err != nil) {
					err = fmt.Errorf("batch refused %v %v", res[0].Err, res[1].Err)
				}
				close(locked)
				<-release // the batch's transaction still holds the balance
				return err
			})
		}()
		<-locked
		apiDone := make(chan error, 1)
		go func() {
			apiDone <- env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
				if err := ledger.LockUsable(ctx, accounts.Side{Field: "account", Party: x}); err != nil {
					return err
				}
				_, err := ledger.Post(ctx, w.line(2, step{kind: "out", amount: 500}).Txn)
				return err
			})
		}()
		select {
		case err := <-apiDone:
			t.Fatalf("the API's posting did not wait for the batch: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		if err := <-batchDone; err != nil {
			t.Fatal(err)
		}
		if err := <-apiDone; !errors.Is(err, emi.ErrInsufficientFunds) {
			t.Fatalf("API posting of 500 after the batch left 300: %v, want insufficient funds", err)
		}
		if _, err := ledger.Post(context.Background(), w.line(3, step{kind: "out", amount: 300}).Txn); err != nil {
			t.Fatalf("API posting of the 300 left: %v", err)
		}
		wantFigures(t, env, x.Balance, 0)
	})

	t.Run("the API first", func(t *testing.T) {
		w := newBatchWorld(t, env, p, 1, 1000)
		x := w.parties[0]
		locked, release := make(chan struct{}), make(chan struct{})
		apiDone := make(chan error, 1)
		go func() {
			apiDone <- env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
				if err := ledger.LockUsable(ctx, accounts.Side{Field: "account", Party: x}); err != nil {
					return err
				}
				_, err := ledger.Post(ctx, w.line(0, step{kind: "out", amount: 600}).Txn)
				close(locked)
				<-release
				return err
			})
		}()
		<-locked
		var res []accounts.BatchResult
		batchDone := make(chan error, 1)
		go func() {
			batchDone <- env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
				var err error
				res, err = ledger.PostBatch(ctx, []accounts.BatchLine{w.line(1, step{kind: "out", amount: 500}), w.line(2, step{kind: "out", amount: 400})})
				return err
			})
		}()
		select {
		case err := <-batchDone:
			t.Fatalf("the batch did not wait for the API's posting: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		if err := <-apiDone; err != nil {
			t.Fatal(err)
		}
		if err := <-batchDone; err != nil {
			t.Fatal(err)
		}
		// 400 left after the API's 600: the 500 is refused, the 400 fits.
		if !errors.Is(res[0].Err, emi.ErrInsufficientFunds) || res[1].Err != nil {
			t.Fatalf("batch after the API's posting: %v, %v; want the 500 refused and the 400 booked", res[0].Err, res[1].Err)
		}
		wantFigures(t, env, x.Balance, 0)
	})

	t.Run("many at once", func(t *testing.T) {
		w := newBatchWorld(t, env, p, 3, 5000, 5000, 5000)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 3 { // batches
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for b := range 5 {
					var lines []accounts.BatchLine
					for i := range 40 {
						s := step{kind: []string{"in", "out", "transfer"}[r.IntN(3)], from: r.IntN(3), amount: 1 + r.Int64N(700)}
						s.to = (s.from + 1) % 3
						lines = append(lines, w.line(g*1000+b*100+i, s))
					}
					if err := env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
						_, err := ledger.PostBatch(ctx, lines)
						return err
					}); err != nil {
						errs <- err
					}
				}
			})
		}
		for g := range 4 { // the API
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 2))
				for i := range 40 {
					s := step{kind: []string{"in", "out", "transfer"}[r.IntN(3)], from: r.IntN(3), amount: 1 + r.Int64N(700)}
					s.to = (s.from + 2) % 3
					ln := w.line(10000+g*100+i, s)
					err := env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
						if err := ledger.LockUsable(ctx, ln.Sides...); err != nil {
							return err
						}
						_, err := ledger.Post(ctx, ln.Txn)
						return err
					})
					if err != nil && !errors.Is(err, emi.ErrInsufficientFunds) {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	verified(t, env)
}

// wantFigures checks a balance's posted and available figures (nothing held).
func wantFigures(t *testing.T, env *apptest.Env, balance string, want int64) {
	t.Helper()
	var posted, available int64
	if err := env.App.DB.QueryRow(`SELECT posted, available FROM balances WHERE token = $1`, balance).Scan(&posted, &available); err != nil {
		t.Fatal(err)
	}
	if posted != want || available != want {
		t.Fatalf("balance at %d posted, %d available; want %d", posted, available, want)
	}
}
