package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/ops"
	"emi/internal/service/partners"
)

// PartnerStore is the partners area's store: partners, their API keys and
// validator configuration, and the HMAC replay guard (api_signatures,
// partners_signatures.go).
type PartnerStore struct {
	db   *DB
	sigs *sigBatcher
}

// NewPartnerStore returns the partners area's store.
func NewPartnerStore(db *DB) *PartnerStore {
	return &PartnerStore{db: db, sigs: &sigBatcher{db: db}}
}

var (
	_ partners.PartnerStore   = (*PartnerStore)(nil)
	_ partners.SignatureStore = (*PartnerStore)(nil)
	// Maintenance (ops) prunes the replay guard's expired rows.
	_ ops.SignaturePruner = (*PartnerStore)(nil)
)

// InsertPartner inserts p with its master merchant.
func (s *PartnerStore) InsertPartner(ctx context.Context, p emi.Partner) error {
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
func (s *PartnerStore) Partner(ctx context.Context, id string) (emi.Partner, error) {
	var p emi.Partner
	if !validUUID(id) {
		return p, emi.ErrPartnerNotFound
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &p,
		`SELECT id, name, master_merchant, processing, created_at FROM partners WHERE id = $1`, id)
	return p, NotFound(err, emi.ErrPartnerNotFound)
}

// UpdatePartnerProcessing sets the partner's processing mode.
func (s *PartnerStore) UpdatePartnerProcessing(ctx context.Context, id string, mode emi.Processing) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE partners SET processing = $2 WHERE id = $1`, id, mode)
	return Translate(err)
}

// ValidatorConfig implements partners.PartnerStore.
func (s *PartnerStore) ValidatorConfig(ctx context.Context, partnerID string) (*emi.ValidatorConfig, error) {
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

// SetValidatorConfig implements partners.PartnerStore (nil removes it).
func (s *PartnerStore) SetValidatorConfig(ctx context.Context, partnerID string, c *emi.ValidatorConfig) error {
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
func (s *PartnerStore) InsertPartnerKey(ctx context.Context, k emi.PartnerKey, secretEnc []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`INSERT INTO partner_keys (id, partner_id, api_key, secret_enc, created_at, min_signature_version) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.PartnerID, k.APIKey, secretEnc, k.CreatedAt, max(k.MinSignatureVersion, emi.SignatureV1))
	return Translate(err)
}

// Partners lists partners, newest first.
func (s *PartnerStore) Partners(ctx context.Context) ([]emi.Partner, error) {
	var ps []emi.Partner
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ps,
		`SELECT id, name, master_merchant, processing, created_at FROM partners ORDER BY created_at DESC, id DESC`)
	return ps, Translate(err)
}

// SearchPartners finds partners by name (substring, case-insensitive),
// partner or merchant token, or API key.
func (s *PartnerStore) SearchPartners(ctx context.Context, q string, limit int) ([]emi.Partner, error) {
	var ps []emi.Partner
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ps,
		`SELECT p.id, p.name, p.master_merchant, p.processing, p.created_at FROM partners p
		  WHERE p.name ILIKE '%' || $2 || '%' OR p.id::text = lower($1) OR p.master_merchant::text = lower($1)
		     OR EXISTS (SELECT 1 FROM partner_keys k WHERE k.partner_id = p.id AND k.api_key = $1)
		  ORDER BY p.created_at DESC LIMIT $3`, q, escapeLike(q), limit)
	return ps, Translate(err)
}

// Counts returns the number of rows of a few tables for the dashboard.
func (s *PartnerStore) CountPartners(ctx context.Context) (int64, error) {
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
func (s *PartnerStore) PartnerKeyByAPIKey(ctx context.Context, apiKey string) (partners.StoredKey, error) {
	var r keyRow
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &r, keySelect+` WHERE k.api_key = $1`, apiKey)
	if err != nil {
		return partners.StoredKey{}, NotFound(err, emi.ErrPartnerKeyNotFound)
	}
	return r.stored(), nil
}

// PartnerKeyForUpdate returns the key with id, locked for the transaction.
// Returns emi.ErrPartnerKeyNotFound.
func (s *PartnerStore) PartnerKeyForUpdate(ctx context.Context, keyID string) (partners.StoredKey, error) {
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
func (s *PartnerStore) PartnerKeys(ctx context.Context, partnerID string) ([]emi.PartnerKey, error) {
	var ks []emi.PartnerKey
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &ks,
		`SELECT id, partner_id, api_key, created_at, rotated_at, revoked_at, previous_valid_until, min_signature_version
		   FROM partner_keys WHERE partner_id = $1 ORDER BY created_at DESC, id DESC`, partnerID)
	return ks, Translate(err)
}

// UpdatePartnerKeySecret installs a new secret and keeps the previous one
// valid until the given time.
func (s *PartnerStore) UpdatePartnerKeySecret(ctx context.Context, keyID string, secretEnc, previousEnc []byte, previousValidUntil time.Time) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx,
		`UPDATE partner_keys SET secret_enc = $2, previous_secret_enc = $3, previous_valid_until = $4, rotated_at = now()
		  WHERE id = $1`, keyID, secretEnc, previousEnc, previousValidUntil)
	return Translate(err)
}

// UpdatePartnerKeySignatureVersion sets the lowest signature version the key
// accepts (contract §2).
func (s *PartnerStore) UpdatePartnerKeySignatureVersion(ctx context.Context, keyID string, version int) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE partner_keys SET min_signature_version = $2 WHERE id = $1`, keyID, version)
	return Translate(err)
}

// RevokePartnerKey marks the key revoked.
func (s *PartnerStore) RevokePartnerKey(ctx context.Context, keyID string) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `UPDATE partner_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, keyID)
	return Translate(err)
}
