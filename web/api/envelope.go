package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"emi/internal/emi"
	"emi/web/httpx"
)

// envelope is the JSON body of every answer (contract §3).
type envelope struct {
	Code    int              `json:"code"`
	Message string           `json:"message,omitempty"`
	Errors  []emi.FieldError `json:"errors,omitempty"`
	// Description and DocURL explain an error to a person: what happened
	// and what to do, and where the reference says more.
	Description string `json:"description,omitempty"`
	DocURL      string `json:"doc_url,omitempty"`
	Data        any    `json:"data,omitempty"`
}

type docsBaseKey struct{}

// WithDocsBase puts the public address of the reference (EMI_PUBLIC_URL)
// in the request context, for the doc_url of every error answer, those of
// the router's 404 and 405 included. The request's Host is not used: the
// client chooses it.
func WithDocsBase(publicURL string) func(http.Handler) http.Handler {
	base := strings.TrimRight(publicURL, "/")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), docsBaseKey{}, base)))
		})
	}
}

// ErrorDocPath is where the reference describes an error: the /docs/errors
// page, at the anchor of its message key.
func ErrorDocPath(key string) string { return "/docs/errors#" + key }

// errorEnvelope is the answer of a catalogue error.
func errorEnvelope(r *http.Request, e *emi.Error) envelope {
	base, _ := r.Context().Value(docsBaseKey{}).(string)
	return envelope{Code: e.Code, Message: e.Key, Errors: e.Fields, Description: e.Description(), DocURL: base + ErrorDocPath(e.Key)}
}

// writeJSON writes an envelope with status. Every API answer passes here, so
// every one is JSON with a charset and never cached.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, env envelope) {
	b, err := json.Marshal(env)
	if err != nil {
		// Only a bug in a data type can get here; answer without the data.
		httpx.Fields(r.Context()).SetError(err)
		status, env = http.StatusInternalServerError, errorEnvelope(r, emi.ErrInternal)
		b, _ = json.Marshal(env)
	}
	httpx.Fields(r.Context()).SetCode(env.Code)
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeData answers code 0 with data: 200, or 201 for a creation.
func writeData(w http.ResponseWriter, r *http.Request, status int, data any) {
	writeJSON(w, r, status, envelope{Code: 0, Data: data})
}

// writeError renders any error as the error envelope. It is the API's only
// way to answer an error: catalogue errors keep their code, key and fields;
// anything else is logged with the request id and answered 500 / 10000
// without details.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := emi.AsError(err)
	status := httpx.Status(e.Kind)
	if status >= 500 {
		httpx.Fields(r.Context()).SetError(err)
		e = emi.ErrInternal
		if ae := emi.AsError(err); ae.Kind == emi.KindUnavailable {
			e = ae // a dependency not ready is safe to name (e.g. 18000)
			status = httpx.Status(ae.Kind)
		}
	}
	switch {
	case errors.Is(e, emi.ErrOutcomeUnknown) && !writes(r):
		// A read changes nothing, whatever happened to its connection.
		e = emi.ErrUnavailable
		fallthrough
	case errors.Is(e, emi.ErrUnavailable), errors.Is(e, emi.ErrOutcomeUnknown):
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterUnavailable))
	}
	writeJSON(w, r, status, errorEnvelope(r, e))
}

// RetryAfterUnavailable is the Retry-After (seconds) of 503 / 10503 and
// 10504: long enough for a pool to drain or a failover to finish its first
// step, short enough that a client's retry is not a visible outage.
const RetryAfterUnavailable = 1

// writes reports whether the request may change something: every API
// operation that is not a GET.
func writes(r *http.Request) bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// writePanic is the recoverer's answer.
func writePanic(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusInternalServerError, errorEnvelope(r, emi.ErrInternal))
}
