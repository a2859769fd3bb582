package servicetest

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"emi/internal/emi"
)

// FakeClock is a settable clock, safe for concurrent use.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock returns a clock that reads t until advanced.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{t: t} }

// Now reads the clock (a kernel.Clock).
func (c *FakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock on by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Sys is a context with the system principal.
func Sys() context.Context {
	return emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
}

// As is a context with the staff principal of u.
func As(u emi.StaffUser) context.Context {
	roles := make([]string, len(u.Roles))
	for i, r := range u.Roles {
		roles[i] = string(r)
	}
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: u.ID, StaffRoles: roles})
}

// FromIP is an anonymous request context from ip.
func FromIP(ip string) context.Context {
	return emi.WithRequestMeta(context.Background(), emi.RequestMeta{RequestID: "req-test", IP: netip.MustParseAddr(ip)})
}

// HasField reports whether err is an *emi.Error naming field.
func HasField(err error, field string) bool {
	e := emi.AsError(err)
	return e != nil && slices.ContainsFunc(e.Fields, func(f emi.FieldError) bool { return f.Field == field })
}
