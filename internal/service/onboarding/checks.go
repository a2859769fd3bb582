package onboarding

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	peoplesvc "emi/internal/service/people"
	"emi/internal/worker"
)

// Registry verifies companies against a trade register; internal/registry
// implements it (sandbox register, Companies House).
type Registry interface {
	// Lookup returns the company registered under uic in country, or
	// emi.ErrRegistryNotFound, or an error wrapping
	// emi.ErrProviderUnavailable.
	Lookup(ctx context.Context, country, uic string) (emi.RegistryRecord, error)
}

// AdverseMedia searches adverse media for names. The embedded provider is
// the watch list compliance keeps in the back office; a vendor (Dow Jones,
// ComplyAdvantage...) implements the same interface.
type AdverseMedia interface {
	Search(ctx context.Context, names []string) ([]peoplesvc.MediaHit, error)
}

// Checks runs the automatic checks of applications and decides them
// (contract §8). It runs as a background job after every change.
type Checks struct {
	tx       kernel.TxRunner
	store    ApplicationStore
	screener peoplesvc.Screener
	registry Registry
	media    AdverseMedia
	events   *kernel.Events
	audit    *kernel.Auditor
	risk     RiskModel
	now      kernel.Clock
	fps      FalsePositiveReader
	// namesMatch compares a submitted legal name with a registered one.
	namesMatch func(submitted, registered string) bool
	cal        BusinessCalendar
	// slaTarget is the business time an application may wait for an
	// underwriter.
	slaTarget time.Duration
	// settle is how long an automatic application stays unchanged before
	// it is decided (ChecksDeps.Settle; checks_settle.go).
	settle time.Duration
}

// FalsePositiveReader reads remembered false positives of a person.
type FalsePositiveReader interface {
	FalsePositives(ctx context.Context, partnerID string, personKey []byte) (map[string]int, error)
}

// ChecksDeps is what the checks runner needs.
type ChecksDeps struct {
	Tx       kernel.TxRunner
	Store    ApplicationStore
	Screener peoplesvc.Screener
	Registry Registry
	// Media is the adverse-media search (the watch list).
	Media  AdverseMedia
	Events *kernel.Events
	Audit  *kernel.Auditor
	Risk   RiskModel
	// FalsePositives is the remembered false positives of people (the
	// people store; a store, not the Users service, so no cycle).
	FalsePositives FalsePositiveReader
	// NamesMatch compares a submitted legal name with a registered one
	// (internal/registry's rule); nil: equal ignoring case.
	NamesMatch func(submitted, registered string) bool `deps:"optional"`
	// Settle is how long an automatic application stays unchanged before
	// it is decided (EMI_DECISION_SETTLE; 0: at once; checks_settle.go).
	Settle time.Duration
	Now    kernel.Clock
}

// NewChecks returns the checks runner. The review SLA counts business
// hours of DefaultCalendar, 24 of them per application.
func NewChecks(d ChecksDeps) *Checks {
	kernel.MustHave("Checks", d)
	return &Checks{tx: d.Tx, store: d.Store, screener: d.Screener, registry: d.Registry, media: d.Media, events: d.Events,
		audit: d.Audit, risk: d.Risk, now: d.Now, fps: d.FalsePositives, namesMatch: d.NamesMatch, settle: d.Settle,
		cal: DefaultCalendar(), slaTarget: 24 * time.Hour}
}

// slaLeft is the business time left between now and due on the review
// calendar (an information request pauses the SLA with it).
func (c *Checks) slaLeft(now, due time.Time) time.Duration { return c.cal.Between(now, due) }

// maxRuns bounds how often one job re-runs the checks because the
// application changed while they ran; then it retries later.
const maxRuns = 5

