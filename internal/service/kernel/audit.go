package kernel

import (
	"context"
	"slices"
	"strings"

	"emi/internal/emi"
)

// AuditStore appends rows to the audit log. Insert runs on the transaction in
// ctx when there is one, so an audit row commits with the change it records.
type AuditStore interface {
	InsertAudit(ctx context.Context, e emi.AuditEntry) error
	AuditEntries(ctx context.Context, f emi.AuditFilter) ([]emi.AuditEntry, error)
}

// Auditor writes the audit log. Every change in emi goes through Record.
type Auditor struct {
	store AuditStore
}

// NewAuditor returns an Auditor over store.
func NewAuditor(store AuditStore) *Auditor { return &Auditor{store: store} }

// Record appends one audit row. The actor comes from the principal in ctx
// (system "unknown" when there is none), the request id and IP from the
// request metadata in ctx. Values in changes whose key names a secret, card
// data or document content are replaced by "[redacted]", so nothing sensitive
// can reach the log by mistake. Returns an internal error when the row cannot
// be written; callers inside a transaction then roll the change back.
func (a *Auditor) Record(ctx context.Context, e emi.AuditEntry) error {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok {
		p = emi.SystemPrincipal("unknown")
	}
	e.ActorType, e.ActorID = p.Type, p.ActorID
	if e.PartnerID == "" {
		e.PartnerID = p.PartnerID
	}
	meta := emi.RequestMetaFrom(ctx)
	e.RequestID, e.IP = meta.RequestID, meta.IP
	if e.Outcome == "" {
		e.Outcome = emi.OutcomeSuccess
	}
	e.Changes = Redact(e.Changes)
	return a.store.InsertAudit(ctx, e)
}

// sensitiveKeys are substrings of field names whose values never enter the
// audit log, events or logs.
var sensitiveKeys = []string{"secret", "password", "pan", "cvv", "pin", "file", "document_content", "totp", "token_hash", "recovery"}

// Redact returns a copy of m in which the value of every key that names
// sensitive data (see sensitiveKeys), at any depth, is "[redacted]".
func Redact(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if isSensitiveKey(k) {
			out[k] = "[redacted]"
			continue
		}
		switch t := v.(type) {
		case map[string]any:
			out[k] = Redact(t)
		case []any:
			items := make([]any, len(t))
			for i, it := range t {
				if mm, ok := it.(map[string]any); ok {
					items[i] = Redact(mm)
				} else {
					items[i] = it
				}
			}
			out[k] = items
		default:
			out[k] = v
		}
	}
	return out
}

// settingKeys name settings about sensitive data, not the data: a
// program's "PIN by SMS" switch is a yes or no an auditor must see change.
var settingKeys = []string{"pin_by_sms"}

func isSensitiveKey(k string) bool {
	k = strings.ToLower(k)
	if slices.Contains(settingKeys, k) {
		return false
	}
	for _, s := range sensitiveKeys {
		if k == s || strings.HasPrefix(k, s+"_") || strings.HasSuffix(k, "_"+s) || strings.Contains(k, "_"+s+"_") {
			return true
		}
	}
	return false
}

// List returns audit rows matching f, newest first. The principal needs
// emi.PermViewAudit (emi.ErrForbidden otherwise).
func (a *Auditor) List(ctx context.Context, f emi.AuditFilter) ([]emi.AuditEntry, error) {
	if err := Require(ctx, emi.PermViewAudit); err != nil {
		return nil, err
	}
	return a.store.AuditEntries(ctx, f)
}

// Trail returns the audit rows of one resource for the screen that shows
// it. It checks no permission: the caller (the service that showed the
// resource) already did, with the resource's own permission.
func (a *Auditor) Trail(ctx context.Context, f emi.AuditFilter) ([]emi.AuditEntry, error) {
	return a.store.AuditEntries(ctx, f)
}
