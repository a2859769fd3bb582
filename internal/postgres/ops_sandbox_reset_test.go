package postgres_test

import (
	"context"
	"slices"
	"testing"

	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
)

// TestSandboxResetCoversEveryPartnerTable: every table with a partner_id
// column is either moved by a sandbox reset or kept with a reason, so a new
// table of partner objects cannot be forgotten by the reset (its rows
// would stay in sight, or break a foreign key).
func TestSandboxResetCoversEveryPartnerTable(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	var tables []string
	if err := db.SelectContext(context.Background(), &tables, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name = 'partner_id' ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	moved, kept := postgres.SandboxResetTables(), postgres.SandboxResetKept()
	for _, table := range tables {
		_, k := kept[table]
		if m := slices.Contains(moved, table); m == k {
			t.Errorf("table %s: moved %v, kept %v: say what a sandbox reset does with it (ops_sandbox_reset.go)", table, m, k)
		}
	}
	for _, table := range append(moved, func() (out []string) {
		for k := range kept {
			out = append(out, k)
		}
		return out
	}()...) {
		if !slices.Contains(tables, table) {
			t.Errorf("ops_sandbox_reset.go names %s, which has no partner_id", table)
		}
	}
}
