package emi_test

import (
	"errors"
	"testing"

	"emi/internal/emi"
)

// WithPublic adds a sentence for the person who asked beside the logged
// detail; the catalogue entry it was made from is unchanged, and the copy
// is still that catalogue error.
func TestWithPublicKeepsTheCatalogueAndTheLogDetail(t *testing.T) {
	e := emi.ErrReviewClosed.WithDetail("application is %s", "checking").WithPublic("The application is %s.", "checking")
	if e.Public != "The application is checking." || e.Detail != "application is checking" {
		t.Fatalf("public %q, detail %q", e.Public, e.Detail)
	}
	if emi.ErrReviewClosed.Public != "" || emi.ErrReviewClosed.Detail != "" {
		t.Fatalf("the catalogue entry changed: %+v", emi.ErrReviewClosed)
	}
	if !errors.Is(e, emi.ErrReviewClosed) || emi.AsError(errors.Join(e)).Public != e.Public {
		t.Fatal("the copy is no longer the catalogue error, or lost its public detail when wrapped")
	}
	// The log line is the code, key and detail: the public sentence is
	// for the screen, not a second copy in the logs.
	if got := e.Error(); got != "20024 portal.review.closed: application is checking" {
		t.Fatalf("log text %q", got)
	}
	// A later WithDetail keeps the public detail.
	if e.WithDetail("x").Public != e.Public {
		t.Fatal("WithDetail dropped the public detail")
	}
}
