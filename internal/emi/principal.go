package emi

import (
	"context"
	"net/netip"
)

// ActorType says who acted: a partner through an API key, a staff user in the
// back office, or the system itself (workers, commands).
type ActorType string

// Actor types, as stored in the audit log.
const (
	ActorPartnerKey ActorType = "partner_key"
	ActorStaff      ActorType = "staff"
	ActorSystem     ActorType = "system"
)

// Principal is who is calling. A partner principal carries the partner and
// its master merchant; every service scopes its queries by it, so a token of
// another partner is reported exactly as one that does not exist.
type Principal struct {
	Type ActorType
	// ActorID is the API key id (partner), the staff user's id, or a
	// component name ("worker", "cli") for the system.
	ActorID string

	// Partner fields; empty for staff and system principals.
	PartnerID      string
	MasterMerchant string

	// Staff fields; empty for partners.
	StaffRoles []string
}

// IsPartner reports whether the principal is a partner API key.
func (p Principal) IsPartner() bool { return p.Type == ActorPartnerKey && p.PartnerID != "" }

// SystemPrincipal returns the principal of a background component.
func SystemPrincipal(component string) Principal {
	return Principal{Type: ActorSystem, ActorID: component}
}

// RequestMeta is what the delivery layer knows about the request that is
// being served; the audit log records it.
type RequestMeta struct {
	RequestID string
	IP        netip.Addr
}

type principalKey struct{}
type metaKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx and whether there is one.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// WithRequestMeta returns a context carrying m.
func WithRequestMeta(ctx context.Context, m RequestMeta) context.Context {
	return context.WithValue(ctx, metaKey{}, m)
}

// RequestMetaFrom returns the request metadata in ctx (zero when none).
func RequestMetaFrom(ctx context.Context) RequestMeta {
	m, _ := ctx.Value(metaKey{}).(RequestMeta)
	return m
}

type lagTolerantKey struct{}

// WithLagTolerant marks ctx: its reads outside a transaction may come from
// a read replica within EMI_READ_MAX_LAG. The back office marks
// its pages unless the staff member changed something within that bound
// (read-your-writes); `emi ledger verify` marks its run. Partner API reads
// are never marked: a partner reads what it has just written, on any
// instance, and nothing ties its next request to its last write.
func WithLagTolerant(ctx context.Context) context.Context {
	return context.WithValue(ctx, lagTolerantKey{}, true)
}

// LagTolerant reports whether ctx was marked by WithLagTolerant.
func LagTolerant(ctx context.Context) bool {
	ok, _ := ctx.Value(lagTolerantKey{}).(bool)
	return ok
}
