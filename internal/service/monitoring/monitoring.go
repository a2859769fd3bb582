package monitoring

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// Kinds of money movement (contract §12's kinds, plus the declined card
// authorizations that card testing counts).
const (
	KindIncoming         = "incoming"          // funds from outside: SEPA, Faster Payments, card top-up
	KindTransferOut      = "transfer_out"      // to an external IBAN
	KindTransferInternal = "transfer_internal" // between two emi accounts: one movement per side
	KindCardPayment      = "card_payment"
	KindCardWithdrawal   = "card_withdrawal"
)

// Directions of a movement for its subject.
const (
	In  = "in"
	Out = "out"
)

// Subject kinds: the customer whose account a movement moves.
const (
	SubjectUser     = "user"
	SubjectMerchant = "merchant"
)

// Subject is whom a movement is monitored for.
type Subject struct {
	Kind  string `json:"kind"`
	Token string `json:"token"`
}

// Movement is one money movement as monitoring sees it.
type Movement struct {
	ID        int64
	PartnerID string
	Subject   Subject
	Account   string
	Program   string
	Kind      string
	Direction string
	Amount    int64 // minor units of Currency
	Currency  string
	EUR       int64 // minor units, at the reference rates (fx.go)
	// CounterpartyKey identifies the other side without keeping it in
	// clear (a hash of its IBAN, or of the card merchant's name), for the
	// distinct-counterparty windows; CounterpartyCountry is its ISO 3166
	// alpha-2 country (IBAN prefix or merchant country); MCC the card
	// merchant's category code.
	CounterpartyKey     string
	CounterpartyCountry string
	MCC                 string
	Declined            bool
	At                  time.Time
	// Ref is the importer's reference (contract §12); Source the token
	// of the transfer or authorization that booked it.
	Ref    string
	Source string
	// Screened: the rules that stop money looked at it before it was
	// booked (screen.go); the after-the-fact evaluation skips them.
	Screened bool
}

// CounterpartyKey returns the key of a counterparty identifier (an IBAN,
// a merchant name): stable, not reversible to the identifier by reading
// the table.
func CounterpartyKey(identifier string) string {
	id := strings.ToUpper(strings.Join(strings.Fields(identifier), ""))
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("emi monitoring counterparty\x00" + id))
	return hex.EncodeToString(sum[:16])
}

// IBANCountry returns the country of an IBAN ("" when it has none).
func IBANCountry(iban string) string {
	iban = strings.ToUpper(strings.TrimSpace(iban))
	if len(iban) < 2 || iban[0] < 'A' || iban[0] > 'Z' || iban[1] < 'A' || iban[1] > 'Z' {
		return ""
	}
	return iban[:2]
}

// Hit is one rule's finding on one movement.
type Hit struct {
	Rule     string    `json:"rule"`
	Version  int       `json:"version"`
	Score    int       `json:"score"`
	Sentence string    `json:"sentence"`
	Movement int64     `json:"movement"`
	Ref      string    `json:"ref,omitempty"`
	At       time.Time `json:"at"`
}

