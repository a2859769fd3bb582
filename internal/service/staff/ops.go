package staff

import "emi/internal/emi"

// The operations of staff administration, the dashboard and the inbox
// (emi.Op): the services below check them and the back office guards its
// screens with the same values.
var (
	// ViewStaff: see staff users and their pending changes.
	ViewStaff = emi.NewOp("staff.view", emi.PermViewStaff)
	// ManageStaff: create, change, suspend, disable staff users; also
	// oversee other people's work queues (release or reassign a claim).
	ManageStaff = emi.NewOp("staff.manage", emi.PermManageStaff)
	// ViewDashboard: the dashboard and one's own inbox.
	ViewDashboard = emi.NewOp("dashboard.view", emi.PermViewDashboard)
)

// ProposeOp is the operation of the first person of a control (the
// decision table's Propose column).
func ProposeOp(c Control) emi.Op {
	return emi.NewOp(string(c)+".propose", PolicyOf(c).Propose)
}

// ApproveOp is the operation of every further person of a control, and of
// a colleague who rejects (the decision table's Approve column).
func ApproveOp(c Control) emi.Op {
	return emi.NewOp(string(c)+".approve", PolicyOf(c).Approve)
}

// DecideOp is the operation of anyone who takes part in a control's
// decision at all: its proposer or an approver (either column).
func DecideOp(c Control) emi.Op {
	pol := PolicyOf(c)
	return emi.NewOp(string(c)+".decide", pol.Propose, pol.Approve)
}
