package monitoring

import "emi/internal/emi"

// The operations on monitoring (emi.Op): compliance reads the alerts the
// rules raised.
var (
	// ViewAlerts reads monitoring alerts and the rules.
	ViewAlerts = emi.NewOp("monitoring.view", emi.PermReviewAML)
)
