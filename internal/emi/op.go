package emi

import (
	"context"
	"slices"
	"strings"
)

// Op is one kind of operation of a service area (see partners, decide an
// application, change a card) with the rule that says who may do it: a
// staff member whose roles grant one of its permissions, or a system
// principal. Each service area declares its operations beside the code
// that does them; the service checks an operation with the same value the
// back office uses to guard its route and to decide whether to show the
// button (Op.Allowed), so no screen holds a permission of its own and the
// two cannot drift apart.
type Op struct {
	name  string
	anyOf []Permission
}

// NewOp declares an operation that any one of perms allows.
func NewOp(name string, perms ...Permission) Op {
	if name == "" || len(perms) == 0 {
		panic("emi.NewOp: an operation needs a name and at least one permission")
	}
	return Op{name: name, anyOf: slices.Clone(perms)}
}

// Name is the operation's name, as tests and error details show it.
func (o Op) Name() string { return o.name }

// Permissions lists the permissions of which one allows the operation.
func (o Op) Permissions() []Permission { return slices.Clone(o.anyOf) }

// AllowedFor reports whether p may do the operation. The zero Op allows
// nobody.
func (o Op) AllowedFor(p Principal) bool { return slices.ContainsFunc(o.anyOf, p.Can) }

// AllowedForRoles reports whether a staff member holding roles may do the
// operation (to check a colleague something is assigned to).
func (o Op) AllowedForRoles(roles []Role) bool {
	return slices.ContainsFunc(o.anyOf, func(p Permission) bool { return Can(roles, p) })
}

// Allowed reports whether the principal of ctx may do the operation.
func (o Op) Allowed(ctx context.Context) bool {
	p, _ := PrincipalFrom(ctx)
	return o.AllowedFor(p)
}

// Require returns ErrForbidden, naming what the operation needs, unless
// the principal of ctx may do it.
func (o Op) Require(ctx context.Context) error {
	if o.Allowed(ctx) {
		return nil
	}
	return o.Refusal()
}

// Refusal is the error of someone the operation does not allow: the staff
// member reads what it takes, so they know whom to ask.
func (o Op) Refusal() *Error {
	return ErrForbidden.WithDetail("needs %s", o.Needs()).WithPublic("Your roles do not allow this: it takes %s.", o.Needs())
}

// Needs says in words what the operation takes ("partners.manage", or
// "applications.decide or staff.manage").
func (o Op) Needs() string {
	parts := make([]string, len(o.anyOf))
	for i, p := range o.anyOf {
		parts[i] = string(p)
	}
	return strings.Join(parts, " or ")
}
