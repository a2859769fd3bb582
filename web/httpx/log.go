package httpx

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"emi/internal/emi"
)

// StatusRecorder wraps a ResponseWriter to remember the status and size.
type StatusRecorder struct {
	http.ResponseWriter
	Status int
	Bytes  int
}

// WriteHeader records the status.
func (s *StatusRecorder) WriteHeader(code int) {
	if s.Status == 0 {
		s.Status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records the size (and an implicit 200).
func (s *StatusRecorder) Write(b []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.Bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Metrics are the HTTP metrics of the server.
type Metrics struct {
	Requests *prometheus.CounterVec
	Latency  *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "emi_http_requests_total",
			Help: "HTTP requests by operation (API) or route (other), status and envelope code.",
		}, []string{"operation", "status", "code"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "emi_http_request_duration_seconds",
			Help:    "HTTP request latency by operation (API) or route (other).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
	}
	reg.MustRegister(m.Requests, m.Latency)
	return m
}

// AccessLog writes one structured line per request (method, route pattern,
// operation, status, code, latency, partner, request id) and records the
// metrics. It never logs bodies, query strings or headers, so secrets and
// card data cannot reach the log through it.
func AccessLog(logger *slog.Logger, m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			f := &LogFields{}
			rec := &StatusRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), logFieldsKey{}, f)))
			status := rec.Status
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			pattern := ""
			if rc := chi.RouteContext(r.Context()); rc != nil {
				pattern = rc.RoutePattern()
			}
			f.mu.Lock()
			op, partner, code, ierr := f.Operation, f.Partner, f.Code, f.Err
			f.mu.Unlock()
			label := op
			if label == "" {
				label = pattern
				if label == "" {
					label = "unmatched"
				}
			}
			codeLabel := ""
			attrs := []slog.Attr{
				slog.String("method", r.Method),
				slog.String("route", pattern),
				slog.Int("status", status),
				slog.Float64("latency_ms", float64(elapsed.Microseconds())/1000),
				slog.String("request_id", emi.RequestMetaFrom(r.Context()).RequestID),
			}
			if op != "" {
				attrs = append(attrs, slog.String("operation", op))
			}
			if code != nil {
				codeLabel = strconv.Itoa(*code)
				attrs = append(attrs, slog.Int("code", *code))
			}
			if partner != "" {
				attrs = append(attrs, slog.String("partner", partner))
			}
			level := slog.LevelInfo
			if ierr != nil {
				attrs = append(attrs, slog.String("error", ierr.Error()))
			}
			switch {
			case status >= 500 && r.Context().Err() != nil:
				// The client hung up first (its request context is
				// cancelled, so the handler's database calls failed):
				// nobody received this answer and the server is not at
				// fault; a warning, so error alerts mean server faults.
				level = slog.LevelWarn
				attrs = append(attrs, slog.Bool("client_gone", true))
			case status >= 500:
				level = slog.LevelError
			}
			logger.LogAttrs(r.Context(), level, "request", attrs...)
			if m != nil {
				m.Requests.WithLabelValues(label, strconv.Itoa(status), codeLabel).Inc()
				m.Latency.WithLabelValues(label).Observe(elapsed.Seconds())
			}
		})
	}
}

// Recoverer turns a panic into a call of onPanic (which writes the surface's
// 500 answer) and logs the stack with the request id. http.ErrAbortHandler
// is re-panicked, as net/http expects.
func Recoverer(logger *slog.Logger, onPanic func(w http.ResponseWriter, r *http.Request)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				if p == http.ErrAbortHandler {
					panic(p)
				}
				Fields(r.Context()).SetError(fmt.Errorf("panic: %v", p))
				logger.ErrorContext(r.Context(), "panic",
					slog.String("request_id", emi.RequestMetaFrom(r.Context()).RequestID),
					slog.String("panic", fmt.Sprint(p)),
					slog.String("stack", string(debug.Stack())))
				onPanic(w, r)
			}()
			next.ServeHTTP(w, r)
		})
	}
}
