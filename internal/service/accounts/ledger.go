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

// LedgerStore keeps the ledger: customer balances' figures, ledger
// transactions and their entries.
type LedgerStore interface {
	// LockBalances locks the balances FOR UPDATE in token order (so two
	// movements over the same balances never deadlock) and returns them,
	// with the status of each balance's account read after the locks were
	// granted. Unknown tokens are absent from the map.
	LockBalances(ctx context.Context, tokens []string) (map[string]emi.BalanceState, error)
	// MoveBalance adds posted to the balance's posted figure and held to its
	// held figure (available moves by posted - held), under the row lock.
	// A change that lowers available below zero on a balance without
	// overdraft changes nothing and returns ok=false. Returns
	// emi.ErrAccountNotFound for an unknown balance.
	MoveBalance(ctx context.Context, token string, posted, held int64) (after emi.BalanceState, ok bool, err error)
	// InsertLedgerTxn writes a transaction and its entries; it returns the
	// transaction's id and the entries' ids, in order.
	InsertLedgerTxn(ctx context.Context, t emi.LedgerTxn, entries []emi.PostedEntry, at time.Time) (id int64, entryIDs []int64, err error)
	// InsertLedgerTxns writes transactions and their entries as
	// InsertLedgerTxn writes each, in order, in a constant number of
	// statements (Ledger.PostBatch): entries[i] and at[i] are those of
	// ts[i], and the entries' ids follow the order of ts then of each
	// transaction's entries.
	InsertLedgerTxns(ctx context.Context, ts []emi.LedgerTxn, entries [][]emi.PostedEntry, at []time.Time) (ids []int64, entryIDs [][]int64, err error)
	// MoveBalances applies each move as MoveBalance does (the same guard,
	// under the row locks) in one statement, and returns the figures
	// after, by balance; a move the guard refuses, or of an unknown
	// balance, changes nothing and is missing from the map.
	MoveBalances(ctx context.Context, moves []BalanceMove) (map[string]emi.BalanceState, error)
	// AccountStatuses returns the status of each account (read now).
	AccountStatuses(ctx context.Context, accounts []string) (map[string]string, error)
	// LedgerTxn returns a posted transaction with its entries.
	LedgerTxn(ctx context.Context, id int64) (emi.PostedTxn, error)
	// VerifyLedger checks the ledger's invariants over the whole database
	// in one snapshot (see Ledger.Verify).
	VerifyLedger(ctx context.Context) (emi.LedgerReport, error)
}

// Ledger posts double-entry transactions. It is the only code that changes
// a balance's figures: every movement of money (transfers, incoming and
// outgoing payments, card clearing, adjustments, reversals) goes through
// Post (or, for imports of many movements, PostBatch, which books the same
// rows), and card holds through Hold and Release.
//
// Post runs in the caller's transaction, so the movement commits with the
// business record that causes it (a transfer, a returned payment) or not
// at all. The database backs every rule Post checks: a deferred constraint
// trigger refuses a transaction whose entries do not sum to zero, a CHECK
// keeps available = posted - held and available >= 0 without overdraft, and
// triggers refuse UPDATE and DELETE of entries.
type Ledger struct {
	tx    kernel.TxRunner
	store LedgerStore
	now   kernel.Clock
}

// LedgerDeps is what Ledger needs; NewLedger checks that none is nil.
type LedgerDeps struct {
	Tx    kernel.TxRunner
	Store LedgerStore
	Now   kernel.Clock
}

// NewLedger returns the ledger.
func NewLedger(d LedgerDeps) *Ledger {
	kernel.MustHave("Ledger", d)
	return &Ledger{tx: d.Tx, store: d.Store, now: d.Now}
}

// Lock locks the balances for a movement (see LedgerStore.LockBalances)
// and returns them; a token that is not a balance is missing from the map.
// Callers lock before they check account statuses, so a status read after
// Lock cannot change before their transaction ends without waiting for it.
func (l *Ledger) Lock(ctx context.Context, balances ...string) (map[string]emi.BalanceState, error) {
	ts := slices.Clone(balances)
	slices.Sort(ts)
	return l.store.LockBalances(ctx, slices.Compact(ts))
}

