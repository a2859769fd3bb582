package people

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	staffsvc "emi/internal/service/staff"
)

// KYCStore keeps KYC sessions.
type KYCStore interface {
	// OpenKYCSession returns the user's pending or submitted session and
	// its sealed URL secret. Returns emi.ErrKYCSessionNotFound.
	OpenKYCSession(ctx context.Context, userToken string) (emi.KYCSession, []byte, error)
	InsertKYCSession(ctx context.Context, s emi.KYCSession, secretHash, secretEnc []byte) error
	// KYCSessionBySecret finds a session by the SHA-256 of its URL secret,
	// locking it. Returns emi.ErrKYCSessionNotFound.
	KYCSessionBySecret(ctx context.Context, hash []byte) (emi.KYCSession, error)
	// KYCSession returns a session ("" partnerID: any partner), forUpdate
	// locks it. Returns emi.ErrKYCSessionNotFound.
	KYCSession(ctx context.Context, token string, forUpdate bool) (emi.KYCSession, error)
	UpdateKYCSession(ctx context.Context, s emi.KYCSession) error
	KYCSessions(ctx context.Context, f emi.KYCFilter) ([]emi.KYCSession, error)
	CountKYCSessions(ctx context.Context, st emi.KYCStatus) (int64, error)
	// ExpiredKYCSessions returns up to limit pending sessions whose link
	// expired at now: partnerID's, or ("") those of every partner not on a
	// test clock.
	ExpiredKYCSessions(ctx context.Context, partnerID string, now time.Time, limit int) ([]emi.KYCSession, error)
	// NextKYCExpiry returns the earliest expiry, at or before until, of
	// partnerID's pending sessions (false when none).
	NextKYCExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error)
}

// KYCProvider is where a person identifies. The hosted page is the built-in
// provider; an external KYC vendor implements the same interface (its
// session start returns the vendor's URL, its callbacks call Submit-like
// methods) and replaces it in the composition root.
type KYCProvider interface {
	// Name is stored with each session.
	Name() string
	// URL returns the address the person opens, for a session's secret.
	URL(secret string) string
}

// HostedKYC is the built-in provider: emi's own page at
// {EMI_PUBLIC_URL}/kyc/{secret}.
type HostedKYC struct{ PublicURL string }

// Name implements KYCProvider.
func (h HostedKYC) Name() string { return "hosted" }

// URL implements KYCProvider.
func (h HostedKYC) URL(secret string) string {
	return strings.TrimRight(h.PublicURL, "/") + "/kyc/" + secret
}

// KYCSessionTTL is how long a person may use the link.
const KYCSessionTTL = 7 * 24 * time.Hour

// KYC runs identification sessions (kyc_init, the hosted page, the review).
type KYC struct {
	tx       kernel.TxRunner
	store    KYCStore
	users    UserStore
	docs     DocumentStore
	sealer   kernel.Sealer
	provider KYCProvider
	events   *kernel.Events
	audit    *kernel.Auditor
	now      kernel.Clock
}

// KYCDeps is what KYC needs; NewKYC checks that none is nil.
type KYCDeps struct {
	Tx       kernel.TxRunner
	Store    KYCStore
	Users    UserStore
	Docs     DocumentStore
	Sealer   kernel.Sealer
	Provider KYCProvider
	Events   *kernel.Events
	Audit    *kernel.Auditor
	Now      kernel.Clock
}

// NewKYC returns the KYC service.
func NewKYC(d KYCDeps) *KYC {
	kernel.MustHave("KYC", d)
	return &KYC{tx: d.Tx, store: d.Store, users: d.Users, docs: d.Docs, sealer: d.Sealer, provider: d.Provider, events: d.Events, audit: d.Audit, now: d.Now}
}

// KYCSecretContext binds a KYC session's sealed secret to its row.
func KYCSecretContext(token string) string { return "kyc_sessions.secret:" + token }
func secretHash(secret string) []byte      { h := sha256.Sum256([]byte(secret)); return h[:] }

