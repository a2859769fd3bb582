package postgres_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/service/kernel"
)

func TestAuditLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	store := postgres.NewAuditStore(db)
	audit := kernel.NewAuditor(store)
	ctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: "staff-1"})
	ctx = emi.WithRequestMeta(ctx, emi.RequestMeta{RequestID: "req-42", IP: netip.MustParseAddr("203.0.113.9")})
	if err := audit.Record(ctx, emi.AuditEntry{Action: "card.reveal", ResourceType: "card", ResourceToken: "tok-1",
		Changes: map[string]any{"reason": "customer call", "pan": "4111111111111111", "nested": map[string]any{"api_secret": "x", "ok": 1}}}); err != nil {
		t.Fatal(err)
	}

	rows, err := store.AuditEntries(context.Background(), emi.AuditFilter{ResourceType: "card"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("AuditEntries: %v, %d rows", err, len(rows))
	}
	e := rows[0]
	if e.ActorType != emi.ActorStaff || e.ActorID != "staff-1" || e.RequestID != "req-42" || e.IP.String() != "203.0.113.9" ||
		e.Outcome != emi.OutcomeSuccess || e.Action != "card.reveal" || e.At.IsZero() {
		t.Fatalf("audit row does not carry actor, request and outcome: %+v", e)
	}
	if e.Changes["pan"] != "[redacted]" || e.Changes["nested"].(map[string]any)["api_secret"] != "[redacted]" ||
		e.Changes["reason"] != "customer call" {
		t.Fatalf("changes not redacted as expected: %v", e.Changes)
	}

	for _, stmt := range []string{
		`UPDATE audit_log SET action = 'forged'`,
		`DELETE FROM audit_log`,
		`TRUNCATE audit_log`,
	} {
		_, err := db.Exec(stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: want refusal, got %v", stmt, err)
		}
	}
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM audit_log WHERE action = 'card.reveal'`); err != nil || n != 1 {
		t.Fatalf("after the refused statements: %d rows (err %v), want the row intact", n, err)
	}
}

func TestAuditRowCommitsWithItsChangeOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	store := postgres.NewAuditStore(db)
	audit := kernel.NewAuditor(store)
	ctx := context.Background()
	boom := emi.ErrValidation
	err := db.InTx(ctx, func(ctx context.Context) error {
		if err := audit.Record(ctx, emi.AuditEntry{Action: "rolled.back", ResourceType: "x"}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("InTx returned %v", err)
	}
	var n int
	_ = db.Get(&n, `SELECT count(*) FROM audit_log`)
	if n != 0 {
		t.Fatal("an audit row survived the rollback of its change")
	}
	rows, _ := store.AuditEntries(ctx, emi.AuditFilter{})
	if len(rows) != 0 {
		t.Fatal("AuditEntries sees a rolled-back row")
	}
}
