package onboarding_test

import (
	"strings"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
)

func TestRiskModelBandsAndFactors(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }
	m := onboarding.DefaultRiskModel(now)
	yes, no := true, false
	pct := func(n int) *int { return &n }
	ubo := func(country string, p int, pep bool) emi.Member {
		return emi.Member{Status: "active", Type: []string{"ubo"}, Nationality: country,
			MemberFields: emi.MemberFields{FirstName: "A", LastName: "B", OwnershipPercentage: pct(p), PEPDeclaration: &pep}}
	}
	cases := []struct {
		name   string
		app    emi.Application
		band   string
		points int
		factor string
	}{
		{"sandbox company", emi.Application{Products: []string{"account-opening", "card-issuing"}, DueDiligence: "CDD",
			Company: &emi.CompanyFields{Country: "GB", IncorporationDate: "2010-01-01"}, Members: []emi.Member{ubo("SE", 100, false)}},
			"Low", 10, "product"},
		{"young company, SDD, no incorporation date", emi.Application{Products: []string{"e-commerce"}, DueDiligence: "SDD",
			Company: &emi.CompanyFields{Country: "GB"}, Members: []emi.Member{ubo("SE", 100, false)}},
			"Medium", 30, "due_diligence"},
		{"high-risk jurisdiction", emi.Application{Products: []string{"pos"}, DueDiligence: "CDD",
			Company: &emi.CompanyFields{Country: "IR", IncorporationDate: "2010-01-01"}, Members: []emi.Member{ubo("SE", 100, false)}},
			"High", 65, "company_country"},
		{"PEP, gambling, partial ownership", emi.Application{Products: []string{"pos"}, DueDiligence: "CDD",
			Company: &emi.CompanyFields{Country: "DE", IncorporationDate: "2026-06-01", DescriptionOfActivity: "Online Casino"},
			Members: []emi.Member{ubo("DE", 50, true)}},
			"High", 5 + 30 + 15 + 25 + 15, "pep"},
		{"sanctions declared", emi.Application{Products: []string{"qr"}, DueDiligence: "CDD",
			Company: &emi.CompanyFields{Country: "GB", IncorporationDate: "2010-01-01", IsSIE: &yes}, Members: []emi.Member{ubo("GB", 100, false)}},
			"High", 65, "sanctions_declared"},
		{"inactive members do not count", emi.Application{Products: []string{"qr"}, DueDiligence: "CDD",
			Company: &emi.CompanyFields{Country: "GB", IncorporationDate: "2010-01-01", IsSIE: &no},
			Members: []emi.Member{ubo("GB", 100, false), {Status: "inactive", Type: []string{"ubo"}, Nationality: "KP", MemberFields: emi.MemberFields{OwnershipPercentage: pct(10)}}}},
			"Low", 5, "product"},
	}
	for _, c := range cases {
		fs, pts, band := m.Assess(c.app)
		if band != c.band || pts != c.points {
			t.Errorf("%s: %s %d, want %s %d (%+v)", c.name, band, pts, c.band, c.points, fs)
		}
		sum, found := 0, false
		for _, f := range fs {
			sum += f.Points
			found = found || f.Factor == c.factor
			if strings.TrimSpace(f.Detail) == "" {
				t.Errorf("%s: factor %s without an explanation", c.name, f.Factor)
			}
		}
		if sum != pts || !found {
			t.Errorf("%s: factors %+v do not explain %d points or lack %s", c.name, fs, pts, c.factor)
		}
	}
}
