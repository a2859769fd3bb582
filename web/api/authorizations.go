package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
)

// authorizationResponse is a card authorization: the decision with its
// reason code, and the hold's state. Never the PIN.
type authorizationResponse struct {
	Token           string     `json:"token"`
	Card            string     `json:"card"`
	Decision        string     `json:"decision"`
	ReasonCode      string     `json:"reason_code"`
	Reason          string     `json:"reason"`
	Status          string     `json:"status"`
	Amount          string     `json:"amount"`
	Currency        string     `json:"currency"`
	Channel         string     `json:"channel"`
	MCC             string     `json:"mcc"`
	MerchantName    string     `json:"merchant_name"`
	MerchantCountry string     `json:"merchant_country"`
	HoldAmount      string     `json:"hold_amount"`
	ClearedAmount   string     `json:"cleared_amount"`
	HoldExpiresAt   *time.Time `json:"hold_expires_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	SettledAt       *time.Time `json:"settled_at,omitempty"`
}

func newAuthorizationResponse(a emi.Authorization) authorizationResponse {
	return authorizationResponse{Token: a.Token, Card: a.Card, Decision: a.Decision, ReasonCode: a.ReasonCode, Reason: a.Reason(),
		Status: a.Status, Amount: emi.FormatMinor(a.Amount), Currency: a.Currency, Channel: a.Channel, MCC: a.MCC,
		MerchantName: a.MerchantName, MerchantCountry: a.MerchantCountry, HoldAmount: emi.FormatMinor(a.HoldAmount),
		ClearedAmount: emi.FormatMinor(a.ClearedAmount), HoldExpiresAt: a.ExpiresAt, CreatedAt: a.CreatedAt, SettledAt: a.SettledAt}
}

// sandboxCardAuthorize (POST /v2/sandbox/cards/{card}/authorizations): a
// decline is an answer (201, decision declined), not an error.
func (a *API) sandboxCardAuthorize(w http.ResponseWriter, r *http.Request) {
	var in emi.AuthorizationRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	au, err := a.d.Authorizations.Authorize(r.Context(), card(r), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newAuthorizationResponse(au))
}

type authorizationClearRequest struct {
	// Amount to settle; absent: the whole hold.
	Amount *emi.Amount `json:"amount"`
}

func authorization(r *http.Request) string { return chi.URLParam(r, "authorization") }

// sandboxAuthorizationClear (POST /v2/sandbox/authorizations/{authorization}/clear).
func (a *API) sandboxAuthorizationClear(w http.ResponseWriter, r *http.Request) {
	var in authorizationClearRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	var amount *int64
	if in.Amount != nil {
		v := int64(*in.Amount)
		amount = &v
	}
	au, err := a.d.Authorizations.Clear(r.Context(), authorization(r), amount)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newAuthorizationResponse(au))
}

type authorizationReverseRequest struct{}

// sandboxAuthorizationReverse (POST /v2/sandbox/authorizations/{authorization}/reverse).
func (a *API) sandboxAuthorizationReverse(w http.ResponseWriter, r *http.Request) {
	var in authorizationReverseRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	au, err := a.d.Authorizations.Reverse(r.Context(), authorization(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newAuthorizationResponse(au))
}

type authorizationListResponse struct {
	Items []authorizationResponse `json:"items"`
	Page  int                     `json:"page"`
	Limit int                     `json:"limit"`
	Total int64                   `json:"total"`
}

// cardAuthorizationsFilters are the query parameters card_authorizations
// accepts.
var cardAuthorizationsFilters = []string{"starting_after"}

// cardAuthorizations (GET /v2/cards/{card}/authorizations/{page}/{limit}).
func (a *API) cardAuthorizations(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, cardAuthorizationsFilters, emi.ErrCardValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	f := emi.AuthorizationFilter{Page: pathInt(r, "page"), Limit: pathInt(r, "limit"), StartingAfter: q.Get("starting_after")}
	items, total, err := a.d.Authorizations.ForCard(r.Context(), card(r), f)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := authorizationListResponse{Items: []authorizationResponse{}, Page: f.Page, Limit: f.Limit, Total: total}
	for _, au := range items {
		resp.Items = append(resp.Items, newAuthorizationResponse(au))
	}
	writeData(w, r, http.StatusOK, resp)
}
