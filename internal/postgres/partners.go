package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/partners"
)

// Store implements the service layer's store interfaces for the foundation
// tables: partners and keys, replay guard, idempotency and audit.
type Store struct {
	db   *DB
	sigs *sigBatcher
}

// NewStore returns the foundation store.
func NewStore(db *DB) *Store { return &Store{db: db, sigs: &sigBatcher{db: db}} }

// InsertPartner inserts p with its master merchant.
func (s *Store) InsertPartner(ctx context.Context, p emi.Partner) error {
	return s.db.InTx(ctx, func(ctx context.Context) error {
		_, err := s.db.Ext(ctx).ExecContext(ctx,
			`INSERT INTO partners (id, name, master_merchant, processing, created_at) VALUES ($1, $2, $3, $4, $5)`,
			p.ID, p.Name, p.MasterMerchant, p.Processing, p.CreatedAt)
		if UniqueViolation(err, "partners_name_lower_key") {
			return emi.ErrPartnerValidation.Field("name", emi.MsgPartnerNameTaken).Wrap(err)
		}
		if err != nil {
			return Translate(err)
		}
		_, err = s.db.Ext(ctx).ExecContext(ctx,
			`INSERT INTO merchants (token, partner_id, kind, name, created_at) VALUES ($1, $2, 'master', $3, $4)`,
			p.MasterMerchant, p.ID, p.Name, p.CreatedAt)
		return Translate(err)
	})
}

// Partner returns the partner with id. Returns emi.ErrPartnerNotFound.
func (s *Store) Partner(ctx context.Context, id string) (emi.Partner, error) {
	var p emi.Partner
	if !validUUID(id) {
		return p, emi.ErrPartnerNotFound
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &p,
		`SELECT id, name, master_merchant, processing, created_at FROM partners WHERE id = $1`, id)
	return p, NotFound(err, emi.ErrPartnerNotFound)
}

// UpdatePartnerProcessing sets the partner's processing mode.
func (s *Store) UpdatePartnerProcessing(ctx context.Context, id string, mode emi.Processing) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE partners SET processing = $2 WHERE id = $1`, id, mode)
	return Translate(err)
}

// ValidatorConfig implements service.PartnerStore.
func (s *Store) ValidatorConfig(ctx context.Context, partnerID string) (*emi.ValidatorConfig, error) {
	var raw []byte
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &raw, `SELECT validator_config FROM partners WHERE id = $1`, partnerID)
	if err != nil {
		return nil, NotFound(err, emi.ErrPartnerNotFound)
	}
	if raw == nil {
		return nil, nil
	}
	var c emi.ValidatorConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, emi.Internal(err)
	}
	return &c, nil
}

// SetValidatorConfig implements service.PartnerStore (nil removes it).
func (s *Store) SetValidatorConfig(ctx context.Context, partnerID string, c *emi.ValidatorConfig) error {
	var raw []byte
	if c != nil {
		var err error
		if raw, err = json.Marshal(c); err != nil {
			return emi.Internal(err)
		}
	}
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE partners SET validator_config = $2 WHERE id = $1`, partnerID, jsonText(raw))
	return Translate(err)
}

// InsertPartnerKey inserts an API key with its sealed secret.
func (s *Store) InsertPartnerKey(ctx context.Context, k emi.PartnerKey, secretEnc []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO partner_keys (id, partner_id, api_key, secret_enc, created_at, min_signature_version) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.PartnerID, k.APIKey, secretEnc, k.CreatedAt, max(k.MinSignatureVersion, emi.SignatureV1))
	return Translate(err)
}

// Partners lists partners, newest first.
func (s *Store) Partners(ctx context.Context) ([]emi.Partner, error) {
	var ps []emi.Partner
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ps,
		`SELECT id, name, master_merchant, processing, created_at FROM partners ORDER BY created_at DESC, id DESC`)
	return ps, Translate(err)
}

// SearchPartners finds partners by name (substring, case-insensitive),
// partner or merchant token, or API key.
func (s *Store) SearchPartners(ctx context.Context, q string, limit int) ([]emi.Partner, error) {
	var ps []emi.Partner
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ps,
		`SELECT p.id, p.name, p.master_merchant, p.processing, p.created_at FROM partners p
		  WHERE p.name ILIKE '%' || $2 || '%' OR p.id::text = lower($1) OR p.master_merchant::text = lower($1)
		     OR EXISTS (SELECT 1 FROM partner_keys k WHERE k.partner_id = p.id AND k.api_key = $1)
		  ORDER BY p.created_at DESC LIMIT $3`, q, escapeLike(q), limit)
	return ps, Translate(err)
}

