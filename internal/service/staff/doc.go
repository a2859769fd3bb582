// Package staff is the back office's people: staff users and their
// roles (Staff), sign-in with password, TOTP and recovery codes, step-up,
// sessions' sign-out, the two-person changes of staff and roles, the
// four-eyes policy every area asks (Controls: Propose, Approve, PolicyOf),
// and each staff user's inbox (Inbox). It imports only the kernel.
package staff
