package kernel

import "emi/internal/emi"

// The operations every area shares (emi.Op).
var (
	// ViewAudit: read the audit log and the history of any object.
	ViewAudit = emi.NewOp("audit.view", emi.PermViewAudit)
	// ViewJobs: see the background jobs and their failures.
	ViewJobs = emi.NewOp("jobs.view", emi.PermViewJobs)
)