// Init starts identification for a user of the caller (kyc_init): the open
// session when there is one (same URL), a new one otherwise (created). 19001 once the
// user's KYC is approved; 11002 for unknown or foreign users.
func (k *KYC) Init(ctx context.Context, userToken string) (out emi.KYCSession, created bool, err error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.PartnerID == "" {
		return emi.KYCSession{}, false, emi.ErrUserNotFound
	}
	err = k.tx.InTx(ctx, func(ctx context.Context) error {
		created = false
		// The user's row lock serialises concurrent kyc_init calls.
		u, err := k.users.UserForUpdate(ctx, p.PartnerID, userToken)
		if err != nil {
			return err
		}
		if u.KYCStatus == emi.KYCApproved {
			return emi.ErrKYCAlreadyApproved
		}
		now := k.now.At(ctx).UTC()
		s, enc, err := k.store.OpenKYCSession(ctx, u.Token)
		switch {
		case err == nil && (s.Status == emi.KYCSubmitted || now.Before(s.ExpiresAt)):
			secret, err := k.sealer.Open(enc, KYCSecretContext(s.Token))
			if err != nil {
				return emi.Internal(err)
			}
			s.URL = k.provider.URL(string(secret))
			out = s
			return nil
		case err == nil:
			if err := k.setStatus(ctx, &s, emi.KYCExpired, now); err != nil {
				return err
			}
		case !errors.Is(err, emi.ErrKYCSessionNotFound):
			return err
		}
		secret := kernel.RandomString(32)
		s = emi.KYCSession{Token: kernel.NewToken(), PartnerID: p.PartnerID, UserToken: u.Token, Provider: k.provider.Name(),
			Status: emi.KYCPending, ExpiresAt: now.Add(KYCSessionTTL), CreatedAt: now, UpdatedAt: now}
		enc, err = k.sealer.Seal([]byte(secret), KYCSecretContext(s.Token))
		if err != nil {
			return emi.Internal(err)
		}
		if err := k.store.InsertKYCSession(ctx, s, secretHash(secret), enc); err != nil {
			return err
		}
		if err := k.userStatus(ctx, s, emi.KYCPending); err != nil {
			return err
		}
		if err := k.audit.Record(ctx, emi.AuditEntry{Action: "kyc.init", ResourceType: "kyc_session", ResourceToken: s.Token,
			Changes: map[string]any{"user": u.Token, "expires_at": s.ExpiresAt}}); err != nil {
			return err
		}
		s.URL = k.provider.URL(secret)
		out, created = s, true
		return nil
	})
	return out, created, err
}

// setStatus moves a session (and its user's kyc_status) and sends
// user.kyc_updated.
func (k *KYC) setStatus(ctx context.Context, s *emi.KYCSession, st emi.KYCStatus, now time.Time) error {
	s.Status, s.UpdatedAt = st, now
	if err := k.store.UpdateKYCSession(ctx, *s); err != nil {
		return err
	}
	return k.userStatus(ctx, *s, st)
}

func (k *KYC) userStatus(ctx context.Context, s emi.KYCSession, st emi.KYCStatus) error {
	if err := k.users.SetUserKYCStatus(ctx, s.UserToken, st); err != nil {
		return err
	}
	fields := map[string]any{"kyc_status": st, "kyc_session": s.Token}
	if s.Reason != "" && (st == emi.KYCRejected || st == emi.KYCApproved) {
		fields["reason"] = s.Reason
	}
	_, err := k.events.Emit(ctx, s.PartnerID, emi.EventUserKYCUpdated, "user", s.UserToken, fields)
	return err
}

