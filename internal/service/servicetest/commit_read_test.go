package servicetest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/service/accounts"
	"emi/internal/validate"
)

// primaryGoneAfterCommit is the account store as it looks when the primary
// dies the moment a transaction commits (a failover): every read outside a
// transaction fails, as it does on a connection to a server that is gone,
// while everything inside the transaction ran.
type primaryGoneAfterCommit struct {
	accounts.AccountStore
	outside atomic.Int64
}

func (s *primaryGoneAfterCommit) Account(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Account, error) {
	if !postgres.InTransaction(ctx) {
		s.outside.Add(1)
		return emi.Account{}, emi.ErrUnavailable.Wrap(errors.New("connection refused: the primary is gone"))
	}
	return s.AccountStore.Account(ctx, partnerID, token, forUpdate)
}

// TestACommittedAccountIsNeverAnsweredAsFailed: the answer to
// account_create is built inside its transaction. The old code committed,
// then read the account back on another connection: when the primary died
// in between, a partner got 503 "nothing was changed" for an account that
// exists, and without an Idempotency-Key its retry opened a second one.
func TestACommittedAccountIsNeverAnsweredAsFailed(t *testing.T) {
	t.Parallel()
	m := newMoneyApp(t, apptest.Options{})
	a := m.env.App
	store := &primaryGoneAfterCommit{AccountStore: a.AccountStore}
	svc := accounts.NewAccounts(accounts.AccountsDeps{Tx: a.DB, Store: store, Ids: noIdentifiers{}, Controls: a.Controls, Events: a.Events,
		Audit: a.Audit, Validate: validate.New(), Cards: a.Cards, Ledger: a.Ledger,
		Statements: postgres.NewStatementStore(a.DB), Now: a.Now})
	acc, err := svc.Create(m.partner(), emi.AccountCreate{Program: "account_eur", Merchant: m.p.Merchant, SkipIBANGeneration: true})
	if err != nil {
		var n int
		_ = a.DB.Get(&n, `SELECT count(*) FROM accounts WHERE partner_id = $1`, m.p.ID)
		t.Fatalf("account_create answered %v with %d account(s) committed", err, n)
	}
	if acc.Token == "" || acc.Status != emi.AccountActive || acc.Program != "account_eur" {
		t.Fatalf("the answer is not the account created: %+v", acc)
	}
	if n := store.outside.Load(); n != 0 {
		t.Fatalf("%d reads after the commit", n)
	}
}

// noIdentifiers: the account is opened without IBANs (skip_iban_generation).
type noIdentifiers struct{}

func (noIdentifiers) BGIBAN(int64) (string, string, error) {
	return "", "", errors.New("no identifiers here")
}
func (noIdentifiers) UKAccount(int64) (string, string, string, string, bool, error) {
	return "", "", "", "", false, errors.New("no identifiers here")
}
