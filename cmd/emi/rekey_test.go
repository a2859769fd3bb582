package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"emi/internal/app"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
)

// TestRekeyCommand walks the rotation procedure of the operators' guide (Key rotation) with the
// binary's commands: data sealed under key 1 (a partner, sandbox staff with
// TOTP secrets, cards); key 2 deployed with key 1 as previous; emi rekey
// --check fails and counts the values; emi rekey re-seals them and reports
// 0 remaining; with key 1 removed, --check reports 0 and the data opens.
// Neither key nor any secret is ever printed.
func TestRekeyCommand(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	key1, key2 := newKey(), newKey()
	vars := map[string]string{"DATABASE_URL": db, "EMI_MASTER_KEY": key1, "EMI_MODE": "sandbox"}
	if _, _, err := runCmd(t, vars, "seed"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, vars, "partner", "create", "--name", "Rotating", "--json", "--webhook-url", "http://127.0.0.1:9999/hooks")
	if err != nil {
		t.Fatal(err)
	}
	var creds emi.PartnerCredentials
	if err := json.Unmarshal([]byte(out), &creds); err != nil {
		t.Fatal(err)
	}
	// A few cards, issued through the service as the API would.
	a := openApp(t, vars)
	var partnerID, keyID string
	if err := a.DB.QueryRow(`SELECT partner_id::text, id::text FROM partner_keys WHERE api_key = $1`, creds.APIKey).Scan(&partnerID, &keyID); err != nil {
		t.Fatal(err)
	}
	pctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: keyID, PartnerID: partnerID, MasterMerchant: creds.Merchant})
	var cards []string
	for i := 0; i < 5; i++ {
		c, err := a.Cards.Create(pctx, emi.CardCreate{Program: "card_eur", Type: emi.CardVirtual, PIN: "4321"})
		if err != nil {
			t.Fatal(err)
		}
		cards = append(cards, c.Token)
	}
	a.Close()
	secrets := []string{key1, key2, creds.APISecret, creds.WebhookSecret, "4321"}
	noSecrets := func(what, s string) {
		t.Helper()
		for _, x := range secrets {
			if strings.Contains(s, x) {
				t.Fatalf("%s prints a key, a secret or a PIN:\n%s", what, s)
			}
		}
	}

	rotated := map[string]string{"DATABASE_URL": db, "EMI_MASTER_KEY": key2, "EMI_PREVIOUS_MASTER_KEYS": key1}
	out, errOut, err := runCmd(t, rotated, "rekey", "--check")
	noSecrets("rekey --check", out+errOut)
	// 5 cards × 3 + partner key + webhook secret + 5 staff TOTP secrets.
	if err == nil || !strings.Contains(err.Error(), "22 value(s)") || !strings.Contains(out, "remaining: 22") {
		t.Fatalf("check before the rekey: %v\n%s", err, out)
	}

	out, errOut, err = runCmd(t, rotated, "rekey", "--batch", "2")
	noSecrets("rekey", out+errOut)
	if err != nil {
		t.Fatalf("rekey: %v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{
		`cards\s+5 rows, 15 values scanned: 15 re-sealed, 0 already current, 0 failed; 5 PAN lookup digests recomputed`,
		`partner_keys\s+1 rows, 1 values scanned: 1 re-sealed`,
		`webhook_endpoints\s+1 rows, 1 values scanned: 1 re-sealed`,
		`staff_users\s+5 rows, 5 values scanned: 5 re-sealed`,
		`documents\s+0 rows, 0 values scanned`,
		`kyc_sessions\s+0 rows, 0 values scanned`,
		`22 values re-sealed, 0 already current in .*; remaining: 0`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("rekey output lacks %q:\n%s", want, out)
		}
	}

	only2 := map[string]string{"DATABASE_URL": db, "EMI_MASTER_KEY": key2, "EMI_MODE": "sandbox"}
	out, errOut, err = runCmd(t, only2, "rekey", "--check")
	noSecrets("rekey --check", out+errOut)
	if err != nil || !strings.Contains(out, "remaining: 0") {
		t.Fatalf("check with key 1 removed: %v\n%s", err, out)
	}
	out, _, err = runCmd(t, only2, "rekey")
	if err != nil || !strings.Contains(out, "0 values re-sealed, 22 already current") {
		t.Fatalf("a second rekey must re-seal nothing: %v\n%s", err, out)
	}
	a = openApp(t, only2)
	defer a.Close()
	for _, c := range cards {
		v, err := a.Cards.Reveal(pctx, c, "pin")
		if err != nil || v.PIN != "4321" {
			t.Fatalf("card %s with key 2 alone: %q %v", c, v.PIN, err)
		}
	}
	if _, _, err := runCmd(t, only2, "staff", "totp", "--email", "admin@sandbox.emi"); err != nil {
		t.Fatalf("TOTP secret with key 2 alone: %v", err)
	}
	var audited int
	if err := a.DB.Get(&audited, `SELECT count(*) FROM audit_log WHERE action = 'keys.rekey' AND actor_type = 'system'`); err != nil || audited != 2 {
		t.Fatalf("%d keys.rekey audit rows (%v), want one per run", audited, err)
	}
}

