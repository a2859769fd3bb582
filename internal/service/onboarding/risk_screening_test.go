package onboarding_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/onboarding"
	"emi/internal/service/servicetest"
)

// riskApp is the whole application with the shared sanctions lists and a
// semi-automatic partner, so every application waits for an underwriter.
type riskApp struct {
	env *apptest.Env
	p   *apptest.Partner
}

func (r riskApp) partner() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: r.p.KeyID, PartnerID: r.p.ID,
		MasterMerchant: r.p.Merchant})
}

func riskMember(first, last, birthday, nationality string, pct int) map[string]any {
	return map[string]any{
		"first_name": first, "last_name": last, "type": []string{"ubo"}, "ownership": true, "ownership_percentage": pct,
		"country": "GB", "country_of_residence": "GB", "birthday": birthday, "nationality": nationality,
		"pep_declaration": false, "pep_related_declaration": false, "is_sip": false,
	}
}

// apply creates an application (company changed by company, members as
// given), runs its checks as the worker would and returns it.
func (r riskApp) apply(t *testing.T, company func(map[string]any), members ...map[string]any) emi.Application {
	t.Helper()
	co := map[string]any{
		"uic": "100000001", "legal_name": "Sandbox Trading Ltd", "trade_name": "Sandbox Trading", "country": "GB",
		"city": "London", "zip": "EC1A 1BB", "address1": "1 Long Lane", "contact_email": "ops@sandbox-trading.example",
		"incorporation_date": "2015-04-01", "description_of_activity": "Software consultancy", "is_sie": false,
	}
	if company != nil {
		company(co)
	}
	raw, _ := json.Marshal(map[string]any{"merchant": r.p.Merchant, "products": []string{"pos"}, "due_diligence": "CDD",
		"company": co, "members": members})
	var in emi.ApplicationCreate
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	a, err := r.env.App.Onboarding.Create(r.partner(), in)
	if err != nil {
		t.Fatalf("application_create: %v", err)
	}
	payload, _ := json.Marshal(map[string]string{"application": a.Token})
	if err := r.env.App.Checks.Run(context.Background(), emi.Job{ID: 1, Kind: "application.checks", Payload: payload}); err != nil {
		t.Fatalf("checks: %v", err)
	}
	return r.get(t, a.Token)
}

