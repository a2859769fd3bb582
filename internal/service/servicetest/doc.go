// Package servicetest holds the tests that wire several service areas
// together over a real database (the money app of apptest, the webhooks
// with the event outbox, staff with controls and step-up), and the small
// helpers every area's tests share (FakeClock, Sys, As, FromIP).
//
// An area's own tests live beside it (internal/service/<area>); a test
// that needs another area's services built lives here. Only _test.go
// files import this package (archtest).
package servicetest
