package onboarding

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/people"
)

// Create creates an application (application_create), with its company
// and members when sent, and starts the automatic checks. Every problem is
// reported at once (11001); a partner without a validator configuration
// gets 11008.
func (o *Onboarding) Create(ctx context.Context, in emi.ApplicationCreate) (emi.Application, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrForbidden)
	if err != nil {
		return emi.Application{}, err
	}
	cfg, err := o.partners.ValidatorConfig(ctx, p.PartnerID)
	if err != nil {
		return emi.Application{}, err
	}
	if cfg == nil {
		return emi.Application{}, emi.ErrValidatorConfigMissing
	}
	partner, err := o.partners.Partner(ctx, p.PartnerID)
	if err != nil {
		return emi.Application{}, err
	}
	var bad kernel.Problems
	if err := bad.AddErr("", o.validate.Struct(in, emi.ErrValidation)); err != nil {
		return emi.Application{}, err
	}
	if in.Merchant == "" {
		in.Merchant = p.MasterMerchant
	} else if in.Merchant != p.MasterMerchant && !bad.Has("merchant") {
		bad.Add("merchant", "must be your master merchant")
	}
	for _, f := range cfg.Application.Mandatory(in.Products) {
		if !jsonFieldSet(in, f) && !bad.Has(f) {
			bad.Add(f, "is required by your validator configuration")
		}
	}
	checkPayouts(&bad, in.PayoutDetails, o.iban)
	var docsByMember [][]people.DecodedDocument
	if in.Company != nil {
		if err := o.checkCompany(&bad, "company", *in.Company, in.Products, cfg); err != nil {
			return emi.Application{}, err
		}
	}
	for i, m := range in.Members {
		path := "members[" + strconv.Itoa(i) + "]"
		if err := o.checkMember(ctx, &bad, path, p.PartnerID, m, cfg); err != nil {
			return emi.Application{}, err
		}
		docs, derr := people.DecodeDocuments(path+".documents", m.Documents)
		bad = append(bad, derr...)
		docsByMember = append(docsByMember, docs)
	}
	if len(bad) > 0 {
		return emi.Application{}, emi.ErrValidation.WithFields(bad...)
	}
	now := o.now().UTC()
	a := emi.Application{Token: kernel.NewToken(), PartnerID: p.PartnerID, Merchant: in.Merchant, Products: in.Products,
		DueDiligence: in.DueDiligence, PayoutDetails: in.PayoutDetails, IPAddress: in.IPAddress, Fingerprint: in.Fingerprint,
		Processing: partner.Processing, Status: emi.AppChecking, Revision: 1, CreatedAt: now, UpdatedAt: now}
	return kernel.InTxRead(ctx, o.tx, func(ctx context.Context) error {
		if err := o.store.InsertApplication(ctx, a); err != nil {
			return err
		}
		if in.Company != nil {
			if err := o.store.UpsertCompany(ctx, p.PartnerID, a.Token, *in.Company); err != nil {
				return err
			}
		}
		for i, m := range in.Members {
			if _, err := o.insertMember(ctx, a, m, docsByMember[i]); err != nil {
				return err
			}
		}
		if err := o.enqueueChecks(ctx, a.Token); err != nil {
			return err
		}
		return o.audit.Record(ctx, emi.AuditEntry{Action: "application.create", ResourceType: "application", ResourceToken: a.Token,
			Changes: map[string]any{"products": a.Products, "due_diligence": a.DueDiligence, "company": in.Company != nil,
				"members": len(in.Members), "processing": a.Processing}})
	}, func(ctx context.Context) (emi.Application, error) {
		return o.store.Application(ctx, p.PartnerID, a.Token, false)
	})
}

func (o *Onboarding) insertMember(ctx context.Context, a emi.Application, in emi.MemberAdd, docs []people.DecodedDocument) (emi.Member, error) {
	now := o.now().UTC()
	m := emi.Member{MemberFields: in.MemberFields, Token: kernel.NewToken(), Application: a.Token, PartnerID: a.PartnerID,
		Status: "active", Type: in.Type, UIC: in.UIC, UniqueIdentifier: in.UniqueIdentifier, User: in.User,
		PlaceOfBirth: in.PlaceOfBirth, Birthday: in.Birthday, Nationality: in.Nationality, CreatedAt: now, UpdatedAt: now}
	if err := o.store.InsertMember(ctx, m); err != nil {
		return m, err
	}
	if _, err := people.StoreDocuments(ctx, o.docs, o.sealer, a.PartnerID, "member", m.Token, docs, o.now); err != nil {
		return m, err
	}
	return m, nil
}

