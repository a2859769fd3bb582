package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"emi/internal/config"
	"emi/internal/emi"
)

// cmdGenerate inserts synthetic data for benchmarks (sandbox only):
// `emi generate applications --count N` creates a partner and N
// applications with a company, a member and ten check results each.
func cmdGenerate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "applications" && args[0] != "accounts" && args[0] != "cards") {
		fmt.Fprint(stderr, helps["generate"])
		return usageError{"usage: emi generate applications|accounts|cards --count N"}
	}
	what := args[0]
	fs := flag.NewFlagSet("generate "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("count", 100000, "number of applications or accounts (1 to 1,000,000; cards: accounts, up to 2,000,000)")
	free := fs.Int("free", 0, "cards: accounts left without a card (for the card_create benchmark)")
	fs.Usage = func() { fmt.Fprint(stderr, helps["generate"]) }
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	// Cards may need more accounts than the million cards they carry
	// (--free leaves some without one).
	if limit := map[bool]int{true: 2000000, false: 1000000}[what == "cards"]; *count < 1 || *count > limit {
		return usageError{fmt.Sprintf("--count must be 1 to %d", limit)}
	}
	a, err := openForCommand(ctx, getenv, stderr, func(cfg config.Config) error {
		if cfg.Mode != config.ModeSandbox {
			return errors.New("generate inserts synthetic data and runs only with EMI_MODE=sandbox")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer a.Close()
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("generate"))
	start := time.Now()
	creds, err := a.Partners.Create(ctx, emi.PartnerCreate{Name: fmt.Sprintf("Bench Partner %d", start.Unix()), Processing: emi.ProcessingSemiAutomatic})
	if err != nil {
		return describe(err)
	}
	if what == "accounts" || what == "cards" {
		if _, err := a.Accounts.SeedSandbox(ctx); err != nil {
			return err
		}
		if err := a.AccountStore.GenerateAccounts(ctx, creds.Partner.ID, creds.Merchant, *count); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "generate: %d accounts of %d users for partner %s in %s\n",
			*count, (*count+9)/10, creds.Partner.ID, time.Since(start).Round(time.Millisecond))
		if what == "accounts" {
			return nil
		}
		// One virtual card per account, sealed like any card.
		if *free < 0 || *free >= *count {
			return usageError{"--free must be 0 to count-1"}
		}
		n, err := a.Cards.Generate(ctx, a.CardStore, creds.Partner.ID, *count-*free, func(n int) {
			if n%100000 < 5000 {
				fmt.Fprintf(stderr, "generate: %d cards\n", n)
			}
		})
		if err != nil {
			return err
		}
		if _, err := a.DB.ExecContext(ctx, "VACUUM ANALYZE cards"); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "generate: %d cards for partner %s (%d accounts without a card) in %s\n", n, creds.Partner.ID, *count-n,
			time.Since(start).Round(time.Millisecond))
		return nil
	}
	if err := a.OnboardingStore.GenerateApplications(ctx, creds.Partner.ID, creds.Merchant, *count); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "generate: %d applications and %d check results for partner %s in %s\n",
		*count, *count*10, creds.Partner.ID, time.Since(start).Round(time.Millisecond))
	return nil
}
