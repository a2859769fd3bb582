package frame

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"emi/internal/emi"
	"emi/views/components"
)

// Sortable tables. Every list that sorts reads its order here from
// ?sort=<key>&dir=asc|desc, limited to the keys the list names, and shows
// its headers with components.SortHeader. Short lists (partners, staff) are
// sorted in Go after the service returns them, with the id as the
// tie-breaker; long ones pass sort.order() to their store, which maps the
// key to an SQL expression (postgres.sortable) with the token as the
// tie-breaker, and pages by keyset on (expression, token).
//
// An unknown key or direction is not ignored: the list is shown in its
// default order with a message saying what may be chosen, answered 422.

// ListPageSize is the rows of a page of a list paged by keyset (the AML
// and KYC tabs, like the people list and the audit log).
const ListPageSize = 50

// TableSort is a table's order and, when the asked one was refused, why.
type TableSort struct {
	Key, Dir string
	Err      string
}

// pagingParams are the query parameters a new order drops: it starts at
// the first page.
var pagingParams = []string{"sort", "dir", "page", "before", "before_at", "before_token", "after"}

// ReadSort reads the order of a list that sorts by keys (the first is not
// special); defKey and defDir are its default.
func ReadSort(r *http.Request, defKey, defDir string, keys ...string) TableSort {
	s := TableSort{Key: defKey, Dir: defDir}
	q := r.URL.Query()
	k, d := q.Get("sort"), q.Get("dir")
	switch {
	case k != "" && !slices.Contains(keys, k):
		s.Err = "This list cannot be sorted by “" + clip(k, 40) + "”: choose one of " + strings.Join(keys, ", ") + ". It is shown in its usual order."
	case d != "" && d != "asc" && d != "desc":
		s.Err = "The direction of a sort is asc or desc, not “" + clip(d, 40) + "”. The list is shown in its usual order."
	default:
		if k != "" {
			s.Key = k
			if d == "" {
				d = "asc"
			}
		}
		if d != "" {
			s.Dir = d
		}
	}
	return s
}

// ReadAfter reads the cursor of a list paged by keyset after a token
// (?after=, the last row of the previous page: the AML and KYC queues).
// A cursor that is not a token, or one with an order that was refused (it
// belongs to another order), is not used: the first page is shown with a
// message, answered 422 like a refused order.
func ReadAfter(r *http.Request, s *TableSort) string {
	a := r.URL.Query().Get("after")
	switch {
	case a == "":
		return ""
	case !LooksLikeToken(a):
		s.Err = "This page link is broken: “" + clip(a, 40) + "” is not a row of the list. Its first page is shown."
		return ""
	case s.Err != "":
		return ""
	}
	return strings.ToLower(a)
}

// AfterLinks are the pager's links of a list paged by readAfter: the first
// page when this one is not (after, the cursor used, is not ""), and the
// next page after last when this page is full.
func AfterLinks(r *http.Request, after string, full bool, last string) (first, next string) {
	q := r.URL.Query()
	if after != "" {
		fq := CloneQuery(q)
		fq.Del("after")
		first = r.URL.Path + "?" + fq.Encode()
	}
	if full {
		nq := CloneQuery(q)
		nq.Set("after", last)
		next = r.URL.Path + "?" + nq.Encode()
	}
	return first, next
}

// clip shortens what was typed for a message.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Status is the answer's Status: 422 when the asked order was refused.
func (s TableSort) Status() int {
	if s.Err != "" {
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}

// Apply orders a comparison c by the direction, ties broken by tie (the
// rows' ids) in the same direction, so equal values keep one order.
func (s TableSort) Apply(c, tie int) int {
	if c == 0 {
		c = tie
	}
	if s.Dir == "desc" {
		return -c
	}
	return c
}

// Order is the Order for a store.
func (s TableSort) Order() emi.SortOrder { return emi.SortOrder{Key: s.Key, Desc: s.Dir == "desc"} }

// View is the order for the headers: the list's address and filters of r,
// without the order and paging.
func (s TableSort) View(r *http.Request) components.Sorting {
	q := r.URL.Query()
	for _, k := range pagingParams {
		q.Del(k)
	}
	return components.Sorting{Key: s.Key, Dir: s.Dir, Path: r.URL.Path, Query: q, Error: s.Err}
}

// SortRows orders rows of a bounded list in Go by the text of the order's
// column (case-insensitive; times are written 2006-01-02 15:04:05, which
// sort as text), ties broken by id. Without ?sort= the rows keep the
// service's order, which is the list's default.
func SortRows[T any](r *http.Request, rows []T, s TableSort, cols map[string]func(T) string, id func(T) string) {
	key := cols[s.Key]
	if key == nil || r.URL.Query().Get("sort") == "" || s.Err != "" {
		return
	}
	slices.SortStableFunc(rows, func(a, b T) int {
		return s.Apply(strings.Compare(strings.ToLower(key(a)), strings.ToLower(key(b))), strings.Compare(id(a), id(b)))
	})
}

// TimeOrZero is *t, or the zero time for nil (sorting by an optional
// time: never signed in sorts first).
func TimeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// PadNumber writes a decimal number (digits, an optional minus sign and
// fraction, as the lists show ids and amounts) so that it sorts as text
// in numeric order: sortRows compares text. Negative numbers sort before
// the others (their order among themselves is not needed by any list).
func PadNumber(n string) string {
	n = strings.TrimSpace(n)
	neg := strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	whole, frac, _ := strings.Cut(n, ".")
	if len(whole) < 20 {
		whole = strings.Repeat("0", 20-len(whole)) + whole
	}
	if neg {
		return "0" + whole + "." + frac
	}
	return "1" + whole + "." + frac
}

// MaxPage bounds the page number a hand-edited link may ask for.
const MaxPage = 100000