// Page returns the session behind a hosted-page secret, for the person.
// An unknown secret and an expired pending session are both
// emi.ErrKYCLinkInvalid (the expired one is marked so).
func (k *KYC) Page(ctx context.Context, secret string) (emi.KYCSession, error) {
	var out emi.KYCSession
	if len(secret) < 20 || len(secret) > 100 {
		return out, emi.ErrKYCLinkInvalid
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("kyc.hosted"))
	err := k.tx.InTx(ctx, func(ctx context.Context) error {
		s, err := k.store.KYCSessionBySecret(ctx, secretHash(secret))
		if errors.Is(err, emi.ErrKYCSessionNotFound) {
			return emi.ErrKYCLinkInvalid
		}
		if err != nil {
			return err
		}
		now := k.now.At(ctx).UTC()
		if s.Status == emi.KYCPending && !now.Before(s.ExpiresAt) {
			if err := k.setStatus(ctx, &s, emi.KYCExpired, now); err != nil {
				return err
			}
		}
		out = s
		return nil
	})
	if err == nil && out.Status == emi.KYCExpired {
		return out, emi.ErrKYCLinkInvalid
	}
	return out, err
}

// kycImageTypes are what the hosted page accepts for the document photos
// (a PDF scan too) and the selfie (a photo).
var (
	kycDocumentTypes = []string{"image/jpeg", "image/png", "application/pdf"}
	kycSelfieTypes   = []string{"image/jpeg", "image/png"}
)

// Submit stores what the person sent from the hosted page and moves the
// session to submitted (user.kyc_updated). Every problem is reported at
// once (emi.ErrKYCUploadInvalid with fields front, back, selfie, consent,
// kind); emi.ErrKYCLinkUsed when the session is no longer pending.
func (k *KYC) Submit(ctx context.Context, secret string, up emi.KYCUpload) (emi.KYCSession, error) {
	var bad []emi.FieldError
	if !up.Consent {
		bad = append(bad, emi.FieldError{Field: "consent", Message: "Please confirm that you agree to the processing of your identity data."})
	}
	type file struct {
		field, docType string
		content        []byte
		allowed        []string
	}
	var files []file
	switch up.Kind {
	case "passport":
		files = append(files, file{"front", "passport", up.Front, kycDocumentTypes})
	case "idcard":
		files = append(files, file{"front", "idcard-front", up.Front, kycDocumentTypes}, file{"back", "idcard-back", up.Back, kycDocumentTypes})
	default:
		bad = append(bad, emi.FieldError{Field: "kind", Message: "Choose a passport or an ID card."})
	}
	files = append(files, file{"selfie", "selfie", up.Selfie, kycSelfieTypes})
	var docs []DecodedDocument
	for _, f := range files {
		switch {
		case len(f.content) == 0:
			bad = append(bad, emi.FieldError{Field: f.field, Message: "Please add this photo."})
		case len(f.content) > emi.MaxDocumentBytes:
			bad = append(bad, emi.FieldError{Field: f.field, Message: "This file is over 10 MiB."})
		default:
			ct := ""
			for _, want := range f.allowed {
				if sniffedAs(f.content, want) {
					ct = want
				}
			}
			if ct == "" {
				bad = append(bad, emi.FieldError{Field: f.field, Message: "This file is not a JPEG or PNG photo" + map[bool]string{true: " or a PDF.", false: "."}[len(f.allowed) > 2]})
				continue
			}
			// The pixel budget, from the image header only (decoding the
			// pixels of a decompression bomb is the harm).
			if msg := overPixelBudget(f.content, ct); msg != "" {
				bad = append(bad, emi.FieldError{Field: f.field, Message: "This photo is too large: " + msg + ". Please send a smaller photo."})
				continue
			}
			ft := map[string]string{"image/jpeg": "jpg", "image/png": "png", "application/pdf": "pdf"}[ct]
			docs = append(docs, DecodedDocument{Document: emi.Document{FileType: ft, DocumentType: f.docType}, content: f.content, contentType: ct})
		}
	}
	s, err := k.Page(ctx, secret)
	if err != nil {
		return s, err
	}
	if s.Status != emi.KYCPending {
		return s, emi.ErrKYCLinkUsed
	}
	if len(bad) > 0 {
		return s, emi.ErrKYCUploadInvalid.WithFields(bad...)
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("kyc.hosted"))
	err = k.tx.InTx(ctx, func(ctx context.Context) error {
		s, err = k.store.KYCSession(ctx, s.Token, true)
		if err != nil {
			return err
		}
		if s.Status != emi.KYCPending {
			return emi.ErrKYCLinkUsed
		}
		if _, err := StoreDocuments(ctx, k.docs, k.sealer, s.PartnerID, "kyc_session", s.Token, docs, k.now); err != nil {
			return err
		}
		now := k.now.At(ctx).UTC()
		s.DocumentKind, s.ConsentAt, s.SubmittedAt = up.Kind, &now, &now
		if err := k.setStatus(ctx, &s, emi.KYCSubmitted, now); err != nil {
			return err
		}
		return k.audit.Record(ctx, emi.AuditEntry{Action: "kyc.submit", ResourceType: "kyc_session", ResourceToken: s.Token,
			PartnerID: s.PartnerID, Changes: map[string]any{"user": s.UserToken, "kind": up.Kind, "documents": len(docs)}})
	})
	return s, err
}

