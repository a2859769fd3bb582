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
var eventsListFilters = []string{"type", "starting_after", "after"}

// eventsList (GET /v2/events/{page}/{limit}) returns the caller's events, so
// a partner can reconcile the webhooks it missed. Filters: type, after.
func (a *API) eventsList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, eventsListFilters, emi.ErrValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// starting_after is the cursor's name on every list; after, its
	// former name here, stays for /v2.
	after := q.Get("starting_after")
	if q.Has("after") {
		if after != "" {
			writeError(w, r, emi.ErrValidation.Field("after", "is the former name of starting_after: send one of them"))
			return
		}
		after = q.Get("after")
	}
	page, err := a.events.List(r.Context(), emi.EventList{
		Page:  pathInt(r, "page"),
		Limit: pathInt(r, "limit"),
		Type:  emi.EventType(q.Get("type")),
		After: after,
	})
	if err != nil && !q.Has("after") {
		// The service names the cursor by its former name.
		if e := emi.AsError(err); e != nil {
			for i := range e.Fields {
				if e.Fields[i].Field == "after" {
					e.Fields[i].Field = "starting_after"
				}
			}
		}
	}
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
