package accounts

import "emi/internal/emi"

// The operations on accounts and programs (emi.Op): the service checks
// them and the back office guards its screens with the same values.
var (
	View           = emi.NewOp("accounts.view", emi.PermViewAccounts)
	Manage         = emi.NewOp("accounts.manage", emi.PermManageAccounts)
	ManagePrograms = emi.NewOp("programs.manage", emi.PermManagePrograms)
)
