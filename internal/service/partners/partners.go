package partners

import (
	"context"
	"errors"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/validate"
)

// PartnerStore keeps partners, their API keys and their webhook endpoints.
type PartnerStore interface {
	InsertPartner(ctx context.Context, p emi.Partner) error
	InsertPartnerKey(ctx context.Context, k emi.PartnerKey, secretEnc []byte) error
	// PartnerKeyByAPIKey returns the key, its partner and the sealed secrets.
	// Returns emi.ErrPartnerKeyNotFound when there is no such key.
	PartnerKeyByAPIKey(ctx context.Context, apiKey string) (StoredKey, error)
	// PartnerKeyForUpdate locks the key row. Returns emi.ErrPartnerKeyNotFound.
	PartnerKeyForUpdate(ctx context.Context, keyID string) (StoredKey, error)
	UpdatePartnerKeySecret(ctx context.Context, keyID string, secretEnc, previousEnc []byte, previousValidUntil time.Time) error
	RevokePartnerKey(ctx context.Context, keyID string) error
	UpdatePartnerKeySignatureVersion(ctx context.Context, keyID string, version int) error
	Partner(ctx context.Context, id string) (emi.Partner, error)
	UpdatePartnerProcessing(ctx context.Context, id string, p emi.Processing) error
	// ValidatorConfig returns the partner's configuration (nil: none).
	ValidatorConfig(ctx context.Context, partnerID string) (*emi.ValidatorConfig, error)
	SetValidatorConfig(ctx context.Context, partnerID string, c *emi.ValidatorConfig) error
	Partners(ctx context.Context) ([]emi.Partner, error)
	PartnerKeys(ctx context.Context, partnerID string) ([]emi.PartnerKey, error)
	SearchPartners(ctx context.Context, q string, limit int) ([]emi.Partner, error)
	CountPartners(ctx context.Context) (int64, error)
}

// StoredKey is a partner key as stored: metadata plus sealed secrets.
type StoredKey struct {
	emi.PartnerKey
	Partner           emi.Partner
	SecretEnc         []byte
	PreviousSecretEnc []byte
}

// PartnersConfig holds the partner rules that come from configuration.
type PartnersConfig struct {
	// SecretOverlap is how long a rotated secret keeps working.
	SecretOverlap time.Duration
	// Endpoints registers the webhook URL given at creation, exactly as an
	// endpoint added later (same URL guard, secret, audit): service.Webhooks.
	Endpoints EndpointAdder
}

// EndpointAdder registers a webhook endpoint and returns its signing secret;
// service.Webhooks implements it.
type EndpointAdder interface {
	AddEndpoint(ctx context.Context, partnerID, url, description string, types []emi.EventType) (emi.WebhookEndpoint, string, error)
}

// Partners manages partners, API keys and their secrets.
type Partners struct {
	tx       kernel.TxRunner
	store    PartnerStore
	sealer   kernel.Sealer
	audit    *kernel.Auditor
	validate *validate.Validator
	cfg      PartnersConfig
	now      kernel.Clock
}

// PartnersDeps is what Partners needs; NewPartners checks that none is nil.
type PartnersDeps struct {
	Tx       kernel.TxRunner
	Store    PartnerStore
	Sealer   kernel.Sealer
	Audit    *kernel.Auditor
	Validate *validate.Validator
	Config   PartnersConfig
	Now      kernel.Clock
}

// NewPartners returns the partners service.
func NewPartners(d PartnersDeps) *Partners {
	kernel.MustHave("Partners", d)
	return &Partners{tx: d.Tx, store: d.Store, sealer: d.Sealer, audit: d.Audit, validate: d.Validate, cfg: d.Config, now: d.Now}
}

// KeySecretContext and WebhookSecretContext bind a sealed API-key or
// webhook secret to its row.
func KeySecretContext(keyID string) string    { return "partner_keys.secret:" + keyID }
func WebhookSecretContext(epID string) string { return "webhook_endpoints.secret:" + epID }
func newAPIKey() string                       { return "ak_" + kernel.RandomString(18) }
func newAPISecret() string                    { return "as_" + kernel.RandomString(32) }
func newWebhookSecret() (string, []byte) {
	raw := kernel.RandomBytes(32)
	return "whsec_" + kernel.B64(raw), raw
}
func validProcessing(p emi.Processing) bool {
	return p == emi.ProcessingAutomatic || p == emi.ProcessingSemiAutomatic
}
func defaultProcessing(p emi.Processing) emi.Processing {
	if p == "" {
		return emi.ProcessingAutomatic
	}
	return p
}

