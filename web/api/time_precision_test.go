package api_test

import (
	"net/http"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// TestCreateAndReadAnswerTheSameInstant: an object's answer to its create
// and to a later read carry the same time, to the microsecond (creates
// used to answer the clock's nanoseconds, reads what PostgreSQL keeps).
func TestCreateAndReadAnswerTheSameInstant(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	// A clock with nanoseconds, as a real one has.
	env.Clock.Advance(123_456_789 * time.Nanosecond)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Precision"})
	created := call(t, env, p, http.MethodPost, "/v2/users", "user_create", validUser(p))
	apptest.Expect(t, "user_create", created, 0, http.StatusCreated)
	read := call(t, env, p, http.MethodGet, "/v2/users/"+created.Data["token"].(string), "user_details", nil)
	apptest.Expect(t, "user_details", read, 0, http.StatusOK)
	for _, field := range []string{"created_at", "updated_at"} {
		c, r := created.Data[field], read.Data[field]
		if c == nil || c != r {
			t.Errorf("%s: create answered %v, read %v", field, c, r)
		}
		if s, _ := c.(string); s != "" {
			at, err := time.Parse(time.RFC3339Nano, s)
			if err != nil || !at.Equal(at.Truncate(time.Microsecond)) {
				t.Errorf("%s %q: want microseconds (%v)", field, s, err)
			}
		}
	}
}
