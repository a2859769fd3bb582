// Package httpx is the HTTP plumbing both surfaces share: the one map from
// error kinds to HTTP statuses, request ids, the access log, panic recovery
// and strict JSON decoding.
package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	"emi/internal/emi"
)

// Status returns the HTTP status for an error kind. It is the only place the
// mapping lives (contract §3).
func Status(k emi.Kind) int {
	switch k {
	case emi.KindInvalid:
		return http.StatusBadRequest
	case emi.KindUnauthenticated:
		return http.StatusUnauthorized
	case emi.KindForbidden:
		return http.StatusForbidden
	case emi.KindNotFound:
		return http.StatusNotFound
	case emi.KindConflict:
		return http.StatusConflict
	case emi.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case emi.KindRateLimited:
		return http.StatusTooManyRequests
	case emi.KindUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "x-request-id"

// LogFields collects what the access log line says about a request; handlers
// and middleware further down fill it in through the context.
type LogFields struct {
	mu        sync.Mutex
	Operation string
	Partner   string
	Code      *int
	Err       error
}

type logFieldsKey struct{}

// Fields returns the request's log fields (a throw-away value when the
// request did not pass through AccessLog, so callers never check for nil).
func Fields(ctx context.Context) *LogFields {
	if f, ok := ctx.Value(logFieldsKey{}).(*LogFields); ok {
		return f
	}
	return &LogFields{}
}

// SetOperation records the operation name.
func (f *LogFields) SetOperation(op string) { f.mu.Lock(); f.Operation = op; f.mu.Unlock() }

// SetPartner records the partner id.
func (f *LogFields) SetPartner(p string) { f.mu.Lock(); f.Partner = p; f.mu.Unlock() }

// SetCode records the envelope code written.
func (f *LogFields) SetCode(c int) { f.mu.Lock(); f.Code = &c; f.mu.Unlock() }

// SetError records an internal error to log with the request.
func (f *LogFields) SetError(err error) { f.mu.Lock(); f.Err = err; f.mu.Unlock() }

// RequestID accepts a sane x-request-id from the client or makes one, puts it
// in the context (emi.RequestMeta, with the client IP) and echoes it on the
// response.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		meta := emi.RequestMeta{RequestID: id, IP: clientIP(r)}
		next.ServeHTTP(w, r.WithContext(emi.WithRequestMeta(r.Context(), meta)))
	})
}

// validRequestID accepts 1 to 64 characters of [A-Za-z0-9._-], so a client
// cannot inject anything into logs through it.
func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// clientIP is the TCP peer address. Forwarded headers are not trusted: a
// client must not be able to choose the IP the audit log records. A proxy in
// front of emi is expected to be configured to pass the real peer.
func clientIP(r *http.Request) netip.Addr {
	host := r.RemoteAddr
	if ap, err := netip.ParseAddrPort(host); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}
