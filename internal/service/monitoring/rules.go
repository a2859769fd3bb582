package monitoring

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
)

// Rule is one version of a typology, for every program ("" Program) or
// one program's override. Params are the rule's tunable figures, by name
// (amounts in EUR, not minor units; durations in hours or days as the
// name says). A disabled rule raises nothing; a rule in shadow mode is
// evaluated but its hits are not raised (they are for tuning).
type Rule struct {
	Code        string             `json:"code"`
	Version     int                `json:"version"`
	Program     string             `json:"program"`
	Description string             `json:"description"`
	Score       int                `json:"score"`
	Enabled     bool               `json:"enabled"`
	Shadow      bool               `json:"shadow"`
	Params      map[string]float64 `json:"params"`
	// Outcome is what a hit does: OutcomeAlert after the fact only;
	// OutcomeHold and OutcomeDecline also before the money moves
	// (screen.go).
	Outcome string `json:"outcome"`
}

// Rule outcomes.
const (
	// OutcomeAlert: evaluated after the fact; a hit joins the subject's
	// alert.
	OutcomeAlert = "alert"
	// OutcomeHold: also evaluated before the money moves: a transfer is
	// held for review, a card authorization declined (a payment cannot
	// wait); the alert is raised at once.
	OutcomeHold = "hold"
	// OutcomeDecline: also evaluated before the money moves: the transfer
	// or authorization is refused; the alert is raised at once.
	OutcomeDecline = "decline"
)

// Outcomes lists the outcomes, mildest first.
func Outcomes() []string { return []string{OutcomeAlert, OutcomeHold, OutcomeDecline} }

// stops reports whether the rule runs before the money moves.
func (r Rule) stops() bool { return r.Outcome == OutcomeHold || r.Outcome == OutcomeDecline }

// param returns a parameter, or def when the rule does not set it.
func (r Rule) param(name string, def float64) float64 {
	if v, ok := r.Params[name]; ok {
		return v
	}
	return def
}

// The typologies' codes.
const (
	RuleProfileIncoming  = "profile_incoming_volume"
	RuleProfileOutgoing  = "profile_outgoing_volume"
	RuleProfileFrequency = "profile_incoming_frequency"
	RuleLargeAmount      = "large_amount"
	RuleStructuring      = "structuring"
	RulePassThrough      = "pass_through"
	RuleHighRiskCountry  = "high_risk_country"
	// RuleHighRiskCountryHold holds, before they leave, payments to the
	// strictest tiers (FATF call for action, EU list).
	RuleHighRiskCountryHold = "high_risk_country_hold"
	RuleDormant             = "dormant_reactivated"
	RuleFanIn               = "fan_in"
	RuleFanOut              = "fan_out"
	RuleCardCash            = "card_cash"
	RuleCardHighRiskMCC     = "card_high_risk_mcc"
	RuleCardTesting         = "card_testing"
)

// ruleSet is the rules in force: by code, the default and the programs'
// overrides.
type ruleSet map[string]map[string]Rule

func newRuleSet(rules []Rule) ruleSet {
	s := ruleSet{}
	for _, r := range rules {
		if s[r.Code] == nil {
			s[r.Code] = map[string]Rule{}
		}
		s[r.Code][r.Program] = r
	}
	return s
}

// rule returns the version of code that applies to program.
func (s ruleSet) rule(code, program string) (Rule, bool) {
	if r, ok := s[code][program]; ok {
		return r, r.Enabled
	}
	r, ok := s[code][""]
	return r, ok && r.Enabled
}

// check is one typology: it returns the sentence of a hit ("" none).
type check func(ctx context.Context, q windowReader, p Profile, r Rule, mv Movement) (string, error)

// windowReader is what the checks read.
type windowReader interface {
	Window(ctx context.Context, s Subject, q WindowQuery) (WindowStats, error)
	PreviousMovement(ctx context.Context, s Subject, at time.Time, id int64) (time.Time, bool, error)
}

