package api

import (
	"net/http"

	"emi/internal/emi"
)

// The test clock of a sandbox partner (ops.TestClocks): create, read,
// advance, delete. Sandbox only (404 / 10004 in production).

// testClockDeleted is the answer of sandbox_test_clock_delete.
type testClockDeleted struct {
	emi.TestClock
	Deleted bool `json:"deleted"`
}

// sandboxTestClockCreate (POST /v2/sandbox/test_clock).
func (a *API) sandboxTestClockCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.TestClockCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.TestClocks.Create(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, c)
}

// sandboxTestClockDetails (GET /v2/sandbox/test_clock).
func (a *API) sandboxTestClockDetails(w http.ResponseWriter, r *http.Request) {
	c, err := a.d.TestClocks.Get(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, c)
}

// sandboxTestClockAdvance (POST /v2/sandbox/test_clock/advance).
func (a *API) sandboxTestClockAdvance(w http.ResponseWriter, r *http.Request) {
	var in emi.TestClockAdvance
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	res, err := a.d.TestClocks.Advance(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, res)
}

// sandboxTestClockDelete (DELETE /v2/sandbox/test_clock).
func (a *API) sandboxTestClockDelete(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.TestClocks.Delete(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, testClockDeleted{TestClock: c, Deleted: true})
}
