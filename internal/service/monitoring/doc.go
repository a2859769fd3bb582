// Package monitoring watches the money after onboarding: every money
// movement (incoming funds, transfers in and out, card payments, cash
// withdrawals and declined authorizations) is recorded, in the
// transaction that books it, with its subject (the person or the
// merchant whose account it moves) and its amount in euros; the
// typologies (rules.go) then evaluate each movement as of the time it
// happened, over window aggregates computed in SQL, and what they find
// joins the subject's open monitoring alert in the compliance queue.
//
// # Evaluation after the fact, race-safe by construction
//
// Recording is one insert in the booking transaction. Evaluation runs
// after commit (Evaluate: a background job, and the import and the alerts
// command run it to the end), one subject at a time under an advisory
// lock, over every committed movement of the subject up to the evaluated
// one's time. Two movements racing past a window threshold are therefore
// both counted: whichever is evaluated second sees the first, and their
// hits land in the subject's one open alert. An imported history in any
// order gives the same alerts, because windows end at each movement's own
// time.
//
// # What this package does not do yet
//
// Rules that stop money before it moves (decline, hold for review), cases,
// reports and rule changes through the decision table are not built; see
// the README's monitoring section.
package monitoring
