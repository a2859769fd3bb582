package people

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/validate"
)

// UserStore keeps natural persons and the merchants they hang off.
type UserStore interface {
	// MerchantUsable reports whether merchant is the partner's master
	// merchant or a merchant onboarded under it.
	MerchantUsable(ctx context.Context, partnerID, merchant string) (bool, error)
	// InsertUser inserts u. Returns emi.ErrDuplicateUser when the e-mail
	// (any case) is taken under the same master merchant.
	InsertUser(ctx context.Context, u emi.User) error
	// User returns an active user of the partner ("" partnerID: any
	// partner, removed users included, for staff). Returns
	// emi.ErrUserNotFound.
	User(ctx context.Context, partnerID, token string) (emi.User, error)
	// UserForUpdate is User with the row locked (active users only).
	UserForUpdate(ctx context.Context, partnerID, token string) (emi.User, error)
	UpdateUser(ctx context.Context, u emi.User) error
	// RemoveUser archives the user.
	RemoveUser(ctx context.Context, u emi.User) error
	// UserHasProducts reports whether the user still has non-terminated
	// accounts or cards.
	UserHasProducts(ctx context.Context, token string) (bool, error)
	SetUserKYCStatus(ctx context.Context, token string, st emi.KYCStatus) error
	// Users lists users for staff, newest first (keyset pagination).
	Users(ctx context.Context, f emi.UserFilter) ([]emi.User, error)
	// ActiveUsersAfter pages through every active user by token.
	ActiveUsersAfter(ctx context.Context, afterToken string, limit int) ([]emi.User, error)
}

// Users manages natural persons (seed "User"): the partner API's user_*
// operations and the back office's people screens.
type Users struct {
	tx       kernel.TxRunner
	store    UserStore
	docs     DocumentStore
	aml      UserAML
	sealer   kernel.Sealer
	audit    *kernel.Auditor
	validate *validate.Validator
	names    NameNormalizer
	now      kernel.Clock
}

// AMLCheckReader reads an AML check of a partner (user creation checks the
// token it is given).
type AMLCheckReader interface {
	AMLCheck(ctx context.Context, partnerID, token string) (emi.AMLCheck, error)
}

// UserAML is the AML service as users need it: reading the check a user is
// created with, and screening a user again when their identity changes
// (*AML implements it).
type UserAML interface {
	AMLCheckReader
	ScreenUser(ctx context.Context, u emi.User) (emi.AMLCheck, error)
}

// identityFields are the user fields screening uses: changing one screens
// the user again.
var identityFields = []string{"first_name", "last_name", "birthday", "nationality"}

// NameNormalizer normalises a person's name for comparison (case,
// diacritics, punctuation, transliteration); the screening engine's.
type NameNormalizer func(string) string

// UsersDeps is what Users needs; NewUsers checks that none is nil.
type UsersDeps struct {
	Tx       kernel.TxRunner
	Store    UserStore
	Docs     DocumentStore
	AML      UserAML
	Sealer   kernel.Sealer
	Audit    *kernel.Auditor
	Validate *validate.Validator
	Names    NameNormalizer
	Now      kernel.Clock
}

// NewUsers returns the users service.
func NewUsers(d UsersDeps) *Users {
	kernel.MustHave("Users", d)
	return &Users{tx: d.Tx, store: d.Store, docs: d.Docs, aml: d.AML, sealer: d.Sealer, audit: d.Audit, validate: d.Validate, names: d.Names, now: d.Now}
}

// Create creates a user for the calling partner (user_create). Every
// problem is reported at once as -3 with field paths; a taken e-mail is -2.
func (s *Users) Create(ctx context.Context, in emi.UserCreate) (emi.User, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.PartnerID == "" {
		return emi.User{}, emi.ErrForbidden
	}
	in.Email = strings.TrimSpace(in.Email)
	var bad []emi.FieldError
	if err := s.validate.Struct(in, emi.ErrUserValidation); err != nil {
		e := emi.AsError(err)
		if !errors.Is(e, emi.ErrUserValidation) {
			return emi.User{}, err
		}
		bad = append(bad, e.Fields...)
	}
	docs, docErrs := DecodeDocuments("documents", in.Documents)
	bad = append(bad, docErrs...)
	partner, err := partnerOf(ctx)
	if err != nil {
		return emi.User{}, err
	}
	if in.Merchant == "" {
		in.Merchant = partner
	}
	if !hasField(bad, "merchant") {
		if fe, err := s.checkMerchant(ctx, p.PartnerID, in.Merchant); err != nil {
			return emi.User{}, err
		} else if fe != nil {
			bad = append(bad, *fe)
		}
	}
	if in.AML != "" && !hasField(bad, "aml") {
		if fe, err := s.checkAML(ctx, p.PartnerID, in.AML, in.UserFields); err != nil {
			return emi.User{}, err
		} else if fe != nil {
			bad = append(bad, *fe)
		}
	}
	if len(bad) > 0 {
		return emi.User{}, emi.ErrUserValidation.WithFields(bad...)
	}
	if in.Type == "" {
		in.Type = "default"
	}
	now := s.now.At(ctx).UTC()
	u := emi.User{
		UserFields: in.UserFields, Token: kernel.NewToken(), PartnerID: p.PartnerID, MasterMerchant: partner,
		Email: in.Email, AML: in.AML, RegistrationIP: in.RegistrationIP, Type: in.Type, Company: in.Company,
		Status: emi.UserActive, KYCStatus: emi.KYCNone, CreatedAt: now, UpdatedAt: now,
	}
	err = s.tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.InsertUser(ctx, u); err != nil {
			return err
		}
		stored, err := StoreDocuments(ctx, s.docs, s.sealer, p.PartnerID, "user", u.Token, docs, s.now)
		if err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "user.create", ResourceType: "user", ResourceToken: u.Token,
			Changes: map[string]any{"fields": setFields(in.UserFields), "merchant": u.Merchant, "type": u.Type,
				"aml": u.AML, "documents": len(stored)}})
	})
	if err != nil {
		return emi.User{}, err
	}
	return u, nil
}

