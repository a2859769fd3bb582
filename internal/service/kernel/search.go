package kernel

import (
	"context"
	"strings"

	"emi/internal/emi"
)

// Searcher is one area's contribution to the global search. It returns no
// hits (and no error) when the principal may not see that area.
type Searcher func(ctx context.Context, q string, limit int) ([]emi.SearchHit, error)

// Search is the back office's one search box: it asks every registered area
// and concatenates their hits in registration order.
type Search struct {
	areas []Searcher
}

// NewSearch returns a search over the given areas.
func NewSearch(areas ...Searcher) *Search { return &Search{areas: areas} }

// MaxSearchLen bounds the query.
const MaxSearchLen = 200

// Find runs q through every area, at most limit hits each. A blank query
// finds nothing.
func (s *Search) Find(ctx context.Context, q string, limit int) ([]emi.SearchHit, error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return nil, nil
	}
	if len(q) > MaxSearchLen {
		q = q[:MaxSearchLen]
	}
	var hits []emi.SearchHit
	for _, area := range s.areas {
		h, err := area(ctx, q, limit)
		if err != nil {
			return nil, err
		}
		hits = append(hits, h...)
	}
	return hits, nil
}