func (r riskApp) get(t *testing.T, token string) emi.Application {
	t.Helper()
	a, err := r.env.App.Onboarding.Details(r.partner(), token)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func factor(a emi.Application, name string) (emi.RiskFactor, bool) {
	for _, f := range a.RiskFactors {
		if f.Factor == name {
			return f, true
		}
	}
	return emi.RiskFactor{}, false
}

// hitKeys returns the keys of the application's sanctions hits.
func hitKeys(a emi.Application) []string {
	var out []string
	for _, c := range a.Checks {
		if c.Name != emi.CheckSanctions {
			continue
		}
		hs, _ := c.Details["hits"].([]any)
		for _, x := range hs {
			if h, ok := x.(map[string]any); ok {
				out = append(out, onboarding.HitKey(h))
			}
		}
	}
	return out
}

// TestRiskIncludesScreening: a company 51 % owned by a listed person scored
// "Low" and "highest risk first" put it last. The risk now includes the
// screening: an undecided or true-match hit (on a member or on the company)
// makes it High with the hit in the breakdown and puts it first in the
// queue; a hit decided a false positive does not.
func TestRiskIncludesScreening(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	r := riskApp{env: env, p: env.NewPartner(t, emi.PartnerCreate{Name: "Risk Partner", Processing: emi.ProcessingSemiAutomatic})}
	elin := func(pct int) map[string]any { return riskMember("Elin", "Sandqvist", "1987-03-02", "SE", pct) }
	deripaska := riskMember("Oleg", "Deripaska", "1968-01-02", "RU", 51)

	// A risky profile without any hit: gambling and simplified due
	// diligence make it High on points alone (70).
	casino := r.apply(t, func(c map[string]any) { c["description_of_activity"] = "Online casino" }, elin(100))
	clean := r.apply(t, nil, elin(100))
	owned := r.apply(t, nil, deripaska, elin(49))
	if clean.RiskScore != "Low" || casino.RiskScore != "Medium" && casino.RiskScore != "High" {
		t.Fatalf("baseline: clean %s %d, casino %s %d", clean.RiskScore, clean.RiskPoints, casino.RiskScore, casino.RiskPoints)
	}

	t.Run("a company 51 % owned by a listed person is High, with the hit in the breakdown", func(t *testing.T) {
		if len(hitKeys(owned)) == 0 {
			t.Fatal("the screening raised no hit on Oleg Deripaska: the test proves nothing")
		}
		if owned.RiskScore != "High" {
			t.Fatalf("risk %s %d (factors %+v), want High", owned.RiskScore, owned.RiskPoints, owned.RiskFactors)
		}
		f, ok := factor(owned, onboarding.FactorSanctionsMatch)
		if !ok || !strings.Contains(f.Detail, "Oleg Deripaska") || !strings.Contains(f.Detail, "waiting for a decision") {
			t.Fatalf("no sanctions factor naming the member: %+v", owned.RiskFactors)
		}
		for _, c := range owned.Checks {
			if c.Name == emi.CheckRisk && (c.Status != emi.CheckReview || c.Details["score"] != "High") {
				t.Fatalf("the risk check is %s %v", c.Status, c.Details["score"])
			}
		}
	})
	t.Run("highest risk first puts it first", func(t *testing.T) {
		page, err := env.App.Review.Queue(servicetest.As(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleUnderwriter}}),
			emi.QueueFilter{Sort: "risk"})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, row := range page.Rows {
			order = append(order, row.Token)
		}
		if len(order) != 3 || order[0] != owned.Token {
			t.Fatalf("queue by risk: %v, want %s (sanctioned) first, then %s (casino), then %s", order, owned.Token, casino.Token, clean.Token)
		}
	})
	t.Run("a hit on the company's name counts too", func(t *testing.T) {
		co := r.apply(t, func(c map[string]any) { c["trade_name"] = "Basic Element Limited" }, elin(100))
		f, ok := factor(co, onboarding.FactorSanctionsMatch)
		if co.RiskScore != "High" || !ok || !strings.Contains(f.Detail, "the company") {
			t.Fatalf("company hit: %s %+v", co.RiskScore, co.RiskFactors)
		}
	})

	underwriter := servicetest.As(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleUnderwriter}})
	compliance := servicetest.As(emi.StaffUser{ID: kernel.NewToken(), Roles: []emi.Role{emi.RoleCompliance}})
	decideAll := func(t *testing.T, a emi.Application, decision string, by ...context.Context) emi.Application {
		t.Helper()
		for _, k := range hitKeys(a) {
			for _, ctx := range by {
				if err := env.App.Review.DecideHit(ctx, a.Token, k, decision, "checked against the list entry"); err != nil {
					t.Fatal(err)
				}
			}
		}
		return r.get(t, a.Token)
	}
	t.Run("a true match keeps it High, the decision in the breakdown", func(t *testing.T) {
		a := decideAll(t, r.apply(t, nil, deripaska, elin(49)), emi.HitTrueMatch, underwriter)
		f, ok := factor(a, onboarding.FactorSanctionsMatch)
		if a.RiskScore != "High" || !ok || !strings.Contains(f.Detail, "confirmed sanctions match") {
			t.Fatalf("after a true match: %s %+v", a.RiskScore, a.RiskFactors)
		}
	})
	t.Run("a false positive proposed by one person alone still counts", func(t *testing.T) {
		a := decideAll(t, r.apply(t, nil, deripaska, elin(49)), emi.HitFalsePositive, underwriter)
		f, ok := factor(a, onboarding.FactorSanctionsMatch)
		if a.RiskScore != "High" || !ok || !strings.Contains(f.Detail, "waiting for a second person") {
			t.Fatalf("after one person's false positive: %s %+v", a.RiskScore, a.RiskFactors)
		}
	})
	t.Run("a hit decided false positive does not count, now or at the next run", func(t *testing.T) {
		a := decideAll(t, r.apply(t, nil, riskMember("Oleg", "Deripaska", "1968-01-02", "RU", 51), elin(49)), emi.HitFalsePositive,
			underwriter, compliance)
		if _, ok := factor(a, onboarding.FactorSanctionsMatch); ok || a.RiskScore != clean.RiskScore {
			t.Fatalf("after a false positive: %s %d %+v, want %s without a sanctions factor", a.RiskScore, a.RiskPoints, a.RiskFactors, clean.RiskScore)
		}
		// The partner changes the company: the checks run again and the
		// decided hit still does not count.
		if _, err := env.App.Onboarding.UpdateCompany(r.partner(), a.Token, emi.CompanyFields{City: "Leeds"}, map[string]bool{"city": true}); err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(map[string]string{"application": a.Token})
		if err := env.App.Checks.Run(context.Background(), emi.Job{ID: 2, Kind: "application.checks", Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if b := r.get(t, a.Token); b.RiskScore != clean.RiskScore {
			t.Fatalf("after the next run: %s %+v", b.RiskScore, b.RiskFactors)
		}
	})
}
