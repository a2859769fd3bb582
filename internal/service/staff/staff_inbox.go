package staff

import (
	"context"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"time"
)

// InboxStore keeps the staff inbox.
type InboxStore interface {
	Notify(ctx context.Context, it emi.InboxItem) error
	Inbox(ctx context.Context, staff string, unreadOnly bool, limit int) ([]emi.InboxItem, error)
	UnreadCount(ctx context.Context, staff string) (int64, error)
	// MarkRead marks one item (id) or all (id 0) of staff read.
	MarkRead(ctx context.Context, staff string, id int64, at time.Time) error
}

// Inbox is each staff user's notifications: mentions in internal notes and
// assignments of applications and alerts reach the person named, on the
// dashboard and as a count in the navigation, so nobody has to watch the
// queues for work given to them.
type Inbox struct {
	store InboxStore
	now   kernel.Clock
}

// InboxDeps is what Inbox needs; NewInbox checks that none is nil.
type InboxDeps struct {
	Store InboxStore
	Now   kernel.Clock
}

// NewInbox returns the inbox service.
func NewInbox(d InboxDeps) *Inbox {
	kernel.MustHave("Inbox", d)
	return &Inbox{store: d.Store, now: d.Now}
}

// notify records an item for staff, in the caller's transaction. Nobody
// is notified of their own action. A nil inbox notifies nobody (tests that
// build services without one).
func (i *Inbox) Notify(ctx context.Context, staff, kind, href, body string) error {
	p := kernel.StaffOf(ctx)
	by := p.ActorID
	if p.Type != emi.ActorStaff {
		by = "" // the system (a lapse) is nobody
	}
	if i == nil || staff == "" || staff == by {
		return nil
	}
	if len(body) > 500 {
		body = body[:497] + "…"
	}
	return i.store.Notify(ctx, emi.InboxItem{StaffID: staff, Kind: kind, Href: href, Body: body, By: by, At: i.now().UTC()})
}

// Mine returns the caller's items, newest first (unread only when asked).
func (i *Inbox) Mine(ctx context.Context, unreadOnly bool, limit int) ([]emi.InboxItem, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.Type != emi.ActorStaff {
		return nil, emi.ErrForbidden
	}
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	return i.store.Inbox(ctx, p.ActorID, unreadOnly, limit)
}

// Unread counts the caller's unread items.
func (i *Inbox) Unread(ctx context.Context) (int64, error) {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.Type != emi.ActorStaff {
		return 0, emi.ErrForbidden
	}
	return i.store.UnreadCount(ctx, p.ActorID)
}

// MarkRead marks one of the caller's items (id) or all of them (0) read;
// another person's item is left alone.
func (i *Inbox) MarkRead(ctx context.Context, id int64) error {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok || p.Type != emi.ActorStaff {
		return emi.ErrForbidden
	}
	return i.store.MarkRead(ctx, p.ActorID, id, i.now().UTC())
}
