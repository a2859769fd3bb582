package partners

import "emi/internal/emi"

// The operations of partners, their keys and their webhooks (emi.Op): the
// service checks them and the back office guards its screens with the
// same values.
var (
	View           = emi.NewOp("partners.view", emi.PermViewPartners)
	Manage         = emi.NewOp("partners.manage", emi.PermManagePartners)
	ViewWebhooks   = emi.NewOp("webhooks.view", emi.PermViewWebhooks)
	ManageWebhooks = emi.NewOp("webhooks.manage", emi.PermManageWebhooks)
	// ViewApplicationEvents: the events sent about one application, for
	// the staff who review applications.
	ViewApplicationEvents = emi.NewOp("applications.events", emi.PermViewApps)
	// ViewNames: partners' names (not their settings), for every staff
	// member who sees their objects.
	ViewNames = emi.NewOp("partners.names", emi.PermViewDashboard)
)
