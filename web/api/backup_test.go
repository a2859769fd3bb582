package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"emi/internal/app"
	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/cards"
	"emi/internal/service/kernel"
)

// pgTool finds a PostgreSQL client program: on PATH, or in Debian's
// versioned directory (where `make test` installs the server).
func pgTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) == 0 {
		t.Skipf("%s is not installed", name)
	}
	return matches[len(matches)-1]
}

// TestBackupAndRestore is the documented procedure of the operators' guide "Backup and
// restore": `pg_dump --format=custom` of the database, `pg_restore` into a
// new one, and the same EMI_MASTER_KEY. The restored copy serves the same
// card data (sealed under the master key), the same identity documents
// (sealed too), the same balances with a sound ledger, and the same
// schema version; with another master key it opens none of the secrets.
func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Backup"})
	body := validUser(p)
	body["documents"] = []map[string]any{{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "passport"}}
	user := createUser(t, env, p, body)
	acc := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	accTok, bal := acc.Data["token"].(string), balancesOf(acc)[0]["token"].(string)
	env.Fund(t, accTok, bal, "EUR", 12345)
	other, _, _ := openFunded(t, env, p, "account_eur", 0)
	apptest.Expect(t, "transfer", call(t, env, p, http.MethodPost, "/v2/transfers", "transfer_create",
		transferBody(map[string]any{"account": accTok}, map[string]any{"account": other}, "10.00", "EUR")), 0, http.StatusCreated)
	card := call(t, env, p, http.MethodPost, "/v2/cards", "card_create", map[string]any{"account": accTok, "type": "virtual", "pin": "4821"})
	apptest.Expect(t, "card", card, 0, http.StatusCreated)
	cardTok := card.Data["token"].(string)

	partnerCtx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID,
		PartnerID: p.ID, MasterMerchant: p.Merchant})
	staffCtx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(),
		StaffRoles: []string{string(emi.RoleCompliance)}})
	// snapshot reads what a restore must give back, through the services.
	snapshot := func(a *app.App) (string, error) {
		var out strings.Builder
		for _, what := range []string{cards.RevealFirstHalf, cards.RevealSecondHalf, cards.RevealPIN} {
			r, err := a.Cards.Reveal(partnerCtx, cardTok, what)
			if err != nil {
				return "", fmt.Errorf("reveal %s: %w", what, err)
			}
			fmt.Fprintf(&out, "%s%s%s%s%s|", r.FirstHalf, r.CVV, r.SecondHalf, r.Expiry, r.PIN)
		}
		_, docs, err := a.Users.Get(staffCtx, user)
		if err != nil || len(docs) != 1 {
			return "", fmt.Errorf("user documents: %d (%v)", len(docs), err)
		}
		_, content, err := a.Users.Document(staffCtx, docs[0].Token)
		if err != nil {
			return "", fmt.Errorf("document: %w", err)
		}
		if !bytes.Equal(content, pdfBytes) {
			return "", fmt.Errorf("document content differs")
		}
		for _, tok := range []string{accTok, other} {
			d, err := a.Accounts.Details(partnerCtx, tok)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&out, "%s=%d/%d|", tok, d.Balances[0].Posted, d.Balances[0].Available)
		}
		return out.String(), nil
	}
	before, err := snapshot(env.App)
	if err != nil {
		t.Fatal(err)
	}

	// The procedure: dump, create an empty database, restore, same key.
	dump := filepath.Join(t.TempDir(), "emi.dump")
	if out, err := exec.Command(pgTool(t, "pg_dump"), "--format=custom", "--file="+dump, "--dbname="+env.App.Config.DatabaseURL).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	restoreTool := pgTool(t, "pg_restore")
	name := "emi_restore_" + strings.ToLower(rand.Text()[:10])
	if _, err := env.App.DB.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatal(err)
	}
	restored := pgtest.WithDatabase(pgtest.AdminURL(t), name)
	t.Cleanup(func() { _, _ = env.App.DB.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`) })
	if out, err := exec.Command(restoreTool, "--no-owner", "--exit-on-error", "--dbname="+restored, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}

	open := func(key []byte) *app.App {
		cfg := env.App.Config
		cfg.DatabaseURL, cfg.MasterKey = restored, key
		a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	copyApp := open(env.App.Config.MasterKey)
	if err := copyApp.DB.CheckSchema(context.Background()); err != nil {
		t.Fatalf("restored schema: %v", err)
	}
	after, err := snapshot(copyApp)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("the restored copy serves other data:\n%s\n%s", before, after)
	}
	if rep, err := copyApp.Ledger.Verify(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("restored ledger: %v %v", rep.Problems, err)
	}

	// Without the master key the backup is useless for card data and
	// documents: that is what the key's separate custody protects.
	wrong := make([]byte, 32)
	_, _ = rand.Read(wrong)
	if _, err := snapshot(open(wrong)); err == nil {
		t.Fatal("the restored copy opened its secrets with another master key")
	}
}
