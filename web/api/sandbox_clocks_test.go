package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/testwait"
	"emi/internal/webhook"
)

// clockTime reads a time of an answer.
func clockTime(t *testing.T, what string, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s: %v is not a time: %v", what, v, err)
	}
	return at.UTC()
}

// attemptTimes returns the start of each attempt to deliver the event, in
// attempt order.
func attemptTimes(t *testing.T, env *apptest.Env, event string) []time.Time {
	t.Helper()
	var out []time.Time
	if err := env.App.DB.Select(&out, `SELECT a.started_at FROM webhook_attempts a
		JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1 ORDER BY a.attempt`, event); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		out[i] = out[i].UTC()
	}
	return out
}

// eventAt returns the creation time of the partner's only event of typ
// about resource whose body contains want.
func eventAt(t *testing.T, env *apptest.Env, partnerID string, typ emi.EventType, resource, want string) time.Time {
	t.Helper()
	var at []time.Time
	if err := env.App.DB.Select(&at, `SELECT created_at FROM events WHERE partner_id = $1 AND type = $2
		AND resource_token = $3 AND position($4 in convert_from(body, 'UTF8')) > 0`, partnerID, typ, resource, want); err != nil {
		t.Fatal(err)
	}
	if len(at) != 1 {
		t.Fatalf("%s events about %s with %s: %d, want 1", typ, resource, want, len(at))
	}
	return at[0].UTC()
}

