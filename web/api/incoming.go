package api

import (
	"net/http"

	"emi/internal/emi"
)

// incomingResponse is the data of sandbox_incoming_credit: where the money
// went.
type incomingResponse struct {
	Status       string            `json:"status"`
	Transfer     *transferResponse `json:"transfer,omitempty"`
	SuspenseItem string            `json:"suspense_item,omitempty"`
}

// sandboxIncomingCredit (POST /v2/sandbox/incoming, sandbox only)
// simulates money arriving from outside emi.
func (a *API) sandboxIncomingCredit(w http.ResponseWriter, r *http.Request) {
	var in emi.IncomingCredit
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	res, err := a.d.Incoming.Credit(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := incomingResponse{Status: res.Status, SuspenseItem: res.SuspenseItem}
	if res.Transfer != nil {
		t := newTransferResponse(*res.Transfer)
		out.Transfer = &t
	}
	writeData(w, r, http.StatusCreated, out)
}
