package servicetest_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/seal"
	"emi/internal/service/kernel"
	"emi/internal/service/servicetest"
	"emi/internal/service/staff"
	"emi/internal/validate"
)

// fakeClock is the shared settable clock.
type fakeClock = servicetest.FakeClock

// staffEnv is the staff service on a fresh database with a fake clock.
type staffEnv struct {
	db       *postgres.DB
	store    *postgres.StaffStore
	sessions *postgres.SessionStore
	svc      *staff.Staff
	clock    *fakeClock
	// withCost is another staff service on the same database and clock
	// whose new password hashes have that cost.
	withCost func(staff.PasswordCost) *staff.Staff
}

func newStaffEnv(t *testing.T, sandbox bool) *staffEnv {
	t.Helper()
	db := pgtest.DB(t)
	key := make([]byte, seal.MasterKeySize)
	_, _ = rand.Read(key)
	keys, err := seal.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	// The clock starts in the middle of a TOTP step, so a test that advances
	// it by whole steps never lands on a step boundary.
	start := time.Now().UTC().Truncate(30 * time.Second).Add(15 * time.Second)
	clock := servicetest.NewFakeClock(start)
	store := postgres.NewStaffStore(db)
	inbox := staff.NewInbox(staff.InboxDeps{Store: postgres.NewInboxStore(db), Now: clock.Now})
	audit := kernel.NewAuditor(postgres.NewAuditStore(db))
	controls := staff.NewControls(staff.ControlsDeps{Links: store, Tx: db, Requests: postgres.NewRequestStore(db), Audit: audit, Inbox: inbox, Now: clock.Now})
	withCost := func(cost staff.PasswordCost) *staff.Staff {
		return staff.NewStaff(staff.StaffDeps{Tx: db, Store: store, Sealer: keys, Audit: audit, Validate: validate.New(), Controls: controls, Inbox: inbox, Config: staff.StaffConfig{Sandbox: sandbox, Limits: postgres.NewLimitStore(db), PasswordCost: cost}, Now: clock.Now})
	}
	return &staffEnv{
		db:       db,
		store:    store,
		sessions: postgres.NewSessionStore(db, clock.Now),
		svc:      withCost(staff.PasswordCostStandard),
		clock:    clock,
		withCost: withCost,
	}
}

var (
	sys    = servicetest.Sys
	as     = servicetest.As
	fromIP = servicetest.FromIP
)

const testPassword = "correct-horse-7-battery"

// createStaff creates a staff user with testPassword and the given roles.
func (e *staffEnv) createStaff(t *testing.T, email string, roles ...emi.Role) emi.StaffUser {
	t.Helper()
	out, err := e.svc.Create(sys(), emi.StaffCreate{Email: email, Name: "Test " + email, Roles: roles, Password: testPassword})
	if err != nil {
		t.Fatalf("create %s: %v", email, err)
	}
	return out.User
}

// enroll enrols TOTP for u through the service and returns the secret and
// the recovery codes. The enrolment code's step is used afterwards.
func (e *staffEnv) enroll(t *testing.T, u emi.StaffUser) (string, []string) {
	t.Helper()
	en, err := e.svc.BeginEnrollment(context.Background(), u.ID)
	if err != nil {
		t.Fatalf("begin enrollment: %v", err)
	}
	codes, err := e.svc.ConfirmEnrollment(context.Background(), u.ID, e.code(t, en.Secret))
	if err != nil {
		t.Fatalf("confirm enrollment: %v", err)
	}
	return en.Secret, codes
}

// code returns the TOTP code of secret at the clock's time.
func (e *staffEnv) code(t *testing.T, secret string) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// count runs a count query.
func (e *staffEnv) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.GetContext(context.Background(), &n, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
