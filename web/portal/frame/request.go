package frame

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// Reading a request, for every screen: path parameters, a copied query,
// a date range, the longest query a list accepts, and whether a search
// looks like a token.

func CloneQuery(q url.Values) url.Values {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

func Param(r *http.Request, name string) string { return chi.URLParam(r, name) }

// DateRange reads the from and to filters (YYYY-MM-DD, UTC) as a half-open
// range [from, to+1 day), so "to" includes the whole day. An empty date
// leaves that end open. A date that does not parse, or a range that ends
// before it starts, is refused (it used to be ignored silently, so the page
// listed everything while the form showed a filter): errs then holds the
// message for the field, and the caller answers 422 with the form.
func DateRange(q url.Values) (from, to time.Time, errs map[string]string) {
	errs = map[string]string{}
	parse := func(field string) time.Time {
		v := strings.TrimSpace(q.Get(field))
		if v == "" {
			return time.Time{}
		}
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			errs[field] = "is not a date: write it as YYYY-MM-DD, e.g. 2026-03-31"
		}
		return t
	}
	from, to = parse("from"), parse("to")
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		errs["to"] = "is before the start date"
	}
	if len(errs) > 0 {
		return time.Time{}, time.Time{}, errs
	}
	if !to.IsZero() {
		to = to.AddDate(0, 0, 1)
	}
	return from, to, nil
}

// MaxQuery bounds the search fields (as the global search does).
const MaxQuery = 200

// LooksLikeToken reports whether s has the shape of a token (a UUID), so
// a hand-edited paging link cannot reach the database as a bad value.
func LooksLikeToken(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}
