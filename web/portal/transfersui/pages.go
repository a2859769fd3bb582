// Package transfersui is the back office's money screens: a transfer's
// page (both sides, ledger entries, audit, two-person reversal and, in the
// sandbox, the settlement of outgoing payments), the suspense queue with
// two-person assignment, and the adjustments queue.
package transfersui

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"emi/internal/service/accounts"
	"emi/internal/service/staff"
	"emi/internal/service/transfers"
	"emi/web/portal/accountsui"
	"emi/web/portal/frame"
)

// Deps are what the money pages need.
type Deps struct {
	Transfers   *transfers.Transfers
	Incoming    *transfers.Incoming
	Adjustments *transfers.Adjustments
	Accounts    *accounts.Accounts
	// AccountPages lays out adjustments and runs the incoming payment
	// simulator, as the account page does.
	AccountPages *accountsui.Pages
	// Sandbox shows the simulators (incoming payments, settlement).
	Sandbox bool
}

// Pages are the money screens.
type Pages struct {
	frame        *frame.Frame
	transfers    *transfers.Transfers
	incoming     *transfers.Incoming
	adjustments  *transfers.Adjustments
	accounts     *accounts.Accounts
	accountPages *accountsui.Pages
	sandbox      bool
}

// New returns the money pages.
func New(f *frame.Frame, d Deps) *Pages {
	return &Pages{frame: f, transfers: d.Transfers, incoming: d.Incoming, adjustments: d.Adjustments,
		accounts: d.Accounts, accountPages: d.AccountPages, sandbox: d.Sandbox}
}

// Nav are the money screens' navigation links with their queues' sizes.
func Nav(incoming *transfers.Incoming, adjustments *transfers.Adjustments) []frame.NavEntry {
	suspenseLink := frame.NavEntry{Href: "/backoffice/suspense", Label: "Suspense", Op: transfers.ViewMoney}
	if incoming != nil {
		suspenseLink.Count = func(r *http.Request) (int64, error) { return incoming.OpenSuspense(r.Context()) }
	}
	adjustmentsLink := frame.NavEntry{Href: "/backoffice/adjustments", Label: "Adjustments", Op: transfers.ViewMoney}
	if adjustments != nil {
		adjustmentsLink.Count = func(r *http.Request) (int64, error) { return adjustments.CountPending(r.Context()) }
	}
	return []frame.NavEntry{suspenseLink, adjustmentsLink}
}

// Routes maps the money screens.
func (p *Pages) Routes(r chi.Router) {
	g := p.frame.Guard
	r.With(g(accounts.View)).Get("/transfers/{transfer}", p.transferDetail)
	r.With(g(staff.ProposeOp(staff.ControlTransferReversal))).Post("/transfers/{transfer}/reversal", p.transferReversalRequest)
	r.With(g(staff.ProposeOp(staff.ControlHeldTransfer))).Post("/transfers/{transfer}/held", p.transferHeld)
	r.With(g(staff.ApproveOp(staff.ControlTransferReversal))).Post("/transfers/{transfer}/reversal/approve", p.transferReversalDecide(true))
	r.With(g(staff.ProposeOp(staff.ControlTransferReversal))).Post("/transfers/{transfer}/reversal/reject", p.transferReversalDecide(false))
	if p.sandbox {
		// The receiving bank's answer to an outgoing payment, simulated.
		r.With(g(transfers.SimulateSettlement)).Post("/transfers/{transfer}/complete", p.transferComplete)
		r.With(g(transfers.SimulateSettlement)).Post("/transfers/{transfer}/return", p.transferReturn)
	}

	r.With(g(transfers.ViewMoney)).Get("/suspense", p.suspense)
	r.With(g(transfers.ManageMoney)).Post("/suspense/simulate", p.suspenseSimulate) // sandbox only
	// Assignment takes two people (staff.ControlSuspenseAssign): a
	// request, then another's approval or anyone's rejection.
	r.With(g(staff.ProposeOp(staff.ControlSuspenseAssign))).Post("/suspense/{item}/assign", p.suspenseAssign)
	r.With(g(staff.ApproveOp(staff.ControlSuspenseAssign))).Post("/suspense/assignments/{assignment}/approve", p.suspenseAssignmentApprove)
	r.With(g(staff.ApproveOp(staff.ControlSuspenseAssign))).Post("/suspense/assignments/{assignment}/reject", p.suspenseAssignmentReject)
	r.With(g(transfers.ManageMoney)).Post("/suspense/{item}/return", p.suspenseReturn)
	r.With(g(transfers.ViewMoney)).Get("/adjustments", p.adjustmentQueue)
	r.With(g(staff.ApproveOp(staff.ControlAdjustment))).Post("/adjustments/{adjustment}/approve", p.adjustmentApprove)
	r.With(g(transfers.ManageMoney)).Post("/adjustments/{adjustment}/reject", p.adjustmentReject)
}
