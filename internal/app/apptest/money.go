package apptest

import (
	"context"
	"testing"

	"emi/internal/emi"
)

// Fund credits minor units to a balance as money arriving from another
// bank would: a ledger transaction from incoming clearing, through the
// real ledger (so every invariant and constraint applies). account is the
// account the credit shows on (the balance's own, or a virtual account of
// it). Returns the posted transaction.
func (e *Env) Fund(t testing.TB, account, balance, currency string, minor int64) emi.PostedTxn {
	t.Helper()
	p, err := e.App.Ledger.Post(context.Background(), emi.LedgerTxn{Kind: emi.TxnIncoming, Reference: "test funding",
		Entries: []emi.Entry{
			{Internal: emi.LedgerIncomingClearing, Currency: currency, Amount: -minor},
			{Balance: balance, Account: account, Currency: currency, Amount: minor},
		}})
	if err != nil {
		t.Fatalf("fund %s with %d %s: %v", balance, minor, currency, err)
	}
	return p
}

// PayOut debits minor units from a balance as a payment to another bank
// would (to outgoing clearing), through the real ledger.
func (e *Env) PayOut(t testing.TB, account, balance, currency string, minor int64) emi.PostedTxn {
	t.Helper()
	p, err := e.App.Ledger.Post(context.Background(), emi.LedgerTxn{Kind: emi.TxnOutgoing, Reference: "test payout",
		Entries: []emi.Entry{
			{Balance: balance, Account: account, Currency: currency, Amount: -minor},
			{Internal: emi.LedgerOutgoingClearing, Currency: currency, Amount: minor},
		}})
	if err != nil {
		t.Fatalf("pay out %d %s from %s: %v", minor, currency, balance, err)
	}
	return p
}
