package onboarding

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// RiskModel scores an application from explainable factors; every factor
// that adds points is listed with its reason. The default model below is
// the configuration; change it (or load another) in the composition root.
type RiskModel struct {
	// HighRisk are jurisdictions under a call for action (FATF "black
	// list"); Monitored are those under increased monitoring ("grey list").
	HighRisk, Monitored []string
	// EEA countries carry no country points.
	EEA []string
	// Points per factor.
	CompanyHighRisk, CompanyMonitored, CompanyOutsideEEA int
	MemberHighRisk, MemberMonitored                      int
	ProductPoints                                        map[string]int
	RiskyActivity                                        []string
	RiskyActivityPoints                                  int
	SimplifiedDueDiligence                               int
	YoungerThanOneYear, YoungerThanTwoYears, AgeUnknown  int
	PEP, PEPRelated, SanctionsDeclared                   int
	UBOCoverageBelow75, NoUBOPercentages                 int
	// SanctionsMatch are the points of an undecided or confirmed sanctions
	// hit on the company or an active member. An application with such a
	// hit is High whatever its other factors (Screened raises the points to
	// at least High), so "highest risk first" shows it among the first.
	SanctionsMatch int
	// Bands: below Medium is Low, below High is Medium.
	Medium, High int
	// Now gives the date for the company's age.
	Now func() time.Time
}

// DefaultRiskModel is emi's risk configuration. The jurisdiction lists are
// FATF's public statements of June 2025 ("High-risk jurisdictions subject
// to a call for action" and "Jurisdictions under increased monitoring");
// they are maintained here and reviewed after each FATF plenary
// (February, June, October).
func DefaultRiskModel(now func() time.Time) RiskModel {
	return RiskModel{
		HighRisk: []string{"KP", "IR", "MM"},
		Monitored: []string{"DZ", "AO", "BO", "BG", "BF", "CM", "CI", "CD", "HT", "KE", "LA", "LB", "MC", "MZ",
			"NA", "NP", "NG", "ZA", "SS", "SY", "VE", "VN", "VG", "YE"},
		EEA: []string{"AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT", "LV",
			"LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE", "IS", "LI", "NO", "GB", "CH"},
		CompanyHighRisk: 60, CompanyMonitored: 25, CompanyOutsideEEA: 10,
		MemberHighRisk: 40, MemberMonitored: 15,
		ProductPoints: map[string]int{"pos": 5, "e-commerce": 10, "qr": 5, "account-opening": 5, "card-issuing": 5},
		RiskyActivity: []string{"gambling", "casino", "betting", "crypto", "virtual asset", "forex", "money transfer",
			"money service", "remittance", "adult", "weapons", "arms", "precious metals", "jewel", "shell"},
		RiskyActivityPoints:    30,
		SimplifiedDueDiligence: 10,
		YoungerThanOneYear:     15, YoungerThanTwoYears: 5, AgeUnknown: 10,
		PEP: 25, PEPRelated: 10, SanctionsDeclared: 60,
		UBOCoverageBelow75: 15, NoUBOPercentages: 10,
		// Above the sum of any likely set of other factors: a possible
		// sanctions match outranks a merely risky profile in the queue.
		SanctionsMatch: 100, Medium: 30, High: 60,
		Now: now,
	}
}

// Assess returns the factors, the points and the band (Low, Medium, High).
func (r RiskModel) Assess(a emi.Application) ([]emi.RiskFactor, int, string) {
	var fs []emi.RiskFactor
	add := func(factor, detail string, pts int) {
		if pts != 0 {
			fs = append(fs, emi.RiskFactor{Factor: factor, Detail: detail, Points: pts})
		}
	}
	co := emi.CompanyFields{}
	if a.Company != nil {
		co = *a.Company
	}
	switch {
	case slices.Contains(r.HighRisk, co.Country):
		add("company_country", co.Country+" is a high-risk jurisdiction (FATF call for action)", r.CompanyHighRisk)
	case slices.Contains(r.Monitored, co.Country):
		add("company_country", co.Country+" is under FATF increased monitoring", r.CompanyMonitored)
	case co.Country != "" && !slices.Contains(r.EEA, co.Country):
		add("company_country", co.Country+" is outside the EEA, the UK and Switzerland", r.CompanyOutsideEEA)
	}
	for _, p := range a.Products {
		add("product", "product "+p, r.ProductPoints[p])
	}
	activity := strings.ToLower(co.DescriptionOfActivity + " " + co.BusinessActivity)
	for _, k := range r.RiskyActivity {
		if strings.Contains(activity, k) {
			add("business_activity", "the activity mentions "+k, r.RiskyActivityPoints)
			break
		}
	}
	if a.DueDiligence == "SDD" {
		add("due_diligence", "simplified due diligence requested", r.SimplifiedDueDiligence)
	}
	if d, err := time.Parse(time.DateOnly, co.IncorporationDate); err == nil && r.Now != nil {
		age := r.Now().Sub(d)
		switch {
		case age < 365*24*time.Hour:
			add("company_age", "incorporated less than a year ago", r.YoungerThanOneYear)
		case age < 2*365*24*time.Hour:
			add("company_age", "incorporated less than two years ago", r.YoungerThanTwoYears)
		}
	} else {
		add("company_age", "incorporation date not given", r.AgeUnknown)
	}
	if co.IsSIE != nil && *co.IsSIE {
		add("sanctions_declared", "the company declares a sanctions listing", r.SanctionsDeclared)
	}
	coverage, percentages := 0, 0
	for _, m := range a.ActiveMembers() {
		name := m.DisplayName()
		for _, c := range kernel.UniqueNonEmpty(m.Country, m.CountryOfResidence, m.Nationality) {
			switch {
			case slices.Contains(r.HighRisk, c):
				add("member_country", name+": "+c+" is a high-risk jurisdiction", r.MemberHighRisk)
			case slices.Contains(r.Monitored, c):
				add("member_country", name+": "+c+" is under FATF increased monitoring", r.MemberMonitored)
			}
		}
		if m.PEPDeclaration != nil && *m.PEPDeclaration {
			add("pep", name+" is a politically exposed person", r.PEP)
		} else if m.PEPRelatedDeclaration != nil && *m.PEPRelatedDeclaration {
			add("pep_related", name+" is related to a politically exposed person", r.PEPRelated)
		}
		if m.IsSIP != nil && *m.IsSIP {
			add("sanctions_declared", name+" declares a sanctions listing", r.SanctionsDeclared)
		}
		if m.IsUBO() && m.OwnershipPercentage != nil {
			coverage += *m.OwnershipPercentage
			percentages++
		}
	}
	switch {
	case percentages == 0:
		add("ownership", "no UBO states an ownership percentage", r.NoUBOPercentages)
	case coverage < 75:
		add("ownership", fmt.Sprintf("declared UBOs cover %d %% of the ownership", coverage), r.UBOCoverageBelow75)
	}
	total, band := r.band(fs)
	return fs, total, band
}

