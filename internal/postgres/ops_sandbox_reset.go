package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"emi/internal/service/kernel"
)

// SandboxResetStore moves a sandbox partner's objects out of its sight
// (ops.SandboxOutcomes.Reset).
type SandboxResetStore struct{ db *DB }

// NewSandboxResetStore returns the store.
func NewSandboxResetStore(db *DB) *SandboxResetStore { return &SandboxResetStore{db: db} }

// sandboxResetTables are the tables whose rows, by partner_id, are the
// partner's sandbox objects: they move to the archive partner. Every table
// with a partner_id column is either here or in sandboxResetKept
// (TestSandboxResetCoversEveryPartnerTable).
var sandboxResetTables = []string{
	"users", "accounts", "cards", "card_authorizations", "transfers", "applications", "companies", "company_members",
	"aml_checks", "aml_false_positives", "kyc_sessions", "documents", "events", "idempotency_keys", "sms_messages",
	"adjustment_requests", "suspense_items", "suspense_assignment_requests", "information_requests",
	"monitoring_movements", "monitoring_alerts", "monitoring_cases", "monitoring_holds",
}

// sandboxResetKept are the tables with a partner_id that a reset leaves
// with the partner, and why.
var sandboxResetKept = map[string]string{
	"partner_keys":        "its API keys: the partner keeps signing",
	"webhook_endpoints":   "its configuration: deliveries of archived events are canceled",
	"audit_log":           "append-only: the history of what was done, the reset included",
	"ledger_transactions": "append-only: a transaction names the partner that booked it; its entries follow the archived accounts",
	"merchants":           "moved apart: the master merchant stays, merchants onboarded through applications move",
	"control_requests":    "moved apart: requests about moved objects move, those about the partner's configuration stay",
	"sandbox_test_clocks": "removed: the partner starts again on the wall clock (its clock's objects moved)",
}

// controlResourcesMoved are the control requests' resource types that are
// the partner's sandbox objects.
var controlResourcesMoved = []string{"account", "aml_check", "application", "card", "card_authorization", "document",
	"information_request", "kyc_session", "monitoring_alert", "monitoring_case", "suspense_item", "transfer", "user",
	"webhook_delivery"}

// subjectTables keep a monitoring subject (a user or a merchant) by token:
// the partner's master merchant as a subject moves to the archive's.
var subjectTables = []string{"monitoring_movements", "monitoring_alerts", "monitoring_cases", "monitoring_holds",
	"monitoring_shadow_hits", "information_requests", "compliance_holds"}

// Reset moves every sandbox object of the partner to a new archive
// partner (no key, no endpoint, named after the partner and the time),
// in the transaction of ctx, and returns how many rows of each table
// moved. Rows that the database keeps append-only (the ledger, the audit
// log) are not rewritten: the ledger's entries name accounts, which move.
// Pending webhook deliveries of the moved events are canceled.
func (s *SandboxResetStore) Reset(ctx context.Context, partnerID string, at time.Time) (archive string, moved map[string]int64, err error) {
	ext := s.db.Ext(ctx)
	var p struct {
		Name   string `db:"name"`
		Master string `db:"master_merchant"`
	}
	// FOR UPDATE waits for the partner's writes in flight (each holds a
	// key-share lock on the partner's row through its foreign key) and
	// holds off new ones until the reset commits.
	if err := sqlx.GetContext(ctx, ext, &p, `SELECT name, master_merchant::text FROM partners WHERE id = $1 FOR UPDATE`, partnerID); err != nil {
		return "", nil, Translate(err)
	}
	archive, archiveMaster := kernel.NewToken(), kernel.NewToken()
	name := fmt.Sprintf("%s (sandbox reset %s)", truncateRunes(p.Name, 150), at.UTC().Format(time.RFC3339Nano))
	if _, err := ext.ExecContext(ctx, `INSERT INTO partners (id, name, master_merchant, processing, created_at)
		SELECT $2, $3, $4, processing, $5 FROM partners WHERE id = $1`, partnerID, archive, name, archiveMaster, at); err != nil {
		return "", nil, Translate(err)
	}
	if _, err := ext.ExecContext(ctx, `INSERT INTO merchants (token, partner_id, kind, name, created_at) VALUES ($1, $2, 'master', $3, $4)`,
		archiveMaster, archive, name, at); err != nil {
		return "", nil, Translate(err)
	}
	moved = map[string]int64{}
	exec := func(label, q string, args ...any) error {
		res, err := ext.ExecContext(ctx, q, args...)
		if err != nil {
			return Translate(fmt.Errorf("sandbox reset: %s: %w", label, err))
		}
		n, _ := res.RowsAffected()
		if n > 0 {
			moved[label] += n
		}
		return nil
	}
	// The master merchant's references first, while the rows still name
	// the partner.
	for _, q := range []struct{ table, column string }{
		{"users", "master_merchant"}, {"users", "merchant"}, {"accounts", "merchant"}, {"cards", "merchant"},
		{"aml_checks", "merchant_token"}, {"applications", "merchant"},
	} {
		if _, err := ext.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET %s = $3 WHERE partner_id = $1 AND %s = $2`, q.table, q.column, q.column),
			partnerID, p.Master, archiveMaster); err != nil {
			return "", nil, Translate(fmt.Errorf("sandbox reset: %s.%s: %w", q.table, q.column, err))
		}
	}
	for _, t := range subjectTables {
		if _, err := ext.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET subject_token = $2 WHERE subject_kind = 'merchant' AND subject_token = $1`, t),
			p.Master, archiveMaster); err != nil {
			return "", nil, Translate(fmt.Errorf("sandbox reset: %s: %w", t, err))
		}
	}
	if err := exec("merchants", `UPDATE merchants SET partner_id = $2 WHERE partner_id = $1 AND kind <> 'master'`, partnerID, archive); err != nil {
		return "", nil, err
	}
	for _, t := range sandboxResetTables {
		if err := exec(t, fmt.Sprintf(`UPDATE %s SET partner_id = $2 WHERE partner_id = $1`, t), partnerID, archive); err != nil {
			return "", nil, err
		}
	}
	if err := exec("control_requests", `UPDATE control_requests SET partner_id = $2 WHERE partner_id = $1 AND resource_type = ANY($3)`,
		partnerID, archive, pq.StringArray(controlResourcesMoved)); err != nil {
		return "", nil, err
	}
	if err := exec("webhook_deliveries canceled", `UPDATE webhook_deliveries d SET state = 'canceled', next_attempt_at = NULL, updated_at = $2
		FROM events e WHERE e.id = d.event_id AND e.partner_id = $1 AND d.state = 'pending'`, archive, at); err != nil {
		return "", nil, err
	}
	if err := exec("sandbox_test_clocks removed", `DELETE FROM sandbox_test_clocks WHERE partner_id = $1`, partnerID); err != nil {
		return "", nil, err
	}
	return archive, moved, nil
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// SandboxResetTables returns the tables whose partner's rows a reset moves
// as a whole (merchants and control requests move in part).
func SandboxResetTables() []string { return slices.Clone(sandboxResetTables) }

// SandboxResetKept returns the tables with a partner_id a reset does not
// move as a whole, each with why.
func SandboxResetKept() map[string]string { return maps.Clone(sandboxResetKept) }