// AccountStatuses reads the status of accounts (virtual accounts, whose
// balance lives on their main account, are checked through this).
func (l *Ledger) AccountStatuses(ctx context.Context, accounts ...string) (map[string]string, error) {
	return l.store.AccountStatuses(ctx, accounts)
}

// Side is one side of a movement, named by the request field it came from
// (for error messages).
type Side struct {
	Field string
	Party Party
}

// LockUsable locks the sides' balances and refuses the movement with
// emi.ErrTransferAccountUnusable (naming the side's field) when an account
// of a side, or the main account behind a virtual one, is not active (see
// LockStatus).
func (l *Ledger) LockUsable(ctx context.Context, sides ...Side) error {
	_, u, err := l.LockStatus(ctx, sides...)
	if err != nil || u == nil {
		return err
	}
	return u.refusal()
}

// refusal is LockUsable's error for u.
func (u *Unusable) refusal() error {
	what := "account"
	if u.Main {
		what = "main account"
	}
	return emi.ErrTransferAccountUnusable.Field(u.Field, what+" is "+u.Status)
}

// Unusable names the account of a side that is not active.
type Unusable struct {
	Field   string // the side's field
	Account string
	Main    bool // the main account behind a virtual side
	Status  string
}

// LockStatus locks the sides' balances and returns them with the first
// account of a side (its account, then the main account behind a virtual
// one) that is not active, a terminated one before a blocked one; nil when
// every account is active. It is the one "is this account usable" rule;
// the callers decide the outcome: LockUsable refuses (14004), incoming
// credits go to suspense, adjustments refuse a terminated account only.
// The statuses are read after the locks are granted, so a status that
// changed before that is seen; a termination locks the account's balances
// too, so it waits for the caller's transaction and then sees its
// movement.
func (l *Ledger) LockStatus(ctx context.Context, sides ...Side) (map[string]emi.BalanceState, *Unusable, error) {
	balances := make([]string, 0, len(sides))
	accounts := make([]string, 0, 2*len(sides))
	for _, sd := range sides {
		balances = append(balances, sd.Party.Balance)
		accounts = append(accounts, sd.Party.Account, sd.Party.Main)
	}
	locked, err := l.Lock(ctx, balances...)
	if err != nil {
		return nil, nil, err
	}
	st, err := l.AccountStatuses(ctx, accounts...)
	if err != nil {
		return nil, nil, err
	}
	return locked, firstUnusable(st, sides), nil
}

// firstUnusable is LockStatus's choice of the account to refuse, from the
// statuses of the sides' accounts (nil when every one is active).
func firstUnusable(st map[string]string, sides []Side) *Unusable {
	var first *Unusable
	for _, sd := range sides {
		for _, a := range []string{sd.Party.Account, sd.Party.Main} {
			status := st[a]
			if status == emi.AccountActive || (first != nil && (first.Status == emi.AccountTerminated || status != emi.AccountTerminated)) {
				continue
			}
			first = &Unusable{Field: sd.Field, Account: a, Main: a != sd.Party.Account, Status: status}
		}
	}
	return first
}

// Post writes t and moves the balances it names, in the transaction of ctx
// (a savepoint of it: a refused posting leaves nothing behind). Customer
// balances are moved in token order. Returns emi.ErrSameBalance when the
// entries on a balance sum to zero (nothing would move), emi.ErrInsufficientFunds
// (naming nothing) when a debit would take a balance without overdraft
// below zero, emi.ErrCurrencyMismatch when an entry's currency is not its
// balance's, and an internal error for a malformed transaction (a bug of
// the caller): fewer than two entries, a zero amount, an unknown account or
// currency, or entries that do not sum to zero per currency.
func (l *Ledger) Post(ctx context.Context, t emi.LedgerTxn) (emi.PostedTxn, error) {
	if err := checkTxn(t); err != nil {
		return emi.PostedTxn{}, err
	}
	if b := nettingBalance(t); b != "" {
		return emi.PostedTxn{}, emi.ErrSameBalance.WithDetail("ledger %s transaction nets to nothing on balance %s", t.Kind, b)
	}
	if t.Token == "" {
		t.Token = kernel.NewToken()
	}
	var out emi.PostedTxn
	err := l.tx.InTx(ctx, func(ctx context.Context) error {
		// Net movement per balance, moved in token order.
		moves := netMoves(t)
		before := map[string]int64{} // posted figure before the first entry
		for _, m := range moves {
			st, ok, err := l.store.MoveBalance(ctx, m.Balance, m.Posted, m.Held)
			if err != nil {
				return err
			}
			if !ok {
				return emi.ErrInsufficientFunds
			}
			before[m.Balance] = st.Posted - m.Posted
			if err := currencyOf(t, m.Balance, st.Currency); err != nil {
				return err
			}
		}
		entries := postedEntries(t, before)
		at := l.now.At(ctx).UTC()
		id, ids, err := l.store.InsertLedgerTxn(ctx, t, entries, at)
		if err != nil {
			return err
		}
		for i := range entries {
			entries[i].ID = ids[i]
		}
		out = emi.PostedTxn{ID: id, Token: t.Token, Kind: t.Kind, CreatedAt: at, Entries: entries}
		return nil
	})
	return out, err
}

