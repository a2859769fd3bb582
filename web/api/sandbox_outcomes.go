package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
)

// The sandbox outcomes: the human decisions a partner needs to test its
// webhooks, made through the back office's own service methods by the
// reviewers the sandbox plays. Sandbox only (404 / 10004 in production,
// like the other sandbox operations).

type sandboxKYCResponse struct {
	Session string        `json:"session"`
	User    string        `json:"user"`
	Status  emi.KYCStatus `json:"status"`
	Reason  string        `json:"reason"`
}

// sandboxKYCDecide (POST /v1/sandbox/kyc/{user}).
func (a *API) sandboxKYCDecide(w http.ResponseWriter, r *http.Request) {
	var in emi.SandboxKYCDecision
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	s, err := a.d.SandboxOutcomes.KYCDecide(r.Context(), chi.URLParam(r, "user"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, sandboxKYCResponse{Session: s.Token, User: s.UserToken, Status: s.Status, Reason: s.Reason})
}

// sandboxAMLReview (POST /v1/sandbox/aml/{aml}).
func (a *API) sandboxAMLReview(w http.ResponseWriter, r *http.Request) {
	var in emi.SandboxAMLReview
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.SandboxOutcomes.AMLReview(r.Context(), chi.URLParam(r, "aml"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newAMLCheckResponse(c))
}

// sandboxApplicationDecide (POST /v3/sandbox/applications/{application}/decision).
func (a *API) sandboxApplicationDecide(w http.ResponseWriter, r *http.Request) {
	var in emi.SandboxApplicationDecision
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	app, err := a.d.SandboxOutcomes.ApplicationDecide(r.Context(), chi.URLParam(r, "application"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, a.applicationAnswer(app))
}

type sandboxResetResponse struct {
	ResetAt time.Time        `json:"reset_at"`
	Moved   map[string]int64 `json:"moved"`
}

// sandboxReset (POST /v2/sandbox/reset): the calling partner's sandbox
// objects leave its sight (ops.SandboxOutcomes.Reset). The body is an
// empty object.
func (a *API) sandboxReset(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	res, err := a.d.SandboxOutcomes.Reset(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, sandboxResetResponse{ResetAt: res.ResetAt.Truncate(time.Microsecond), Moved: res.Moved})
}
