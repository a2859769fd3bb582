// Package peopleui is the back office's people screens: people and their
// documents, AML reviews (people's and merchants'), KYC reviews and the
// hosted identification page people open from a partner's link, the
// sanctions lists and the adverse-media watch list.
package peopleui

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/people"
	"emi/internal/service/staff"
	"emi/web/portal/accountsui"
	"emi/web/portal/cardsui"
	"emi/web/portal/frame"
)

// Deps are what the people pages need.
type Deps struct {
	Users     *people.Users
	AML       *people.AML
	KYC       *people.KYC
	Watchlist *people.Watchlist
	Audit     *kernel.Auditor
	// Cards finds the cards a people search matches; AccountPages and
	// CardPages list a person's accounts and cards on their page.
	Cards        *cards.Cards
	AccountPages *accountsui.Pages
	CardPages    *cardsui.Pages
	// UpdateSanctions downloads the official sanctions lists now (the
	// admin's "Update now"); nil hides the button. It returns a catalogue
	// error (emi.ErrScreeningUpdate) when the update failed.
	UpdateSanctions func(ctx context.Context) error
}

// Pages are the people screens.
type Pages struct {
	frame           *frame.Frame
	users           *people.Users
	aml             *people.AML
	kyc             *people.KYC
	watchlist       *people.Watchlist
	audit           *kernel.Auditor
	cards           *cards.Cards
	accountPages    *accountsui.Pages
	cardPages       *cardsui.Pages
	updateSanctions func(ctx context.Context) error
}

// New returns the people pages.
func New(f *frame.Frame, d Deps) *Pages {
	return &Pages{frame: f, users: d.Users, aml: d.AML, kyc: d.KYC, watchlist: d.Watchlist, audit: d.Audit,
		cards: d.Cards, accountPages: d.AccountPages, cardPages: d.CardPages, updateSanctions: d.UpdateSanctions}
}

// Nav are the people screens' navigation links, the review queues' with
// their sizes.
func Nav(amlQueue *people.AML, kycQueue *people.KYC) (peopleLink frame.NavEntry, reviews []frame.NavEntry) {
	aml := frame.NavEntry{Href: "/backoffice/aml", Label: "AML reviews", Op: people.View}
	if amlQueue != nil {
		aml.Count = func(r *http.Request) (int64, error) { return amlQueue.QueueSize(r.Context()) }
	}
	kyc := frame.NavEntry{Href: "/backoffice/kyc", Label: "KYC reviews", Op: people.View}
	if kycQueue != nil {
		kyc.Count = func(r *http.Request) (int64, error) { return kycQueue.QueueSize(r.Context()) }
	}
	return frame.NavEntry{Href: "/backoffice/users", Label: "People", Op: people.View}, []frame.NavEntry{
		aml, kyc,
		{Href: "/backoffice/sanctions", Label: "Sanctions lists", Op: people.View},
		{Href: "/backoffice/watchlist", Label: "Watch list", Op: people.View},
	}
}

// Routes maps the people screens.
func (p *Pages) Routes(r chi.Router) {
	g := p.frame.Guard
	r.With(g(people.View)).Get("/users", p.userList)
	r.With(g(people.View)).Get("/users/{user}", p.userDetail)
	r.With(g(people.View)).Get("/documents/{doc}", p.document)
	r.With(g(people.View)).Get("/aml", p.amlQueue)
	r.With(g(people.View)).Get("/aml/{check}", p.amlCheck)
	r.With(g(staff.ApproveOp(staff.ControlAMLHitFalsePositive))).Post("/aml/{check}/decide", p.amlDecide)
	r.With(g(people.View)).Get("/kyc", p.kycQueue)
	r.With(g(people.View)).Get("/kyc/{session}", p.kycSession)
	r.With(g(staff.ApproveOp(staff.ControlKYCDecision))).Post("/kyc/{session}/decide", p.kycDecide)
	r.With(g(people.View)).Get("/sanctions", p.sanctions)
	// The same operation the service checks (app.UpdateSanctions).
	r.With(g(people.UpdateSanctions)).Post("/sanctions/update", p.sanctionsUpdate)
	r.With(g(people.View)).Get("/watchlist", p.watchlistPage)
	r.With(g(people.ReviewAML)).Post("/watchlist", p.watchlistAdd)
	r.With(g(people.ReviewAML)).Post("/watchlist/{entry}/remove", p.watchlistRemove)
}
