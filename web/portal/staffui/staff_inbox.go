package staffui

import (
	"emi/web/portal/frame"
	"net/http"
	"strconv"

	"emi/internal/emi"
	"emi/views/staffview"
)

// Each staff user's inbox (service staff.Inbox): items addressed to them,
// marked read one by one.

// InboxRows lays out inbox items.
func InboxRows(r *http.Request, items []emi.InboxItem) []staffview.InboxRow {
	rows := make([]staffview.InboxRow, len(items))
	for i, it := range items {
		rows[i] = staffview.InboxRow{ID: strconv.FormatInt(it.ID, 10), Kind: it.Kind, Href: it.Href, Body: it.Body,
			By: frame.Who(r, it.By, it.ByName), At: frame.FmtTime(it.At), Unread: it.ReadAt == nil}
	}
	return rows
}

// inboxPage (GET /inbox) lists the person's notifications, newest first.
func (p *Pages) inboxPage(w http.ResponseWriter, r *http.Request) {
	items, err := p.inbox.Mine(r.Context(), false, 100)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	p.frame.RenderPrivate(w, r, http.StatusOK, "Inbox", staffview.InboxList(InboxRows(r, items), "No mention or assignment yet."))
}

// inboxRead (POST /inbox/read) marks one item (id) or all (id 0) read.
func (p *Pages) inboxRead(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PostFormValue("id"), 10, 64)
	if err != nil || id < 0 {
		p.frame.RenderError(w, r, emi.ErrReviewValidation.Field("id", "is not an inbox item"))
		return
	}
	if err := p.inbox.MarkRead(r.Context(), id); err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	frame.Redirect(w, r, "/backoffice/inbox")
}
