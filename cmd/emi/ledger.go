package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"emi/internal/emi"
)

func init() {
	helps["ledger"] = `emi ledger verify

Checks the ledger's invariants over the whole database, in one consistent
snapshot (emi serve may keep running): every ledger transaction has two
entries or more and sums to zero per currency; every balance's posted
figure is the sum of its entries and available = posted - held; no balance
without an overdraft is below zero; held is the sum of the balance's open
card holds; each entry's running balance follows the previous one; and, per currency, the customer balances net to zero
against the institution's accounts (clearing, card clearing, fees,
suspense, adjustments).

Prints the counts, the net positions per currency and every broken rule
with how many rows break it; fails (exit status 1) when a rule is broken.

Needs DATABASE_URL and EMI_MASTER_KEY.
`
}

// cmdLedger runs `emi ledger verify`.
func cmdLedger(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] != "verify" {
		fmt.Fprint(stderr, helps["ledger"])
		return usageError{"usage: emi ledger verify"}
	}
	a, err := openForCommand(ctx, getenv, stderr, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	// A snapshot on a read replica within EMI_READ_MAX_LAG, when there
	// is one: the check reads every entry.
	rep, err := a.Ledger.Verify(emi.WithLagTolerant(ctx))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ledger: %d transactions, %d entries, %d balances\n", rep.Transactions, rep.Entries, rep.Balances)
	for _, p := range rep.Positions {
		fmt.Fprintf(stdout, "  %s: customers %s, institution %s\n", p.Currency, emi.FormatMinor(p.Customers), emi.FormatMinor(p.Institution))
	}
	if rep.OK() {
		fmt.Fprintln(stdout, "ledger: every invariant holds")
		return nil
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, "BROKEN:", p)
	}
	return errors.New("ledger verification failed")
}
