package cards

import "emi/internal/emi"

// The operations on cards (emi.Op): seeing cards is accounts.View; each
// card action is ActionOp of it. The service checks them and the back
// office guards its screens with the same values.
var (
	// Manage: change cards at all (the card page shows the card's actions,
	// or why there are none).
	Manage = emi.NewOp("cards.manage", emi.PermManageCards)
)

// ActionOp is the operation of a card action (its permission:
// ActionPermission).
func ActionOp(act emi.CardAction) emi.Op {
	return emi.NewOp("cards."+string(act), ActionPermission(act))
}