// Run is the JobApplicationChecks handler: it runs every check on a
// snapshot of the application, then, holding the application's row lock,
// stores the results only if nothing changed meanwhile (otherwise it runs
// again on the new data), and decides when every check has ended. A check
// in error makes the job retry with backoff; a check waiting for data
// waits for the partner's next change.
func (c *Checks) Run(ctx context.Context, job emi.Job) error {
	var pl checksPayload
	if err := json.Unmarshal(job.Payload, &pl); err != nil || pl.Application == "" {
		return worker.Permanent(fmt.Errorf("application.checks job %d: bad payload %s", job.ID, job.Payload))
	}
	ctx = emi.WithPrincipal(ctx, emi.SystemPrincipal("checks"))
	for run := 0; run < maxRuns; run++ {
		a, err := c.store.Application(ctx, "", pl.Application, false)
		if errors.Is(err, emi.ErrApplicationNotFound) {
			return worker.Permanent(err)
		}
		if err != nil {
			return err
		}
		if a.Status.Decided() {
			return nil
		}
		results, base := c.evaluate(ctx, a)
		stale := false
		errored := false
		var settling time.Duration
		err = c.tx.InTx(ctx, func(ctx context.Context) error {
			cur, err := c.store.Application(ctx, "", a.Token, true)
			if err != nil {
				return err
			}
			if cur.Status.Decided() {
				return nil
			}
			if cur.Revision != a.Revision {
				stale = true
				return nil
			}
			// The risk includes the screening and the hit decisions as they
			// are under the lock (a decision may have come meanwhile).
			factors, points, score, err := c.scoreRisk(ctx, a, base, results)
			if err != nil {
				return err
			}
			if err := c.store.SaveChecks(ctx, a.Token, a.Revision, results); err != nil {
				return err
			}
			if err := c.store.SetRisk(ctx, a.Token, score, points, factors); err != nil {
				return err
			}
			if err := c.store.SetReviewFlags(ctx, a.Token, cur.Review.ManualReview, sanctionsHit(results)); err != nil {
				return err
			}
			ended := true
			for _, r := range results {
				errored = errored || r.Status == emi.CheckError
				ended = ended && r.Status != emi.CheckPending && r.Status != emi.CheckError
			}
			if !ended {
				return c.store.SetApplicationStatus(ctx, a.Token, emi.AppChecking, a.Revision, "", "")
			}
			if settling = c.settleLeft(cur); settling > 0 {
				return nil // the results are stored; the decision waits (checks_settle.go)
			}
			return c.decide(ctx, cur, results, score)
		})
		if err != nil {
			return err
		}
		if stale {
			continue
		}
		if errored {
			return worker.RetryAfter(0, fmt.Errorf("application %s: a check provider failed; retrying", a.Token))
		}
		if settling > 0 {
			return worker.RetryAfter(settling, fmt.Errorf("application %s: decided once unchanged for %s", a.Token, c.settle))
		}
		return nil
	}
	return worker.RetryAfter(5*time.Second, fmt.Errorf("application %s kept changing during its checks", pl.Application))
}

// decide applies contract §8 once every check has ended, sends
// application.checks_completed, then the decision's event.
func (c *Checks) decide(ctx context.Context, a emi.Application, results []emi.CheckResult, score string) error {
	checks := make([]map[string]any, 0, len(results))
	failed, allPassed := []string{}, true
	for _, r := range results {
		checks = append(checks, map[string]any{"name": r.Name, "status": r.Status, "details": r.Details})
		if r.Status == emi.CheckFailed {
			failed = append(failed, r.Name)
		}
		allPassed = allPassed && r.Status == emi.CheckPassed
	}
	st := emi.AppInReview
	// An application an underwriter asked information about returns to
	// the queue, whatever the checks say.
	if a.Processing == emi.ProcessingAutomatic && !a.Review.ManualReview {
		switch {
		case len(failed) > 0:
			st = emi.AppRejected
		case allPassed && score != "High":
			st = emi.AppApproved
		}
	}
	if _, err := c.events.Emit(ctx, a.PartnerID, emi.EventApplicationChecksCompleted, "application", a.Token,
		map[string]any{"status": st, "risk_score": score, "checks": checks}); err != nil {
		return err
	}
	switch st {
	case emi.AppApproved:
		return c.approve(ctx, a, "", ApprovalGrounds(a, nil))
	case emi.AppRejected:
		reason := "automatic checks failed: " + strings.Join(failed, ", ")
		if err := c.store.SetApplicationStatus(ctx, a.Token, st, a.Revision, reason, ""); err != nil {
			return err
		}
		if _, err := c.events.Emit(ctx, a.PartnerID, emi.EventApplicationRejected, "application", a.Token,
			map[string]any{"status": st, "reason": reason}); err != nil {
			return err
		}
		return c.audit.Record(ctx, emi.AuditEntry{Action: "application.rejected", ResourceType: "application", ResourceToken: a.Token,
			PartnerID: a.PartnerID, Changes: map[string]any{"reason": reason, "automatic": true}})
	}
	if err := c.store.SetApplicationStatus(ctx, a.Token, st, a.Revision, "", ""); err != nil {
		return err
	}
	if a.Review.QueuedAt == nil || a.Review.SLADueAt == nil {
		left := c.slaTarget
		if a.Review.SLADueAt == nil && a.Review.SLALeft > 0 {
			left = a.Review.SLALeft // back from an information request: the clock resumes
		}
		now := c.now().UTC()
		if err := c.store.EnterQueue(ctx, a.Token, now, c.cal.Add(now, left)); err != nil {
			return err
		}
	}
	if a.Status == emi.AppInReview {
		return nil // already waiting for an underwriter: no second event
	}
	_, err := c.events.Emit(ctx, a.PartnerID, emi.EventApplicationInReview, "application", a.Token, map[string]any{"status": st})
	return err
}