// TestRekeyCommandFailsLoudly: run with the old key missing, every value
// under it is listed by table, column and row and the command fails; a
// usage mistake is a usage error.
func TestRekeyCommandFailsLoudly(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	key1 := newKey()
	vars := map[string]string{"DATABASE_URL": db, "EMI_MASTER_KEY": key1}
	out, _, err := runCmd(t, vars, "partner", "create", "--name", "Forgotten key", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var creds emi.PartnerCredentials
	_ = json.Unmarshal([]byte(out), &creds)
	forgot := map[string]string{"DATABASE_URL": db, "EMI_MASTER_KEY": newKey()}
	out, errOut, err := runCmd(t, forgot, "rekey")
	if err == nil || !strings.Contains(err.Error(), "1 sealed value(s) do not open") {
		t.Fatalf("rekey without the old key: %v", err)
	}
	if !regexp.MustCompile(`rekey: FAILED partner_keys\.secret_enc of row [0-9a-f-]{36}: seal: sealed under a key that is not loaded: key id [0-9a-f]{16}`).MatchString(errOut) {
		t.Fatalf("the failure is not listed:\n%s", errOut)
	}
	if !regexp.MustCompile(`partner_keys\s+1 rows, 1 values scanned: 0 re-sealed, 0 already current, 1 failed`).MatchString(out) {
		t.Fatalf("rekey output:\n%s", out)
	}
	if strings.Contains(out+errOut, creds.APISecret) || strings.Contains(out+errOut, key1) {
		t.Fatal("the output holds a secret or a key")
	}
	// A rotation whose audit row cannot be written fails, although the
	// re-sealing itself is done.
	good := map[string]string{"DATABASE_URL": db, "EMI_MASTER_KEY": newKey(), "EMI_PREVIOUS_MASTER_KEYS": key1}
	a := openApp(t, good)
	a.DB.MustExec(`ALTER TABLE audit_log ADD CONSTRAINT no_rekey_rows CHECK (action <> 'keys.rekey') NOT VALID`)
	_ = a.Close()
	_, errOut, err = runCmd(t, good, "rekey")
	if err == nil || !strings.Contains(err.Error(), "audit row could not be written") || !strings.Contains(errOut, "audit row could not be written") {
		t.Fatalf("rekey without its audit row: %v\n%s", err, errOut)
	}
	if out, _, err := runCmd(t, good, "rekey", "--check"); err != nil {
		t.Fatalf("the re-sealing was not done: %v\n%s", err, out)
	}
	var ue usageError
	for _, args := range [][]string{{"rekey", "--batch", "0"}, {"rekey", "extra"}, {"rekey", "--verbose"}} {
		if _, _, err := runCmd(t, forgot, args...); !errors.As(err, &ue) {
			t.Errorf("emi %v: want a usage error, got %v", args, err)
		}
	}
	for _, args := range [][]string{{"help", "rekey"}, {"rekey", "--help"}} {
		out, _, err := runCmd(t, nil, args...)
		if err != nil || !strings.Contains(out, "emi rekey [--check]") {
			t.Errorf("emi %v: %v %q", args, err, out)
		}
	}
}

func openApp(t *testing.T, vars map[string]string) *app.App {
	t.Helper()
	cfg, err := config.Load(env(vars), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
