package validate

import (
	"errors"
	"testing"

	"emi/internal/emi"
)

type payout struct {
	IBAN     string `json:"iban" validate:"omitempty,max=34"`
	SortCode string `json:"sort_code" validate:"omitempty,len=6"`
}

type input struct {
	Merchant string   `json:"merchant" validate:"required,min=32,max=36"`
	Products []string `json:"products" validate:"required,min=1,max=5,dive,oneof=pos e-commerce qr"`
	Payout   []payout `json:"payout_details" validate:"dive"`
	Email    string   `json:"email" validate:"omitempty,email"`
	Internal string   `json:"-" validate:"omitempty,max=1"`
}

func TestStructReportsEveryFieldWithItsJSONPath(t *testing.T) {
	v := New()
	err := v.Struct(input{
		Merchant: "short",
		Products: []string{"pos", "atm"},
		Payout:   []payout{{}, {SortCode: "12345", IBAN: "X"}},
		Email:    "not-an-email",
	}, emi.ErrUserValidation)
	var e *emi.Error
	if !errors.As(err, &e) || e.Code != -3 {
		t.Fatalf("want the given validation error, got %v", err)
	}
	want := map[string]string{
		"merchant":                    "must be at least 32 characters",
		"products[1]":                 "must be one of: pos, e-commerce, qr",
		"payout_details[1].sort_code": "must be exactly 6 characters",
		"email":                       "must be a valid e-mail address",
	}
	got := map[string]string{}
	for _, f := range e.Fields {
		got[f.Field] = f.Message
	}
	for field, msg := range want {
		if got[field] != msg {
			t.Errorf("%s: message %q, want %q", field, got[field], msg)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields %v, want exactly %v", got, want)
	}
	if err := v.Struct(input{Merchant: "01234567890123456789012345678901", Products: []string{"qr"}}, emi.ErrValidation); err != nil {
		t.Fatalf("valid input: %v", err)
	}
	missing := v.Struct(input{}, emi.ErrValidation)
	if !errors.As(missing, &e) || len(e.Fields) != 2 || e.Fields[0].Message != "is required" {
		t.Fatalf("missing fields: %v", missing)
	}
	if err := v.Struct(42, emi.ErrValidation); emi.AsError(err).Kind != emi.KindInternal {
		t.Fatalf("non-struct: want internal error, got %v", err)
	}
}