// sanctionsHit reports whether the sanctions check raised hits.
func sanctionsHit(results []emi.CheckResult) bool {
	for _, r := range results {
		if r.Name == emi.CheckSanctions {
			if hs, ok := r.Details["hits"].([]map[string]any); ok && len(hs) > 0 {
				return true
			}
		}
	}
	return false
}

// approve creates the merchant (with a MID and TID for acquiring
// products) and sends application.approved. by is the second approver's
// staff id, "" for an automatic approval; grounds (ApprovalGrounds) go to
// the audit row, never to the partner.
func (c *Checks) approve(ctx context.Context, a emi.Application, by, grounds string) error {
	merchant := kernel.NewToken()
	var mid, tid string
	acquiring := slices.ContainsFunc(a.Products, emi.AcquiringProduct)
	name := ""
	if a.Company != nil {
		name = a.Company.LegalName
	}
	for attempt := 0; ; attempt++ {
		if acquiring {
			mid, tid = randomDigits(15), randomDigits(8)
		}
		// A savepoint, so that a taken MID or TID can be drawn again.
		err := c.tx.InTx(ctx, func(ctx context.Context) error {
			return c.store.InsertOnboardedMerchant(ctx, a.PartnerID, merchant, name, a.Token, mid, tid)
		})
		if err == nil {
			break
		}
		if !errors.Is(err, emi.ErrNonUniqueValue) || attempt >= 5 {
			return err
		}
	}
	if err := c.store.SetApplicationStatus(ctx, a.Token, emi.AppApproved, a.Revision, "", merchant); err != nil {
		return err
	}
	fields := map[string]any{"status": emi.AppApproved, "merchant": merchant}
	if acquiring {
		fields["mid"], fields["tid"] = mid, tid
	}
	if _, err := c.events.Emit(ctx, a.PartnerID, emi.EventApplicationApproved, "application", a.Token, fields); err != nil {
		return err
	}
	return c.audit.Record(ctx, emi.AuditEntry{Action: "application.approved", ResourceType: "application", ResourceToken: a.Token,
		PartnerID: a.PartnerID, Changes: map[string]any{"merchant": merchant, "mid": mid, "tid": tid, "automatic": by == "",
			"first_approval_by": a.Review.FirstApprovalBy, "grounds": grounds}})
}

// randomDigits returns n random decimal digits (the first not zero).
func randomDigits(n int) string {
	b := make([]byte, n)
	for i := range b {
		max := int64(10)
		if i == 0 {
			max = 9
		}
		v, _ := rand.Int(rand.Reader, big.NewInt(max))
		b[i] = byte('0' + v.Int64())
		if i == 0 {
			b[i]++
		}
	}
	return string(b)
}

// ready reports whether the application has what the person-dependent
// checks need: a company and at least one active UBO (contract §11).
func ready(a emi.Application) bool {
	if a.Company == nil {
		return false
	}
	for _, m := range a.Members {
		if m.Status == "active" && m.IsUBO() {
			return true
		}
	}
	return false
}

// evaluate runs every check on a snapshot. The risk check comes first and
// is completed by scoreRisk (it needs the screening's hits and their
// decisions); base is the risk model's factors before the screening.
func (c *Checks) evaluate(ctx context.Context, a emi.Application) (out []emi.CheckResult, base []emi.RiskFactor) {
	now := c.now().UTC()
	res := func(name, status string, details map[string]any) emi.CheckResult {
		return emi.CheckResult{Name: name, Status: status, Details: details, UpdatedAt: now}
	}
	waiting := map[string]any{"waiting_for": "the company and at least one active UBO member"}
	if ready(a) {
		base, _, _ = c.risk.Assess(a)
	}
	out = append(out, res(emi.CheckRisk, emi.CheckPending, waiting))
	out = append(out, c.tradeRegister(ctx, a, res))
	if ready(a) {
		out = append(out, c.sanctions(ctx, a, res), c.adverseMedia(ctx, a, res))
	} else {
		out = append(out, res(emi.CheckSanctions, emi.CheckPending, waiting), res(emi.CheckAdverseMedia, emi.CheckPending, waiting))
	}
	return out, base
}

