package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/staff"
)

func runCmdIn(t *testing.T, vars map[string]string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut syncBuffer
	err := run(context.Background(), args, env(vars), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestStaffCreate(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey()}
	create := []string{"staff", "create", "--email", "first.admin@example.com", "--name", "First Admin", "--role", "admin,auditor", "--password-stdin"}

	cases := []struct {
		name    string
		stdin   string
		args    []string
		wantOut string // for success
		wantErr string // substring of the error
		usage   bool
	}{
		{"the first admin is created with the password from standard input", "a-long-enough-password-1\nignored second line\n", create,
			"First Admin <first.admin@example.com>", "", false},
		{"the same e-mail address in another case is refused", "a-long-enough-password-1\n",
			[]string{"staff", "create", "--email", "FIRST.admin@example.com", "--name", "Again", "--role", "admin", "--password-stdin"}, "", "email", true},
		{"a password the policy refuses is refused with the rule", "short1\n",
			[]string{"staff", "create", "--email", "b@example.com", "--name", "B", "--role", "auditor", "--password-stdin"}, "", "password must be at least 12 characters", true},
		{"an unknown role is refused", "a-long-enough-password-1\n",
			[]string{"staff", "create", "--email", "c@example.com", "--name", "C", "--role", "root", "--password-stdin"}, "", "roles[0]", true},
		{"a password is never taken from the command line", "a-long-enough-password-1\n",
			[]string{"staff", "create", "--email", "d@example.com", "--name", "D", "--role", "admin"}, "", "--password-stdin", true},
		{"an empty standard input is refused", "",
			[]string{"staff", "create", "--email", "e@example.com", "--name", "E", "--role", "admin", "--password-stdin"}, "", "no password", true},
		{"staff totp is refused outside the sandbox", "", []string{"staff", "totp", "--email", "first.admin@example.com"}, "", "EMI_MODE=sandbox", false},
		{"an unknown staff subcommand is a usage error", "", []string{"staff", "delete"}, "", "usage", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runCmdIn(t, vars, tc.stdin, tc.args...)
			if tc.wantErr == "" {
				if err != nil || !strings.Contains(out, tc.wantOut) || strings.Contains(out, "a-long-enough-password-1") {
					t.Fatalf("err %v, output %q", err, out)
				}
				return
			}
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &ue) != tc.usage {
				t.Fatalf("want an error containing %q (usage error %v), got %v", tc.wantErr, tc.usage, err)
			}
		})
	}
}

func TestSeedCreatesSandboxStaffOnceAndStaffTOTPPrintsAWorkingCode(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": pgtest.URL(t), "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox"}
	out, _, err := runCmd(t, vars, "seed")
	if err != nil || !strings.Contains(out, "seed: staff: 5 created") {
		t.Fatalf("first seed: %v %q", err, out)
	}
	out, _, err = runCmd(t, vars, "seed")
	if err != nil || !strings.Contains(out, "seed: staff: 0 created") {
		t.Fatalf("second seed: %v %q", err, out)
	}

	cfg, err := config.Load(env(vars), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	list, err := a.StaffStore.ListStaff(context.Background())
	if err != nil || len(list) != 5 {
		t.Fatalf("%d staff users after two seeds (%v), want 5", len(list), err)
	}
	for _, in := range staff.SandboxStaff() {
		res, err := a.Staff.SignIn(context.Background(), in.Email, staff.SandboxStaffPassword)
		if err != nil || res.NeedsEnrollment {
			t.Fatalf("%s signs in with the documented password: %+v %v", in.Email, res, err)
		}
		out, _, err := runCmd(t, vars, "staff", "totp", "--email", in.Email)
		if err != nil || !regexp.MustCompile(`^\d{6}\n$`).MatchString(out) {
			t.Fatalf("staff totp %s: %v %q", in.Email, err, out)
		}
		if err := a.Staff.VerifyTOTP(context.Background(), res.Staff.ID, strings.TrimSpace(out)); err != nil {
			t.Fatalf("%s: the printed code does not verify: %v", in.Email, err)
		}
	}
	if _, _, err := runCmd(t, vars, "staff", "totp", "--email", "nobody@sandbox.emi"); err == nil || !strings.Contains(err.Error(), "nobody@sandbox.emi") {
		t.Fatalf("staff totp for an unknown user: %v", err)
	}
}

func TestStaffHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help", "staff"}, {"staff", "--help"}, {"staff", "create", "--help"}, {"help"}} {
		out, _, err := runCmd(t, nil, args...)
		if err != nil || !strings.Contains(out, "emi staff") {
			t.Errorf("emi %v: err %v, output %q", args, err, out)
		}
	}
}
