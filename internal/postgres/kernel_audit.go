package postgres

import (
	"context"
	"encoding/json"
	"net/netip"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// AuditStore is the kernel's audit trail (audit_log), written through
// kernel.Auditor by every area.
type AuditStore struct{ db *DB }

// NewAuditStore returns the audit trail's store.
func NewAuditStore(db *DB) *AuditStore { return &AuditStore{db: db} }

var _ kernel.AuditStore = (*AuditStore)(nil)

// InsertAudit appends one row to the audit log.
func (s *AuditStore) InsertAudit(ctx context.Context, e emi.AuditEntry) error {
	changes, err := json.Marshal(e.Changes)
	if err != nil {
		return emi.Internal(err)
	}
	if e.Changes == nil {
		changes = []byte(`{}`)
	}
	var ip *string
	if e.IP.IsValid() {
		v := e.IP.String()
		ip = &v
	}
	var partner *string
	if e.PartnerID != "" {
		partner = &e.PartnerID
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO audit_log (actor_type, actor_id, partner_id, action, resource_type, resource_token,
		                        outcome, request_id, ip, changes)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.ActorType, e.ActorID, partner, e.Action, e.ResourceType, e.ResourceToken, e.Outcome, e.RequestID, ip, jsonText(changes))
	return Translate(err)
}

// AuditEntries returns audit rows matching f, newest first.
func (s *AuditStore) AuditEntries(ctx context.Context, f emi.AuditFilter) ([]emi.AuditEntry, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	after, order := "a.id < $7", " ORDER BY a.id DESC"
	if f.Sort.Key != "" {
		after, order = auditSort.after(f.Sort, "$7"), auditSort.orderBy(f.Sort)
	}
	var rows []struct {
		emi.AuditEntry
		PartnerIDN *string `db:"partner_id_n"`
		IPN        *string `db:"ip_n"`
		ChangesRaw []byte  `db:"changes_raw"`
	}
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &rows,
		`SELECT a.id, a.at, a.actor_type, a.actor_id, a.partner_id::text AS partner_id_n, a.action, a.resource_type,
		        a.resource_token, a.outcome, a.request_id, host(a.ip) AS ip_n, a.changes AS changes_raw,
		        COALESCE(CASE a.actor_type
		            WHEN 'staff' THEN (SELECT s.name FROM staff_users s WHERE s.id::text = a.actor_id)
		            WHEN 'partner_key' THEN (SELECT p.name FROM partner_keys k JOIN partners p ON p.id = k.partner_id
		                                      WHERE k.id::text = a.actor_id) END, '') AS actor_name,
		        COALESCE(CASE a.resource_type
		            WHEN 'partner' THEN (SELECT p.name FROM partners p WHERE p.id::text = a.resource_token)
		            WHEN 'staff_user' THEN (SELECT s.name FROM staff_users s WHERE s.id::text = a.resource_token) END, '')
		          AS resource_name
		   FROM audit_log a
		  WHERE ($1 = '' OR a.actor_id = $1
		         OR (a.actor_type = 'staff' AND a.actor_id IN (SELECT s.id::text FROM staff_users s
		               WHERE strpos(lower(s.name), lower($1)) > 0 OR strpos(lower(s.email), lower($1)) > 0))
		         OR (a.actor_type = 'partner_key' AND a.actor_id IN (SELECT k.id::text FROM partner_keys k
		               JOIN partners p ON p.id = k.partner_id WHERE strpos(lower(p.name), lower($1)) > 0)))
		    AND ($2 = '' OR a.action = $2) AND ($3 = '' OR a.resource_type = $3)
		    AND ($4 = '' OR a.resource_token = $4)
		    AND ($5::timestamptz IS NULL OR a.at >= $5) AND ($6::timestamptz IS NULL OR a.at < $6)
		    AND ($7 = 0 OR `+after+`)
		 `+order+` LIMIT $8`,
		f.ActorID, f.Action, f.ResourceType, f.ResourceToken, nullTime(f.From), nullTime(f.To), f.BeforeID, f.Limit)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]emi.AuditEntry, len(rows))
	for i, r := range rows {
		e := r.AuditEntry
		if r.PartnerIDN != nil {
			e.PartnerID = *r.PartnerIDN
		}
		if r.IPN != nil {
			e.IP, _ = netip.ParseAddr(*r.IPN)
		}
		_ = json.Unmarshal(r.ChangesRaw, &e.Changes)
		out[i] = e
	}
	return out, nil
}

// auditSort is the audit log's orders, paged by keyset on (expression, id).
var auditSort = sortable{def: "time", table: "audit_log a", tie: "a.id", cols: map[string]string{
	"time":     "a.at",
	"action":   "a.action",
	"resource": "a.resource_type",
	"outcome":  "a.outcome",
}}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
