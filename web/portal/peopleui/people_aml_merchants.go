package peopleui

import (
	"net/http"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/views/components"
)

// merchantKVs describes who a re-screening of an onboarded merchant is
// about: the merchant (its company page) and the member screened (the
// member's page; the company's own name has none). Nothing for a user's
// or an API check.
func merchantKVs(r *http.Request, c emi.AMLCheck) []components.KV {
	if c.MerchantToken == "" {
		return nil
	}
	name := c.MerchantName
	if name == "" {
		name = c.MerchantToken
	}
	merchant := components.KV{Label: "Merchant", Value: name}
	member := components.KV{Label: "Screened", Value: "the company's name: " + c.LastName}
	if c.MemberToken != "" {
		member = components.KV{Label: "Member", Value: strings.TrimSpace(c.FirstName + " " + c.LastName)}
	}
	if frame.CanDo(r, onboarding.View) && c.MerchantApplication != "" {
		merchant.Href = "/backoffice/companies/" + c.MerchantApplication
		if c.MemberToken != "" {
			member.Href = "/backoffice/applications/" + c.MerchantApplication + "/members/" + c.MemberToken
		}
	}
	return []components.KV{merchant, {Label: "Merchant token", Value: c.MerchantToken, Mono: true}, member}
}

// sourceOf is a check's source as the AML queue shows it: a merchant's
// re-screening names the merchant.
func sourceOf(c emi.AMLCheck) string {
	if c.MerchantToken != "" && c.MerchantName != "" {
		return c.Source + " · merchant " + c.MerchantName
	}
	return c.Source
}
