package ops

import (
	"context"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/service/staff"
)

// The operations of the compliance alert queue (emi.Op); seeing the queue
// is people.View. The service checks them and the back office guards its
// screens with the same values.
var (
	// WorkAlerts: claim an alert, or assign it to a colleague.
	WorkAlerts = emi.NewOp("alerts.work", emi.PermReviewAML)
	// ReleaseAlerts: give a claimed alert back to the queue (one's own
	// claim, or anyone's for whoever manages staff).
	ReleaseAlerts = emi.NewOp("alerts.release", emi.PermReviewAML, emi.PermManageStaff)
)

// AlertCapabilities is what one staff member may do to one alert now.
type AlertCapabilities struct {
	Claim, Release, Assign bool
}

// AlertCapabilitiesOf answers for the staff member of ctx and an alert
// held by claim (nil: free). Release and Claim refuse exactly what this
// refuses.
func AlertCapabilitiesOf(ctx context.Context, claim *emi.AlertClaim) AlertCapabilities {
	work := WorkAlerts.Allowed(ctx)
	return AlertCapabilities{
		Claim:   work && claim == nil,
		Release: claim != nil && mayRelease(kernel.StaffOf(ctx), *claim),
		Assign:  work,
	}
}

// mayRelease: the holder gives their own alert back; whoever manages
// staff gives back anyone's.
func mayRelease(me emi.Principal, cl emi.AlertClaim) bool {
	return ReleaseAlerts.AllowedFor(me) && (cl.StaffID == me.ActorID || staff.ManageStaff.AllowedFor(me))
}
