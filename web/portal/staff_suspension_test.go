package portal_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// The staff page as an administrator uses it in an incident: stripping and
// disabling a colleague are proposals; the one-step suspension ends the
// colleague's session at once, tells the other administrators, is confirmed
// by a second one and lifted.
func TestStaffSuspensionAndTwoPersonRemovalPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	colleague := newStaff(t, f.env, "colleague.admin@emi.example", "Colleague Admin", emi.RoleAdmin)
	newStaff(t, f.env, "third.admin@emi.example", "Third Admin", emi.RoleAdmin)
	third := f.env.NewBrowser()
	third.SignIn(t, "third.admin@emi.example")
	victim := f.env.NewBrowser()
	victim.SignIn(t, "colleague.admin@emi.example")
	page := "/backoffice/staff/" + colleague

	// Removing the colleague's admin role waits for a second administrator.
	p := admin.Post(t, page+"/roles", url.Values{"roles": {"auditor"}})
	if p.Status != http.StatusOK || !strings.Contains(p.Body, "waiting for a second administrator") {
		t.Fatalf("strip: HTTP %d, no pending change shown", p.Status)
	}
	if v := victim.Get(t, "/backoffice/staff"); v.Status != http.StatusOK {
		t.Fatalf("the colleague lost access before a second approval: HTTP %d", v.Status)
	}
	var change string
	if err := f.env.App.DB.Get(&change, `SELECT c.id FROM staff_changes c JOIN control_requests r ON r.id = c.id WHERE c.staff_id = $1 AND r.status = 'pending'`, colleague); err != nil {
		t.Fatal(err)
	}
	if p := admin.Post(t, "/backoffice/staff/changes/"+change+"/reject", url.Values{"reason": {"withdrawn"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("withdraw: HTTP %d", p.Status)
	}
	// So does disabling them; the flash says how to stop them now.
	p = admin.Post(t, page+"/disable", url.Values{})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("disable: HTTP %d", p.Status)
	}
	if d := admin.Get(t, page); !strings.Contains(d.Body, "To stop them now, suspend them") || !strings.Contains(d.Body, "waiting for a second administrator") {
		t.Fatal("the proposed disable is not explained on the page")
	}
	if err := f.env.App.DB.Get(&change, `SELECT c.id FROM staff_changes c JOIN control_requests r ON r.id = c.id WHERE c.staff_id = $1 AND r.status = 'pending'`, colleague); err != nil {
		t.Fatal(err)
	}
	admin.Post(t, "/backoffice/staff/changes/"+change+"/reject", url.Values{"reason": {"withdrawn"}})

	// A suspension without a reason is refused and changes nothing.
	if p := admin.Post(t, page+"/suspend", url.Values{"reason": {" "}}); p.Status != http.StatusSeeOther {
		t.Fatalf("suspend without reason: HTTP %d", p.Status)
	}
	if v := victim.Get(t, "/backoffice/staff"); v.Status != http.StatusOK {
		t.Fatal("a refused suspension ended the session")
	}
	// With one, the colleague's open session ends on their next request.
	if p := admin.Post(t, page+"/suspend", url.Values{"reason": {"laptop stolen"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("suspend: HTTP %d", p.Status)
	}
	if v := victim.Get(t, "/backoffice/staff"); v.Status != http.StatusSeeOther || v.Location != "/backoffice/signin" {
		t.Fatalf("the suspended colleague's session: HTTP %d to %q", v.Status, v.Location)
	}
	d := admin.Get(t, page)
	for _, want := range []string{"laptop stolen", "lapses 24 hours after it was taken", "Lift suspension"} {
		if !strings.Contains(d.Body, want) {
			t.Fatalf("the staff page lacks %q", want)
		}
	}
	// The third administrator was told, and confirms; the suspender may not.
	if in := third.Get(t, "/backoffice/inbox"); !strings.Contains(in.Body, "Colleague Admin was suspended: laptop stolen") {
		t.Fatal("the other administrator's inbox does not show the suspension")
	}
	admin.Post(t, page+"/suspension/confirm", url.Values{})
	if d := admin.Get(t, page); !strings.Contains(d.Body, "You already took part in this decision") {
		t.Fatal("the suspender's own confirmation was not refused with its reason")
	}
	third.Post(t, page+"/suspension/confirm", url.Values{})
	if d := third.Get(t, page); !strings.Contains(d.Body, "confirmed by a second administrator") {
		t.Fatal("the confirmation does not show")
	}
	// Lifted, the colleague signs in again.
	if p := third.Post(t, page+"/suspension/lift", url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("lift: HTTP %d", p.Status)
	}
	f.env.Clock.Advance(31 * time.Second) // a new TOTP step: the colleague's code of the first sign-in is spent
	again := f.env.NewBrowser()
	again.SignIn(t, "colleague.admin@emi.example")
	if v := again.Get(t, "/backoffice/staff"); v.Status != http.StatusOK {
		t.Fatalf("after the lift: HTTP %d", v.Status)
	}
}