// scoreRisk completes the risk check of results (evaluated on a, risk
// first): the model's factors plus the screening (an undecided or
// true-match sanctions hit makes the risk High; one decided a false
// positive does not). It reads the hit decisions, so Run calls it under the
// application's lock. Before the application is ready the risk stays
// pending and the score empty.
func (c *Checks) scoreRisk(ctx context.Context, a emi.Application, base []emi.RiskFactor, results []emi.CheckResult) ([]emi.RiskFactor, int, string, error) {
	if !ready(a) {
		return nil, 0, "", nil
	}
	decisions, err := c.store.HitDecisions(ctx, a.Token)
	if err != nil {
		return nil, 0, "", err
	}
	factors, points, score := c.risk.Screened(a, base, sanctionsHits(results), decisions)
	st := emi.CheckPassed
	if score == "High" {
		st = emi.CheckReview
	}
	i := slices.IndexFunc(results, func(r emi.CheckResult) bool { return r.Name == emi.CheckRisk })
	if i < 0 {
		return nil, 0, "", emi.Internal(errors.New("checks: no risk result to score"))
	}
	results[i] = emi.CheckResult{Name: emi.CheckRisk, Status: st, UpdatedAt: results[i].UpdatedAt,
		Details: map[string]any{"score": score, "points": points, "factors": factors}}
	return factors, points, score, nil
}

// Rescore recomputes the application's risk (score, points, factors) after
// a decision on one of its sanctions hits, from its stored risk factors and
// sanctions check: a hit decided a false positive stops making it High, a
// true match keeps it High with the decision in the breakdown. Runs inside
// the caller's transaction, which holds the application's row lock. The
// stored risk check (its history is the evidence) is left as it was run.
func (c *Checks) Rescore(ctx context.Context, a emi.Application) error {
	if a.RiskScore == "" {
		return nil // never scored: the next run scores it
	}
	decisions, err := c.store.HitDecisions(ctx, a.Token)
	if err != nil {
		return err
	}
	factors, points, score := c.risk.Screened(a, a.RiskFactors, sanctionsHits(a.Checks), decisions)
	return c.store.SetRisk(ctx, a.Token, score, points, factors)
}

type resultFunc func(name, status string, details map[string]any) emi.CheckResult

