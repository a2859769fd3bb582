// Package kernel is what every service area shares: transactions
// (TxRunner), the clock, the sealer, rate limits, the job queue (Enqueuer, and
// the jobs one area queues for another), the audit trail (Auditor), the event
// outbox (Events), idempotency, the principal and permission checks
// (Require, PartnerCtx, StaffOf), input problems (Problems), the search
// registry, the sandbox's system principals, and the construction check
// (MustHave).
//
// The service layer (internal/service/...) holds emi's use cases. Both
// surfaces, the partner API (web/api) and the back office (web/portal), call
// its methods; all validation, business rules, partner scoping and audit
// happen there, once. Each area declares the store and provider interfaces it
// needs; internal/postgres implements them. kernel imports no area
// (internal/archtest, areaArrows).
package kernel
