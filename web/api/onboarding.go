package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
)

type checkResponse struct {
	Name      string         `json:"name"`
	Status    string         `json:"status"`
	Details   map[string]any `json:"details"`
	UpdatedAt time.Time      `json:"updated_at"`
}

type memberResponse struct {
	Token string `json:"token"`
	emi.MemberFields
	Status           string    `json:"status"`
	Type             []string  `json:"type"`
	UIC              string    `json:"uic"`
	UniqueIdentifier string    `json:"unique_identifier"`
	User             string    `json:"user"`
	PlaceOfBirth     string    `json:"place_of_birth"`
	Birthday         string    `json:"birthday"`
	Nationality      string    `json:"nationality"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

func newMemberResponse(m emi.Member) memberResponse {
	return memberResponse{Token: m.Token, MemberFields: m.MemberFields, Status: m.Status, Type: m.Type, UIC: m.UIC,
		UniqueIdentifier: m.UniqueIdentifier, User: m.User, PlaceOfBirth: m.PlaceOfBirth, Birthday: m.Birthday,
		Nationality: m.Nationality, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// applicationResponse is contract §6's Application.
type applicationResponse struct {
	Token         string                `json:"token"`
	Merchant      string                `json:"merchant"`
	Products      []string              `json:"products"`
	DueDiligence  string                `json:"due_diligence"`
	PayoutDetails []emi.PayoutDetail    `json:"payout_details"`
	Processing    emi.Processing        `json:"processing"`
	Status        emi.ApplicationStatus `json:"status"`
	RiskScore     *string               `json:"risk_score"`
	Checks        []checkResponse       `json:"checks"`
	Company       *emi.CompanyFields    `json:"company"`
	Members       []memberResponse      `json:"members"`
	// Set once approved.
	OnboardedMerchant string     `json:"onboarded_merchant,omitempty"`
	MID               string     `json:"mid,omitempty"`
	TID               string     `json:"tid,omitempty"`
	DecisionReason    string     `json:"decision_reason,omitempty"`
	DecidedAt         *time.Time `json:"decided_at,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	// WaitingFor is what an undecided application still waits for, so a
	// partner knows what to send next: in every answer that carries the
	// application (create, details, company update, sandbox decision).
	WaitingFor []string `json:"waiting_for,omitempty"`
}

// applicationAnswer is the application as every operation answers it,
// with what it still waits for.
func (a *API) applicationAnswer(app emi.Application) applicationResponse {
	resp := newApplicationResponse(app)
	resp.WaitingFor = a.d.Onboarding.WaitingFor(app)
	return resp
}

func newApplicationResponse(a emi.Application) applicationResponse {
	r := applicationResponse{Token: a.Token, Merchant: a.Merchant, Products: a.Products, DueDiligence: a.DueDiligence,
		PayoutDetails: a.PayoutDetails, Processing: a.Processing, Status: a.Status, Company: a.Company,
		Checks: []checkResponse{}, Members: []memberResponse{}, OnboardedMerchant: a.OnboardedMerchant,
		MID: a.MID, TID: a.TID, DecisionReason: a.DecisionReason, DecidedAt: a.DecidedAt,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	if r.PayoutDetails == nil {
		r.PayoutDetails = []emi.PayoutDetail{}
	}
	if a.RiskScore != "" {
		r.RiskScore = &a.RiskScore
	}
	for _, c := range a.Checks {
		d := c.Details
		if d == nil {
			d = map[string]any{}
		}
		r.Checks = append(r.Checks, checkResponse{Name: c.Name, Status: c.Status, Details: d, UpdatedAt: c.UpdatedAt})
	}
	for _, m := range a.Members {
		r.Members = append(r.Members, newMemberResponse(m))
	}
	return r
}

type documentResponse struct {
	Token        string    `json:"token"`
	DocumentType string    `json:"document_type"`
	FileType     string    `json:"file_type"`
	Size         int       `json:"size"`
	CreatedAt    time.Time `json:"created_at"`
}

func newDocumentResponse(d emi.StoredDocument) documentResponse {
	return documentResponse{Token: d.Token, DocumentType: d.DocumentType, FileType: d.FileType, Size: d.Size, CreatedAt: d.CreatedAt}
}

// applicationCreate (POST /v3/applications).
func (a *API) applicationCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.ApplicationCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	app, err := a.d.Onboarding.Create(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, a.applicationAnswer(app))
}

// applicationDetails (GET /v3/applications/{application}).
func (a *API) applicationDetails(w http.ResponseWriter, r *http.Request) {
	app, err := a.d.Onboarding.Details(r.Context(), chi.URLParam(r, "application"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, a.applicationAnswer(app))
}

// companyUpdate (PUT /v3/applications/{application}/companies): the fields
// sent change, the others stay.
func (a *API) companyUpdate(w http.ResponseWriter, r *http.Request) {
	var in emi.CompanyFields
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	present, _ := presentKeys(r, nil, "")
	app, err := a.d.Onboarding.UpdateCompany(r.Context(), chi.URLParam(r, "application"), in, present)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, a.applicationAnswer(app))
}

// companyAddDocument (POST /v3/applications/{application}/companies/documents).
func (a *API) companyAddDocument(w http.ResponseWriter, r *http.Request) {
	var in emi.Document
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	d, err := a.d.Onboarding.AddCompanyDocument(r.Context(), chi.URLParam(r, "application"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newDocumentResponse(d))
}

// companyAddMember (POST /v3/applications/{application}/companies/members).
func (a *API) companyAddMember(w http.ResponseWriter, r *http.Request) {
	var in emi.MemberAdd
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	m, err := a.d.Onboarding.AddMember(r.Context(), chi.URLParam(r, "application"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newMemberResponse(m))
}

// memberUpdateRequest is company_member_update's body: the shared fields,
// status, and the add-only fields accepted by the decoder only to be
// refused by name.
type memberUpdateRequest struct {
	emi.MemberFields
	Status           string          `json:"status"`
	UIC              json.RawMessage `json:"uic"`
	Type             json.RawMessage `json:"type"`
	UniqueIdentifier json.RawMessage `json:"unique_identifier"`
	User             json.RawMessage `json:"user"`
	PlaceOfBirth     json.RawMessage `json:"place_of_birth"`
	Birthday         json.RawMessage `json:"birthday"`
	Nationality      json.RawMessage `json:"nationality"`
	Documents        json.RawMessage `json:"documents"`
}

// companyMemberUpdate (PUT /v3/applications/{application}/companies/members/{token}).
func (a *API) companyMemberUpdate(w http.ResponseWriter, r *http.Request) {
	var in memberUpdateRequest
	bad, err := decodeAll(r, &in, emi.ErrValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	present, refused := presentKeys(r, emi.MemberAddOnlyFields, "is set when the member is added and cannot be changed")
	bad = append(bad, refused...)
	m, err := a.d.Onboarding.UpdateMember(r.Context(), chi.URLParam(r, "application"), chi.URLParam(r, "token"),
		emi.MemberPatch{Fields: in.MemberFields, Status: in.Status, Present: present, Refused: bad})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newMemberResponse(m))
}

// companyMemberAddDocument (POST /v3/applications/{application}/companies/members/{token}/documents).
func (a *API) companyMemberAddDocument(w http.ResponseWriter, r *http.Request) {
	var in emi.Document
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	d, err := a.d.Onboarding.AddMemberDocument(r.Context(), chi.URLParam(r, "application"), chi.URLParam(r, "token"), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newDocumentResponse(d))
}