// partnerOf returns the caller's master merchant.
func partnerOf(ctx context.Context) (string, error) {
	p, _ := emi.PrincipalFrom(ctx)
	if p.MasterMerchant == "" {
		return "", emi.Internal(errors.New("partner principal without master merchant"))
	}
	return p.MasterMerchant, nil
}

func hasField(fs []emi.FieldError, name string) bool {
	return slices.ContainsFunc(fs, func(f emi.FieldError) bool { return f.Field == name })
}

// checkMerchant: the caller's master merchant or one onboarded under it.
func (s *Users) checkMerchant(ctx context.Context, partnerID, merchant string) (*emi.FieldError, error) {
	ok, err := s.store.MerchantUsable(ctx, partnerID, merchant)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &emi.FieldError{Field: "merchant", Message: "must be your master merchant or a merchant onboarded under it"}, nil
	}
	return nil, nil
}

// checkAML: the caller's own check, clear or cleared, about this person
// (same normalised first and last names; same birthday when both have one).
func (s *Users) checkAML(ctx context.Context, partnerID, token string, f emi.UserFields) (*emi.FieldError, error) {
	c, err := s.aml.AMLCheck(ctx, partnerID, token)
	if errors.Is(err, emi.ErrAMLCheckNotFound) {
		return &emi.FieldError{Field: "aml", Message: "is not an AML check of yours"}, nil
	}
	if err != nil {
		return nil, err
	}
	if !c.Status.Usable() {
		return &emi.FieldError{Field: "aml", Message: "must be a clear or cleared AML check; this one is " + string(c.Status)}, nil
	}
	if s.personKey(f.FirstName, f.LastName) != s.personKey(c.FirstName, c.LastName) ||
		(f.Birthday != "" && c.Birthday != "" && f.Birthday != c.Birthday) {
		return &emi.FieldError{Field: "aml", Message: "is an AML check of another person (names or birthday differ)"}, nil
	}
	return nil, nil
}

// PersonKey is the normalised name as a sorted set of tokens.
func (s *Users) personKey(first, last string) string {
	return NormalizedName(s.names, first+" "+last)
}

// NormalizedName is name as screening compares it: normalised by norm,
// its words sorted (word order ignored).
func NormalizedName(norm NameNormalizer, name string) string {
	toks := strings.Fields(norm(name))
	slices.Sort(toks)
	return strings.Join(toks, " ")
}

// setFields names the profile fields that have a value (audit rows name the
// fields a change touched, never personal values).
func setFields(f emi.UserFields) []string {
	var out []string
	all := emi.UserFieldNames()
	empty := emi.UserFields{}
	for _, name := range all {
		if !fieldEqual(f, empty, name) {
			out = append(out, name)
		}
	}
	return out
}

// Details returns an active user of the caller (user_details).
func (s *Users) Details(ctx context.Context, token string) (emi.User, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.PartnerID == "" {
		return emi.User{}, emi.ErrUserNotFound
	}
	return s.store.User(ctx, p.PartnerID, token)
}

