package api

import (
	"encoding/json"
	"net/http"

	"emi/internal/emi"
	"emi/web/httpx"
)

// envelope is the JSON body of every answer (contract §3).
type envelope struct {
	Code    int              `json:"code"`
	Message string           `json:"message,omitempty"`
	Errors  []emi.FieldError `json:"errors,omitempty"`
	Data    any              `json:"data,omitempty"`
}

// writeJSON writes an envelope with status. Every API answer passes here, so
// every one is JSON with a charset and never cached.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, env envelope) {
	b, err := json.Marshal(env)
	if err != nil {
		// Only a bug in a data type can get here; answer without the data.
		httpx.Fields(r.Context()).SetError(err)
		status, env = http.StatusInternalServerError, envelope{Code: emi.ErrInternal.Code, Message: emi.ErrInternal.Key}
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
	writeJSON(w, r, status, envelope{Code: e.Code, Message: e.Key, Errors: e.Fields})
}

// writePanic is the recoverer's answer.
func writePanic(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusInternalServerError, envelope{Code: emi.ErrInternal.Code, Message: emi.ErrInternal.Key})
}
