package api

import (
	"net/http"
	"slices"
	"strings"
	"sync"
)

// pathTable holds every routed pattern of the API with its methods, so a
// request can be matched to its path before its method is looked at.
//
// chi picks a route by path *and* method: when the most specific pattern
// for a path has no route for the method, it backtracks to a less specific
// one that has. GET /v2/cards/{card}/activate thus reached cards_list
// (/v2/cards/{page}/{limit}) and answered "page must be 1 or more", and
// GET /v2/transfers/external reached transfer_details. A resource is
// named by its most specific pattern, whatever the method.
type pathTable struct {
	mu       sync.RWMutex
	patterns []routedPattern
	// ops are the signed operation names, each once, sorted.
	ops []string
}

// operations returns every signed operation name of the API.
func (t *pathTable) operations() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ops
}

type routedPattern struct {
	segments []string // "" for a {param} segment
	methods  []string
}

func (t *pathTable) add(pattern, method, op string) {
	segs := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			segs[i] = ""
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, found := slices.BinarySearch(t.ops, op); !found {
		t.ops = slices.Insert(slices.Clone(t.ops), i, op)
	}
	for i := range t.patterns {
		if slices.Equal(t.patterns[i].segments, segs) {
			if !slices.Contains(t.patterns[i].methods, method) {
				t.patterns[i].methods = append(t.patterns[i].methods, method)
				slices.Sort(t.patterns[i].methods)
			}
			return
		}
	}
	t.patterns = append(t.patterns, routedPattern{segments: segs, methods: []string{method}})
}

// allowed returns the methods of the most specific pattern that matches
// path (static segments win over parameters, from the left, as in chi's
// tree), or nil when none does.
func (t *pathTable) allowed(path string) []string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	t.mu.RLock()
	defer t.mu.RUnlock()
	var best *routedPattern
	for i := range t.patterns {
		p := &t.patterns[i]
		if !p.matches(segs) {
			continue
		}
		if best == nil || p.moreSpecific(best) {
			best = p
		}
	}
	if best == nil {
		return nil
	}
	return best.methods
}

func (p *routedPattern) matches(segs []string) bool {
	if len(segs) != len(p.segments) {
		return false
	}
	for i, s := range p.segments {
		if s == "" && segs[i] == "" || s != "" && s != segs[i] {
			return false
		}
	}
	return true
}

// moreSpecific reports whether p beats q for a path both match: the first
// segment where one is static and the other a parameter decides.
func (p *routedPattern) moreSpecific(q *routedPattern) bool {
	for i := range p.segments {
		if ps, qs := p.segments[i] != "", q.segments[i] != ""; ps != qs {
			return ps
		}
	}
	return false
}

// methodGuard answers 405 / 10006 with the path's methods in Allow when the
// path's own pattern does not take the request's method, before chi can
// route it to a less specific pattern, and before authentication (as any
// router answers a wrong method).
func (a *API) methodGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		if allowed := a.paths.allowed(path); allowed != nil && !slices.Contains(allowed, r.Method) {
			MethodNotAllowed(w, r, allowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}