// TestTestClockRunsHoldsKYCLinksAndWebhookRetriesInTimeOrder: a sandbox
// partner on a test clock creates a card payment (a 7-day hold) and a KYC
// link (7 days) and has an endpoint that fails every delivery. The
// instance's own sweep leaves them alone even when their deadlines pass in
// real time (a partner without a clock is swept as before). Advancing an
// hour runs the first retries, each at the clock time it was due
// (schedule gaps within the jitter); advancing past the week runs the rest
// of the retry schedule until it gives up, then expires the hold and the
// link at their deadlines exactly (the events carry that time), in that
// order. Bad advances, a second clock and another partner's reach are
// refused; deleting the clock puts the partner back on the real time.
func TestTestClockRunsHoldsKYCLinksAndWebhookRetriesInTimeOrder(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	rc := &receiver{failing: true}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Clocked"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Wall clock"})
	ep := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create",
		map[string]any{"url": srv.URL + "/hooks", "event_types": []string{"user.kyc_updated"}})
	apptest.Expect(t, "endpoint", ep, 0, http.StatusCreated)

	for _, c := range []struct {
		field string
		body  map[string]any
	}{
		{"frozen_time", map[string]any{"frozen_time": "1999-12-31T23:59:59Z"}},
		{"name", map[string]any{"name": strings.Repeat("n", 101)}},
		{"name", map[string]any{"name": "nightly\u0007run"}},
	} {
		r := call(t, env, other, http.MethodPost, "/v2/sandbox/test_clock", "sandbox_test_clock_create", c.body)
		apptest.Expect(t, "a clock with a bad "+c.field, r, emi.ErrTestClockValidation.Code, http.StatusBadRequest)
		apptest.ExpectField(t, "a clock with a bad "+c.field, r, c.field)
	}
	apptest.Expect(t, "no clock yet", call(t, env, p, http.MethodGet, "/v2/sandbox/test_clock", "sandbox_test_clock_details", nil),
		emi.ErrTestClockNotFound.Code, http.StatusNotFound)
	t0 := env.Clock.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour)
	cr := call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock", "sandbox_test_clock_create",
		map[string]any{"frozen_time": t0.Format(time.RFC3339), "name": "a week of deadlines"})
	apptest.Expect(t, "create the clock", cr, 0, http.StatusCreated)
	if got := clockTime(t, "frozen_time", cr.Data["frozen_time"]); !got.Equal(t0) || cr.Data["status"] != "ready" {
		t.Fatalf("the new clock: %s", cr)
	}
	apptest.Expect(t, "a second clock", call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock", "sandbox_test_clock_create", map[string]any{}),
		emi.ErrTestClockExists.Code, http.StatusConflict)

	// What the partner creates carries the clock's time, and so do its
	// deadlines.
	c := newPayCard(t, env, p, "account_eur", 100_00, nil)
	pay := c.decide(t, "a payment on the clock", pos("10.00"), "00")
	hold := pay.Data["token"].(string)
	if at := clockTime(t, "created_at", pay.Data["created_at"]); !at.Equal(t0) {
		t.Fatalf("the payment's time %v, want the clock's %v", at, t0)
	}
	if exp := clockTime(t, "hold_expires_at", pay.Data["hold_expires_at"]); !exp.Equal(t0.Add(7 * 24 * time.Hour)) {
		t.Fatalf("the hold's deadline %v, want the clock's time + 7 days", exp)
	}
	user := createUser(t, env, p, validUser(p))
	kyc := call(t, env, p, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	apptest.Expect(t, "kyc_init", kyc, 0, http.StatusCreated)
	if exp := clockTime(t, "expires_at", kyc.Data["expires_at"]); !exp.Equal(t0.Add(7 * 24 * time.Hour)) {
		t.Fatalf("the KYC link's expiry %v, want the clock's time + 7 days", exp)
	}
	// The first attempt goes out at once (by the worker), at the clock's
	// time, and fails; its retry waits for the clock, not for a job.
	_, body := rc.wait(t, `"user.kyc_updated"`, 1)
	ev := body[strings.Index(body, `"id":"`)+6:][:36]
	testwait.Until(t, "the first attempt recorded", func() bool { return len(attemptTimes(t, env, ev)) == 1 })
	if first := attemptTimes(t, env, ev)[0]; !first.Equal(t0) {
		t.Fatalf("first attempt at %v, want the clock's %v", first, t0)
	}
	env.WaitJobsIdle(t)
	var waiting int
	if err := env.App.DB.Get(&waiting, `SELECT count(*) FROM jobs j JOIN webhook_deliveries d ON j.unique_key = 'webhook.deliver:' || d.id
		WHERE d.event_id = $1 AND j.state = 'available'`, ev); err != nil {
		t.Fatal(err)
	}
	if waiting != 0 {
		t.Fatalf("%d jobs wait to retry a delivery of a partner on a clock", waiting)
	}

	// A partner without a clock has the same deadlines on the real time.
	oc := newPayCard(t, env, other, "account_eur", 100_00, nil)
	otherHold := oc.decide(t, "a payment on the real time", pos("10.00"), "00").Data["token"].(string)
	otherUser := createUser(t, env, other, validUser(other))
	apptest.Expect(t, "kyc_init on the real time", call(t, env, other, http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": otherUser}),
		0, http.StatusCreated)
	// Ten days pass in real time; the maintenance sweep runs.
	env.Clock.Advance(10 * 24 * time.Hour)
	if err := env.App.Maintenance.Run(context.Background(), emi.Job{}); err != nil {
		t.Fatal(err)
	}
	status := func(tok string) string {
		var s string
		if err := env.App.DB.Get(&s, `SELECT status FROM card_authorizations WHERE token = $1`, tok); err != nil {
			t.Fatal(err)
		}
		return s
	}
	kycStatus := func(user string) string {
		var s string
		if err := env.App.DB.Get(&s, `SELECT kyc_status FROM users WHERE token = $1`, user); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if status(otherHold) != "expired" || kycStatus(otherUser) != "expired" {
		t.Fatalf("without a clock, the sweep expires: hold %s, kyc %s", status(otherHold), kycStatus(otherUser))
	}
	if status(hold) != "approved" || kycStatus(user) != "pending" {
		t.Fatalf("on a clock, the real time's sweep expired: hold %s, kyc %s", status(hold), kycStatus(user))
	}

	// Refusals: backwards, too far, no time; another partner has no
	// clock and cannot move this one.
	for _, bad := range []map[string]any{{"frozen_time": t0.Format(time.RFC3339)}, {"frozen_time": t0.Add(-time.Hour).Format(time.RFC3339)},
		{"frozen_time": t0.Add(401 * 24 * time.Hour).Format(time.RFC3339)}, {}} {
		r := call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance", bad)
		apptest.Expect(t, "advance to "+string(jsonOf(bad)), r, emi.ErrTestClockValidation.Code, http.StatusBadRequest)
		apptest.ExpectField(t, "advance to "+string(jsonOf(bad)), r, "frozen_time")
	}
	for _, op := range []struct{ method, path, name string }{
		{http.MethodGet, "/v2/sandbox/test_clock", "sandbox_test_clock_details"},
		{http.MethodPost, "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance"},
		{http.MethodDelete, "/v2/sandbox/test_clock", "sandbox_test_clock_delete"},
	} {
		var b any
		if op.name == "sandbox_test_clock_advance" {
			b = map[string]any{"frozen_time": t0.Add(time.Hour).Format(time.RFC3339)}
		}
		apptest.Expect(t, "another partner: "+op.name, call(t, env, other, op.method, op.path, op.name, b),
			emi.ErrTestClockNotFound.Code, http.StatusNotFound)
	}

	// An hour: the retries due 5 s, 5 min and 30 min (±20 %) after the
	// attempt before each run, one after the other, at the clock times
	// they were due; the next (2 h) is not due yet.
	adv := call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance",
		map[string]any{"frozen_time": t0.Add(time.Hour).Format(time.RFC3339)})
	apptest.Expect(t, "advance an hour", adv, 0, http.StatusOK)
	clock := adv.Data["clock"].(map[string]any)
	ran := adv.Data["ran"].(map[string]any)
	if !clockTime(t, "frozen_time", clock["frozen_time"]).Equal(t0.Add(time.Hour)) || clock["status"] != "ready" || ran["webhook_attempt"] != float64(3) ||
		ran["hold_expired"] != nil || ran["kyc_session_expired"] != nil {
		t.Fatalf("an hour: %s", adv)
	}
	schedule := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour,
		14 * time.Hour, 20 * time.Hour, 24 * time.Hour}
	checkGaps := func(at []time.Time) {
		t.Helper()
		for i := 1; i < len(at); i++ {
			gap, want := at[i].Sub(at[i-1]), schedule[i-1]
			lo, hi := time.Duration(float64(want)*(1-webhook.Jitter)), time.Duration(float64(want)*(1+webhook.Jitter))
			if i == webhook.MaxAttempts-1 {
				hi = max(hi, webhook.RetryWindow) // the last waits for the 3 days to be over
			}
			if gap < lo || gap > hi {
				t.Fatalf("attempt %d came %v after the one before, want %v-%v (attempts at %v)", i+1, gap, lo, hi, at)
			}
		}
	}
	at := attemptTimes(t, env, ev)
	if len(at) != 4 {
		t.Fatalf("after an hour, %d attempts (%v), want 4", len(at), at)
	}
	checkGaps(at)
	rc.wait(t, ev, 4)

	// Eight days: the rest of the schedule runs to its end (ten attempts
	// over at least 3 days, then the delivery fails), then the hold and
	// the link expire at their deadline.
	adv = call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance",
		map[string]any{"frozen_time": t0.Add(8 * 24 * time.Hour).Format(time.RFC3339)})
	apptest.Expect(t, "advance to day 8", adv, 0, http.StatusOK)
	ran = adv.Data["ran"].(map[string]any)
	if ran["hold_expired"] != float64(1) || ran["kyc_session_expired"] != float64(1) {
		t.Fatalf("day 8: %s", adv)
	}
	if n, _ := ran["webhook_attempt"].(float64); n < 6 {
		t.Fatalf("day 8: %v retries, want at least the schedule's last 6", ran["webhook_attempt"])
	}
	at = attemptTimes(t, env, ev)
	if len(at) != webhook.MaxAttempts {
		t.Fatalf("%d attempts (%v), want the whole schedule, %d", len(at), at, webhook.MaxAttempts)
	}
	checkGaps(at)
	if span := at[len(at)-1].Sub(at[0]); span < webhook.RetryWindow {
		t.Fatalf("the schedule spans %v, want at least %v", span, webhook.RetryWindow)
	}
	var state string
	if err := env.App.DB.Get(&state, `SELECT state FROM webhook_deliveries WHERE event_id = $1`, ev); err != nil || state != "failed" {
		t.Fatalf("the delivery after its schedule: %q %v", state, err)
	}
	deadline := t0.Add(7 * 24 * time.Hour)
	if status(hold) != "expired" || kycStatus(user) != "expired" {
		t.Fatalf("day 8: hold %s, kyc %s", status(hold), kycStatus(user))
	}
	c.wantFigures(t, "the hold released", 100_00, 0, 100_00)
	if got := eventAt(t, env, p.ID, emi.EventAuthorizationExpired, hold, hold); !got.Equal(deadline) {
		t.Fatalf("authorization.expired at %v, want the deadline %v", got, deadline)
	}
	if got := eventAt(t, env, p.ID, emi.EventUserKYCUpdated, user, `"expired"`); !got.Equal(deadline) {
		t.Fatalf("user.kyc_updated (expired) at %v, want the link's expiry %v", got, deadline)
	}
	if last := at[len(at)-1]; !last.Before(deadline) {
		t.Fatalf("the last retry at %v: after the deadline %v, so not in time order", last, deadline)
	}
	g := call(t, env, p, http.MethodGet, "/v2/sandbox/test_clock", "sandbox_test_clock_details", nil)
	apptest.Expect(t, "the clock", g, 0, http.StatusOK)
	if !clockTime(t, "frozen_time", g.Data["frozen_time"]).Equal(t0.Add(8*24*time.Hour)) || g.Data["status"] != "ready" {
		t.Fatalf("the clock after day 8: %s", g)
	}

	// Deleting the clock puts the partner back on the real time.
	del := call(t, env, p, http.MethodDelete, "/v2/sandbox/test_clock", "sandbox_test_clock_delete", nil)
	apptest.Expect(t, "delete the clock", del, 0, http.StatusOK)
	if del.Data["deleted"] != true {
		t.Fatalf("delete: %s", del)
	}
	apptest.Expect(t, "no clock", call(t, env, p, http.MethodGet, "/v2/sandbox/test_clock", "sandbox_test_clock_details", nil),
		emi.ErrTestClockNotFound.Code, http.StatusNotFound)
	later := c.decide(t, "a payment on the real time", pos("1.00"), "00")
	if at := clockTime(t, "created_at", later.Data["created_at"]); at.Sub(env.Clock.Now()).Abs() > time.Minute {
		t.Fatalf("after the clock, a payment at %v, want the real time %v", at, env.Clock.Now())
	}
}

