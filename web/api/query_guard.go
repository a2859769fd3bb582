package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	yaml "github.com/pb33f/go-yaml"

	"emi/internal/emi"
)

// One rule for query parameters, on every operation: a parameter the
// reference does not document for the operation is refused (400, the
// operation's validation code, the parameter named in errors), before
// the operation runs. partner_details used to ignore what webhooks list
// refused; a typo in a filter (?stauts=pending) then silently returned
// everything.

// queryParams are the documented query parameters by operation name
// (x-emi-operation), read once from the embedded reference.
var queryParams = sync.OnceValues(func() (map[string][]string, error) { return buildQueryParams(OpenAPI) })

func buildQueryParams(doc []byte) (map[string][]string, error) {
	var root struct {
		Paths      map[string]map[string]any `yaml:"paths"`
		Components struct {
			Parameters map[string]map[string]any `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for path, item := range root.Paths {
		for method, v := range item {
			opDoc, ok := v.(map[string]any)
			if !ok {
				continue
			}
			name, _ := opDoc["x-emi-operation"].(string)
			if name == "" {
				continue
			}
			names := []string{}
			params, _ := opDoc["parameters"].([]any)
			for _, p := range params {
				pm, _ := p.(map[string]any)
				if ref, ok := pm["$ref"].(string); ok {
					key := strings.TrimPrefix(ref, "#/components/parameters/")
					if pm = root.Components.Parameters[key]; pm == nil {
						return nil, fmt.Errorf("%s %s: parameter %s is not in components", method, path, ref)
					}
				}
				if in, _ := pm["in"].(string); in == "query" {
					n, _ := pm["name"].(string)
					names = append(names, n)
				}
			}
			slices.Sort(names)
			out[name] = names
		}
	}
	return out, nil
}

// queryGuard refuses a query parameter the operation does not document.
// An operation the reference does not know (an extra one of a test)
// passes.
func (a *API) queryGuard(op Operation, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" {
			next.ServeHTTP(w, r)
			return
		}
		all, err := queryParams()
		if err != nil {
			// openapi.yaml is embedded and parsed by every test: not reached.
			panic(fmt.Errorf("openapi.yaml: %w", err))
		}
		documented, known := all[op.Name]
		if !known {
			next.ServeHTTP(w, r)
			return
		}
		var bad []emi.FieldError
		q := r.URL.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !slices.Contains(documented, k) {
				bad = append(bad, emi.FieldError{Field: k, Message: unknownQueryMessage(documented)})
			}
		}
		if len(bad) > 0 {
			writeError(w, r, op.Invalid.WithFields(bad...))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// unknownQueryMessage says which query parameters the operation takes.
func unknownQueryMessage(documented []string) string {
	if len(documented) == 0 {
		return "unknown query parameter: this operation takes none"
	}
	return unknownFilterMessage(documented)
}