// checks are the typologies in the order their hits are listed.
var checks = []struct {
	code string
	fn   check
}{
	{RuleLargeAmount, checkLargeAmount},
	{RuleStructuring, checkStructuring},
	{RuleProfileIncoming, checkProfileVolume(In)},
	{RuleProfileOutgoing, checkProfileVolume(Out)},
	{RuleProfileFrequency, checkProfileFrequency},
	{RulePassThrough, checkPassThrough},
	{RuleHighRiskCountry, checkHighRiskCountry},
	{RuleHighRiskCountryHold, checkHighRiskCountryHold},
	{RuleDormant, checkDormant},
	{RuleFanIn, checkFan(In)},
	{RuleFanOut, checkFan(Out)},
	{RuleCardCash, checkCardCash},
	{RuleCardHighRiskMCC, checkHighRiskMCC},
	{RuleCardTesting, checkCardTesting},
}

// noWindow are the typologies that read only the movement itself: run
// before the money moves, they need no lock and no query.
var noWindow = map[string]bool{RuleLargeAmount: true, RuleHighRiskCountry: true, RuleHighRiskCountryHold: true, RuleCardHighRiskMCC: true}

// evaluate runs every rule in force on mv after the fact: the hits of live
// rules, and apart those of rules in shadow mode (counted for tuning,
// never raised). A movement screened before it was booked is not
// evaluated again by the rules that stop money: they ran then.
func (s ruleSet) evaluate(ctx context.Context, q windowReader, p Profile, mv Movement) ([]Hit, []ShadowHit, error) {
	return s.run(ctx, q, p, mv, func(r Rule) bool { return !(mv.Screened && r.stops()) })
}

// run evaluates the rules in force for mv's program that want says.
func (s ruleSet) run(ctx context.Context, q windowReader, p Profile, mv Movement, want func(Rule) bool) ([]Hit, []ShadowHit, error) {
	var hits []Hit
	var shadows []ShadowHit
	for _, c := range checks {
		r, ok := s.rule(c.code, mv.Program)
		if !ok || !want(r) {
			continue
		}
		sentence, err := c.fn(ctx, q, p, r, mv)
		if err != nil {
			return nil, nil, err
		}
		if sentence == "" {
			continue
		}
		if r.Shadow {
			shadows = append(shadows, ShadowHit{Rule: r.Code, Version: r.Version, Program: r.Program, Subject: mv.Subject,
				Movement: mv.ID, At: mv.At})
			continue
		}
		hits = append(hits, Hit{Rule: r.Code, Version: r.Version, Score: r.Score, Sentence: sentence,
			Movement: mv.ID, Ref: mv.Ref, At: mv.At})
	}
	return hits, shadows, nil
}

// eur turns a parameter in EUR into minor units.
func eur(v float64) int64 { return int64(math.Round(v * 100)) }

// fmtEUR formats minor units as "14,200.00 EUR".
func fmtEUR(minor int64) string {
	s := emi.FormatMinor(minor)
	whole, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(whole, "-")
	whole = strings.TrimPrefix(whole, "-")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String() + "." + frac + " EUR"
	if neg {
		out = "-" + out
	}
	return out
}

// monthStart is the first instant of at's calendar month (UTC): the
// declared profile is monthly.
func monthStart(at time.Time) time.Time {
	at = at.UTC()
	return time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// riskFactor widens the declared bands for lower-risk customers: a
// high-risk customer is alerted as soon as they leave their band.
func riskFactor(r Rule, risk string) float64 {
	switch risk {
	case "High":
		return r.param("factor_high", 1.0)
	case "Medium":
		return r.param("factor_medium", 1.25)
	}
	return r.param("factor_low", 1.5) // Low, or not declared
}

var (
	allIn  = []string{KindIncoming, KindTransferInternal}
	allOut = []string{KindTransferOut, KindTransferInternal, KindCardPayment, KindCardWithdrawal}
)

func kindsOf(direction string) []string {
	if direction == In {
		return allIn
	}
	return allOut
}

// checkLargeAmount: one movement of threshold_eur or more.
func checkLargeAmount(_ context.Context, _ windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	t := eur(r.param("threshold_eur", 10000))
	if mv.Declined || mv.EUR < t {
		return "", nil
	}
	return fmt.Sprintf("one %s of %s (%s or more)", describe(mv), fmtEUR(mv.EUR), fmtEUR(t)), nil
}

// checkStructuring: min_count movements of one direction, each just under
// the large-amount threshold (from ratio of it), within days.
func checkStructuring(ctx context.Context, q windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	t := eur(r.param("threshold_eur", 10000))
	low := int64(math.Round(float64(t) * r.param("ratio", 0.8)))
	if mv.Declined || mv.EUR < low || mv.EUR >= t {
		return "", nil
	}
	days := r.param("days", 5)
	from := mv.At.Add(-time.Duration(days * float64(24*time.Hour)))
	st, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: mv.Direction, Kinds: kindsOf(mv.Direction), From: from, To: mv.At, ToID: mv.ID, MinEUR: low, MaxEUR: t})
	if err != nil || st.Count < int64(r.param("min_count", 3)) {
		return "", err
	}
	return fmt.Sprintf("%d %s movements between %s and %s within %g days, totalling %s: just under the %s threshold",
		st.Count, directionWord(mv.Direction), fmtEUR(low), fmtEUR(t-1), days, fmtEUR(st.SumEUR), fmtEUR(t)), nil
}