func (c *Checks) tradeRegister(ctx context.Context, a emi.Application, res resultFunc) emi.CheckResult {
	co := a.Company
	if co == nil || co.UIC == "" || co.Country == "" || co.LegalName == "" {
		return res(emi.CheckTradeRegister, emi.CheckPending, map[string]any{"waiting_for": "the company's uic, country and legal_name"})
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	rec, err := c.registry.Lookup(cctx, co.Country, co.UIC)
	switch {
	case errors.Is(err, emi.ErrRegistryNotFound):
		return res(emi.CheckTradeRegister, emi.CheckReview, map[string]any{"reason": "the register does not know this company",
			"uic": co.UIC, "country": co.Country})
	case err != nil:
		return res(emi.CheckTradeRegister, emi.CheckError, map[string]any{"reason": "the trade register could not be reached; retrying",
			"error": err.Error()})
	}
	d := map[string]any{"register": rec.Register, "uic": rec.UIC, "registered_name": rec.LegalName, "submitted_name": co.LegalName,
		"register_status": rec.Status, "address": rec.Address}
	if !rec.IncorporatedOn.IsZero() {
		d["incorporated_on"] = rec.IncorporatedOn.Format(time.DateOnly)
	}
	if !c.companyNamesMatch(co.LegalName, rec.LegalName) {
		d["reason"] = "the legal name differs from the registered name"
		return res(emi.CheckTradeRegister, emi.CheckFailed, d)
	}
	if rec.Status != "" && !strings.EqualFold(rec.Status, "active") {
		d["reason"] = "the register shows the company as " + rec.Status
		return res(emi.CheckTradeRegister, emi.CheckReview, d)
	}
	return res(emi.CheckTradeRegister, emi.CheckPassed, d)
}

func (c *Checks) companyNamesMatch(a, b string) bool {
	if c.namesMatch != nil {
		return c.namesMatch(a, b)
	}
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

func (c *Checks) sanctions(ctx context.Context, a emi.Application, res resultFunc) emi.CheckResult {
	var hits []map[string]any
	var declared []string
	version, suppressed := "", 0
	add := func(subject, token string, q emi.AMLQuery) error {
		v, hs, err := c.screener.Screen(q)
		if err != nil {
			return err
		}
		version = v
		key := peoplesvc.PersonKey(c.screener.Normalize, q.FirstName, q.LastName, q.Birthday)
		var fps map[string]int
		if c.fps != nil && len(hs) > 0 {
			if fps, err = c.fps.FalsePositives(ctx, a.PartnerID, key); err != nil {
				return err
			}
		}
		for _, h := range hs {
			// Every hit inside an application takes two people: only a
			// two-person memory answers it. A one-person memory is shown
			// beside the hit, which stays open.
			people := fps[peoplesvc.FalsePositiveKey(h.List, h.EntryID, h.Fingerprint)]
			if people >= 2 {
				suppressed++
				continue
			}
			hit := map[string]any{"subject": subject, "member": token, "list": h.List, "entry_id": h.EntryID,
				"name": h.Name, "matched_name": h.MatchedName, "score": h.Score, "fields": h.Fields,
				"fingerprint": h.Fingerprint, "person_key": hex.EncodeToString(key), "breakdown": h.Breakdown}
			if people == 1 {
				hit["remembered_false_positive"] = "decided by one person before: needs a two-person decision here"
			}
			hits = append(hits, hit)
		}
		return nil
	}
	co := a.Company
	if co.IsSIE != nil && *co.IsSIE {
		declared = append(declared, "the company is declared as appearing on a sanctions list (is_sie)")
	}
	for _, n := range kernel.UniqueNonEmpty(co.LegalName, co.TradeName) {
		if err := add("company", "", emi.CompanyAMLQuery(n, co.Country)); err != nil {
			return screeningError(res, err)
		}
	}
	for _, m := range a.ActiveMembers() {
		if m.IsSIP != nil && *m.IsSIP {
			declared = append(declared, "member "+m.DisplayName()+" is declared as appearing on a sanctions list (is_sip)")
		}
		q := emi.AMLQuery{FirstName: m.FirstName, LastName: m.LastName, Birthday: m.Birthday, Nationality: m.Nationality}
		if m.IsLegalEntity() || (m.FirstName == "" && m.LastName == "") {
			q = emi.CompanyAMLQuery(m.LegalName, m.Country, m.CountryOfResidence)
		}
		if q.LastName == "" {
			continue
		}
		if err := add("member", m.Token, q); err != nil {
			return screeningError(res, err)
		}
	}
	d := map[string]any{"list_version": version, "hits": hits, "screened": 1 + len(a.ActiveMembers()),
		"suppressed_false_positives": suppressed}
	switch {
	case len(declared) > 0:
		d["reason"] = strings.Join(declared, "; ")
		return res(emi.CheckSanctions, emi.CheckFailed, d)
	case len(hits) > 0:
		d["reason"] = fmt.Sprintf("%d possible match(es) on the sanctions lists need a compliance decision", len(hits))
		return res(emi.CheckSanctions, emi.CheckReview, d)
	}
	return res(emi.CheckSanctions, emi.CheckPassed, d)
}

func screeningError(res resultFunc, err error) emi.CheckResult {
	return res(emi.CheckSanctions, emi.CheckError, map[string]any{"reason": "screening unavailable; retrying", "error": err.Error()})
}

func (c *Checks) adverseMedia(ctx context.Context, a emi.Application, res resultFunc) emi.CheckResult {
	names := kernel.UniqueNonEmpty(a.Company.LegalName, a.Company.TradeName)
	for _, m := range a.ActiveMembers() {
		names = append(names, m.DisplayName())
	}
	names = kernel.UniqueNonEmpty(names...)
	hits, err := c.media.Search(ctx, names)
	if err != nil {
		return res(emi.CheckAdverseMedia, emi.CheckError, map[string]any{"reason": "adverse-media provider unavailable; retrying", "error": err.Error()})
	}
	d := map[string]any{"searched": names, "hits": hits}
	if len(hits) > 0 {
		d["reason"] = fmt.Sprintf("%d adverse-media finding(s) need a compliance decision", len(hits))
		return res(emi.CheckAdverseMedia, emi.CheckReview, d)
	}
	return res(emi.CheckAdverseMedia, emi.CheckPassed, d)
}

// applyPatch copies the fields of src whose JSON names are in present onto
// dst (both the same struct type, embedded structs followed).
func applyPatch[T any](dst *T, src T, present map[string]bool) {
	copyPresent(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src), present)
}

func copyPresent(dst, src reflect.Value, present map[string]bool) {
	t := dst.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			copyPresent(dst.Field(i), src.Field(i), present)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if present[name] {
			dst.Field(i).Set(src.Field(i))
		}
	}
}

// hasJSONField reports whether struct v has a field with that JSON name.
func hasJSONField(v any, name string) bool {
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if hasJSONField(reflect.Zero(f.Type).Interface(), name) {
				return true
			}
			continue
		}
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == name {
			return true
		}
	}
	return false
}

// toMap turns a struct into its JSON object.
func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
