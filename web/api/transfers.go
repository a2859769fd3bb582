package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/internal/service/transfers"
)

// transferSide is one side of a transfer as a partner sees it: its own
// side with account and balance tokens, another partner's side by IBAN
// only, an external side by its bank details.
type transferSide struct {
	Account       string `json:"account,omitempty"`
	Balance       string `json:"balance,omitempty"`
	IBAN          string `json:"iban,omitempty"`
	Name          string `json:"name,omitempty"`
	BIC           string `json:"bic,omitempty"`
	AccountNumber string `json:"account_number,omitempty"`
	SortCode      string `json:"sort_code,omitempty"`
	CardLast4     string `json:"card_last4,omitempty"`
	Scheme        string `json:"scheme,omitempty"`
}

type transferResponse struct {
	Token        string       `json:"token"`
	Type         string       `json:"type"`
	Status       string       `json:"status"`
	Amount       string       `json:"amount"`
	Currency     string       `json:"currency"`
	Reference    string       `json:"reference"`
	Source       transferSide `json:"source"`
	Destination  transferSide `json:"destination"`
	ReturnReason string       `json:"return_reason,omitempty"`
	CreatedAt    time.Time    `json:"created_at"`
	UpdatedAt    time.Time    `json:"updated_at"`
}

func counterpartySide(c emi.Counterparty) transferSide {
	return transferSide{Name: c.Name, IBAN: c.IBAN, BIC: c.BIC, AccountNumber: c.AccountNumber, SortCode: c.SortCode,
		CardLast4: c.CardLast4, Scheme: c.Scheme}
}

// newTransferResponse renders a transfer already reduced to the caller's
// view (service.PartnerView).
func newTransferResponse(t emi.Transfer) transferResponse {
	r := transferResponse{Token: t.Token, Type: t.Type, Status: t.Status, Amount: emi.FormatMinor(t.Amount), Currency: t.Currency,
		Reference: t.Reference, ReturnReason: t.ReturnReason, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Source:      transferSide{Account: t.SourceAccount, Balance: t.SourceBalance, IBAN: t.SourceIBAN},
		Destination: transferSide{Account: t.DestinationAccount, Balance: t.DestinationBalance, IBAN: t.DestinationIBAN}}
	switch t.Type {
	case emi.TransferOutgoing:
		r.Destination = counterpartySide(t.Counterparty)
	case emi.TransferIncoming:
		r.Source = counterpartySide(t.Counterparty)
	}
	return r
}

// transferCreate (POST /v2/transfers).
func (a *API) transferCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.TransferCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	t, err := a.d.Transfers.Create(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newTransferResponse(t))
}

// transferDetails (GET /v2/transfers/{transfer}).
func (a *API) transferDetails(w http.ResponseWriter, r *http.Request) {
	t, err := a.d.Transfers.Details(r.Context(), chi.URLParam(r, "transfer"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newTransferResponse(t))
}

// transfersListFilters are the query parameters transfers_list accepts.
var transfersListFilters = []string{"account", "status", "from", "to", "limit", "starting_after"}

type transfersListResponse struct {
	Items   []transferResponse `json:"items"`
	Limit   int                `json:"limit"`
	HasMore bool               `json:"has_more"`
}

// transfersList (GET /v2/transfers): the partner's transfers, newest
// first, by cursor (starting_after: the last token of the previous page).
func (a *API) transfersList(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r, transfersListFilters, emi.ErrTransferValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	in := emi.TransferList{Account: q.Get("account"), Status: q.Get("status"), StartingAfter: q.Get("starting_after"),
		Limit: transfers.ListDefault}
	var bad []emi.FieldError
	if n, given := queryLimit(q); given {
		in.Limit = n
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &in.From}, {"to", &in.To}} {
		if v := q.Get(f.name); v != "" {
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				bad = append(bad, emi.FieldError{Field: f.name, Message: "must be an RFC 3339 time, such as 2026-11-01T00:00:00Z"})
			}
			*f.dst = at
		}
	}
	if len(bad) > 0 {
		writeError(w, r, emi.ErrTransferValidation.WithFields(bad...))
		return
	}
	page, err := a.d.Transfers.List(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := transfersListResponse{Items: make([]transferResponse, len(page.Items)), Limit: page.Limit, HasMore: page.HasMore}
	for i, t := range page.Items {
		resp.Items[i] = newTransferResponse(t)
	}
	writeData(w, r, http.StatusOK, resp)
}