// Update changes the fields the partner sent (user_update); create-only
// fields are refused by the caller's decoding. The merged profile is checked
// as a whole: every problem at once, -3. A change of the name, birthday or
// nationality screens the person again in the same transaction (AML
// ScreenUser): a hit waits in the AML review queue and blocks the user's
// card operations until compliance decides it; with no list loaded the
// change is refused (18000).
func (s *Users) Update(ctx context.Context, token string, patch emi.UserPatch) (emi.User, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.PartnerID == "" {
		return emi.User{}, emi.ErrUserNotFound
	}
	var out emi.User
	err := s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.UserForUpdate(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		before := u.UserFields
		emi.ApplyUserPatch(&u.UserFields, patch)
		if u.Merchant == "" {
			u.Merchant = u.MasterMerchant
		}
		bad := append([]emi.FieldError(nil), patch.Refused...)
		if err := s.validate.Struct(u.UserFields, emi.ErrUserValidation); err != nil {
			e := emi.AsError(err)
			if !errors.Is(e, emi.ErrUserValidation) {
				return err
			}
			for _, f := range e.Fields {
				if !hasField(bad, f.Field) {
					bad = append(bad, f)
				}
			}
		}
		if patch.Present["merchant"] && !hasField(bad, "merchant") {
			fe, err := s.checkMerchant(ctx, p.PartnerID, u.Merchant)
			if err != nil {
				return err
			}
			if fe != nil {
				bad = append(bad, *fe)
			}
		}
		if len(bad) > 0 {
			return emi.ErrUserValidation.WithFields(bad...)
		}
		var changed []string
		for _, name := range emi.UserFieldNames() {
			if !fieldEqual(before, u.UserFields, name) {
				changed = append(changed, name)
			}
		}
		out = u
		if len(changed) == 0 {
			return nil
		}
		u.UpdatedAt = s.now.At(ctx).UTC()
		out = u
		if err := s.store.UpdateUser(ctx, u); err != nil {
			return err
		}
		changes := map[string]any{"fields": changed}
		if slices.ContainsFunc(changed, func(f string) bool { return slices.Contains(identityFields, f) }) {
			c, err := s.aml.ScreenUser(ctx, u)
			if err != nil {
				return err
			}
			changes["aml_check"], changes["aml_status"] = c.Token, c.Status
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "user.update", ResourceType: "user", ResourceToken: u.Token,
			Changes: changes})
	})
	return out, err
}

// Remove archives a user (user_remove): -4 while the user has
// non-terminated accounts or cards.
func (s *Users) Remove(ctx context.Context, token string) error {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.PartnerID == "" {
		return emi.ErrUserNotFound
	}
	return s.tx.InTx(ctx, func(ctx context.Context) error {
		u, err := s.store.UserForUpdate(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		has, err := s.store.UserHasProducts(ctx, u.Token)
		if err != nil {
			return err
		}
		if has {
			return emi.ErrUserHasProducts
		}
		now := s.now.At(ctx).UTC()
		u.Status, u.RemovedAt, u.UpdatedAt = emi.UserRemoved, &now, now
		if err := s.store.RemoveUser(ctx, u); err != nil {
			return err
		}
		return s.audit.Record(ctx, emi.AuditEntry{Action: "user.remove", ResourceType: "user", ResourceToken: u.Token})
	})
}

// Get returns any user, removed ones included, for staff (emi.PermViewPeople).
func (s *Users) Get(ctx context.Context, token string) (emi.User, []emi.StoredDocument, error) {
	if err := View.Require(ctx); err != nil {
		return emi.User{}, nil, err
	}
	u, err := s.store.User(ctx, "", token)
	if err != nil {
		return emi.User{}, nil, err
	}
	docs, err := s.docs.Documents(ctx, "user", u.Token)
	return u, docs, err
}

// List lists users for staff, newest first (emi.PermViewPeople).
func (s *Users) List(ctx context.Context, f emi.UserFilter) ([]emi.User, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	if f.Limit <= 0 || f.Limit > 100 {
		f.Limit = 50
	}
	f.Q = strings.TrimSpace(f.Q)
	if len(f.Q) > 200 {
		return nil, emi.ErrReviewValidation.Field("q", "must be at most 200 characters")
	}
	return s.store.Users(ctx, f)
}

// Search finds users for the back office's global search.
func (s *Users) Search(ctx context.Context, q string, limit int) ([]emi.SearchHit, error) {
	if View.Require(ctx) != nil {
		return nil, nil
	}
	us, err := s.store.Users(ctx, emi.UserFilter{Q: q, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]emi.SearchHit, 0, len(us))
	for _, u := range us {
		detail := u.Email
		if u.Status == emi.UserRemoved {
			detail += " (removed)"
		}
		out = append(out, emi.SearchHit{Kind: "user", Token: u.Token, Title: u.FullName(), Detail: detail})
	}
	return out, nil
}

// Document returns a document's metadata and content for staff
// (emi.PermViewPeople). Every view is audited: identity documents are the
// most sensitive data emi keeps.
func (s *Users) Document(ctx context.Context, token string) (emi.StoredDocument, []byte, error) {
	if err := View.Require(ctx); err != nil {
		return emi.StoredDocument{}, nil, err
	}
	d, enc, err := s.docs.Document(ctx, token)
	if err != nil {
		return d, nil, err
	}
	content, err := s.sealer.Open(enc, DocumentContext(d.Token))
	if err != nil {
		return d, nil, emi.Internal(err)
	}
	err = s.audit.Record(ctx, emi.AuditEntry{Action: "document.view", ResourceType: "document", ResourceToken: d.Token,
		PartnerID: d.PartnerID, Changes: map[string]any{"owner_type": d.OwnerType, "owner": d.OwnerToken, "document_type": d.DocumentType}})
	if err != nil {
		return d, nil, err
	}
	return d, content, nil
}

// fieldEqual compares the field with JSON name of two profiles.
func fieldEqual(a, b emi.UserFields, name string) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := 0; i < t.NumField(); i++ {
		n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if n == name {
			return reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface())
		}
	}
	return true
}