// escapeLike escapes LIKE wildcards so a search for "50%" means 50%.
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// Counts returns the number of rows of a few tables for the dashboard.
func (s *Store) CountPartners(ctx context.Context) (int64, error) {
	var n int64
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &n, `SELECT count(*) FROM partners`)
	return n, Translate(err)
}

type keyRow struct {
	emi.PartnerKey
	SecretEnc         []byte         `db:"secret_enc"`
	PreviousSecretEnc []byte         `db:"previous_secret_enc"`
	PName             string         `db:"p_name"`
	PMerchant         string         `db:"p_master_merchant"`
	PProcessing       emi.Processing `db:"p_processing"`
	PCreatedAt        time.Time      `db:"p_created_at"`
}

func (r keyRow) stored() partners.StoredKey {
	return partners.StoredKey{
		PartnerKey:        r.PartnerKey,
		Partner:           emi.Partner{ID: r.PartnerID, Name: r.PName, MasterMerchant: r.PMerchant, Processing: r.PProcessing, CreatedAt: r.PCreatedAt},
		SecretEnc:         r.SecretEnc,
		PreviousSecretEnc: r.PreviousSecretEnc,
	}
}

const keySelect = `SELECT k.id, k.partner_id, k.api_key, k.created_at, k.rotated_at, k.revoked_at,
       k.previous_valid_until, k.min_signature_version, k.secret_enc, k.previous_secret_enc,
       p.name AS p_name, p.master_merchant AS p_master_merchant, p.processing AS p_processing,
       p.created_at AS p_created_at
  FROM partner_keys k JOIN partners p ON p.id = k.partner_id`

// PartnerKeyByAPIKey returns the key with that x-api-key value. Returns
// emi.ErrPartnerKeyNotFound.
func (s *Store) PartnerKeyByAPIKey(ctx context.Context, apiKey string) (partners.StoredKey, error) {
	var r keyRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, keySelect+` WHERE k.api_key = $1`, apiKey)
	if err != nil {
		return partners.StoredKey{}, NotFound(err, emi.ErrPartnerKeyNotFound)
	}
	return r.stored(), nil
}

// PartnerKeyForUpdate returns the key with id, locked for the transaction.
// Returns emi.ErrPartnerKeyNotFound.
func (s *Store) PartnerKeyForUpdate(ctx context.Context, keyID string) (partners.StoredKey, error) {
	if !validUUID(keyID) {
		return partners.StoredKey{}, emi.ErrPartnerKeyNotFound
	}
	var r keyRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, keySelect+` WHERE k.id = $1 FOR UPDATE OF k`, keyID)
	if err != nil {
		return partners.StoredKey{}, NotFound(err, emi.ErrPartnerKeyNotFound)
	}
	return r.stored(), nil
}

// PartnerKeys lists the keys of a partner, newest first, without secrets.
func (s *Store) PartnerKeys(ctx context.Context, partnerID string) ([]emi.PartnerKey, error) {
	var ks []emi.PartnerKey
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ks,
		`SELECT id, partner_id, api_key, created_at, rotated_at, revoked_at, previous_valid_until, min_signature_version
		   FROM partner_keys WHERE partner_id = $1 ORDER BY created_at DESC, id DESC`, partnerID)
	return ks, Translate(err)
}

// UpdatePartnerKeySecret installs a new secret and keeps the previous one
// valid until the given time.
func (s *Store) UpdatePartnerKeySecret(ctx context.Context, keyID string, secretEnc, previousEnc []byte, previousValidUntil time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE partner_keys SET secret_enc = $2, previous_secret_enc = $3, previous_valid_until = $4, rotated_at = now()
		  WHERE id = $1`, keyID, secretEnc, previousEnc, previousValidUntil)
	return Translate(err)
}

// UpdatePartnerKeySignatureVersion sets the lowest signature version the key
// accepts (contract §2).
func (s *Store) UpdatePartnerKeySignatureVersion(ctx context.Context, keyID string, version int) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE partner_keys SET min_signature_version = $2 WHERE id = $1`, keyID, version)
	return Translate(err)
}

// RevokePartnerKey marks the key revoked.
func (s *Store) RevokePartnerKey(ctx context.Context, keyID string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE partner_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, keyID)
	return Translate(err)
}

