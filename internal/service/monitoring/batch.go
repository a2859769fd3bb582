package monitoring

import (
	"context"
	"slices"
)

// AccountSubject is whom an account's movements are monitored for, and
// the account's program.
type AccountSubject struct {
	Subject Subject
	Program string
}

// RecordUnqueuedBatch records movements as RecordUnqueued records each
// (the same rows: the account's subject and program, the time, the amount
// in EUR; a movement of an account its partner does not own is not
// recorded), in the transaction of ctx, with one read of the accounts'
// subjects per partner and one insert: for the history import, which
// records thousands of movements a transaction and evaluates them once it
// has booked them all.
func (m *Monitor) RecordUnqueuedBatch(ctx context.Context, mvs []Movement) error {
	accounts := map[string][]string{} // by partner
	for _, mv := range mvs {
		accounts[mv.PartnerID] = append(accounts[mv.PartnerID], mv.Account)
	}
	subjects := map[[2]string]AccountSubject{} // by partner and account
	for partner, as := range accounts {
		slices.Sort(as)
		found, err := m.store.SubjectsOf(ctx, partner, slices.Compact(as))
		if err != nil {
			return err
		}
		for a, s := range found {
			subjects[[2]string{partner, a}] = s
		}
	}
	out := make([]Movement, 0, len(mvs))
	for _, mv := range mvs {
		s, ok := subjects[[2]string{mv.PartnerID, mv.Account}]
		if !ok {
			continue
		}
		mv.Subject, mv.Program = s.Subject, s.Program
		if mv.At.IsZero() {
			mv.At = m.now.At(ctx).UTC()
		}
		mv.EUR = ToEUR(mv.Amount, mv.Currency)
		out = append(out, mv)
	}
	if len(out) == 0 {
		return nil
	}
	return m.store.InsertMovements(ctx, out)
}
