package api

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/web/httpx"
)

// listQuery checks the query string of a list operation, the one place
// every list's filters are read: each key must be one of filters, given
// once, with a value that is not empty (an empty value is refused rather
// than read as "no filter": `?after=` or `?to=` would otherwise silently
// return something else than asked) and that PostgreSQL can store.
// Returns the operation's validation error naming every bad key.
func listQuery(r *http.Request, filters []string, invalid *emi.Error) (url.Values, error) {
	q := r.URL.Query()
	var bad []emi.FieldError
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vs := q[k]
		switch {
		case !slices.Contains(filters, k):
			bad = append(bad, emi.FieldError{Field: k, Message: unknownFilterMessage(filters)})
		case len(vs) > 1:
			bad = append(bad, emi.FieldError{Field: k, Message: "must be given once"})
		case vs[0] == "":
			bad = append(bad, emi.FieldError{Field: k, Message: "must not be empty: leave the filter out instead"})
		case !httpx.StorableText(vs[0]):
			bad = append(bad, emi.FieldError{Field: k, Message: filterValueMessage})
		}
	}
	if len(bad) > 0 {
		return nil, invalid.WithFields(bad...)
	}
	return q, nil
}

func unknownFilterMessage(filters []string) string {
	switch len(filters) {
	case 0:
		return "unknown filter: this list has none"
	case 1:
		return "unknown filter: the filter is " + filters[0]
	}
	return "unknown filter: the filters are " + strings.Join(filters[:len(filters)-1], ", ") + " and " + filters[len(filters)-1]
}

// queryLimit reads a list's limit query parameter: given is false when it
// is absent. The range is the service's rule, so the reading has none:
// what is not a whole number reads as 0, which every service refuses with
// its range ("must be a whole number from 1 to N") beside the other
// problems of the request.
func queryLimit(q url.Values) (n int, given bool) {
	v := q.Get("limit")
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, true
	}
	return n, true
}
