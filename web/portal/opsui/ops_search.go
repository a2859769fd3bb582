package opsui

import (
	"net/http"
	"net/url"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/views/fragments"
	"emi/views/opsview"
)

// The global search across the areas: each area adds its hits
// (searchAccounts, searchCards, searchCompanies) to the service's registry.

// page (POST /search from the header's form; GET /search?q= for links)
// is the global search box. The header form posts, so what is typed (a
// card number, say) never reaches a URL, the history or the access log;
// a full card number finds a card only by POST (searchCards).
func (p *Search) page(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if r.Method == http.MethodPost {
		q = strings.TrimSpace(r.PostFormValue("q"))
	}
	found, err := p.search.Find(r.Context(), q, 20)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	hits := make([]fragments.Hit, len(found))
	for i, h := range found {
		hits[i] = fragments.Hit{Kind: h.Kind, Title: h.Title, Detail: h.Detail, Href: hitHref(h)}
	}
	companies, err := p.companies.SearchCompanies(r, q)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	hits = append(hits, companies...)
	accounts, err := p.accounts.SearchAccounts(r, q)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	hits = append(hits, accounts...)
	cards, err := p.cards.SearchCards(r, q)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	hits = append(hits, cards...)
	p.frame.Render(w, r, http.StatusOK, "Search", opsview.Search(frame.MaskedQuery(q), hits))
}

// hitHref is where a search hit leads; each area adds its kind here.
func hitHref(h emi.SearchHit) string {
	switch h.Kind {
	case "partner":
		return "/backoffice/partners/" + h.Token
	case "staff":
		return "/backoffice/staff/" + h.Token
	case "user":
		return "/backoffice/users/" + h.Token
	}
	return "/backoffice/search?q=" + url.QueryEscape(h.Token)
}