// Get returns a session with its documents, for compliance
// (emi.PermViewPeople).
func (k *KYC) Get(ctx context.Context, token string) (emi.KYCSession, []emi.StoredDocument, error) {
	if err := View.Require(ctx); err != nil {
		return emi.KYCSession{}, nil, err
	}
	s, err := k.store.KYCSession(ctx, token, false)
	if err != nil {
		return s, nil, err
	}
	docs, err := k.docs.Documents(ctx, "kyc_session", s.Token)
	return s, docs, err
}

// List lists sessions for the back office, a page at a time (f.After), in
// f.Sort's order; by default the review queue (status submitted) oldest
// submission first, the other tabs newest first (emi.PermViewPeople). An
// unknown order or a cursor that is not a token is a validation error.
func (k *KYC) List(ctx context.Context, f emi.KYCFilter) ([]emi.KYCSession, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 100
	}
	if err := checkListPage(emi.KYCSortKeys, f.Sort, f.After); err != nil {
		return nil, err
	}
	return k.store.KYCSessions(ctx, f)
}

// QueueSize counts the sessions waiting for review.
func (k *KYC) QueueSize(ctx context.Context) (int64, error) {
	if err := View.Require(ctx); err != nil {
		return 0, err
	}
	return k.store.CountKYCSessions(ctx, emi.KYCSubmitted)
}

// CanDecideKYC reports whether the staff member of ctx may decide session s
// now, by Decide's rules: a submitted session, and the decision table's
// KYC decider.
func CanDecideKYC(ctx context.Context, s emi.KYCSession) bool {
	return s.Status == emi.KYCSubmitted && staffsvc.ApproveOp(staffsvc.ControlKYCDecision).Allowed(ctx)
}

