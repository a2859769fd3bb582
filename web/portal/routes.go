package portal

import "github.com/go-chi/chi/v5"

// Routes maps the whole back office: sign-in, then every area's screens
// behind it. Every state change is a POST (cross-origin protected in
// Handler); GETs never change anything.
func (p *Portal) Routes(r chi.Router) {
	p.staff.SignInRoutes(r)
	r.Group(func(r chi.Router) {
		p.frame.SignedIn(r)
		p.ops.Routes(r)
		p.staff.Routes(r)
		p.partners.Routes(r)
		p.people.Routes(r)
		p.onboarding.Routes(r)
		p.accounts.Routes(r)
		p.transfers.Routes(r)
		p.cards.Routes(r)
	})
}