// checkProfileVolume: month-to-date volume of one direction above the
// declared band's upper bound, widened by the risk factor.
func checkProfileVolume(direction string) check {
	return func(ctx context.Context, q windowReader, p Profile, r Rule, mv Movement) (string, error) {
		band, upper := p.IncomingBand, p.IncomingMonthlyEUR
		if direction == Out {
			band, upper = p.OutgoingBand, p.OutgoingMonthlyEUR
		}
		if mv.Direction != direction || mv.Declined || upper <= 0 {
			return "", nil
		}
		limit := int64(math.Round(float64(upper) * riskFactor(r, p.Risk)))
		st, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: direction, Kinds: kindsOf(direction), From: monthStart(mv.At).Add(-time.Microsecond), To: mv.At, ToID: mv.ID})
		if err != nil || st.SumEUR <= limit || st.SumEUR-mv.EUR > limit {
			// Raised once, by the movement that crosses the limit.
			return "", err
		}
		return fmt.Sprintf("%s %s this month, declared band %s (risk %s: alert above %s)",
			directionWord(direction), fmtEUR(st.SumEUR), band, riskWord(p.Risk), fmtEUR(limit)), nil
	}
}

// checkProfileFrequency: more incoming transfers this month than the
// declared frequency allows, widened by the risk factor.
func checkProfileFrequency(ctx context.Context, q windowReader, p Profile, r Rule, mv Movement) (string, error) {
	if mv.Direction != In || mv.Declined || p.IncomingPerMonth <= 0 {
		return "", nil
	}
	limit := int64(math.Ceil(float64(p.IncomingPerMonth) * riskFactor(r, p.Risk)))
	st, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: In, Kinds: allIn, From: monthStart(mv.At).Add(-time.Microsecond), To: mv.At, ToID: mv.ID})
	if err != nil || st.Count != limit+1 {
		return "", err
	}
	return fmt.Sprintf("%d incoming transfers this month, declared %q (risk %s: alert above %d)",
		st.Count, p.FrequencyBand, riskWord(p.Risk), limit), nil
}

// checkPassThrough: within hours, what left is ratio or more of what came
// in, and what came in is min_in_eur or more.
func checkPassThrough(ctx context.Context, q windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	if mv.Direction != Out || mv.Declined {
		return "", nil
	}
	hours := r.param("hours", 48)
	from := mv.At.Add(-time.Duration(hours * float64(time.Hour)))
	in, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: In, Kinds: allIn, From: from, To: mv.At, ToID: mv.ID})
	if err != nil || in.SumEUR < eur(r.param("min_in_eur", 1000)) {
		return "", err
	}
	out, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: Out, Kinds: allOut, From: from, To: mv.At, ToID: mv.ID})
	if err != nil {
		return "", err
	}
	ratio := r.param("ratio", 0.8)
	need := int64(math.Ceil(float64(in.SumEUR) * ratio))
	if out.SumEUR < need || out.SumEUR-mv.EUR >= need {
		return "", nil // raised once, by the movement that crosses the ratio
	}
	return fmt.Sprintf("%s came in and %s (%.0f %%) left within %g hours", fmtEUR(in.SumEUR), fmtEUR(out.SumEUR),
		100*float64(out.SumEUR)/float64(in.SumEUR), hours), nil
}

