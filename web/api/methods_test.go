package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

var everyMethod = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions}

// TestWrongMethodsGet405WithAllowOnEveryRoute walks the real router: for
// every routed path, each method it does not route answers 405 / 10006
// with exactly the path's methods in Allow, before authentication; each
// method it routes is not refused as a wrong method. On the old code GET
// /v2/cards/{card}/activate (and every card action path, account status,
// /v2/transfers/external) reached a list or details route and answered
// 400, 401 or 404, and a 405 carried an empty Allow.
func TestWrongMethodsGet405WithAllowOnEveryRoute(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	r := chi.NewRouter()
	env.App.API().Routes(r)
	methods := map[string][]string{}
	var patterns []string
	_ = chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if methods[route] == nil {
			patterns = append(patterns, route)
		}
		methods[route] = append(methods[route], method)
		return nil
	})
	if len(patterns) < 30 {
		t.Fatalf("only %d paths routed: the walk is broken", len(patterns))
	}
	checked := 0
	for _, pattern := range patterns {
		allowed := methods[pattern]
		slices.Sort(allowed)
		path := samplePath(pattern)
		for _, m := range everyMethod {
			rec := httptest.NewRecorder()
			env.Handler.ServeHTTP(rec, httptest.NewRequest(m, path, nil))
			if slices.Contains(allowed, m) {
				if rec.Code == http.StatusMethodNotAllowed {
					t.Errorf("%s %s (%s): a routed method answered 405", m, pattern, path)
				}
				continue
			}
			checked++
			if rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s (%s): want 405, got %d %.200s", m, pattern, path, rec.Code, rec.Body)
				continue
			}
			if got, want := rec.Header().Get("Allow"), strings.Join(allowed, ", "); got != want {
				t.Errorf("%s %s: Allow %q, want %q", m, pattern, got, want)
			}
			if m == http.MethodHead {
				continue // no body
			}
			var envl struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &envl); err != nil || envl.Code != emi.ErrMethodNotAllowed.Code {
				t.Errorf("%s %s: want the 10006 envelope, got %.200s", m, pattern, rec.Body)
			}
		}
	}
	t.Logf("%d paths, %d wrong methods answered 405", len(patterns), checked)

	// The partner's report, by name.
	card := samplePath("{card}")
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v2/cards/" + card + "/activate", "PUT"},
		{http.MethodGet, "/v2/cards/" + card + "/status", "PUT"},
		{http.MethodGet, "/v2/cards/" + card + "/convert", "PUT"},
		{http.MethodPost, "/v2/cards/" + card + "/first-half", "GET"},
		{http.MethodGet, "/v2/accounts/" + card + "/status", "PUT"},
		{http.MethodGet, "/v2/transfers/external", "POST"},
		{http.MethodPatch, "/v2/cards/" + card, "DELETE, GET"},
		{http.MethodPost, "/healthz", "GET"},
	} {
		rec := httptest.NewRecorder()
		env.Handler.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: want 405 with Allow %q, got %d %q %.200s", c.method, c.path, c.allow, rec.Code, rec.Header().Get("Allow"), rec.Body)
		}
	}
	// Lists still answer at their own paths.
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/cards/1/10", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("unsigned cards_list: want 401, got %d %.200s", rec.Code, rec.Body)
	}
}
