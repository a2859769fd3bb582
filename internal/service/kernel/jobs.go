package kernel

import (
	"context"

	"emi/internal/emi"
)

// JobStore reads the background job queue.
type JobStore interface {
	CountByState(ctx context.Context) (map[string]int64, error)
	Recent(ctx context.Context, state string, limit int) ([]emi.Job, error)
}

// Jobs shows the background job queue to the back office.
type Jobs struct {
	store JobStore
}

// NewJobs returns the jobs service.
func NewJobs(store JobStore) *Jobs { return &Jobs{store: store} }

// Overview returns the counts by state and up to limit jobs of the given
// state ("" for all), dead and stuck ones first (emi.PermViewJobs).
func (j *Jobs) Overview(ctx context.Context, state string, limit int) (map[string]int64, []emi.Job, error) {
	if err := Require(ctx, emi.PermViewJobs); err != nil {
		return nil, nil, err
	}
	valid := state == ""
	for _, s := range emi.JobStates() {
		valid = valid || string(s) == state
	}
	if !valid {
		return nil, nil, emi.ErrStaffValidation.Field("state", "is not a job state")
	}
	counts, err := j.store.CountByState(ctx)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := j.store.Recent(ctx, state, limit)
	return counts, jobs, err
}

// JobRescreenApplications re-runs the checks of every pending application
// after the sanctions lists or the watch list changed (an application
// screened against the old lists may match a new entry).
const JobRescreenApplications = "screening.rescreen_applications"

// RescreenPayload says why pending applications are re-checked.
type RescreenApplicationsPayload struct {
	Reason string `json:"reason"`
}

// EnqueueRescreenApplications asks for the re-check of every pending
// application, in the caller's transaction. reason names the change (and
// makes the job unique: one per change).
func EnqueueRescreenApplications(ctx context.Context, jobs Enqueuer, reason string) error {
	_, _, err := jobs.Enqueue(ctx, emi.JobSpec{Kind: JobRescreenApplications, UniqueKey: JobRescreenApplications + ":" + reason,
		Payload: RescreenApplicationsPayload{Reason: reason}})
	return err
}

// Enqueuer adds background jobs; it joins the transaction in ctx, so a job
// exists if and only if the change that asked for it committed.
type Enqueuer interface {
	Enqueue(ctx context.Context, spec emi.JobSpec) (id int64, created bool, err error)
}
