package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"emi/internal/config"
	"emi/internal/service/monitoring"
)

func init() {
	helps["sandbox"] = `emi sandbox import-history --partner PARTNER_UUID FILE

Books a history of money movements with their original times (contract
§12) through the ledger, as the API books them, and evaluates the
transaction monitoring rules over it as of each movement's time. FILE is
JSON Lines ("-" reads standard input), one movement a line:

  {"ref": "r1", "at": "2026-10-01T09:00:00Z", "kind": "incoming",
   "account": ACCOUNT_TOKEN, "amount": "1200.00", "currency": "EUR",
   "counterparty": {"iban": "DE89370400440532013000", "name": "Acme", "country": "DE"}}

kind is incoming, transfer_out, transfer_internal (with to_account),
card_payment or card_withdrawal (with merchant: {"name", "mcc",
"country"}). Every line is checked first: a malformed file books nothing
and the command fails. A line the ledger refuses (not enough money, a
blocked account) is printed with its ref and reason; the others are booked.

Sandbox mode only (EMI_MODE=sandbox): production refuses it.
`
	helps["monitoring"] = `emi monitoring alerts --json [--partner PARTNER_UUID] [--since RFC3339]

Prints the transaction monitoring alerts, one JSON object a line (contract
§12): {"alert", "subject": {"kind", "token"}, "rules": [...], "refs": [...],
"raised_at"}; refs are the imported movements' refs that raised it. It
first evaluates every movement recorded so far, so what was imported is
in the answer.
`
}

// cmdSandbox runs `emi sandbox import-history`.
func cmdSandbox(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "import-history" {
		fmt.Fprint(stderr, helps["sandbox"])
		return usageError{"usage: emi sandbox import-history --partner PARTNER_UUID FILE"}
	}
	fs := flag.NewFlagSet("sandbox import-history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, helps["sandbox"]) }
	partner := fs.String("partner", "", "the partner whose accounts the history moves (required)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if *partner == "" || fs.NArg() != 1 {
		return usageError{"usage: emi sandbox import-history --partner PARTNER_UUID FILE"}
	}
	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name) // #nosec G304 -- the operator names the file to import
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	a, err := openForCommand(ctx, getenv, stderr, func(cfg config.Config) error {
		if cfg.Mode != config.ModeSandbox {
			return errors.New("import-history books invented money movements and runs only with EMI_MODE=sandbox")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer a.Close()
	res, err := a.HistoryImport.Import(ctx, *partner, in)
	if err != nil {
		return err
	}
	for _, r := range res.Refused {
		fmt.Fprintf(stdout, "refused %s: %s\n", r.Ref, r.Reason)
	}
	fmt.Fprintf(stdout, "import-history: %d booked, %d refused\n", res.Booked, len(res.Refused))
	return nil
}

// alertLine is one line of `emi monitoring alerts --json`.
type alertLine struct {
	Alert    string             `json:"alert"`
	Subject  monitoring.Subject `json:"subject"`
	Rules    []string           `json:"rules"`
	Refs     []string           `json:"refs"`
	RaisedAt string             `json:"raised_at"`
}

// cmdMonitoring runs `emi monitoring alerts --json`.
func cmdMonitoring(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "alerts" {
		fmt.Fprint(stderr, helps["monitoring"])
		return usageError{"usage: emi monitoring alerts --json [--partner PARTNER_UUID] [--since RFC3339]"}
	}
	fs := flag.NewFlagSet("monitoring alerts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, helps["monitoring"]) }
	asJSON := fs.Bool("json", false, "one JSON object a line (the only format)")
	partner := fs.String("partner", "", "only this partner's alerts")
	since := fs.String("since", "", "only alerts raised at or after this RFC 3339 time")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if !*asJSON || fs.NArg() != 0 {
		return usageError{"usage: emi monitoring alerts --json [--partner PARTNER_UUID] [--since RFC3339]"}
	}
	f := monitoring.AlertFilter{PartnerID: *partner, Limit: 1 << 20}
	if *since != "" {
		t, err := time.Parse(time.RFC3339, *since)
		if err != nil {
			return usageError{"--since must be an RFC 3339 time"}
		}
		f.Since = t
	}
	a, err := openForCommand(ctx, getenv, stderr, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	alerts, err := a.Monitor.SystemAlerts(ctx, f)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for _, al := range alerts {
		line := alertLine{Alert: al.Token, Subject: al.Subject, Rules: al.Rules(), Refs: al.Refs(), RaisedAt: al.RaisedAt.Format(time.RFC3339)}
		if line.Refs == nil {
			line.Refs = []string{}
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}