// BalanceMove is the net change a transaction makes to a customer
// balance's figures: posted by Posted, held by Held (available by Posted -
// Held).
type BalanceMove struct {
	Balance      string
	Posted, Held int64
}

// netMoves returns t's net move per customer balance, in token order (the
// order Post moves them in).
func netMoves(t emi.LedgerTxn) []BalanceMove {
	var out []BalanceMove
	for _, e := range t.Entries {
		if e.Balance == "" {
			continue
		}
		i := slices.IndexFunc(out, func(m BalanceMove) bool { return m.Balance == e.Balance })
		if i < 0 {
			out = append(out, BalanceMove{Balance: e.Balance})
			i = len(out) - 1
		}
		out[i].Posted += e.Amount
		out[i].Held -= e.Release
	}
	slices.SortFunc(out, func(a, b BalanceMove) int { return strings.Compare(a.Balance, b.Balance) })
	return out
}

// currencyOf refuses t when one of its entries on balance is not in the
// balance's currency.
func currencyOf(t emi.LedgerTxn, balance, currency string) error {
	for _, e := range t.Entries {
		if e.Balance == balance && e.Currency != currency {
			return emi.ErrCurrencyMismatch.WithDetail("entry in %s on a %s balance", e.Currency, currency)
		}
	}
	return nil
}

// postedEntries returns t's entries with each customer balance's running
// posted figure, from before (the figure before t, by balance).
func postedEntries(t emi.LedgerTxn, before map[string]int64) []emi.PostedEntry {
	after := make(map[string]int64, len(before))
	maps.Copy(after, before)
	entries := make([]emi.PostedEntry, len(t.Entries))
	for i, e := range t.Entries {
		entries[i] = emi.PostedEntry{Entry: e}
		if e.Balance != "" {
			after[e.Balance] += e.Amount
			entries[i].BalanceAfter = after[e.Balance]
		}
	}
	return entries
}

// Verify checks the ledger's invariants over the whole database, in one
// REPEATABLE READ snapshot: every transaction has two entries or more and
// sums to zero per currency; every balance's posted figure is the sum of
// its entries and available = posted - held; no balance without overdraft
// is below zero; held is the sum of the balance's open card holds; each
// entry's running balance follows the one before;
// and, per currency, the customer balances net to zero against the
// institution's accounts. The report lists each broken rule with a count;
// OK is true when there is none. `emi ledger verify` runs it.
func (l *Ledger) Verify(ctx context.Context) (emi.LedgerReport, error) {
	return l.store.VerifyLedger(ctx)
}

// Txn returns a posted transaction with its entries.
func (l *Ledger) Txn(ctx context.Context, id int64) (emi.PostedTxn, error) {
	return l.store.LedgerTxn(ctx, id)
}

// Hold reserves amount on a balance for a card authorization: available
// falls, posted does not (nothing has moved yet). Returns
// emi.ErrInsufficientFunds when available would go below zero on a balance
// without overdraft.
func (l *Ledger) Hold(ctx context.Context, balance string, amount int64) (emi.BalanceState, error) {
	if amount <= 0 {
		return emi.BalanceState{}, emi.Internal(fmt.Errorf("hold of %d", amount))
	}
	st, ok, err := l.store.MoveBalance(ctx, balance, 0, amount)
	if err != nil {
		return emi.BalanceState{}, err
	}
	if !ok {
		return emi.BalanceState{}, emi.ErrInsufficientFunds
	}
	return st, nil
}

