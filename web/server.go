// Package web builds the one chi router that serves the partner API, the back
// office, static files and the operations endpoints.
package web

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"emi/web/api"
	"emi/web/docs"
	"emi/web/httpx"
)

// Deps are what the router needs.
type Deps struct {
	Logger *slog.Logger
	API    *api.API
	// Health reports whether the service can serve: database reachable and
	// schema current. nil error means healthy.
	Health func(ctx context.Context) error
	// Registry gathers the Prometheus metrics served at /metrics.
	Registry *prometheus.Registry
	// Metrics records the HTTP metrics (registered on Registry).
	Metrics *httpx.Metrics
	// OpenAPI is the API description served at /openapi.yaml.
	OpenAPI []byte
	// PublicURL is EMI_PUBLIC_URL: where the reference at /docs is reached
	// (the doc_url of error answers).
	PublicURL string
	// Portal is the back office, mounted at /backoffice (nil: not served).
	Portal http.Handler
	// PortalRecover answers a panic inside the back office and the hosted
	// pages (an HTML page instead of the API's envelope).
	PortalRecover func(w http.ResponseWriter, r *http.Request)
	// KYC is the public identification page people open from kyc_init's
	// link, mounted at /kyc: no back-office session, no sign-in (nil: not
	// served).
	KYC http.Handler
	// Static serves /static (the back office's CSS and scripts).
	Static fs.FS
	// Extra mounts additional routes behind the same global middleware;
	// tests use it for operations of their own. Production passes nil.
	Extra func(r chi.Router)
}

// NewHandler returns the router with its global middleware: request id,
// access log and metrics, panic recovery. The API lives under /v1, /v2 and
// /v3.
func NewHandler(d Deps) http.Handler {
	r := chi.NewRouter()
	r.Use(httpx.RequestID)
	r.Use(api.WithDocsBase(d.PublicURL))
	r.Use(httpx.AccessLog(d.Logger, d.Metrics))
	r.Use(httpx.Recoverer(d.Logger, func(w http.ResponseWriter, r *http.Request) {
		if d.PortalRecover != nil && (strings.HasPrefix(r.URL.Path, "/backoffice") || strings.HasPrefix(r.URL.Path, "/kyc/")) {
			d.PortalRecover(w, r)
			return
		}
		api.Recover(w, r)
	}))

	r.Get("/healthz", healthz(d.Health))
	if d.Registry != nil {
		r.Handle("/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}))
	}
	if d.OpenAPI != nil {
		doc := api.ServedOpenAPI(d.OpenAPI, d.PublicURL)
		r.Get("/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(doc)
		})
		// The rendered reference. The document is embedded and tested, so
		// it parses; should it not, /docs is left out rather than the whole
		// server refused.
		if h, err := docs.Handler(docs.Deps{OpenAPI: doc, PublicURL: d.PublicURL}); err == nil {
			r.Get("/docs", h.ServeHTTP)
			r.Get("/docs/*", h.ServeHTTP)
		} else if d.Logger != nil {
			d.Logger.Error("docs: the reference cannot be rendered", "error", err)
		}
	}
	if d.Portal != nil {
		r.Mount("/backoffice", d.Portal)
		r.Get("/", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/backoffice/", http.StatusFound)
		})
	}
	if d.KYC != nil {
		r.Mount("/kyc", d.KYC)
	}
	if d.Static != nil {
		files := http.StripPrefix("/static/", http.FileServerFS(d.Static))
		r.Get("/static/*", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			files.ServeHTTP(w, r)
		})
	}
	d.API.Routes(r)
	if d.Extra != nil {
		d.Extra(r)
	}
	r.NotFound(api.NotFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		api.MethodNotAllowed(w, req, allowedMethods(r, req))
	})
	return r
}

// healthz answers 200 when the service is ready and 503 with the reason
// otherwise. The reason names the failing dependency, never credentials.
func healthz(check func(ctx context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		status, body := http.StatusOK, map[string]string{"status": "ok"}
		if check != nil {
			if err := check(ctx); err != nil {
				status, body = http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()}
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
}

// allowedMethods lists the methods r routes for the request's path (the
// Allow header of a 405). chi does not hand them to a custom handler.
func allowedMethods(r chi.Routes, req *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
			out = append(out, m)
		}
	}
	return out
}