// band sums the factors' points and names the band.
func (r RiskModel) band(fs []emi.RiskFactor) (int, string) {
	total := 0
	for _, f := range fs {
		total += f.Points
	}
	switch {
	case total >= r.High:
		return total, "High"
	case total >= r.Medium:
		return total, "Medium"
	}
	return total, "Low"
}

// FactorSanctionsMatch names the risk factor of the screening hits.
const FactorSanctionsMatch = "sanctions_match"

// Screened adds the sanctions screening to the factors Assess gave (any
// earlier screening factor is replaced): every hit of the application's
// sanctions check that is undecided or decided a true match counts; a hit
// decided a false positive does not (nor does one suppressed by a
// remembered false positive, which the check never raises). A false
// positive proposed by one person and not yet confirmed by a second is
// still undecided: it counts. With any hit counting, one factor names each
// of them, its points are at least the High threshold, and the band is
// High. a gives the screened names.
func (r RiskModel) Screened(a emi.Application, base []emi.RiskFactor, hits []map[string]any, decisions map[string]emi.HitDecisionRecord) ([]emi.RiskFactor, int, string) {
	fs := make([]emi.RiskFactor, 0, len(base)+1)
	for _, f := range base {
		if f.Factor != FactorSanctionsMatch {
			fs = append(fs, f)
		}
	}
	var open, confirmed []string
	for _, h := range hits {
		rec := decisions[HitKey(h)]
		if rec.Decision == emi.HitFalsePositive && rec.Final() {
			continue // a false positive confirmed by a second person
		}
		d := rec.Decision
		who := "the company"
		if tok, _ := h["member"].(string); tok != "" {
			who = "member " + tok
			for _, m := range a.Members {
				if m.Token == tok {
					who = m.DisplayName()
				}
			}
		}
		desc := fmt.Sprintf("%s ~ %v (%v %v, score %v)", who, h["name"], h["list"], h["entry_id"], h["score"])
		switch d {
		case emi.HitTrueMatch:
			confirmed = append(confirmed, desc)
		case emi.HitFalsePositive:
			open = append(open, desc+", false positive proposed, waiting for a second person")
		default:
			open = append(open, desc)
		}
	}
	if len(open)+len(confirmed) == 0 {
		total, band := r.band(fs)
		return fs, total, band
	}
	var detail []string
	if len(confirmed) > 0 {
		detail = append(detail, "confirmed sanctions match: "+strings.Join(confirmed, "; "))
	}
	if len(open) > 0 {
		detail = append(detail, "possible sanctions match waiting for a decision: "+strings.Join(open, "; "))
	}
	fs = append(fs, emi.RiskFactor{Factor: FactorSanctionsMatch, Detail: strings.Join(detail, "; "), Points: max(r.SanctionsMatch, r.High)})
	total, _ := r.band(fs)
	return fs, total, "High"
}

// sanctionsHits returns the hits of the sanctions check among results, as
// stored (a fresh run gives []map[string]any, a stored one []any).
func sanctionsHits(results []emi.CheckResult) []map[string]any {
	for _, c := range results {
		if c.Name != emi.CheckSanctions {
			continue
		}
		switch hs := c.Details["hits"].(type) {
		case []map[string]any:
			return hs
		case []any:
			out := make([]map[string]any, 0, len(hs))
			for _, x := range hs {
				if h, ok := x.(map[string]any); ok {
					out = append(out, h)
				}
			}
			return out
		}
	}
	return nil
}