// open locks the caller's application for a change: 11002 when unknown or
// foreign, 11003 once decided.
func (o *Onboarding) open(ctx context.Context, partnerID, token string) (emi.Application, error) {
	a, err := o.store.Application(ctx, partnerID, token, true)
	if err != nil {
		return a, err
	}
	if a.Status.Decided() {
		return a, emi.ErrApplicationClosed
	}
	return a, nil
}

// changed records a change: a new revision, status back to checking, a
// checks run queued, an audit row.
func (o *Onboarding) changed(ctx context.Context, a emi.Application, action string, changes map[string]any) error {
	if _, err := o.store.TouchApplication(ctx, a.Token); err != nil {
		return err
	}
	if err := o.enqueueChecks(ctx, a.Token); err != nil {
		return err
	}
	return o.audit.Record(ctx, emi.AuditEntry{Action: action, ResourceType: "application", ResourceToken: a.Token, Changes: changes})
}

// UpdateCompany sets the company's fields (company_update): the fields sent
// change, the others stay; the result is checked as a whole.
func (o *Onboarding) UpdateCompany(ctx context.Context, token string, in emi.CompanyFields, present map[string]bool) (emi.Application, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.Application{}, err
	}
	cfg, err := o.partners.ValidatorConfig(ctx, p.PartnerID)
	if err != nil {
		return emi.Application{}, err
	}
	return kernel.InTxRead(ctx, o.tx, func(ctx context.Context) error {
		a, err := o.open(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		c := emi.CompanyFields{}
		if a.Company != nil {
			c = *a.Company
		}
		applyPatch(&c, in, present)
		var bad kernel.Problems
		if err := o.checkCompany(&bad, "", c, a.Products, cfg); err != nil {
			return err
		}
		if len(bad) > 0 {
			return emi.ErrValidation.WithFields(bad...)
		}
		if err := o.store.UpsertCompany(ctx, p.PartnerID, a.Token, c); err != nil {
			return err
		}
		return o.changed(ctx, a, "company.update", map[string]any{"fields": sortedKeys(present)})
	}, func(ctx context.Context) (emi.Application, error) {
		return o.store.Application(ctx, p.PartnerID, token, false)
	})
}

// AddCompanyDocument adds a document to the company (company_add_document).
func (o *Onboarding) AddCompanyDocument(ctx context.Context, token string, d emi.Document) (emi.StoredDocument, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.StoredDocument{}, err
	}
	var out emi.StoredDocument
	err = o.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := o.open(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		doc, err := o.checkDocument(d)
		if err != nil {
			return err
		}
		stored, err := people.StoreDocuments(ctx, o.docs, o.sealer, p.PartnerID, "company", a.Token, []people.DecodedDocument{doc}, o.now)
		if err != nil {
			return err
		}
		out = stored[0]
		return o.changed(ctx, a, "company.add_document", map[string]any{"document": out.Token, "document_type": d.DocumentType})
	})
	return out, err
}

// checkDocument validates one document request (11001 with fields).
func (o *Onboarding) checkDocument(d emi.Document) (people.DecodedDocument, error) {
	var bad kernel.Problems
	if err := bad.AddErr("", o.validate.Struct(d, emi.ErrValidation)); err != nil {
		return people.DecodedDocument{}, err
	}
	if len(bad) == 0 {
		doc, fe := people.DecodeDocument("", d)
		if fe == nil {
			return doc, nil
		}
		bad = append(bad, *fe)
	}
	return people.DecodedDocument{}, emi.ErrValidation.WithFields(bad...)
}

// AddMember adds a member to the company (company_add_member).
func (o *Onboarding) AddMember(ctx context.Context, token string, in emi.MemberAdd) (emi.Member, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.Member{}, err
	}
	cfg, err := o.partners.ValidatorConfig(ctx, p.PartnerID)
	if err != nil {
		return emi.Member{}, err
	}
	var out emi.Member
	err = o.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := o.open(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		var bad kernel.Problems
		if err := o.checkMember(ctx, &bad, "", p.PartnerID, in, cfg); err != nil {
			return err
		}
		docs, derr := people.DecodeDocuments("documents", in.Documents)
		bad = append(bad, derr...)
		if len(bad) > 0 {
			return emi.ErrValidation.WithFields(bad...)
		}
		if out, err = o.insertMember(ctx, a, in, docs); err != nil {
			return err
		}
		return o.changed(ctx, a, "member.add", map[string]any{"member": out.Token, "type": in.Type, "documents": len(docs)})
	})
	return out, err
}

