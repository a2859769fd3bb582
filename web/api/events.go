package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
)

// eventsListResponse is the data of events_list: the list envelope of
// contract §6 whose items are exactly the webhook bodies.
type eventsListResponse struct {
	Items []json.RawMessage `json:"items"`
	Page  int               `json:"page"`
	Limit int               `json:"limit"`
	Total int64             `json:"total"`
}

// eventsListFilters are the query parameters events_list accepts.
var eventsListFilters = []string{"type", "after"}

// eventsList (GET /v2/events/{page}/{limit}) returns the caller's events, so
// a partner can reconcile the webhooks it missed. Filters: type, after.
func (a *API) eventsList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, eventsListFilters, emi.ErrValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := a.events.List(r.Context(), emi.EventList{
		Page:  pathInt(r, "page"),
		Limit: pathInt(r, "limit"),
		Type:  emi.EventType(q.Get("type")),
		After: q.Get("after"),
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, eventsListResponse{Items: page.Items, Page: page.Page, Limit: page.Limit, Total: page.Total})
}

// pathInt reads a whole-number path parameter; anything else reads as 0,
// which the services refuse with a message naming the parameter.
func pathInt(r *http.Request, name string) int {
	n, err := strconv.Atoi(chi.URLParam(r, name))
	if err != nil {
		return 0
	}
	return n
}