// Alert is a subject's monitoring alert: the hits that raised it, open
// until compliance works it.
type Alert struct {
	Token     string    `json:"alert"`
	PartnerID string    `json:"partner"`
	Subject   Subject   `json:"subject"`
	Status    string    `json:"status"`
	Score     int       `json:"score"`
	Hits      []Hit     `json:"hits"`
	RaisedAt  time.Time `json:"raised_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Case is the case the alert joined ("" none).
	Case string `json:"-"`
}

// Alert statuses.
const (
	AlertOpen   = "open"
	AlertClosed = "closed"
	// AlertInCase: the alert joined a case and left the queue.
	AlertInCase = "in_case"
)

// Rules returns the distinct rule codes of the alert's hits, in the order
// they first fired.
func (a Alert) Rules() []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range a.Hits {
		if !seen[h.Rule] {
			seen[h.Rule] = true
			out = append(out, h.Rule)
		}
	}
	return out
}

// Refs returns the importer references of the movements that raised the
// alert, in order, once each.
func (a Alert) Refs() []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range a.Hits {
		if h.Ref != "" && !seen[h.Ref] {
			seen[h.Ref] = true
			out = append(out, h.Ref)
		}
	}
	return out
}

// AlertFilter selects alerts.
type AlertFilter struct {
	PartnerID string
	Since     time.Time
	Status    string
	Limit     int
}

// Store keeps movements, rules and alerts.
type Store interface {
	// SubjectOf returns the owner and program of an account of the
	// partner (false when the partner has no such account).
	SubjectOf(ctx context.Context, partnerID, account string) (Subject, string, bool, error)
	// InsertMovement records m, and also in the same statement, and
	// returns m's id.
	InsertMovement(ctx context.Context, m Movement, also ...Movement) (int64, error)
	// PendingSubjects returns up to limit subjects with movements not yet
	// evaluated.
	PendingSubjects(ctx context.Context, limit int) ([]Subject, error)
	// LockSubject serialises the evaluations of one subject until the
	// transaction ends.
	LockSubject(ctx context.Context, s Subject) error
	// Unevaluated returns the subject's movements not yet evaluated, by
	// time, locked.
	Unevaluated(ctx context.Context, s Subject, limit int) ([]Movement, error)
	MarkEvaluated(ctx context.Context, ids []int64, at time.Time) error
	// Window aggregates the subject's movements the query selects.
	Window(ctx context.Context, s Subject, q WindowQuery) (WindowStats, error)
	// PreviousMovement returns the time of the subject's last movement
	// before at other than id (false when none), and when the subject's
	// first account was opened.
	PreviousMovement(ctx context.Context, s Subject, at time.Time, id int64) (time.Time, bool, error)
	Profile(ctx context.Context, s Subject) (Profile, error)
	// Rules returns every rule's current version, per program ("" the
	// default).
	Rules(ctx context.Context) ([]Rule, error)
	// OpenAlert returns the subject's open alert, locked.
	OpenAlert(ctx context.Context, s Subject) (Alert, bool, error)
	InsertAlert(ctx context.Context, a Alert) error
	UpdateAlert(ctx context.Context, a Alert) error
	Alerts(ctx context.Context, f AlertFilter) ([]Alert, error)
	CountPending(ctx context.Context) (int64, error)
	// AlertViews returns open alerts with their subject's and partner's
	// names, oldest first; AlertView one alert (false when none).
	AlertViews(ctx context.Context, limit int) ([]AlertView, error)
	AlertView(ctx context.Context, token string) (AlertView, bool, error)
	CountOpen(ctx context.Context) (int64, error)

	// LockRule locks the current version of a rule for a program ("" the
	// default); false when the program has no override.
	LockRule(ctx context.Context, code, program string) (Rule, bool, error)
	// ApplyRule makes r the current version of its rule and program.
	ApplyRule(ctx context.Context, r Rule) error
	ProgramExists(ctx context.Context, code string) (bool, error)
	InsertRuleChange(ctx context.Context, request string, base int, c RuleChange, bt Backtest) error
	// RuleChange returns the proposal of a request; RuleChanges every
	// proposal whose request is pending.
	RuleChange(ctx context.Context, request string) (PendingRuleChange, error)
	RuleChanges(ctx context.Context) ([]PendingRuleChange, error)
	// RecentMovements returns up to limit of the newest movements after
	// since, in (time, id) order, and whether there were more.
	RecentMovements(ctx context.Context, since time.Time, limit int) ([]Movement, bool, error)
	// InsertShadowHits records what rules in shadow mode found;
	// ShadowCounts counts them by rule since a time.
	InsertShadowHits(ctx context.Context, hits []ShadowHit) error
	ShadowCounts(ctx context.Context, since time.Time) (map[string]int64, error)

	// LockScreen serialises the screening of one subject's bookings until
	// the transaction ends (a lock apart from LockSubject's, so a booking
	// never waits for an after-the-fact evaluation), and returns the time
	// of the subject's latest movement (zero when none).
	LockScreen(ctx context.Context, s Subject) (time.Time, error)
	// MarkDeclined marks a movement declined.
	MarkDeclined(ctx context.Context, id int64) error
	InsertHold(ctx context.Context, h Hold) error
	// LockHold returns a transfer's hold, locked.
	LockHold(ctx context.Context, transfer string) (Hold, bool, error)
	DecideHold(ctx context.Context, transfer, status, by string, at time.Time, reason string) error
	Holds(ctx context.Context, f HoldFilter) ([]Hold, error)
	// CaseOfAlert returns the case an alert joined ("" none), and
	// InsertCaseEvent adds to a case's timeline (a held transfer decided
	// from the alert shows in its case).
	CaseOfAlert(ctx context.Context, alert string) (string, error)
	InsertCaseEvent(ctx context.Context, e CaseEvent) error
	// SubjectsOf is SubjectOf for many accounts at once: the subject and
	// program of each account the partner owns, by account
	// (RecordUnqueuedBatch).
	SubjectsOf(ctx context.Context, partnerID string, accounts []string) (map[string]AccountSubject, error)
	// InsertMovements inserts movements as InsertMovement inserts each, in
	// one statement.
	InsertMovements(ctx context.Context, ms []Movement) error
	// SubjectMovements returns up to limit of the subject's movements
	// whose time is after `after`, up to the movement (to, toID) in the
	// order of (time, id), in that order, with the fields a window reads
	// (ID, Subject, Kind, Direction, EUR, CounterpartyKey, Declined, At),
	// for subjectWindows.
	SubjectMovements(ctx context.Context, s Subject, after, to time.Time, toID int64, limit int) ([]Movement, error)
}

// ShadowHit is a finding of a rule in shadow mode: counted, never raised.
type ShadowHit struct {
	Rule     string
	Version  int
	Program  string
	Subject  Subject
	Movement int64
	At       time.Time
}

// AlertView is an alert as the back office shows it: with the names of its
// subject (a person's name, a merchant's) and partner.
type AlertView struct {
	Alert
	SubjectName string
	PartnerName string
}

// WindowQuery selects a subject's movements: a direction, some kinds, a
// window that starts after From and ends at a movement (To, ToID) in the
// order of (time, id), that movement included unless Excluding, and
// optionally an amount range in EUR minor units [MinEUR, MaxEUR) (0: no
// bound) and declined authorizations only (Declined) or approved ones
// only. Ending at a movement rather than at a time keeps movements of the
// same instant apart: each is evaluated with exactly those recorded
// before it.
type WindowQuery struct {
	Direction      string
	Kinds          []string
	From, To       time.Time
	ToID           int64
	Excluding      bool
	MinEUR, MaxEUR int64
	Declined       bool
}

// WindowStats are the aggregates of a window.
type WindowStats struct {
	Count                int64
	SumEUR               int64
	DistinctCounterparts int64
}

// Profile is what the customer declared at onboarding, as the rules read
// it: the store fills the bands and the risk score as declared; derive
// adds the monthly bands' upper bounds in EUR minor units and the
// expected incoming transfers per month (0: not declared, or unbounded:
// "More than 15 000 EUR", "More than 6 times").
type Profile struct {
	IncomingMonthlyEUR int64
	OutgoingMonthlyEUR int64
	IncomingPerMonth   int64 // expected incoming transfers per month (0: not declared)
	IncomingBand       string
	OutgoingBand       string
	FrequencyBand      string
	Risk               string
}

// Monitor records movements and evaluates them.
type Monitor struct {
	controls *staff.Controls
	tx       kernel.TxRunner
	store    Store
	jobs     kernel.Enqueuer
	audit    *kernel.Auditor
	now      kernel.Clock
	sandbox  bool
	off      bool
	cache    ruleCache
	subjects subjectCache
	// committed runs the evaluation's queueing after a booking commits
	// (queueAfterCommit); nudges and nudging are its coalescing.
	committed kernel.Committer
	nudges    chan struct{}
	nudging   atomic.Bool
}

// Deps is what Monitor needs; NewMonitor checks that none is nil.
type Deps struct {
	// Controls runs the two-person lifecycle of rule changes.
	Controls *staff.Controls
	Tx       kernel.TxRunner
	// Committed runs the evaluation's queueing once a booking committed.
	Committed kernel.Committer
	Store     Store
	Jobs      kernel.Enqueuer
	Audit     *kernel.Auditor
	Now       kernel.Clock
	// Sandbox allows importing histories (contract §12).
	Sandbox bool `deps:"optional"`
	// Off switches monitoring off: Record, RecordUnqueued, Screen (a
	// zero Verdict), Declined, RecordDeclined, Held and Schedule do
	// nothing. Benchmarks compare with it (config.Config.BenchMonitoringOff,
	// set in code by apptest); no configuration sets it.
	Off bool `deps:"optional"`
}

// NewMonitor returns the monitor.
func NewMonitor(d Deps) *Monitor {
	kernel.MustHave("Monitor", d)
	return &Monitor{controls: d.Controls, tx: d.Tx, committed: d.Committed, store: d.Store, jobs: d.Jobs, audit: d.Audit, now: d.Now,
		sandbox: d.Sandbox, off: d.Off, nudges: make(chan struct{}, 1)}
}

// JobEvaluate is the background job that evaluates recorded movements.
const JobEvaluate = "monitoring.evaluate"

// Record records a movement of the partner's account in the transaction
// of ctx, and queues its evaluation once that transaction commits (so that
// the evaluation sees it with every movement committed before). An account
// the partner does not own records nothing: the booking code checked it
// already.
func (m *Monitor) Record(ctx context.Context, mv Movement) error {
	if err := m.RecordUnqueued(ctx, mv); err != nil {
		return err
	}
	m.queueAfterCommit(ctx)
	return nil
}

// Schedule queues the evaluation job unless one is pending or running:
// one is enough, it evaluates everything unevaluated. A movement that
// commits after a running job last looked waits for the next job: the
// next movement's, or `emi serve`'s tick (App.ScheduleMonitoring), or the
// maintenance sweep.
func (m *Monitor) Schedule(ctx context.Context) error {
	if m.off {
		return nil
	}
	_, _, err := m.jobs.Enqueue(ctx, emi.JobSpec{Kind: JobEvaluate, UniqueKey: JobEvaluate})
	return err
}

// queueAfterCommit queues the evaluation (Schedule) once the booking
// transaction of ctx commits, off the booking's path: a statement in every
// booking transaction cost the payment a round trip, and the evaluation
// is after the fact anyway. Bookings committing together queue it once:
// a nudge waiting to run covers every booking committed before it runs.
// A nudge lost to a failed queueing (the database away) or to a process
// that stopped leaves the movement to the next booking's nudge, `emi
// serve`'s tick (App.ScheduleMonitoring) or the maintenance sweep, as a
// job that was running when the movement committed does.
func (m *Monitor) queueAfterCommit(ctx context.Context) {
	if m.off {
		return
	}
	m.committed.AfterCommit(ctx, func() {
		select {
		case m.nudges <- struct{}{}:
		default: // one is waiting, and runs after this commit
			return
		}
		if m.nudging.CompareAndSwap(false, true) {
			go m.runNudges()
		}
	})
}

// nudgeIdle is how long the goroutine queueing the evaluation waits for
// the next nudge before it ends (the next nudge starts another).
const nudgeIdle = time.Second

// runNudges queues the evaluation for each nudge until none came for
// nudgeIdle.
func (m *Monitor) runNudges() {
	idle := time.NewTimer(nudgeIdle)
	defer idle.Stop()
	for {
		select {
		case <-m.nudges:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = m.Schedule(ctx) // a failure waits for the tick (see queueAfterCommit)
			cancel()
			idle.Reset(nudgeIdle)
		case <-idle.C:
			m.nudging.Store(false)
			// A nudge sent before the flag dropped found it set and
			// started nothing: take it (unless a new goroutine did).
			if len(m.nudges) == 0 || !m.nudging.CompareAndSwap(false, true) {
				return
			}
			idle.Reset(nudgeIdle)
		}
	}
}

// RecordUnqueued records a movement without queueing its evaluation: for
// the history import, which evaluates everything once it has booked.
func (m *Monitor) RecordUnqueued(ctx context.Context, mv Movement) error {
	if m.off {
		return nil
	}
	subject, program, ok, err := m.subjectOf(ctx, mv.PartnerID, mv.Account)
	if err != nil || !ok {
		return err
	}
	mv.Subject, mv.Program = subject, program
	if mv.At.IsZero() {
		mv.At = m.now.At(ctx).UTC()
	}
	mv.EUR = ToEUR(mv.Amount, mv.Currency)
	_, err = m.store.InsertMovement(ctx, mv)
	return err
}

// evaluateBatch bounds one subject's transaction.
const evaluateBatch = 500

// Evaluate evaluates every recorded movement not yet evaluated, subject by
// subject, oldest first, and returns how many it evaluated. Each subject's
// movements are evaluated in one transaction under the subject's lock.
func (m *Monitor) Evaluate(ctx context.Context) (int, error) {
	rules, err := m.store.Rules(ctx)
	if err != nil {
		return 0, err
	}
	set := newRuleSet(rules)
	total := 0
	for {
		subjects, err := m.store.PendingSubjects(ctx, 100)
		if err != nil {
			return total, err
		}
		if len(subjects) == 0 {
			return total, nil
		}
		for _, s := range subjects {
			n, err := m.evaluateSubject(ctx, set, s)
			if err != nil {
				return total, err
			}
			total += n
		}
	}
}

func (m *Monitor) evaluateSubject(ctx context.Context, set ruleSet, s Subject) (int, error) {
	n := 0
	err := m.tx.InTx(ctx, func(ctx context.Context) error {
		n = 0
		if err := m.store.LockSubject(ctx, s); err != nil {
			return err
		}
		mvs, err := m.store.Unevaluated(ctx, s, evaluateBatch)
		if err != nil || len(mvs) == 0 {
			return err
		}
		profile, err := m.store.Profile(ctx, s)
		if err != nil {
			return err
		}
		profile.derive()
		var hits []Hit
		var shadows []ShadowHit
		ids := make([]int64, len(mvs))
		windows := windowsFor(m.store, s, mvs) // large batches read the windows once
		for i, mv := range mvs {
			ids[i] = mv.ID
			found, shadow, err := set.evaluate(ctx, windows, profile, mv)
			if err != nil {
				return err
			}
			hits, shadows = append(hits, found...), append(shadows, shadow...)
		}
		if len(shadows) > 0 {
			if err := m.store.InsertShadowHits(ctx, shadows); err != nil {
				return err
			}
		}
		if len(hits) > 0 {
			if _, err := m.raise(ctx, mvs[0].PartnerID, s, hits); err != nil {
				return err
			}
		}
		n = len(mvs)
		return m.store.MarkEvaluated(ctx, ids, m.now.At(ctx).UTC())
	})
	return n, err
}

// raise adds hits to the subject's open alert, or opens one, and returns
// the alert's token.
func (m *Monitor) raise(ctx context.Context, partnerID string, s Subject, hits []Hit) (string, error) {
	now := m.now.At(ctx).UTC()
	a, open, err := m.store.OpenAlert(ctx, s)
	if err != nil {
		return "", err
	}
	if !open {
		a = Alert{Token: kernel.NewToken(), PartnerID: partnerID, Subject: s, Status: AlertOpen, RaisedAt: now}
	}
	a.Hits = append(a.Hits, hits...)
	a.Score = 0
	for _, h := range a.Hits {
		a.Score += h.Score
	}
	a.UpdatedAt = now
	if !open {
		if err := m.store.InsertAlert(ctx, a); err != nil {
			return "", err
		}
	} else if err := m.store.UpdateAlert(ctx, a); err != nil {
		return "", err
	}
	rules := make([]string, len(hits))
	for i, h := range hits {
		rules[i] = h.Rule
	}
	return a.Token, m.audit.Record(ctx, emi.AuditEntry{Action: "monitoring.alert", ResourceType: "monitoring_alert", ResourceToken: a.Token,
		PartnerID: partnerID, Changes: map[string]any{"subject": s.Kind + " " + s.Token, "rules": rules}})
}

// Alerts lists monitoring alerts, newest first (ViewAlerts).
func (m *Monitor) Alerts(ctx context.Context, f AlertFilter) ([]Alert, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return m.store.Alerts(ctx, f)
}

// SystemAlerts lists monitoring alerts for the operator's command line
// (`emi monitoring alerts`), after evaluating everything recorded so far.
func (m *Monitor) SystemAlerts(ctx context.Context, f AlertFilter) ([]Alert, error) {
	if _, err := m.Evaluate(ctx); err != nil {
		return nil, err
	}
	return m.store.Alerts(ctx, f)
}

// bandUpper are the declared monthly bands' upper bounds, in EUR.
var bandUpper = map[string]int64{
	"Less than 1000 EUR":          1000,
	"Between 1001 and 5000 EUR":   5000,
	"Between 5001 and 10000 EUR":  10000,
	"Between 10001 and 15000 EUR": 15000,
}

// frequencyUpper are the declared incoming transfer frequencies' upper
// bounds, per month.
var frequencyUpper = map[string]int64{
	"Less than 2 times": 2,
	"Between 3-5 times": 5,
}

// derive fills the bounds from the declared bands.
func (p *Profile) derive() {
	p.IncomingMonthlyEUR = eur(float64(bandUpper[p.IncomingBand]))
	p.OutgoingMonthlyEUR = eur(float64(bandUpper[p.OutgoingBand]))
	p.IncomingPerMonth = frequencyUpper[p.FrequencyBand]
}

// CounterpartyOf returns the key and country of a transfer's counterparty:
// its IBAN (country from the IBAN), a UK sort code and account number
// (GB), or, for a card top-up or a name only, what there is.
func CounterpartyOf(cp emi.Counterparty) (key, country string) {
	switch {
	case cp.IBAN != "":
		return CounterpartyKey(cp.IBAN), IBANCountry(cp.IBAN)
	case cp.AccountNumber != "":
		return CounterpartyKey(cp.SortCode + cp.AccountNumber), "GB"
	case cp.CardLast4 != "":
		return CounterpartyKey("card " + cp.CardLast4 + " " + cp.Name), ""
	}
	return CounterpartyKey(cp.Name), ""
}

// Run is the handler of JobEvaluate.
func (m *Monitor) Run(ctx context.Context, _ emi.Job) error {
	_, err := m.Evaluate(ctx)
	return err
}

// OpenAlerts returns the open alerts with their subjects' names, oldest
// first (ViewAlerts).
func (m *Monitor) OpenAlerts(ctx context.Context, limit int) ([]AlertView, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return m.store.AlertViews(ctx, limit)
}

// CountOpen counts the open alerts (ViewAlerts).
func (m *Monitor) CountOpen(ctx context.Context) (int64, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return 0, err
	}
	return m.store.CountOpen(ctx)
}

// AlertByToken returns one alert with its hits (ViewAlerts);
// emi.ErrAlertNotFound when there is none.
func (m *Monitor) AlertByToken(ctx context.Context, token string) (AlertView, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return AlertView{}, err
	}
	if !kernel.ValidToken(token) {
		return AlertView{}, emi.ErrMonitoringAlertNotFound
	}
	a, ok, err := m.store.AlertView(ctx, token)
	if err != nil {
		return AlertView{}, err
	}
	if !ok {
		return AlertView{}, emi.ErrMonitoringAlertNotFound
	}
	return a, nil
}

// RulesInForce returns every current rule version, by code and program
// (ViewAlerts).
func (m *Monitor) RulesInForce(ctx context.Context) ([]Rule, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return m.store.Rules(ctx)
}

// ShadowCounts counts, by rule, what rules in shadow mode found over the
// last days (ViewAlerts).
func (m *Monitor) ShadowCounts(ctx context.Context, days int) (map[string]int64, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return m.store.ShadowCounts(ctx, m.now.At(ctx).Add(-time.Duration(days)*24*time.Hour))
}
