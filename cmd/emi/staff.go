package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"emi/internal/config"
	"emi/internal/emi"
)

const staffUsage = "usage: emi staff create --email E --name N --role R[,R] --password-stdin | emi staff totp --email E"

// cmdStaff runs `emi staff create` and `emi staff totp`.
func cmdStaff(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "totp") {
		fmt.Fprint(stderr, helps["staff"])
		return usageError{staffUsage}
	}
	fs := flag.NewFlagSet("staff "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, helps["staff"]) }
	email := fs.String("email", "", "e-mail address (required)")
	var name, roles *string
	var fromStdin *bool
	if args[0] == "create" {
		name = fs.String("name", "", "full name (required)")
		roles = fs.String("role", "", "comma-separated roles: admin, underwriter, compliance, customer_service, auditor")
		fromStdin = fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *email == "" {
		return usageError{"--email is required"}
	}
	var in emi.StaffCreate
	if args[0] == "create" {
		// A password on the command line would end up in the shell history
		// and in ps output, so it is only read from standard input.
		if !*fromStdin {
			return usageError{"--password-stdin is required: the password is read from standard input"}
		}
		pw, err := firstLine(stdin)
		if err != nil {
			return err
		}
		in = emi.StaffCreate{Email: *email, Name: *name, Password: pw}
		for r := range strings.SplitSeq(*roles, ",") {
			if r = strings.TrimSpace(r); r != "" {
				in.Roles = append(in.Roles, emi.Role(r))
			}
		}
	}

	a, err := openForCommand(ctx, getenv, stderr, func(cfg config.Config) error {
		if args[0] == "totp" && cfg.Mode != config.ModeSandbox {
			return errors.New("staff totp prints second-factor codes and runs only with EMI_MODE=sandbox")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer a.Close()
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("cli"))
	if args[0] == "totp" {
		code, err := a.Staff.SandboxTOTPCode(ctx, *email)
		switch {
		case errors.Is(err, emi.ErrStaffNotFound):
			return fmt.Errorf("no staff user %s with two-factor authentication set up", *email)
		case errors.Is(err, emi.ErrTOTPInvalid):
			return errors.New("the codes of this 30-second step were used already; try again in a few seconds")
		case err != nil:
			return describe(err)
		}
		fmt.Fprintln(stdout, code)
		return nil
	}
	// The command line runs as the system principal, so the user exists at
	// once with the password read from standard input: this is how the
	// first administrator comes to be. Whoever runs it holds the server's
	// credentials, which the back office's second-administrator rule
	// cannot hold anyway.
	out, err := a.Staff.Create(ctx, in)
	if err != nil {
		return describe(err)
	}
	u := out.User
	roleNames := make([]string, len(u.Roles))
	for i, r := range u.Roles {
		roleNames[i] = string(r)
	}
	fmt.Fprintf(stdout, "staff user: %s <%s> (%s)\nroles:      %s\nTwo-factor authentication is set up at the first sign-in.\n",
		u.Name, u.Email, u.ID, strings.Join(roleNames, ", "))
	return nil
}

// firstLine returns the first line of r without its line ending.
func firstLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", usageError{"no password on standard input"}
	}
	return line, nil
}