// Decide approves or rejects a submitted session (emi.PermReviewKYC) with
// a mandatory partner-facing reason (3 to 2,000 characters) and an internal
// note (up to 4,000 characters; at least 3 for a rejection). Only the
// reason leaves emi, in user.kyc_updated; the internal note is kept on the
// session for staff and in the audit row. The user's kyc_status follows;
// after a rejection the partner may start a new session.
func (k *KYC) Decide(ctx context.Context, token string, d emi.KYCDecision) (emi.KYCSession, error) {
	if err := staffsvc.ApproveOp(staffsvc.ControlKYCDecision).Require(ctx); err != nil {
		return emi.KYCSession{}, err
	}
	reason, note := strings.TrimSpace(d.Reason), strings.TrimSpace(d.InternalNote)
	var bad kernel.Problems
	if len(reason) < 3 || len(reason) > 2000 {
		bad.Add("reason", "must be 3 to 2,000 characters")
	}
	switch {
	case len(note) > 4000:
		bad.Add("internal_note", "must be at most 4,000 characters")
	case !d.Approve && len(note) < 3:
		bad.Add("internal_note", "a rejection needs an internal note with the real grounds (3 to 4,000 characters; never sent to the partner)")
	}
	if len(bad) > 0 {
		return emi.KYCSession{}, emi.ErrReviewValidation.WithFields(bad...)
	}
	staff, _ := emi.PrincipalFrom(ctx)
	var out emi.KYCSession
	err := k.tx.InTx(ctx, func(ctx context.Context) error {
		s, err := k.store.KYCSession(ctx, token, true)
		if err != nil {
			return err
		}
		if s.Status != emi.KYCSubmitted {
			return emi.ErrReviewClosed.WithDetail("session is %s", s.Status)
		}
		now := k.now.At(ctx).UTC()
		st := emi.KYCRejected
		if d.Approve {
			st = emi.KYCApproved
		}
		s.ReviewedAt, s.ReviewedBy, s.Reason, s.InternalNote = &now, staff.ActorID, reason, note
		if err := k.setStatus(ctx, &s, st, now); err != nil {
			return err
		}
		out = s
		return k.audit.Record(ctx, emi.AuditEntry{Action: "kyc.review", ResourceType: "kyc_session", ResourceToken: s.Token,
			PartnerID: s.PartnerID, Changes: map[string]any{"user": s.UserToken, "status": st, "reason": reason,
				"internal_note": note}})
	})
	return out, err
}

// ExpireSessions marks expired the pending sessions whose link lapsed
// (KYCSessionTTL) and tells the partner (user.kyc_updated, kyc_status
// expired), so it can start a new one with kyc_init instead of finding out
// when the person's link fails. The maintenance job runs it for every
// partner not on a test clock; a test clock's advance runs it for its
// partner (partnerID), at the clock's time. kyc_init and the hosted page
// still expire a lapsed session they meet first. Returns how many it
// expired.
func (k *KYC) ExpireSessions(ctx context.Context, partnerID string) (int, error) {
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("kyc-expiry"))
	n := 0
	for {
		now := k.now.At(ctx).UTC()
		due, err := k.store.ExpiredKYCSessions(ctx, partnerID, now, 100)
		if err != nil || len(due) == 0 {
			return n, err
		}
		progress := false
		for _, d := range due {
			expired := false
			err := k.tx.InTx(ctx, func(ctx context.Context) error {
				expired = false
				// The user's row first, as kyc_init takes it.
				if _, err := k.users.UserForUpdate(ctx, d.PartnerID, d.UserToken); err != nil {
					return err
				}
				s, err := k.store.KYCSession(ctx, d.Token, true)
				if err != nil {
					return err
				}
				if s.Status != emi.KYCPending || now.Before(s.ExpiresAt) {
					return nil // submitted or replaced meanwhile
				}
				if err := k.setStatus(ctx, &s, emi.KYCExpired, now); err != nil {
					return err
				}
				expired = true
				return k.audit.Record(ctx, emi.AuditEntry{Action: "kyc.expired", ResourceType: "kyc_session", ResourceToken: s.Token,
					Changes: map[string]any{"user": s.UserToken, "expires_at": s.ExpiresAt}})
			})
			if err != nil {
				return n, err
			}
			if expired {
				n++
				progress = true
			}
		}
		if !progress {
			return n, nil
		}
	}
}

// NextExpiry returns the earliest link expiry, at or before until, of
// partnerID's pending sessions.
func (k *KYC) NextExpiry(ctx context.Context, partnerID string, until time.Time) (time.Time, bool, error) {
	return k.store.NextKYCExpiry(ctx, partnerID, until)
}
