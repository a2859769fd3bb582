// Package onboarding is company applications from submission to
// decision: the partner's operations (Onboarding: create, members, documents,
// edits, submit), the automatic checks and their settling (Checks: sanctions
// and adverse media through people, risk scoring, grounds), and the
// underwriters' review (Review: queue, claims, notes, decisions under the
// two-person rule, SLA, saved views, metrics). It imports the kernel, staff,
// partners (validator configuration) and people (screening, documents).
package onboarding
