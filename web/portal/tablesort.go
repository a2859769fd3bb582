package portal

import (
	"net/http"
	"slices"
	"time"

	"emi/views/pages"
)

// tableSort is a table's order from ?sort=&dir=, limited to known keys.
// Partner and staff lists are short, so they are sorted here after the
// service returns them; long lists (the audit log) are ordered by the query.
type tableSort struct{ Key, Dir string }

func sortParam(r *http.Request, defKey, defDir string, keys ...string) tableSort {
	s := tableSort{Key: defKey, Dir: defDir}
	if k := r.URL.Query().Get("sort"); slices.Contains(keys, k) {
		s.Key = k
	}
	if d := r.URL.Query().Get("dir"); d == "asc" || d == "desc" {
		s.Dir = d
	}
	return s
}

func (s tableSort) apply(c int) int {
	if s.Dir == "desc" {
		return -c
	}
	return c
}

func (s tableSort) view() pages.Sort { return pages.Sort{Key: s.Key, Dir: s.Dir} }

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
