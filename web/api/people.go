package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"emi/internal/emi"
	"emi/web/httpx"
)

// userResponse is a user as user_create and user_details return it: every
// field of the seed's User section but documents and company, plus token,
// status and kyc_status (contract §6). Empty fields are "" (null for the
// two booleans when never given), so a partner sees the whole shape.
type userResponse struct {
	Token string `json:"token"`
	emi.UserFields
	Email          string         `json:"email"`
	AML            string         `json:"aml"`
	RegistrationIP string         `json:"registration_ip"`
	Type           string         `json:"type"`
	Status         emi.UserStatus `json:"status"`
	KYCStatus      emi.KYCStatus  `json:"kyc_status"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
}

func newUserResponse(u emi.User) userResponse {
	f := u.UserFields
	if f.AdditionalNationality == nil {
		f.AdditionalNationality = []string{}
	}
	if f.PurposeOfWalletUsage == nil {
		f.PurposeOfWalletUsage = []string{}
	}
	if f.TypeOfIncomingFunds == nil {
		f.TypeOfIncomingFunds = []string{}
	}
	return userResponse{Token: u.Token, UserFields: f, Email: u.Email, AML: u.AML, RegistrationIP: u.RegistrationIP,
		Type: u.Type, Status: u.Status, KYCStatus: u.KYCStatus, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// userCreate (POST /v2/users).
func (a *API) userCreate(w http.ResponseWriter, r *http.Request) {
	var in emi.UserCreate
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	u, err := a.d.Users.Create(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusCreated, newUserResponse(u))
}

// userDetails (GET /v2/users/{user}).
func (a *API) userDetails(w http.ResponseWriter, r *http.Request) {
	u, err := a.d.Users.Details(r.Context(), chi.URLParam(r, "user"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newUserResponse(u))
}

// userUpdateRequest is user_update's body: the updatable fields, plus the
// create-only ones accepted by the decoder only to be refused by name.
type userUpdateRequest struct {
	emi.UserFields
	Email          json.RawMessage `json:"email"`
	AML            json.RawMessage `json:"aml"`
	RegistrationIP json.RawMessage `json:"registration_ip"`
	Type           json.RawMessage `json:"type"`
	Documents      json.RawMessage `json:"documents"`
	Company        json.RawMessage `json:"company"`
}

// userUpdate (PUT /v2/users/{user}): the fields sent change, the others
// stay; create-only fields are refused, each named, with any other problem.
func (a *API) userUpdate(w http.ResponseWriter, r *http.Request) {
	var in userUpdateRequest
	bad, err := decodeAll(r, &in, emi.ErrUserValidation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	present, refused := presentKeys(r, emi.UserCreateOnlyFields, "is set at creation and cannot be changed")
	bad = append(bad, refused...)
	slices.SortStableFunc(bad, func(x, y emi.FieldError) int { return strings.Compare(x.Field, y.Field) })
	u, err := a.d.Users.Update(r.Context(), chi.URLParam(r, "user"), emi.UserPatch{Fields: in.UserFields, Present: present, Refused: bad})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeData(w, r, http.StatusOK, newUserResponse(u))
}

// userRemove (DELETE /v2/users/{user}).
func (a *API) userRemove(w http.ResponseWriter, r *http.Request) {
	if err := a.d.Users.Remove(r.Context(), chi.URLParam(r, "user")); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, envelope{Code: 0})
}

// amlHitResponse is one hit as the partner sees it (contract §6).
type amlHitResponse struct {
	List    string   `json:"list"`
	EntryID string   `json:"entry_id"`
	Name    string   `json:"name"`
	Matched string   `json:"matched_name"`
	Score   float64  `json:"score"`
	Fields  []string `json:"fields"`
}

type amlCheckResponse struct {
	Token       string           `json:"token"`
	Status      emi.AMLStatus    `json:"status"`
	Matches     []amlHitResponse `json:"matches"`
	ListVersion string           `json:"list_version"`
	CreatedAt   time.Time        `json:"created_at"`
}

// amlCheck (POST /v1/aml): clear answers code 0 (201); a match answers
// 18001 with the check in data, so that the partner keeps the token while
// compliance reviews it.
func (a *API) amlCheck(w http.ResponseWriter, r *http.Request) {
	var in emi.AMLQuery
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := a.d.AML.Check(r.Context(), in)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := newAMLCheckResponse(c)
	if c.Status == emi.AMLMatch {
		e := emi.ErrAMLMatchFound
		env := errorEnvelope(r, e)
		env.Data = resp
		writeJSON(w, r, httpx.Status(e.Kind), env)
		return
	}
	writeData(w, r, http.StatusCreated, resp)
}

func newAMLCheckResponse(c emi.AMLCheck) amlCheckResponse {
	resp := amlCheckResponse{Token: c.Token, Status: c.Status, Matches: []amlHitResponse{}, ListVersion: c.ListVersion, CreatedAt: c.CreatedAt}
	for _, h := range c.Hits {
		if h.Suppressed {
			continue
		}
		fields := h.Fields
		if fields == nil {
			fields = []string{}
		}
		resp.Matches = append(resp.Matches, amlHitResponse{List: h.List, EntryID: h.EntryID, Name: h.Name, Matched: h.MatchedName, Score: h.Score, Fields: fields})
	}
	return resp
}

// kycRequest is the request of kyc_init.
type kycRequest struct {
	User string `json:"user"`
}

type kycResponse struct {
	Token     string        `json:"token"`
	User      string        `json:"user"`
	Status    emi.KYCStatus `json:"status"`
	URL       string        `json:"url"`
	ExpiresAt time.Time     `json:"expires_at"`
	CreatedAt time.Time     `json:"created_at"`
}

// kycInit (POST /v1/kyc): 201 with a new session, 200 with the open one.
func (a *API) kycInit(w http.ResponseWriter, r *http.Request) {
	var in kycRequest
	if err := decode(r, &in); err != nil {
		writeError(w, r, err)
		return
	}
	s, created, err := a.d.KYC.Init(r.Context(), in.User)
	if err != nil {
		writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeData(w, r, status, kycResponse{Token: s.Token, User: s.UserToken, Status: s.Status, URL: s.URL, ExpiresAt: s.ExpiresAt, CreatedAt: s.CreatedAt})
}
