package transfers

import "emi/internal/emi"

// The operations on money that is not a partner's own flow: the suspense
// queue, adjustments, sandbox simulations (emi.Op). The service checks
// them and the back office guards its screens with the same values.
var (
	ViewMoney   = emi.NewOp("money.view", emi.PermViewMoney)
	ManageMoney = emi.NewOp("money.manage", emi.PermManageMoney)
	// SimulateSettlement: the sandbox's answer of the receiving bank to
	// an outgoing payment (complete or return).
	SimulateSettlement = emi.NewOp("transfers.settle", emi.PermManageAccounts)
)