// checkHighRiskCountry: a counterparty (IBAN country, card merchant's
// country) in a high-risk jurisdiction: any amount for the FATF call for
// action and the EU list, from increased_min_eur for the FATF increased
// monitoring list.
func checkHighRiskCountry(_ context.Context, _ windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	c, ok := HighRiskCountries()[mv.CounterpartyCountry]
	if !ok || mv.Declined {
		return "", nil
	}
	if c.Tier == TierIncreasedMonitoring && mv.EUR < eur(r.param("increased_min_eur", 5000)) {
		return "", nil
	}
	who := "counterparty"
	if mv.MCC != "" {
		who = "card merchant"
	}
	return fmt.Sprintf("%s %s of %s with a %s in %s (%s, %s)", describe(mv), directionWord(mv.Direction), fmtEUR(mv.EUR),
		who, c.Name, c.Code, tierWord(c.Tier)), nil
}

// checkHighRiskCountryHold: a payment leaving to, or a card payment at a
// merchant in, a jurisdiction of the strictest tiers (FATF call for
// action, EU list), of min_eur or more.
func checkHighRiskCountryHold(_ context.Context, _ windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	c, ok := HighRiskCountries()[mv.CounterpartyCountry]
	if !ok || mv.Declined || mv.Direction != Out || c.Tier == TierIncreasedMonitoring || mv.EUR < eur(r.param("min_eur", 0)) {
		return "", nil
	}
	who := "a counterparty"
	if mv.MCC != "" {
		who = "a card merchant"
	}
	return fmt.Sprintf("%s of %s to %s in %s (%s, %s)", describe(mv), fmtEUR(mv.EUR), who, c.Name, c.Code, tierWord(c.Tier)), nil
}

// checkDormant: a movement of min_eur or more after days without any.
func checkDormant(ctx context.Context, q windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	if mv.Declined || mv.EUR < eur(r.param("min_eur", 1000)) {
		return "", nil
	}
	last, ok, err := q.PreviousMovement(ctx, mv.Subject, mv.At, mv.ID)
	if err != nil || !ok {
		return "", err
	}
	days := r.param("days", 180)
	idle := mv.At.Sub(last)
	if idle < time.Duration(days*float64(24*time.Hour)) {
		return "", nil
	}
	return fmt.Sprintf("%s of %s after %d days without any movement", describe(mv), fmtEUR(mv.EUR), int(idle.Hours()/24)), nil
}

// checkFan: min_counterparties distinct counterparties of one direction
// within days (fan-in: many payers; fan-out: many payees).
func checkFan(direction string) check {
	return func(ctx context.Context, q windowReader, _ Profile, r Rule, mv Movement) (string, error) {
		if mv.Direction != direction || mv.Declined || mv.CounterpartyKey == "" || mv.MCC != "" {
			return "", nil
		}
		days := r.param("days", 7)
		from := mv.At.Add(-time.Duration(days * float64(24*time.Hour)))
		kinds := []string{KindIncoming, KindTransferInternal}
		if direction == Out {
			kinds = []string{KindTransferOut, KindTransferInternal}
		}
		st, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: direction, Kinds: kinds, From: from, To: mv.At, ToID: mv.ID})
		min := int64(r.param("min_counterparties", 10))
		if err != nil || st.DistinctCounterparts < min {
			return "", err
		}
		// Raised once per window: by the movement that reaches the count
		// (a counterparty seen again does not raise it again).
		before, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: direction, Kinds: kinds, From: from, To: mv.At, ToID: mv.ID, Excluding: true})
		if err != nil || before.DistinctCounterparts >= min {
			return "", err
		}
		word := "payers"
		if direction == Out {
			word = "payees"
		}
		return fmt.Sprintf("%d distinct %s within %g days (%d movements, %s)", st.DistinctCounterparts, word, days, st.Count, fmtEUR(st.SumEUR)), nil
	}
}

