// Package accountsui is the back office's account screens: the account
// search, an account with its history, balances, cards and money section
// (adjustment requests and, in the sandbox, the incoming payment
// simulator), block and unblock, two-person termination, the statement,
// and programs with their two-person risk changes.
package accountsui

import (
	"github.com/go-chi/chi/v5"

	"emi/internal/service/accounts"
	"emi/internal/service/partners"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
	"emi/web/portal/cardsui"
	"emi/web/portal/frame"
)

// Deps are what the account pages need.
type Deps struct {
	Accounts *accounts.Accounts
	// Adjustments and Incoming are the account page's money section:
	// two-person manual adjustments, and the sandbox's incoming payments.
	Adjustments *transfers.Adjustments
	Incoming    *transfers.Incoming
	Partners    *partners.Partners
	// Cards lists the account's cards on its page.
	Cards *cardsui.Pages
	// Sandbox shows the incoming payment simulator.
	Sandbox bool
}

// Pages are the account screens.
type Pages struct {
	frame       *frame.Frame
	accounts    *accounts.Accounts
	adjustments *transfers.Adjustments
	incoming    *transfers.Incoming
	partners    *partners.Partners
	cardPages   *cardsui.Pages
	sandbox     bool
}

// New returns the account pages.
func New(f *frame.Frame, d Deps) *Pages {
	return &Pages{frame: f, accounts: d.Accounts, adjustments: d.Adjustments, incoming: d.Incoming,
		partners: d.Partners, cardPages: d.Cards, sandbox: d.Sandbox}
}

// Nav are the account screens' navigation links.
func Nav() []frame.NavEntry {
	return []frame.NavEntry{
		{Href: "/backoffice/accounts", Label: "Accounts", Op: accounts.View},
		{Href: "/backoffice/programs", Label: "Programs", Op: accounts.View},
	}
}

// Routes maps the account screens.
func (p *Pages) Routes(r chi.Router) {
	g := p.frame.Guard
	r.With(g(accounts.View)).Get("/accounts", p.accountList)
	r.With(g(accounts.View)).Get("/accounts/{account}", p.accountDetail)
	r.With(g(accounts.Manage)).Post("/accounts/{account}/block", p.accountBlock)
	r.With(g(accounts.Manage)).Post("/accounts/{account}/unblock", p.accountUnblock)
	r.With(g(staff.ProposeOp(staff.ControlAccountTermination))).Post("/accounts/{account}/terminate", p.accountTerminate)
	r.With(g(staff.ApproveOp(staff.ControlAccountTermination))).Post("/accounts/{account}/terminate/approve", p.accountTerminateApprove)
	r.With(g(staff.ProposeOp(staff.ControlAccountTermination))).Post("/accounts/{account}/terminate/withdraw", p.accountTerminateWithdraw)
	r.With(g(accounts.View)).Get("/accounts/{account}/statement.csv", p.accountStatementCSV)
	r.With(g(staff.ProposeOp(staff.ControlAdjustment))).Post("/accounts/{account}/adjustments", p.adjustmentRequest)
	r.With(g(transfers.ManageMoney)).Post("/accounts/{account}/incoming", p.accountSimulate) // sandbox only

	r.With(g(accounts.View)).Get("/programs", p.programs)
	r.With(g(accounts.ManagePrograms)).Post("/programs", p.programCreate)
	r.With(g(accounts.ManagePrograms)).Post("/programs/{program}", p.programUpdate)
	r.With(g(staff.ApproveOp(staff.ControlProgramRisk))).Post("/programs/{program}/change/approve", p.programChangeApprove)
	r.With(g(accounts.ManagePrograms)).Post("/programs/{program}/change/reject", p.programChangeReject)
}
