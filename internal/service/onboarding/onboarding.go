package onboarding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	partnerssvc "emi/internal/service/partners"
	"emi/internal/service/people"
	"emi/internal/validate"
	"emi/internal/worker"
)

// ApplicationStore keeps applications, companies, members and check results.
type ApplicationStore interface {
	InsertApplication(ctx context.Context, a emi.Application) error
	// Application returns an application with company, members and checks
	// ("" partnerID: any partner); forUpdate locks its row.
	// Returns emi.ErrApplicationNotFound.
	Application(ctx context.Context, partnerID, token string, forUpdate bool) (emi.Application, error)
	// PendingApplications returns the tokens of the applications whose
	// checks may still change their course (checking, in review).
	PendingApplications(ctx context.Context) ([]string, error)
	// TouchApplication raises the revision after a change and, unless the
	// application is approved or rejected, sets its status to checking.
	TouchApplication(ctx context.Context, token string) (revision int, err error)
	UpsertCompany(ctx context.Context, partnerID, application string, c emi.CompanyFields) error
	InsertMember(ctx context.Context, m emi.Member) error
	// Member returns a member of an application. Returns emi.ErrMemberNotFound.
	Member(ctx context.Context, application, token string) (emi.Member, error)
	UpdateMember(ctx context.Context, m emi.Member) error
	SaveChecks(ctx context.Context, application string, revision int, checks []emi.CheckResult) error
	SetRisk(ctx context.Context, application, score string, points int, factors []emi.RiskFactor) error
	// Decide stores the application's new status (and, on approval, the
	// onboarded merchant).
	SetApplicationStatus(ctx context.Context, token string, st emi.ApplicationStatus, checkedRevision int, reason string, merchant string) error
	// InsertOnboardedMerchant creates the merchant of an approved
	// application with its MID and TID ("" when none). Returns
	// emi.ErrNonUniqueValue when the MID or TID is taken.
	InsertOnboardedMerchant(ctx context.Context, partnerID, token, name, application, mid, tid string) error
	Applications(ctx context.Context, f emi.ApplicationFilter) ([]emi.Application, error)
	Companies(ctx context.Context, q string, limit int) ([]emi.CompanyRow, error)
	// MembersLike finds members of any application that look like the same
	// person: same unique identifier, or same names and birthday.
	MembersLike(ctx context.Context, m emi.Member) ([]emi.Member, error)
	CountApplications(ctx context.Context, st emi.ApplicationStatus) (int64, error)
	// CheckHistory returns every stored result of an application's checks,
	// oldest first.
	CheckHistory(ctx context.Context, application string) ([]emi.CheckResult, error)
	// EnterQueue puts the application in the underwriters' queue from at
	// (kept when already set), due at due.
	EnterQueue(ctx context.Context, token string, at, due time.Time) error
	SetReviewFlags(ctx context.Context, token string, manualReview, sanctionsHit bool) error
	// HitDecisions returns the decisions on an application's sanctions
	// hits by hit key (HitKey).
	HitDecisions(ctx context.Context, application string) (map[string]emi.HitDecisionRecord, error)
}

// Onboarding runs legal-entity applications (seed v3, contract §6 and §8).
type Onboarding struct {
	tx       kernel.TxRunner
	store    ApplicationStore
	partners partnerssvc.PartnerStore
	users    people.UserStore
	docs     people.DocumentStore
	sealer   kernel.Sealer
	jobs     kernel.Enqueuer
	audit    *kernel.Auditor
	validate *validate.Validator
	now      kernel.Clock
	checks   *Checks
	iban     IBANValidator
}

// OnboardingDeps is what the onboarding service needs.
type OnboardingDeps struct {
	Tx       kernel.TxRunner
	Store    ApplicationStore
	Partners partnerssvc.PartnerStore
	Users    people.UserStore
	Docs     people.DocumentStore
	Sealer   kernel.Sealer
	Jobs     kernel.Enqueuer
	Audit    *kernel.Auditor
	Validate *validate.Validator
	// Checks explains an application's pending decision (its settle
	// period); build it first.
	Checks *Checks
	// IBAN checks payout IBANs (internal/iban).
	IBAN IBANValidator
	Now  kernel.Clock
}

// NewOnboarding returns the onboarding service.
func NewOnboarding(d OnboardingDeps) *Onboarding {
	kernel.MustHave("Onboarding", d)
	return &Onboarding{tx: d.Tx, store: d.Store, partners: d.Partners, users: d.Users, docs: d.Docs, sealer: d.Sealer,
		jobs: d.Jobs, audit: d.Audit, validate: d.Validate, now: d.Now, checks: d.Checks, iban: d.IBAN}
}

// JobApplicationChecks runs an application's automatic checks.
const JobApplicationChecks = "application.checks"

// checksPayload is the payload of JobApplicationChecks.
type checksPayload struct {
	Application string `json:"application"`
}

// enqueueChecks asks for a checks run, once while one is waiting.
func (o *Onboarding) enqueueChecks(ctx context.Context, token string) error {
	_, _, err := o.jobs.Enqueue(ctx, emi.JobSpec{Kind: JobApplicationChecks, Payload: checksPayload{Application: token},
		UniqueKey: "application.checks:" + token, MaxAttempts: 12})
	return err
}

