package frame

import (
	"net/http"
	"net/url"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/internal/service/people"
)

// The pages' addresses other areas link to: an account's, a program's, a
// card's, a transfer's, and an account owner's page (person, company or
// partner) as the signed-in role may see it.

func AccountHref(token string) string { return "/backoffice/accounts/" + token }

func ProgramHref(code string) string { return "/backoffice/programs#program-" + url.PathEscape(code) }

// OwnerLinks finds where an account's owner is shown: a person's page, the
// company page of an onboarded merchant (for roles that see
// applications), or the partner of its master merchant. Lookups are cached
// per merchant.
type OwnerLinks struct {
	f         *Frame
	r         *http.Request
	companies map[string]string // merchant -> company page ("" none)
	masters   map[string]string // master merchant -> partner id
}

func (f *Frame) OwnerLinks(r *http.Request) *OwnerLinks {
	return &OwnerLinks{f: f, r: r, companies: map[string]string{}}
}

// Of returns the owner's kind and page.
func (o *OwnerLinks) Of(a emi.Account) (kind, href string, err error) {
	if a.User != "" {
		if CanDo(o.r, people.View) {
			href = "/backoffice/users/" + a.User
		}
		return "person", href, nil
	}
	if a.Merchant == "" {
		return "", "", nil
	}
	if CanDo(o.r, onboarding.View) && o.f.companies != nil {
		h, seen := o.companies[a.Merchant]
		if !seen {
			rows, err := o.f.companies.Companies(o.r.Context(), a.Merchant, 5)
			if err != nil {
				return "", "", err
			}
			for _, c := range rows {
				if c.OnboardedMerchant == a.Merchant {
					h = "/backoffice/companies/" + c.Application
				}
			}
			o.companies[a.Merchant] = h
		}
		if h != "" {
			return "company", h, nil
		}
	}
	if CanDo(o.r, partners.View) {
		if o.masters == nil {
			o.masters = map[string]string{}
			list, err := o.f.partners.List(o.r.Context())
			if err != nil {
				return "", "", err
			}
			for _, pt := range list {
				o.masters[pt.MasterMerchant] = pt.ID
			}
		}
		if id, ok := o.masters[a.Merchant]; ok {
			return "partner's own merchant", "/backoffice/partners/" + id, nil
		}
	}
	return "company", "", nil
}

func CardHref(token string) string { return "/backoffice/cards/" + token }

func TransferHref(token string) string { return "/backoffice/transfers/" + token }