// Create creates a partner (emi.PermManagePartners) with its master merchant, a first API key and,
// when in.WebhookURL is given, a webhook endpoint. The returned credentials
// hold the only clear copy of the API secret and webhook secret that will
// ever exist. Returns emi.ErrPartnerValidation (with fields) for invalid
// input, and with a field error on "name" when another partner has the
// same name ignoring case (emi.MsgPartnerNameTaken).
func (s *Partners) Create(ctx context.Context, in emi.PartnerCreate) (emi.PartnerCredentials, error) {
	if err := Manage.Require(ctx); err != nil {
		return emi.PartnerCredentials{}, err
	}
	in.Name = strings.TrimSpace(in.Name)
	if err := s.validate.Struct(in, emi.ErrPartnerValidation); err != nil {
		return emi.PartnerCredentials{}, err
	}
	if in.WebhookURL != "" && s.cfg.Endpoints == nil {
		return emi.PartnerCredentials{}, emi.Internal(errors.New("partners: no endpoint registrar configured"))
	}
	p := emi.Partner{
		ID:             kernel.NewToken(),
		Name:           in.Name,
		MasterMerchant: kernel.NewToken(),
		Processing:     defaultProcessing(in.Processing),
		CreatedAt:      s.now().UTC(),
	}
	creds := emi.PartnerCredentials{Partner: p, Merchant: p.MasterMerchant}
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.InsertPartner(ctx, p); err != nil {
			return err
		}
		keyID, apiKey, secret, err := s.insertKey(ctx, p.ID, in.SignatureVersion)
		if err != nil {
			return err
		}
		creds.KeyID, creds.APIKey, creds.APISecret = keyID, apiKey, secret
		if !in.NoValidatorConfig {
			def := emi.DefaultValidatorConfig()
			if err := s.store.SetValidatorConfig(ctx, p.ID, &def); err != nil {
				return err
			}
		}
		if in.WebhookURL != "" {
			_, whsec, err := s.cfg.Endpoints.AddEndpoint(ctx, p.ID, in.WebhookURL, "", nil)
			if err != nil {
				return asPartnerField(err, "webhook_url")
			}
			creds.WebhookSecret = whsec
		}
		return s.audit.Record(ctx, emi.AuditEntry{
			Action: "partner.create", ResourceType: "partner", ResourceToken: p.ID, PartnerID: p.ID,
			Changes: map[string]any{"name": p.Name, "processing": p.Processing, "master_merchant": p.MasterMerchant,
				"api_key": apiKey, "webhook_url": in.WebhookURL, "validator_config": !in.NoValidatorConfig,
				"min_signature_version": max(in.SignatureVersion, emi.SignatureV1)},
		})
	})
	if err != nil {
		return emi.PartnerCredentials{}, err
	}
	return creds, nil
}

func (s *Partners) insertKey(ctx context.Context, partnerID string, minVersion int) (keyID, apiKey, secret string, err error) {
	keyID, apiKey, secret = kernel.NewToken(), newAPIKey(), newAPISecret()
	enc, err := s.sealer.Seal([]byte(secret), KeySecretContext(keyID))
	if err != nil {
		return "", "", "", emi.Internal(err)
	}
	k := emi.PartnerKey{ID: keyID, PartnerID: partnerID, APIKey: apiKey, CreatedAt: s.now().UTC(),
		MinSignatureVersion: max(minVersion, emi.SignatureV1)}
	if err := s.store.InsertPartnerKey(ctx, k, enc); err != nil {
		return "", "", "", err
	}
	return keyID, apiKey, secret, nil
}

// asPartnerField reports a webhook validation error on the partner form's
// field (the endpoint's "url" is the partner's "webhook_url").
func asPartnerField(err error, field string) error {
	var e *emi.Error
	if !errors.As(err, &e) || !errors.Is(err, emi.ErrWebhookValidation) {
		return err
	}
	out := emi.ErrPartnerValidation
	for _, f := range e.Fields {
		out = out.Field(field, f.Message)
	}
	return out
}