// Release gives back a hold that will not be cleared (expired or reversed
// authorization).
func (l *Ledger) Release(ctx context.Context, balance string, amount int64) (emi.BalanceState, error) {
	if amount <= 0 {
		return emi.BalanceState{}, emi.Internal(fmt.Errorf("release of %d", amount))
	}
	st, _, err := l.store.MoveBalance(ctx, balance, 0, -amount)
	return st, err
}

// Reversal returns the transaction that undoes p: every entry negated, any
// hold release dropped (a reversal moves posted money only).
func Reversal(p emi.PostedTxn, partnerID, reference string) emi.LedgerTxn {
	t := emi.LedgerTxn{Kind: emi.TxnReversal, PartnerID: partnerID, Reference: reference, Reverses: p.ID}
	for _, e := range p.Entries {
		r := e.Entry
		r.Amount, r.Release = -r.Amount, 0
		t.Entries = append(t.Entries, r)
	}
	return t
}

// nettingBalance returns a balance whose entries in t sum to zero (a debit
// and a credit of one balance: a main account and its virtual account), or
// "". Such a posting moves nothing, so the funds check of the guarded
// update never runs for it: a "completed" movement of any amount would be
// booked from an empty balance. The ledger refuses it whoever the caller
// is; the database refuses it too (migration 00050).
func nettingBalance(t emi.LedgerTxn) string {
	sums := map[string]int64{}
	var order []string
	for _, e := range t.Entries {
		if e.Balance == "" {
			continue
		}
		if _, ok := sums[e.Balance]; !ok {
			order = append(order, e.Balance)
		}
		sums[e.Balance] += e.Amount
	}
	for _, b := range order {
		if sums[b] == 0 {
			return b
		}
	}
	return ""
}

// checkTxn checks the shape of a transaction; every failure is a bug of
// the caller, never the client's input.
func checkTxn(t emi.LedgerTxn) error {
	bad := func(format string, a ...any) error {
		return emi.Internal(fmt.Errorf("ledger %s transaction: "+format, append([]any{t.Kind}, a...)...))
	}
	if len(t.Entries) < 2 {
		return bad("%d entries, at least two are needed", len(t.Entries))
	}
	if (t.Kind == emi.TxnReversal) != (t.Reverses != 0) {
		return bad("reverses %d", t.Reverses)
	}
	sums := map[string]int64{}
	for i, e := range t.Entries {
		switch {
		case e.Amount == 0:
			return bad("entry %d has amount 0", i)
		case !emi.ValidCurrency(e.Currency):
			return bad("entry %d has currency %q", i, e.Currency)
		case (e.Balance == "") == (e.Internal == ""):
			return bad("entry %d must name a balance or an internal account", i)
		case e.Internal != "" && !slices.Contains(emi.LedgerInternalAccounts, e.Internal):
			return bad("entry %d names internal account %q", i, e.Internal)
		case e.Balance != "" && e.Account == "":
			return bad("entry %d names no account", i)
		case e.Release < 0 || (e.Release > 0 && (e.Balance == "" || e.Amount > 0 || e.Release > -e.Amount)):
			return bad("entry %d releases %d", i, e.Release)
		}
		sums[e.Currency] += e.Amount
	}
	for cur, s := range sums {
		if s != 0 {
			return bad("entries sum to %d in %s", s, cur)
		}
	}
	return nil
}

// Party is a resolved side of a transfer.
type Party struct {
	// Account is where the money shows (a virtual account for its own
	// IBAN or token); Main is the account that holds Balance.
	Account   string
	Main      string
	Virtual   bool
	Balance   string
	Currency  string
	PartnerID string
	// IBAN of the side: a virtual account's own IBAN, else the balance's.
	IBAN string
}

// CheckAmount adds a problem unless v is a positive amount within the cap.
func CheckAmount(bad *kernel.Problems, v int64) {
	switch {
	case v <= 0:
		bad.Add("amount", "must be more than zero")
	case v > MaxTransferAmount:
		bad.Add("amount", "must be at most "+emi.FormatMinor(MaxTransferAmount))
	}
}

// MaxTransferAmount bounds one transfer: 1,000,000,000.00 in minor units.
const MaxTransferAmount = 100_000_000_000
