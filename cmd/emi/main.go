// Command emi is the electronic-money institution's back office and partner
// API in one binary. See `emi help`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "emi:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	if _, ok := err.(usageError); ok {
		return 2
	}
	return 1
}

const usage = `emi: back office and partner API of an electronic-money institution.

Usage:
  emi migrate                 apply all database migrations (idempotent)
  emi seed                    insert the sandbox data (idempotent; sandbox mode only)
  emi serve                   serve the API and back office, run background workers
  emi partner create ...      create a partner and print its credentials
  emi staff create ...        create a back-office staff user (password on stdin)
  emi staff totp --email E    print a sandbox staff user's current TOTP code
  emi generate applications   insert synthetic applications for benchmarks (sandbox only)
  emi rekey [--check]         re-seal stored secrets under the current master key (key rotation)
  emi ledger verify           check the ledger's invariants (double entry, balances = entries)
  emi webhooks listen         receive, verify and print webhooks (development)
  emi sandbox import-history  book a history of money movements for monitoring (sandbox only)
  emi monitoring alerts --json  list what the transaction monitoring rules raised
  emi help [command]          show help

Every command reads its configuration from the environment; run
'emi help env' for the list.
`

// run is the whole program: main only wires the process to it, so tests can
// run commands in-process with their own environment and streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	if wantsHelp(rest) && cmd != "help" && cmd != "partner" && cmd != "generate" {
		return help(stdout, []string{cmd})
	}
	switch cmd {
	case "migrate":
		return cmdMigrate(ctx, getenv, stdout)
	case "seed":
		return cmdSeed(ctx, getenv, stdout)
	case "serve":
		return cmdServe(ctx, getenv, stdout, stderr)
	case "partner":
		return cmdPartner(ctx, rest, getenv, stdout, stderr)
	case "staff":
		return cmdStaff(ctx, rest, getenv, stdin, stdout, stderr)
	case "generate":
		return cmdGenerate(ctx, rest, getenv, stdout, stderr)
	case "rekey":
		return cmdRekey(ctx, rest, getenv, stdout, stderr)
	case "ledger":
		return cmdLedger(ctx, rest, getenv, stdout, stderr)
	case "webhooks":
		return cmdWebhooks(ctx, rest, getenv, stdout, stderr)
	case "sandbox":
		return cmdSandbox(ctx, rest, getenv, stdin, stdout, stderr)
	case "monitoring":
		return cmdMonitoring(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "--help":
		return help(stdout, rest)
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}