// CreateKey adds an API key to a partner and returns its credentials (the
// secret shown once). Returns emi.ErrPartnerNotFound for an unknown partner.
func (s *Partners) CreateKey(ctx context.Context, partnerID string) (emi.PartnerCredentials, error) {
	if err := Manage.Require(ctx); err != nil {
		return emi.PartnerCredentials{}, err
	}
	var creds emi.PartnerCredentials
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		p, err := s.store.Partner(ctx, partnerID)
		if err != nil {
			return err
		}
		keyID, apiKey, secret, err := s.insertKey(ctx, p.ID, emi.SignatureV1)
		if err != nil {
			return err
		}
		creds = emi.PartnerCredentials{Partner: p, KeyID: keyID, APIKey: apiKey, APISecret: secret, Merchant: p.MasterMerchant}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "partner_key.create", ResourceType: "partner_key",
			ResourceToken: keyID, PartnerID: p.ID, Changes: map[string]any{"api_key": apiKey}})
	})
	return creds, err
}

// RotateSecret gives the key a new secret and keeps the current one valid for
// the configured overlap, so the partner can deploy the new secret without
// downtime. It returns the new secret (shown once). Returns
// emi.ErrPartnerKeyNotFound for an unknown or revoked key.
//
// A rotation while the previous secret is still inside its overlap (a
// reload of the credentials page re-submits the form) used to make the
// current secret the previous one and drop the one in its overlap, which
// the partner was most likely still signing with: cut off at once although
// "previous valid until" showed +24 h. Now such a rotation answers
// emi.ErrRotationInOverlap unless confirmOverlap is set, and even then the
// secret inside its overlap keeps its slot and its deadline: the new secret
// replaces the current one, which stops working at once (it was shown once,
// moments ago, and is the one being replaced).
func (s *Partners) RotateSecret(ctx context.Context, keyID string, confirmOverlap bool) (string, error) {
	if err := Manage.Require(ctx); err != nil {
		return "", err
	}
	var secret string
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		k, err := s.store.PartnerKeyForUpdate(ctx, keyID)
		if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return emi.ErrPartnerKeyNotFound
		}
		now := s.now().UTC()
		inOverlap := k.PreviousSecretEnc != nil && k.PreviousValidUntil != nil && now.Before(*k.PreviousValidUntil)
		if inOverlap && !confirmOverlap {
			return emi.ErrRotationInOverlap.WithDetail("previous secret valid until %s", k.PreviousValidUntil.Format(time.RFC3339))
		}
		secret = newAPISecret()
		enc, err := s.sealer.Seal([]byte(secret), KeySecretContext(keyID))
		if err != nil {
			return emi.Internal(err)
		}
		// The current secret becomes the previous one; it was sealed under
		// this key's context, so it can be moved as it is. During an
		// overlap the previous secret keeps its slot and deadline instead.
		previous, until := k.SecretEnc, now.Add(s.cfg.SecretOverlap)
		changes := map[string]any{"previous_valid_until": until}
		if inOverlap {
			previous, until = k.PreviousSecretEnc, *k.PreviousValidUntil
			// Not "current_secret": the auditor redacts the value of any
			// key naming a secret, and the row said "[redacted]".
			changes = map[string]any{"previous_valid_until": until, "during_overlap": true, "replaced_current": true}
		}
		if err := s.store.UpdatePartnerKeySecret(ctx, keyID, enc, previous, until); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "partner_key.rotate_secret", ResourceType: "partner_key",
			ResourceToken: keyID, PartnerID: k.PartnerID, Changes: changes})
	})
	return secret, err
}

// RevokeKey makes the key unusable at once. Returns emi.ErrPartnerKeyNotFound.
func (s *Partners) RevokeKey(ctx context.Context, keyID string) error {
	if err := Manage.Require(ctx); err != nil {
		return err
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		k, err := s.store.PartnerKeyForUpdate(ctx, keyID)
		if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return nil
		}
		if err := s.store.RevokePartnerKey(ctx, keyID); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "partner_key.revoke", ResourceType: "partner_key",
			ResourceToken: keyID, PartnerID: k.PartnerID})
	})
}

