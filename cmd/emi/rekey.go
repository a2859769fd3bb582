package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/service/ops"
)

func init() {
	helps["rekey"] = `emi rekey [--check] [--batch N]

Re-seals every stored secret under the current master key, after a key
rotation: card numbers, CVV2s and PINs (and the cards' PAN lookup digests),
partner API secrets, webhook secrets, staff TOTP secrets, KYC session secrets
and documents. Run it once EMI_MASTER_KEY is the new key and
EMI_PREVIOUS_MASTER_KEYS holds the old one, on every instance.

Rows are walked in batches of N (default 500; at most 8 for documents,
which may be megabytes each), each batch in one transaction that locks its
rows, so emi serve may keep running. Values already under the current key
are left alone: an interrupted run is resumed by running it again. A value
that does not open (unknown key, corrupt, or moved from another row) is
reported by table, column and row, left as it is, and makes the command
fail; the other values are still re-sealed. Prints per table the rows and
values scanned, re-sealed and already current, then how many remain, and
writes an audit row (keys.rekey) with the counts; never values or keys.

--check changes nothing: it counts the values not under the current key
(and PAN lookup digests not computed with it) and fails unless there are
none. The old key may be removed when it reports 0 remaining.

Needs DATABASE_URL and EMI_MASTER_KEY.
`
}

// cmdRekey runs `emi rekey [--check] [--batch N]`.
func cmdRekey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rekey", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, helps["rekey"]) }
	check := fs.Bool("check", false, "only count the values not under the current key; change nothing")
	batch := fs.Int("batch", 500, "rows per transaction (1 to 10,000)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *batch < 1 || *batch > 10000 {
		return usageError{"--batch must be 1 to 10,000"}
	}
	a, err := openForCommand(ctx, getenv, stderr, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	r := ops.NewRekeyer(ops.RekeyerDeps{Tx: a.DB, Store: postgres.NewRekeyStore(a.DB), Vault: a.Keys})
	name := "rekey"
	if *check {
		name = "rekey --check"
	}
	fmt.Fprintf(stdout, "%s: current key %s, %d previous key(s) loaded\n", name, a.Keys.CurrentKeyID(), len(a.Config.PreviousKeys))
	opts := ops.RekeyOptions{Batch: *batch, Progress: progress(stderr, name)}

	if *check {
		rep, err := r.Check(ctx, opts)
		for _, t := range rep.Tables {
			fmt.Fprintf(stdout, "%s: %-17s %7d rows, %d values scanned: %d not under the current key, %d current", name, t.Table, t.Rows, t.Scanned, t.Remaining, t.Current)
			if t.Table == "cards" {
				fmt.Fprintf(stdout, "; %d stale PAN lookup digests", t.Lookups)
			}
			fmt.Fprintln(stdout)
		}
		if err != nil {
			return err
		}
		if err := reportFailures(stderr, name, rep.Failures); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: remaining: %d\n", name, rep.Remaining())
		if n := rep.Remaining(); n > 0 {
			return fmt.Errorf("%d value(s) are not under the current key: run emi rekey", n)
		}
		return nil
	}

	start := time.Now()
	rep, rekeyErr := r.Rekey(ctx, opts)
	for _, t := range rep.Tables {
		fmt.Fprintf(stdout, "%s: %-17s %7d rows, %d values scanned: %d re-sealed, %d already current, %d failed", name, t.Table, t.Rows, t.Scanned, t.Resealed, t.Current, t.Failed)
		if t.Table == "cards" {
			fmt.Fprintf(stdout, "; %d PAN lookup digests recomputed", t.Lookups)
		}
		fmt.Fprintf(stdout, " (%s)\n", t.Elapsed.Round(time.Millisecond))
	}
	tot := rep.Totals()
	// The rotation is an administrative action on card data: audit it,
	// with counts only.
	sys := emi.WithPrincipal(ctx, emi.SystemPrincipal("rekey"))
	outcome := emi.OutcomeSuccess
	if rekeyErr != nil {
		outcome = emi.OutcomeFailure
	}
	auditErr := a.Audit.Record(sys, emi.AuditEntry{Action: "keys.rekey", ResourceType: "keyring", ResourceToken: a.Keys.CurrentKeyID(),
		Outcome: outcome, Changes: map[string]any{"scanned": tot.Scanned, "resealed": tot.Resealed, "already_current": tot.Current,
			"failed": tot.Failed, "lookups_recomputed": tot.Lookups, "batch": *batch}})
	if auditErr != nil {
		// The re-sealing stands (it is idempotent), but an unaudited key
		// rotation must not look like a success: the command fails.
		fmt.Fprintf(stderr, "%s: the audit row could not be written: %v\n", name, auditErr)
	}
	if err := reportFailures(stderr, name, rep.Failures); err != nil {
		return err
	}
	if rekeyErr != nil {
		return rekeyErr
	}
	// Values written meanwhile by an instance still running under the old
	// key would be missed: count what remains.
	after, err := r.Check(ctx, ops.RekeyOptions{Batch: *batch})
	if err != nil {
		return err
	}
	if err := reportFailures(stderr, name, after.Failures); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d values re-sealed, %d already current in %s; remaining: %d\n", name, tot.Resealed, tot.Current,
		time.Since(start).Round(time.Millisecond), after.Remaining())
	if n := after.Remaining(); n > 0 {
		return fmt.Errorf("%d value(s) were written under another key during the run (is every instance on the new key?): run emi rekey again", n)
	}
	if auditErr != nil {
		return fmt.Errorf("the rotation is done but its audit row could not be written: %w", auditErr)
	}
	return nil
}

// reportFailures lists the values that did not open, one per line, and
// returns an error when there are any.
func reportFailures(stderr io.Writer, name string, failures []ops.RekeyFailure) error {
	for _, f := range failures {
		fmt.Fprintf(stderr, "%s: FAILED %s\n", name, f)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d sealed value(s) do not open with the loaded keys (listed above): investigate each row; never remove a key they need", len(failures))
	}
	return nil
}

// progress prints the running totals of a table at most every two seconds.
func progress(w io.Writer, name string) func(ops.RekeyTableReport) {
	last := time.Now()
	return func(t ops.RekeyTableReport) {
		if time.Since(last) < 2*time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "%s: %s: %d rows, %d values so far (%s)\n", name, t.Table, t.Rows, t.Scanned, t.Elapsed.Round(time.Second))
	}
}