// TestTestClockAdvancesRacing: two advances sent at once run one after
// the other or one is refused (16004, or 16001 once the first has moved
// the clock past the second's time): a hold due on the way expires once,
// and the ledger stays balanced. Deleting the clock hands a retry that
// waited for the clock back to the job queue, due after what it had left
// to wait. A reset removes the clock. Production has no clock.
func TestTestClockAdvancesRacing(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Racer"})
	t0 := env.Clock.Now().UTC().Truncate(time.Second)
	apptest.Expect(t, "create", call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock", "sandbox_test_clock_create",
		map[string]any{"frozen_time": t0.Format(time.RFC3339)}), 0, http.StatusCreated)
	c := newPayCard(t, env, p, "account_eur", 50_00, nil)
	hold := c.decide(t, "a payment", pos("20.00"), "00").Data["token"].(string)

	var wg sync.WaitGroup
	answers := make([]apptest.Response, 2)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := t0.Add(8*24*time.Hour + time.Duration(i)*time.Second)
			answers[i] = p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/sandbox/test_clock/advance", Operation: "sandbox_test_clock_advance",
				JSON: map[string]any{"frozen_time": to.Format(time.RFC3339)}})
		}()
	}
	wg.Wait()
	expired := 0
	for _, r := range answers {
		switch {
		case r.Status == http.StatusOK:
			n, _ := r.Data["ran"].(map[string]any)["hold_expired"].(float64)
			expired += int(n)
		case r.Code == emi.ErrTestClockAdvancing.Code && r.Status == http.StatusConflict,
			r.Code == emi.ErrTestClockValidation.Code && r.Status == http.StatusBadRequest:
		default:
			t.Fatalf("a racing advance: %s", r)
		}
	}
	if expired != 1 {
		t.Fatalf("the hold expired %d times in the answers, want once (%s / %s)", expired, answers[0], answers[1])
	}
	var st string
	if err := env.App.DB.Get(&st, `SELECT status FROM card_authorizations WHERE token = $1`, hold); err != nil || st != "expired" {
		t.Fatalf("hold %q %v", st, err)
	}
	c.wantFigures(t, "released once", 50_00, 0, 50_00)
	checkLedgerInvariants(t, env)

	// A card's expiry follows the clock too: advanced past the card's
	// expiry month (400 days at most per advance), a payment is declined
	// 54 (card expired).
	var month, year int
	if err := env.App.DB.QueryRow(`SELECT expiry_month, expiry_year FROM cards WHERE token = $1`, c.card).Scan(&month, &year); err != nil {
		t.Fatal(err)
	}
	pastExpiry := time.Date(year, time.Month(month)+1, 1, 12, 0, 0, 0, time.UTC)
	// From the clock's time: whichever racing advance won.
	cur := call(t, env, p, http.MethodGet, "/v2/sandbox/test_clock", "sandbox_test_clock_details", nil)
	apptest.Expect(t, "the clock after the race", cur, 0, http.StatusOK)
	for now := clockTime(t, "frozen_time", cur.Data["frozen_time"]); now.Before(pastExpiry); {
		if now = now.Add(400 * 24 * time.Hour); now.After(pastExpiry) {
			now = pastExpiry
		}
		apptest.Expect(t, "advance to "+now.Format(time.RFC3339), call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock/advance",
			"sandbox_test_clock_advance", map[string]any{"frozen_time": now.Format(time.RFC3339)}), 0, http.StatusOK)
	}
	c.decide(t, "a payment after the card's expiry month", pos("1.00"), emi.ReasonCardExpired)

	// A retry waiting for the clock goes back to the job queue when the
	// clock goes, with what it had left to wait by the clock.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	t.Cleanup(srv.Close)
	ep := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": srv.URL + "/hooks"})
	apptest.Expect(t, "endpoint", ep, 0, http.StatusCreated)
	trig := call(t, env, p, http.MethodPost, "/v2/sandbox/events", "sandbox_event_trigger", map[string]any{"type": "user.kyc_updated"})
	apptest.Expect(t, "trigger", trig, 0, http.StatusCreated)
	var delivery string
	if err := env.App.DB.Get(&delivery, `SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
		WHERE e.partner_id = $1 AND e.type = 'user.kyc_updated'`, p.ID); err != nil {
		t.Fatal(err)
	}
	// The workers make the first attempt; it fails, and its retry waits
	// for the clock: no job is left for it.
	startWorkers(t, env)
	testwait.Until(t, "the first attempt", func() bool {
		var n int
		if err := env.App.DB.Get(&n, `SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1`, delivery); err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	env.WaitJobsIdle(t)
	var waiting int
	if err := env.App.DB.Get(&waiting, `SELECT count(*) FROM jobs WHERE unique_key = $1 AND state = 'available'`,
		kernel.DeliveryJobKey(delivery)); err != nil {
		t.Fatal(err)
	}
	if waiting != 0 {
		t.Fatalf("%d retry jobs wait on the real time for a partner on a clock", waiting)
	}
	// An advance under way holds the clock; one whose process died ten
	// minutes ago does not.
	setAdvancing := func(ago time.Duration) {
		t.Helper()
		since := env.Clock.Now().Add(-ago)
		if _, err := env.App.DB.Exec(`UPDATE sandbox_test_clocks SET advancing_since = $2, advancing_to = $3 WHERE partner_id = $1`,
			p.ID, since, since.Add(365*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	setAdvancing(time.Minute)
	apptest.Expect(t, "delete while an advance runs", call(t, env, p, http.MethodDelete, "/v2/sandbox/test_clock", "sandbox_test_clock_delete", nil),
		emi.ErrTestClockAdvancing.Code, http.StatusConflict)
	g := call(t, env, p, http.MethodGet, "/v2/sandbox/test_clock", "sandbox_test_clock_details", nil)
	if g.Data["status"] != "advancing" || g.Data["advancing_to"] == nil {
		t.Fatalf("the clock while advancing: %s", g)
	}
	setAdvancing(11 * time.Minute)
	apptest.Expect(t, "delete", call(t, env, p, http.MethodDelete, "/v2/sandbox/test_clock", "sandbox_test_clock_delete", nil), 0, http.StatusOK)
	testwait.Until(t, "the retry back in the queue, then made", func() bool {
		var n int
		if err := env.App.DB.Get(&n, `SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1`, delivery); err != nil {
			t.Fatal(err)
		}
		return n >= 2
	})

	// A reset removes the clock with the rest.
	apptest.Expect(t, "a new clock", call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock", "sandbox_test_clock_create", map[string]any{}),
		0, http.StatusCreated)
	apptest.Expect(t, "reset", call(t, env, p, http.MethodPost, "/v2/sandbox/reset", "sandbox_reset", map[string]any{}), 0, http.StatusOK)
	apptest.Expect(t, "the clock after a reset", call(t, env, p, http.MethodGet, "/v2/sandbox/test_clock", "sandbox_test_clock_details", nil),
		emi.ErrTestClockNotFound.Code, http.StatusNotFound)

	prod := apptest.New(t, apptest.Options{NoSanctions: true, Configure: func(c *config.Config) { c.Mode = config.ModeProduction }})
	pp := prod.NewPartner(t, emi.PartnerCreate{Name: "Live"})
	apptest.Expect(t, "a clock in production", call(t, prod, pp, http.MethodPost, "/v2/sandbox/test_clock", "sandbox_test_clock_create", map[string]any{}),
		emi.ErrRouteNotFound.Code, http.StatusNotFound)
	apptest.Expect(t, "advance in production", call(t, prod, pp, http.MethodPost, "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance",
		map[string]any{"frozen_time": t0.Add(time.Hour).Format(time.RFC3339)}), emi.ErrRouteNotFound.Code, http.StatusNotFound)
	if prod.App.TestClocks != nil {
		t.Fatal("a production instance built test clocks")
	}
}

// TestTestClockMovesMonitoringWindows: monitoring reads the times the
// clock gave the partner's money, so half a year on the clock is half a
// year to the rules: a credit after 200 days without any movement raises
// the dormant-account rule, with the clock's idle days in its sentence.
func TestTestClockMovesMonitoringWindows(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Dormant"})
	t0 := env.Clock.Now().UTC().Truncate(time.Hour)
	apptest.Expect(t, "create", call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock", "sandbox_test_clock_create",
		map[string]any{"frozen_time": t0.Format(time.RFC3339)}), 0, http.StatusCreated)
	user := createUser(t, env, p, validUser(p))
	r := createAccount(t, env, p, map[string]any{"program": "account_eur", "user": user})
	iban := balancesOf(r)[0]["iban"].(string)
	apptest.Expect(t, "a first credit", incoming(t, env, p, sepaCredit("2000.00", iban)), 0, http.StatusCreated)
	apptest.Expect(t, "200 days", call(t, env, p, http.MethodPost, "/v2/sandbox/test_clock/advance", "sandbox_test_clock_advance",
		map[string]any{"frozen_time": t0.Add(200 * 24 * time.Hour).Format(time.RFC3339)}), 0, http.StatusOK)
	apptest.Expect(t, "a credit after 200 days", incoming(t, env, p, sepaCredit("1500.00", iban)), 0, http.StatusCreated)
	var hits string
	testwait.Until(t, "the dormant-account alert", func() bool {
		err := env.App.DB.Get(&hits, `SELECT hits::text FROM monitoring_alerts WHERE subject_token = $1 AND position('dormant' in hits::text) > 0`, user)
		return err == nil
	})
	if !strings.Contains(hits, "after 200 days without any movement") {
		t.Fatalf("the dormant hit does not count the clock's days: %s", hits)
	}
}