// SetKeySignatureVersion sets the lowest signature version the key accepts
// (contract §2): emi.SignatureV2 makes it refuse version 1 signatures,
// emi.SignatureV1 accepts both again. Audited with the old and new value;
// setting the value the key has changes nothing and records nothing.
// Returns emi.ErrPartnerKeyNotFound for an unknown or revoked key, and
// emi.ErrPartnerValidation for another version.
func (s *Partners) SetKeySignatureVersion(ctx context.Context, keyID string, version int) error {
	if err := Manage.Require(ctx); err != nil {
		return err
	}
	if version != emi.SignatureV1 && version != emi.SignatureV2 {
		return emi.ErrPartnerValidation.Field("signature_version", "must be 1 or 2")
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		k, err := s.store.PartnerKeyForUpdate(ctx, keyID)
		if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return emi.ErrPartnerKeyNotFound
		}
		if k.MinSignatureVersion == version {
			return nil
		}
		if err := s.store.UpdatePartnerKeySignatureVersion(ctx, keyID, version); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "partner_key.set_signature_version", ResourceType: "partner_key",
			ResourceToken: keyID, PartnerID: k.PartnerID,
			Changes: map[string]any{"min_signature_version": map[string]int{"from": k.MinSignatureVersion, "to": version}}})
	})
}

// SetProcessing changes how the partner's applications are decided.
// Returns emi.ErrPartnerNotFound, or a validation error for an unknown mode.
func (s *Partners) SetProcessing(ctx context.Context, partnerID string, mode emi.Processing) error {
	if err := Manage.Require(ctx); err != nil {
		return err
	}
	if !validProcessing(mode) {
		return emi.ErrPartnerValidation.Field("processing", "must be one of: automatic, semi-automatic")
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		p, err := s.store.Partner(ctx, partnerID)
		if err != nil {
			return err
		}
		if err := s.store.UpdatePartnerProcessing(ctx, partnerID, mode); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "partner.set_processing", ResourceType: "partner",
			ResourceToken: partnerID, PartnerID: partnerID,
			Changes: map[string]any{"processing": map[string]any{"from": p.Processing, "to": mode}}})
	})
}

// Details returns the partner of the calling principal. Returns
// emi.ErrPartnerNotFound when the principal is not a partner.
func (s *Partners) Details(ctx context.Context) (emi.Partner, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || !p.IsPartner() {
		return emi.Partner{}, emi.ErrPartnerNotFound
	}
	return s.store.Partner(ctx, p.PartnerID)
}

// Names returns every partner's name by id, for any staff member: the back
// office shows a partner by name wherever it shows one (a bare id means
// nothing to staff), also to roles that may not open the partner's page
// (customer service). A name is not a secret; keys, webhooks and settings
// stay behind emi.PermViewPartners. Returns emi.ErrForbidden for a
// principal that is not staff.
func (s *Partners) Names(ctx context.Context) (map[string]string, error) {
	if err := ViewNames.Require(ctx); err != nil {
		return nil, err
	}
	ps, err := s.store.Partners(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		out[p.ID] = p.Name
	}
	return out, nil
}

// List returns every partner, newest first (emi.PermViewPartners).
func (s *Partners) List(ctx context.Context) ([]emi.Partner, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return s.store.Partners(ctx)
}

// Get returns a partner and its API keys, without secrets
// (emi.PermViewPartners). Returns emi.ErrPartnerNotFound.
func (s *Partners) Get(ctx context.Context, id string) (emi.Partner, []emi.PartnerKey, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Partner{}, nil, err
	}
	p, err := s.store.Partner(ctx, id)
	if err != nil {
		return emi.Partner{}, nil, err
	}
	keys, err := s.store.PartnerKeys(ctx, id)
	return p, keys, err
}

// Count returns the number of partners (emi.PermViewPartners).
func (s *Partners) Count(ctx context.Context) (int64, error) {
	if err := View.Require(ctx); err != nil {
		return 0, err
	}
	return s.store.CountPartners(ctx)
}

// Search finds partners by name, token or API key for the global search
// (emi.PermViewPartners; without it, no hits and no error).
func (s *Partners) Search(ctx context.Context, q string, limit int) ([]emi.SearchHit, error) {
	if View.Require(ctx) != nil {
		return nil, nil
	}
	ps, err := s.store.SearchPartners(ctx, q, limit)
	if err != nil {
		return nil, err
	}
	hits := make([]emi.SearchHit, len(ps))
	for i, p := range ps {
		hits[i] = emi.SearchHit{Kind: "partner", Token: p.ID, Title: p.Name, Detail: "merchant " + p.MasterMerchant}
	}
	return hits, nil
}