// UpdateMember changes a member (company_member_update): the fields sent
// change, status active/inactive included; add-only fields are refused.
func (o *Onboarding) UpdateMember(ctx context.Context, token, member string, patch emi.MemberPatch) (emi.Member, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.Member{}, err
	}
	cfg, err := o.partners.ValidatorConfig(ctx, p.PartnerID)
	if err != nil && !errors.Is(err, emi.ErrValidatorConfigMissing) {
		return emi.Member{}, err
	}
	var out emi.Member
	err = o.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := o.open(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		m, err := o.store.Member(ctx, a.Token, member)
		if err != nil {
			return err
		}
		bad := kernel.Problems(append([]emi.FieldError(nil), patch.Refused...))
		if err := o.patchMember(&bad, &m, patch); err != nil {
			return err
		}
		checkMemberNotCleared(&bad, m, patch.Present, cfg)
		if len(bad) > 0 {
			slices.SortStableFunc(bad, func(x, y emi.FieldError) int { return strings.Compare(x.Field, y.Field) })
			return emi.ErrValidation.WithFields(kernel.Dedupe(bad)...)
		}
		m.UpdatedAt = o.now().UTC()
		if err := o.store.UpdateMember(ctx, m); err != nil {
			return err
		}
		out = m
		return o.changed(ctx, a, "member.update", map[string]any{"member": m.Token, "fields": sortedKeys(patch.Present)})
	})
	return out, err
}

// checkMemberNotCleared refuses an update that empties a field the member
// must have: a field the partner's validator configuration requires for the
// member's client type (as company_add_member does), and the names of a
// natural person whatever the configuration, since the person could no
// longer be screened against the sanctions lists (first_name and last_name
// "" on the only owner left the sanctions check passed for a person with no
// name). Only fields the patch sends are checked, so an older member is not
// blocked by a rule added since.
func checkMemberNotCleared(p *kernel.Problems, m emi.Member, present map[string]bool, cfg *emi.ValidatorConfig) {
	client := emi.ClientIndividual
	if m.IsLegalEntity() {
		client = emi.ClientLegalEntity
	}
	required := map[string]string{}
	if client == emi.ClientIndividual {
		required["first_name"] = "must not be empty: a person is screened by name"
		required["last_name"] = "must not be empty: a person is screened by name"
	}
	if cfg != nil {
		for _, f := range cfg.Members[client] {
			if _, ok := required[f]; !ok {
				required[f] = "is required by your validator configuration for " + strings.ReplaceAll(client, "_", " ") + " members"
			}
		}
	}
	for f, msg := range required {
		if present[f] && !jsonFieldSet(m.MemberFields, f) && !p.Has(f) {
			p.Add(f, msg)
		}
	}
}

// AddMemberDocument adds a document to a member (company_member_add_document).
func (o *Onboarding) AddMemberDocument(ctx context.Context, token, member string, d emi.Document) (emi.StoredDocument, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.StoredDocument{}, err
	}
	var out emi.StoredDocument
	err = o.tx.InTx(ctx, func(ctx context.Context) error {
		a, err := o.open(ctx, p.PartnerID, token)
		if err != nil {
			return err
		}
		m, err := o.store.Member(ctx, a.Token, member)
		if err != nil {
			return err
		}
		doc, err := o.checkDocument(d)
		if err != nil {
			return err
		}
		stored, err := people.StoreDocuments(ctx, o.docs, o.sealer, p.PartnerID, "member", m.Token, []people.DecodedDocument{doc}, o.now)
		if err != nil {
			return err
		}
		out = stored[0]
		return o.changed(ctx, a, "member.add_document", map[string]any{"member": m.Token, "document": out.Token, "document_type": d.DocumentType})
	})
	return out, err
}

// Details returns an application of the caller (application_details).
func (o *Onboarding) Details(ctx context.Context, token string) (emi.Application, error) {
	p, err := kernel.PartnerCtx(ctx, emi.ErrApplicationNotFound)
	if err != nil {
		return emi.Application{}, err
	}
	return o.store.Application(ctx, p.PartnerID, token, false)
}

// Get returns any application, for staff (emi.PermViewApps), with the
// documents of the company and of each member.
func (o *Onboarding) Get(ctx context.Context, token string) (emi.Application, map[string][]emi.StoredDocument, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Application{}, nil, err
	}
	a, err := o.store.Application(ctx, "", token, false)
	if err != nil {
		return a, nil, err
	}
	docs := map[string][]emi.StoredDocument{}
	if docs["company"], err = o.docs.Documents(ctx, "company", a.Token); err != nil {
		return a, nil, err
	}
	for _, m := range a.Members {
		if docs[m.Token], err = o.docs.Documents(ctx, "member", m.Token); err != nil {
			return a, nil, err
		}
	}
	return a, docs, nil
}

