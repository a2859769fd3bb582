package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"emi/internal/postgres/pgtest"
)

// TestImportHistoryAndMonitoringAlerts runs contract §12's two commands:
// a history booked with its times, the alerts it raised with their refs,
// a malformed file booking nothing, and production refusing the import.
func TestImportHistoryAndMonitoringAlerts(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	vars := map[string]string{"DATABASE_URL": url, "EMI_MASTER_KEY": newKey(), "EMI_MODE": "sandbox"}
	if _, _, err := runCmd(t, vars, "migrate"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, vars, "generate", "accounts", "--count", "20"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var partner, account, user string
	if err := db.QueryRow(`SELECT a.partner_id, a.token, a.user_token FROM accounts a JOIN balances b ON b.account = a.token
		WHERE a.user_token IS NOT NULL AND b.currency = 'EUR' AND NOT a.virtual LIMIT 1`).Scan(&partner, &account, &user); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) string { return time.Now().Add(-30*24*time.Hour + d).UTC().Format(time.RFC3339) }
	lines := []string{
		fmt.Sprintf(`{"ref":"pay","at":%q,"kind":"transfer_out","account":%q,"amount":"10000.00","currency":"EUR","counterparty":{"iban":"FR1420041010050500013M02606","name":"Out","country":"FR"}}`, at(20*time.Hour), account),
		fmt.Sprintf(`{"ref":"salary","at":%q,"kind":"incoming","account":%q,"amount":"12000.00","currency":"EUR","counterparty":{"iban":"DE89370400440532013000","name":"Employer","country":"DE"}}`, at(0), account),
		fmt.Sprintf(`{"ref":"broke","at":%q,"kind":"transfer_out","account":%q,"amount":"99999.00","currency":"EUR","counterparty":{"iban":"FR1420041010050500013M02606","name":"Out"}}`, at(30*time.Hour), account),
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	prod := map[string]string{"DATABASE_URL": url, "EMI_MASTER_KEY": vars["EMI_MASTER_KEY"]}
	if _, _, err := runCmd(t, prod, "sandbox", "import-history", "--partner", partner, file); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("import in production: %v, want a refusal", err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(lines[1]+"\n{\"ref\": \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, vars, "sandbox", "import-history", "--partner", partner, bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("malformed file: %v, want an error naming line 2", err)
	}
	out, _, err := runCmd(t, vars, "sandbox", "import-history", "--partner", partner, file)
	if err != nil || !strings.Contains(out, "2 booked, 1 refused") || !strings.Contains(out, "refused broke:") {
		t.Fatalf("import: %v\n%s", err, out)
	}

	out, _, err = runCmd(t, vars, "monitoring", "alerts", "--json", "--partner", partner)
	if err != nil {
		t.Fatalf("alerts: %v", err)
	}
	var got []alertLine
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	for dec.More() {
		var a alertLine
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("alerts output %q: %v", out, err)
		}
		got = append(got, a)
	}
	if len(got) != 1 || got[0].Subject.Kind != "user" || got[0].Subject.Token != user {
		t.Fatalf("alerts %+v, want one about the person", got)
	}
	if !slices.Equal(got[0].Rules, []string{"large_amount", "pass_through"}) || !slices.Equal(got[0].Refs, []string{"salary", "pay"}) {
		t.Errorf("rules %v refs %v", got[0].Rules, got[0].Refs)
	}
	if _, err := time.Parse(time.RFC3339, got[0].RaisedAt); err != nil || got[0].Alert == "" {
		t.Errorf("alert %q raised at %q", got[0].Alert, got[0].RaisedAt)
	}
	if _, _, err := runCmd(t, vars, "monitoring", "alerts"); err == nil {
		t.Error("alerts without --json: want a usage error")
	}
}