// checkCardCash: cash withdrawn this month above share of the declared
// outgoing band (widened by the risk factor), or above limit_eur when no
// band is declared.
func checkCardCash(ctx context.Context, q windowReader, p Profile, r Rule, mv Movement) (string, error) {
	if mv.Kind != KindCardWithdrawal || mv.Declined {
		return "", nil
	}
	limit := eur(r.param("limit_eur", 2000))
	basis := fmt.Sprintf("no declared outgoing band: alert above %s", fmtEUR(limit))
	if p.OutgoingMonthlyEUR > 0 {
		share := r.param("share", 0.3)
		limit = int64(math.Round(float64(p.OutgoingMonthlyEUR) * share * riskFactor(r, p.Risk)))
		basis = fmt.Sprintf("declared outgoing band %s: alert above %s", p.OutgoingBand, fmtEUR(limit))
	}
	st, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: Out, Kinds: []string{KindCardWithdrawal}, From: monthStart(mv.At).Add(-time.Microsecond), To: mv.At, ToID: mv.ID})
	if err != nil || st.SumEUR <= limit || st.SumEUR-mv.EUR > limit {
		return "", err
	}
	return fmt.Sprintf("cash withdrawn %s this month in %d withdrawals (%s)", fmtEUR(st.SumEUR), st.Count, basis), nil
}

// High-risk merchant categories: gambling, crypto-assets and quasi-cash,
// money transfer (ISO 18245 codes as the card schemes use them).
var highRiskMCC = map[string]string{
	"7995": "gambling (betting, lottery, casino chips)",
	"7800": "gambling (government-owned lottery)",
	"7801": "gambling (government-licensed online casino)",
	"7802": "gambling (government-licensed horse and dog racing)",
	"6051": "quasi-cash and crypto-assets",
	"6050": "quasi-cash",
	"4829": "money transfer",
	"6540": "stored-value card load",
	"6012": "financial institution (merchandise, services, debt repayment)",
}

// checkHighRiskMCC: a card payment of min_eur or more at a merchant of a
// high-risk category.
func checkHighRiskMCC(_ context.Context, _ windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	what, ok := highRiskMCC[mv.MCC]
	if !ok || mv.Declined || (mv.Kind != KindCardPayment && mv.Kind != KindCardWithdrawal) || mv.EUR < eur(r.param("min_eur", 0)) {
		return "", nil
	}
	return fmt.Sprintf("card payment of %s at a merchant of category %s, %s", fmtEUR(mv.EUR), mv.MCC, what), nil
}

// checkCardTesting: min_count declined card authorizations of max_eur or
// less within minutes.
func checkCardTesting(ctx context.Context, q windowReader, _ Profile, r Rule, mv Movement) (string, error) {
	small := eur(r.param("max_eur", 10))
	if !mv.Declined || mv.EUR > small {
		return "", nil
	}
	minutes := r.param("minutes", 60)
	from := mv.At.Add(-time.Duration(minutes * float64(time.Minute)))
	st, err := q.Window(ctx, mv.Subject, WindowQuery{Direction: Out, Kinds: []string{KindCardPayment, KindCardWithdrawal},
		From: from, To: mv.At, ToID: mv.ID, MaxEUR: small + 1, Declined: true})
	if err != nil || st.Count != int64(r.param("min_count", 5)) {
		return "", err
	}
	return fmt.Sprintf("%d declined card authorizations of %s or less within %g minutes", st.Count, fmtEUR(small), minutes), nil
}

func describe(mv Movement) string {
	switch mv.Kind {
	case KindIncoming:
		return "incoming payment"
	case KindTransferOut:
		return "outgoing transfer"
	case KindTransferInternal:
		return "internal transfer"
	case KindCardPayment:
		return "card payment"
	case KindCardWithdrawal:
		return "cash withdrawal"
	}
	return mv.Kind
}

func directionWord(d string) string {
	if d == In {
		return "incoming"
	}
	return "outgoing"
}

func riskWord(r string) string {
	if r == "" {
		return "not declared"
	}
	return strings.ToLower(r)
}

func tierWord(t string) string {
	switch t {
	case TierCallForAction:
		return "FATF call for action"
	case TierEUHighRisk:
		return "EU high-risk third country"
	}
	return "FATF increased monitoring"
}

// Codes lists the typologies' codes.
func Codes() []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.code
	}
	return slices.Clip(out)
}