// CheckHistory returns every stored check result of an application, for
// staff (emi.PermViewApps).
func (o *Onboarding) CheckHistory(ctx context.Context, token string) ([]emi.CheckResult, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	return o.store.CheckHistory(ctx, token)
}

// List lists applications for staff (emi.PermViewApps), newest first.
func (o *Onboarding) List(ctx context.Context, f emi.ApplicationFilter) ([]emi.Application, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 100
	}
	return o.store.Applications(ctx, f)
}

// Companies lists companies for staff (emi.PermViewApps): q matches the
// legal or trade name, uic, merchant token or partner name.
func (o *Onboarding) Companies(ctx context.Context, q string, limit int) ([]emi.CompanyRow, error) {
	if err := View.Require(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 200 {
		limit = 100
	}
	return o.store.Companies(ctx, strings.TrimSpace(q), limit)
}

// MemberRoles returns the member and every member of any application that
// looks like the same person (same unique identifier, or names and
// birthday), for staff (emi.PermViewApps).
func (o *Onboarding) MemberRoles(ctx context.Context, application, member string) (emi.Member, []emi.Member, error) {
	if err := View.Require(ctx); err != nil {
		return emi.Member{}, nil, err
	}
	m, err := o.store.Member(ctx, application, member)
	if err != nil {
		return m, nil, err
	}
	like, err := o.store.MembersLike(ctx, m)
	return m, like, err
}

// CountByStatus counts applications with a status, for the dashboard.
func (o *Onboarding) CountByStatus(ctx context.Context, st emi.ApplicationStatus) (int64, error) {
	if err := View.Require(ctx); err != nil {
		return 0, err
	}
	return o.store.CountApplications(ctx, st)
}

// ValidatorConfig returns a partner's configuration (emi.PermViewPartners).
func (o *Onboarding) ValidatorConfig(ctx context.Context, partnerID string) (*emi.ValidatorConfig, error) {
	if err := ViewValidator.Require(ctx); err != nil {
		return nil, err
	}
	return o.partners.ValidatorConfig(ctx, partnerID)
}

// SetValidatorConfig replaces a partner's configuration
// (emi.PermManagePartners); nil removes it. Every field it names must be a
// field of the application, company or member.
func (o *Onboarding) SetValidatorConfig(ctx context.Context, partnerID string, c *emi.ValidatorConfig) error {
	if err := ConfigureValidator.Require(ctx); err != nil {
		return err
	}
	if _, err := o.partners.Partner(ctx, partnerID); err != nil {
		return err
	}
	if c != nil {
		var bad kernel.Problems
		known := func(path string, v any, fields []string) {
			for _, f := range fields {
				if !hasJSONField(v, f) {
					bad.Add(path, "names an unknown field "+strconv.Quote(f))
				}
			}
		}
		known("application.always", emi.ApplicationCreate{}, c.Application.Always)
		for prod, fs := range c.Application.ByProduct {
			if !slices.Contains(emi.Products, prod) {
				bad.Add("application.by_product", "names an unknown product "+strconv.Quote(prod))
			}
			known("application.by_product."+prod, emi.ApplicationCreate{}, fs)
		}
		known("company.always", emi.CompanyFields{}, c.Company.Always)
		for prod, fs := range c.Company.ByProduct {
			if !slices.Contains(emi.Products, prod) {
				bad.Add("company.by_product", "names an unknown product "+strconv.Quote(prod))
			}
			known("company.by_product."+prod, emi.CompanyFields{}, fs)
		}
		for client, fs := range c.Members {
			if client != emi.ClientIndividual && client != emi.ClientLegalEntity {
				bad.Add("members", "names an unknown client type "+strconv.Quote(client)+" (individual or legal_entity)")
			}
			known("members."+client, emi.MemberAdd{}, fs)
		}
		if len(bad) > 0 {
			return emi.ErrPartnerValidation.WithFields(kernel.Dedupe(bad)...)
		}
	}
	return o.tx.InTx(ctx, func(ctx context.Context) error {
		if err := o.partners.SetValidatorConfig(ctx, partnerID, c); err != nil {
			return err
		}
		return o.audit.Record(ctx, emi.AuditEntry{Action: "partner.validator_config", ResourceType: "partner", ResourceToken: partnerID,
			PartnerID: partnerID, Changes: map[string]any{"config": c}})
	})
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