// RescreenApplications is the JobRescreenApplications handler: it queues a
// checks run for every application in checking or in review. Information
// requested waits for the partner, whose change runs the checks anyway;
// decided applications are not screened again. Each run is its own job
// (keyed by this job, so a run already waiting or running for an earlier
// change does not swallow this one: it may have read the lists before the
// change).
func (o *Onboarding) RescreenApplications(ctx context.Context, job emi.Job) error {
	var pl kernel.RescreenApplicationsPayload
	if err := json.Unmarshal(job.Payload, &pl); err != nil {
		return worker.Permanent(fmt.Errorf("%s job %d: bad payload: %w", kernel.JobRescreenApplications, job.ID, err))
	}
	tokens, err := o.store.PendingApplications(ctx)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		if _, _, err := o.jobs.Enqueue(ctx, emi.JobSpec{Kind: JobApplicationChecks, Payload: checksPayload{Application: t},
			UniqueKey: fmt.Sprintf("application.checks:%s:rescreen:%d", t, job.ID), MaxAttempts: 12}); err != nil {
			return err
		}
	}
	return nil
}

// jsonFieldValue returns the value of the field with JSON name of a struct,
// and whether it is set (non-zero).
func jsonFieldSet(v any, name string) bool {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return false
		}
		rv = rv.Elem()
	}
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			if jsonFieldSet(rv.Field(i).Interface(), name) {
				return true
			}
			continue
		}
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n == name {
			return !rv.Field(i).IsZero()
		}
	}
	return false
}

// checkPayouts applies the payout rules: GBP needs sort code and account
// number, other currencies an IBAN; an amount is >= 0 with at most the
// currency's minor units.
func checkPayouts(p *kernel.Problems, pds []emi.PayoutDetail, validIBAN func(string) error) {
	for i, pd := range pds {
		path := "payout_details[" + strconv.Itoa(i) + "]"
		if pd.Amount != nil {
			switch {
			case pd.Amount.Negative():
				p.Add(path+".amount", "must be at least 0")
			case pd.Amount.Decimals() > minorUnits(pd.Currency):
				p.Add(path+".amount", fmt.Sprintf("must have at most %d decimals for %s", minorUnits(pd.Currency), pd.Currency))
			}
		}
		if pd.IBAN != "" {
			if err := validIBAN(pd.IBAN); err != nil {
				p.Add(path+".iban", "must be a valid IBAN: "+err.Error())
			}
		}
		if pd.Currency == "GBP" {
			if pd.SortCode == "" && !p.Has(path+".sort_code") {
				p.Add(path+".sort_code", "is required for GBP payouts")
			}
			if pd.AccountNumber == "" && !p.Has(path+".account_number") {
				p.Add(path+".account_number", "is required for GBP payouts")
			}
		} else if pd.Currency != "" && pd.IBAN == "" {
			p.Add(path+".iban", "is required for payouts in "+pd.Currency)
		}
	}
}

// minorUnits is the number of decimals of an ISO 4217 currency: 2 unless
// the currency is one of the few with 0 or 3.
func minorUnits(cur string) int {
	switch cur {
	case "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF":
		return 0
	case "BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND":
		return 3
	case "CLF", "UYW":
		return 4
	}
	return 2
}

// checkMember applies the member rules that tags cannot express.
func (o *Onboarding) checkMember(ctx context.Context, p *kernel.Problems, path, partnerID string, m emi.MemberAdd, cfg *emi.ValidatorConfig) error {
	if err := p.AddErr(path, o.validate.Struct(m, emi.ErrValidation)); err != nil {
		return err
	}
	checkOwnership(p, path, m.Type, m.MemberFields)
	if m.User != "" && !p.Has(join(path, "user")) {
		if _, err := o.users.User(ctx, partnerID, m.User); errors.Is(err, emi.ErrUserNotFound) {
			p.Add(join(path, "user"), "is not a user of yours")
		} else if err != nil {
			return err
		}
	}
	if cfg != nil {
		client := emi.ClientIndividual
		if slices.Contains(m.Type, "legal-entity") {
			client = emi.ClientLegalEntity
		}
		for _, f := range cfg.Members[client] {
			if !jsonFieldSet(m, f) && !p.Has(join(path, f)) {
				p.Add(join(path, f), "is required by your validator configuration for "+strings.ReplaceAll(client, "_", " ")+" members")
			}
		}
	}
	return nil
}

// checkOwnership: ownership and its percentage are for UBOs only.
func checkOwnership(p *kernel.Problems, path string, types []string, f emi.MemberFields) {
	if slices.Contains(types, "ubo") {
		return
	}
	if f.Ownership != nil && *f.Ownership {
		p.Add(join(path, "ownership"), "is for UBO members only")
	}
	if f.OwnershipPercentage != nil {
		p.Add(join(path, "ownership_percentage"), "is for UBO members only")
	}
}

// join is emi.JoinField: the path of field in the value at prefix, with
// no leading dot when prefix is "" (company_add_member checks the body
// itself, application_create members[i]).
func join(prefix, field string) string { return emi.JoinField(prefix, field) }

// checkCompany applies the company rules and the configuration's
// mandatory fields (by the application's products).
func (o *Onboarding) checkCompany(p *kernel.Problems, path string, c emi.CompanyFields, products []string, cfg *emi.ValidatorConfig) error {
	if err := p.AddErr(path, o.validate.Struct(c, emi.ErrValidation)); err != nil {
		return err
	}
	if cfg != nil {
		for _, f := range cfg.Company.Mandatory(products) {
			if !jsonFieldSet(c, f) && !p.Has(join(path, f)) {
				p.Add(join(path, f), "is required by your validator configuration")
			}
		}
	}
	return nil
}

// IBANValidator checks an IBAN; internal/iban implements it.
type IBANValidator func(string) error
