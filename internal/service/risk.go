package service

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
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
		Medium: 30, High: 60,
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
	for _, m := range activeMembers(a) {
		name := m.DisplayName()
		for _, c := range uniqueNonEmpty(m.Country, m.CountryOfResidence, m.Nationality) {
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
	total := 0
	for _, f := range fs {
		total += f.Points
	}
	band := "Low"
	switch {
	case total >= r.High:
		band = "High"
	case total >= r.Medium:
		band = "Medium"
	}
	return fs, total, band
}
