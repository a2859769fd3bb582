package frame

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"emi/internal/emi"
)

// NavEntry is one link of the navigation: shown to whoever the service
// operation guarding its page allows, with a badge counting the queue it
// leads to when Count is set. Each area declares its own entries; the
// portal puts them in order.
type NavEntry struct {
	Href, Label string
	Op          emi.Op
	// Count returns the size of the queue (0: no badge). It is called
	// only when the link is shown; a count that needs more than Op checks
	// it itself and returns 0. An error is logged and shows no badge: the
	// badges are a convenience and the page works without them.
	Count func(r *http.Request) (int64, error)
}

// navCounts returns the badges of the entries the principal sees, by href.
// A page that has just counted its own queue passes the figure in the
// request (WithNavCount) so that it is not counted twice.
func (f *Frame) navCounts(r *http.Request, entries []NavEntry) map[string]string {
	out := map[string]string{}
	for _, n := range entries {
		if n.Count == nil {
			continue
		}
		c, ok := r.Context().Value(navCountKey{n.Href}).(int64)
		if !ok {
			var err error
			if c, err = n.Count(r); err != nil {
				f.log.Warn("count a queue for the navigation", "queue", n.Label, "error", err,
					"request_id", emi.RequestMetaFrom(r.Context()).RequestID)
				continue
			}
		}
		if c > 0 {
			out[n.Href] = strconv.FormatInt(c, 10)
		}
	}
	return out
}

// visibleNav returns the entries the request's principal may open.
func (f *Frame) visibleNav(r *http.Request) []NavEntry {
	pr, _ := emi.PrincipalFrom(r.Context())
	var out []NavEntry
	for _, n := range f.nav {
		if n.Op.AllowedFor(pr) {
			out = append(out, n)
		}
	}
	return out
}

// navActive reports whether the link href is the current page's section.
func navActive(path, href string) bool {
	return path == href || (href != "/backoffice/" && strings.HasPrefix(path, href))
}

type navCountKey struct{ href string }

// WithNavCount passes the badge of the navigation link href, counted by
// the page itself, to the frame.
func WithNavCount(r *http.Request, href string, n int64) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), navCountKey{href}, n))
}
