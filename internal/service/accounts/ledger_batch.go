package accounts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// BatchLine is one movement of a batch posting (PostBatch): the
// transaction to post and the sides whose accounts must be usable, as a
// caller of Post would check them with LockUsable first (none: no check).
type BatchLine struct {
	Sides []Side
	Txn   emi.LedgerTxn
}

// BatchResult is what became of a BatchLine: Posted when it was booked,
// else Err, the refusal LockUsable or Post would have returned for it
// (nothing of the line was written).
type BatchResult struct {
	Posted emi.PostedTxn
	Err    error
}

// PostBatch books many movements at once, for imports (`emi sandbox
// import-history` books a history of up to hundreds of thousands of lines:
// LockUsable then Post per line costs about ten round trips to the
// database each). It is LockUsable(line.Sides...) then Post(line.Txn) for
// each line in order, each line in a savepoint of its own, with the same
// outcome line by line, in a constant number of statements:
//
//   - every balance of the batch is locked once, up front, in token order
//     (Lock: the per-balance queue, then the rows), and the accounts'
//     statuses are read once, after the locks; a line whose account is not
//     usable is refused as LockUsable refuses it;
//   - the lines are then checked in order against the locked figures kept
//     in memory, with MoveBalance's guard per line: a line that would take
//     a balance without overdraft below zero is refused
//     (emi.ErrInsufficientFunds) and the next line sees the figures
//     without it; so are netting transactions (emi.ErrSameBalance), entries
//     in another currency than their balance (emi.ErrCurrencyMismatch) and
//     unknown balances (emi.ErrAccountNotFound), as Post refuses them;
//   - the booked lines' transactions and entries are written in two
//     statements (the same rows Post writes: each entry's running
//     balance, entry ids in posting order, created_at the time of the
//     line), and each balance's figures move once by the batch's net
//     change, under the guard again; a balance that does not end where
//     the lines in memory say is an internal error and nothing is booked.
//
// Everything Post's database constraints check still applies (entries
// sum to zero per transaction, at commit; available = posted - held and
// never below zero without overdraft). The balances stay locked until the
// caller's transaction ends, so a movement of the API on one of them
// waits for the batch (and then sees its figures), as it would wait for a
// Post; keep batches to a few thousand lines.
//
// It runs in the transaction of ctx (a savepoint of it): an error books
// nothing of the batch. A malformed transaction (checkTxn) is an internal
// error for the whole batch, as it is a bug of the caller.
func (l *Ledger) PostBatch(ctx context.Context, lines []BatchLine) ([]BatchResult, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	var balances, accounts []string
	for i := range lines {
		t := &lines[i].Txn
		if err := checkTxn(*t); err != nil {
			return nil, fmt.Errorf("batch line %d: %w", i, err)
		}
		for _, sd := range lines[i].Sides {
			balances = append(balances, sd.Party.Balance)
			accounts = append(accounts, sd.Party.Account, sd.Party.Main)
		}
		for _, e := range t.Entries {
			if e.Balance != "" {
				balances = append(balances, e.Balance)
			}
		}
	}
	slices.Sort(accounts)
	accounts = slices.Compact(accounts)
	var out []BatchResult
	err := l.tx.InTx(ctx, func(ctx context.Context) error {
		out = make([]BatchResult, len(lines))
		locked, err := l.Lock(ctx, balances...)
		if err != nil {
			return err
		}
		statuses, err := l.AccountStatuses(ctx, accounts...)
		if err != nil {
			return err
		}
		figures := maps.Clone(locked) // the locked figures, as the booked lines move them
		var booked []int
		var txns []emi.LedgerTxn
		var entries [][]emi.PostedEntry
		var ats []time.Time
		for i, ln := range lines {
			t := ln.Txn
			if t.Token == "" {
				t.Token = kernel.NewToken()
			}
			es, err := l.check(t, ln.Sides, statuses, figures)
			if err != nil {
				out[i].Err = err
				continue
			}
			booked = append(booked, i)
			txns = append(txns, t)
			entries = append(entries, es)
			ats = append(ats, l.now.At(ctx).UTC())
		}
		if len(booked) == 0 {
			return nil
		}
		ids, entryIDs, err := l.store.InsertLedgerTxns(ctx, txns, entries, ats)
		if err != nil {
			return err
		}
		for k, i := range booked {
			for j := range entries[k] {
				entries[k][j].ID = entryIDs[k][j]
			}
			out[i].Posted = emi.PostedTxn{ID: ids[k], Token: txns[k].Token, Kind: txns[k].Kind, CreatedAt: ats[k], Entries: entries[k]}
		}
		return l.moveNet(ctx, locked, figures)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// check decides one line of a batch against the figures in memory, as
// LockUsable then Post would against the database, and on success moves
// the figures and returns the entries with their running balances.
func (l *Ledger) check(t emi.LedgerTxn, sides []Side, statuses map[string]string, figures map[string]emi.BalanceState) ([]emi.PostedEntry, error) {
	if u := firstUnusable(statuses, sides); u != nil {
		return nil, u.refusal()
	}
	if b := nettingBalance(t); b != "" {
		return nil, emi.ErrSameBalance.WithDetail("ledger %s transaction nets to nothing on balance %s", t.Kind, b)
	}
	moves := netMoves(t)
	before := map[string]int64{}
	for _, m := range moves {
		st, ok := figures[m.Balance]
		if !ok {
			return nil, emi.ErrAccountNotFound
		}
		// MoveBalance's guard (LedgerStore.MoveBalance).
		if d := m.Posted - m.Held; !st.Overdraft && d < 0 && st.Available+d < 0 {
			return nil, emi.ErrInsufficientFunds
		}
		if err := currencyOf(t, m.Balance, st.Currency); err != nil {
			return nil, err
		}
		before[m.Balance] = st.Posted
	}
	for _, m := range moves {
		st := figures[m.Balance]
		st.Posted += m.Posted
		st.Held += m.Held
		st.Available += m.Posted - m.Held
		figures[m.Balance] = st
	}
	return postedEntries(t, before), nil
}

// moveNet moves each balance the batch changed from its locked figures to
// those in memory, in one statement, and checks that it ends there.
func (l *Ledger) moveNet(ctx context.Context, locked, figures map[string]emi.BalanceState) error {
	var moves []BalanceMove
	for b, st := range figures {
		was := locked[b]
		if st.Posted != was.Posted || st.Held != was.Held {
			moves = append(moves, BalanceMove{Balance: b, Posted: st.Posted - was.Posted, Held: st.Held - was.Held})
		}
	}
	if len(moves) == 0 {
		return nil
	}
	slices.SortFunc(moves, func(a, b BalanceMove) int { return strings.Compare(a.Balance, b.Balance) })
	after, err := l.store.MoveBalances(ctx, moves)
	if err != nil {
		return err
	}
	for _, m := range moves {
		got, ok := after[m.Balance]
		want := figures[m.Balance]
		if !ok || got.Posted != want.Posted || got.Held != want.Held || got.Available != want.Available {
			return emi.Internal(fmt.Errorf("batch posting: balance %s is at %d/%d/%d after the batch, the lines say %d/%d/%d (moved outside its lock?)",
				m.Balance, got.Posted, got.Held, got.Available, want.Posted, want.Held, want.Available))
		}
	}
	return nil
}