// RememberSignature implements the replay guard: true when digest was new.
// Outside a transaction, concurrent calls share one statement and one
// commit (partners_signatures.go); inside one, the row is written in it.
func (s *Store) RememberSignature(ctx context.Context, digest []byte, expires time.Time) (bool, error) {
	if !InTransaction(ctx) {
		return s.sigs.remember(ctx, digest, expires)
	}
	res, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO api_signatures (hash, expires_at) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, digest, expires)
	if err != nil {
		return false, Translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, Translate(err)
}

// PruneSignatures deletes replay-guard rows that expired before now.
func (s *Store) PruneSignatures(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM api_signatures WHERE expires_at < $1`, now)
	if err != nil {
		return 0, Translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, Translate(err)
	}
	// Counted events of rolling-window limits (LimitStore) older than any
	// window in use (the longest is 24 hours).
	if _, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM rate_events WHERE at < $1`, now.Add(-48*time.Hour)); err != nil {
		return 0, Translate(err)
	}
	return n, nil
}

// TryLockIdempotencyKey takes a transaction-scoped advisory lock on
// (partner, key) without waiting. It must run inside a transaction.
func (s *Store) TryLockIdempotencyKey(ctx context.Context, partnerID, key string) (bool, error) {
	var ok bool
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &ok,
		`SELECT pg_try_advisory_xact_lock(hashtextextended($1 || ':' || $2, 4242))`, partnerID, key)
	return ok, Translate(err)
}

// StoredResponse returns the response stored for (partner, key) created at
// or after since. Its body is sealed (BodySealed, opened by the service)
// unless the row was stored before migration 00054.
func (s *Store) StoredResponse(ctx context.Context, partnerID, key string, since time.Time) (kernel.StoredResponse, bool, error) {
	var row struct {
		ID          string    `db:"id"`
		Fingerprint []byte    `db:"fingerprint"`
		Status      int       `db:"status"`
		Headers     []byte    `db:"headers"`
		Body        []byte    `db:"body"`
		BodyEnc     []byte    `db:"body_enc"`
		CreatedAt   time.Time `db:"created_at"`
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row,
		`SELECT id, fingerprint, status, headers, body, body_enc, created_at FROM idempotency_keys
		  WHERE partner_id = $1 AND key = $2 AND created_at >= $3`, partnerID, key, since)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return kernel.StoredResponse{}, false, nil
		}
		return kernel.StoredResponse{}, false, Translate(err)
	}
	resp := kernel.StoredResponse{ID: row.ID, Fingerprint: row.Fingerprint, Status: row.Status, Body: row.Body, CreatedAt: row.CreatedAt}
	if row.BodyEnc != nil {
		resp.Body, resp.BodySealed = row.BodyEnc, true
	}
	if err := json.Unmarshal(row.Headers, &resp.Headers); err != nil {
		return kernel.StoredResponse{}, false, emi.Internal(err)
	}
	return resp, true, nil
}

// SaveResponse stores resp for (partner, key), replacing an expired row.
// resp.Body must be sealed (resp.BodySealed) under resp.ID's context.
func (s *Store) SaveResponse(ctx context.Context, partnerID, key string, resp kernel.StoredResponse) error {
	if !resp.BodySealed || resp.ID == "" {
		return emi.Internal(errors.New("idempotency: a stored response must be sealed"))
	}
	h, err := json.Marshal(resp.Headers)
	if err != nil {
		return emi.Internal(err)
	}
	_, err = s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO idempotency_keys (id, partner_id, key, fingerprint, status, headers, body, body_enc, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8)
		 ON CONFLICT (partner_id, key) DO UPDATE
		   SET id = EXCLUDED.id, fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, headers = EXCLUDED.headers,
		       body = NULL, body_enc = EXCLUDED.body_enc, created_at = EXCLUDED.created_at`,
		resp.ID, partnerID, key, resp.Fingerprint, resp.Status, jsonText(h), resp.Body, resp.CreatedAt)
	return Translate(err)
}

// PruneIdempotencyKeys deletes stored responses created before the cutoff.
func (s *Store) PruneIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.Ext(ctx).ExecContext(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, before)
	if err != nil {
		return 0, Translate(err)
	}
	n, err := res.RowsAffected()
	return n, Translate(err)
}

// InsertAudit appends one row to the audit log.
func (s *Store) InsertAudit(ctx context.Context, e emi.AuditEntry) error {
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
func (s *Store) AuditEntries(ctx context.Context, f emi.AuditFilter) ([]emi.AuditEntry, error) {
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

// auditSort is the audit log's orders (issue 23), paged by keyset on
// (expression, id).
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

// validUUID reports whether s is a syntactically valid UUID, so that a
// malformed token in a path is "not found" instead of a database error.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
