package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/monitoring"
)

// Information requests: emi's compliance team asks the partner about one
// of its customers (a routine review's questions: the origin of funds,
// the purpose of payments...). The partner hears of a request by the
// information_request.created event, reads it and answers it once.

// informationRequestResponse is an information request as the partner
// reads it: nothing in it names why it was asked.
type informationRequestResponse struct {
	Token            string     `json:"token"`
	User             string     `json:"user,omitempty"`
	Merchant         string     `json:"merchant,omitempty"`
	Topic            string     `json:"topic"`
	TopicDescription string     `json:"topic_description"`
	Question         string     `json:"question"`
	Status           string     `json:"status"`
	Answer           string     `json:"answer,omitempty"`
	RequestedAt      time.Time  `json:"requested_at"`
	DueAt            time.Time  `json:"due_at"`
	AnsweredAt       *time.Time `json:"answered_at,omitempty"`
}

func newInformationRequestResponse(r monitoring.InformationRequest) informationRequestResponse {
	out := informationRequestResponse{Token: r.Token, Topic: r.Topic, TopicDescription: monitoring.InformationTopics[r.Topic],
		Question: r.Question, Status: r.Status, Answer: r.Answer, RequestedAt: r.RequestedAt, DueAt: r.DueAt, AnsweredAt: r.AnsweredAt}
	if r.Subject.Kind == monitoring.SubjectMerchant {
		out.Merchant = r.Subject.Token
	} else {
		out.User = r.Subject.Token
	}
	return out
}

// informationRequestsListFilters are the query parameters
// information_requests_list accepts.
var informationRequestsListFilters = []string{"status", "limit", "starting_after"}

type informationRequestsListResponse struct {
	Items   []informationRequestResponse `json:"items"`
	HasMore bool                         `json:"has_more"`
}

// informationRequestsList (GET /v2/information_requests): the newest 100
// (or limit), optionally of one status, after a cursor (starting_after:
// the last token of the previous page).
func (a *API) informationRequestsList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, informationRequestsListFilters, emi.ErrValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	in := monitoring.RequestList{Status: q.Get("status"), StartingAfter: q.Get("starting_after"), Limit: monitoring.MaxRequestList}
	if n, given := queryLimit(q); given {
		in.Limit = n
	}
	list, more, err := a.d.InformationRequests.PartnerInformationRequests(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := informationRequestsListResponse{Items: make([]informationRequestResponse, 0, len(list)), HasMore: more}
	for _, ir := range list {
		resp.Items = append(resp.Items, newInformationRequestResponse(ir))
	}
	writeData(w, r, http.StatusOK, resp)
}

// informationRequestDetails (GET /v2/information_requests/{information_request}).
func (a *API) informationRequestDetails(w http.ResponseWriter, r *http.Request) {
	ir, err := a.d.InformationRequests.PartnerInformationRequest(r.Context(), chi.URLParam(r, "information_request"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newInformationRequestResponse(ir))
}

// informationRequestAnswerBody is the body of information_request_answer.
type informationRequestAnswerBody struct {
	Answer string `json:"answer"`
}

// informationRequestAnswer (POST /v2/information_requests/{information_request}/answer).
func (a *API) informationRequestAnswer(w http.ResponseWriter, r *http.Request) {
	var in informationRequestAnswerBody
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	ir, err := a.d.InformationRequests.AnswerInformationRequest(r.Context(), chi.URLParam(r, "information_request"), in.Answer)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newInformationRequestResponse(ir))
}
