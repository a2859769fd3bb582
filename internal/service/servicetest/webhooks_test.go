package servicetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/testwait"
)

func TestAddEndpoint(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, _, _ := e.partner(t)
	admin := staffCtx(kernel.NewToken(), emi.RoleAdmin)

	t.Run("an endpoint is stored with a sealed whsec_ secret and audited", func(t *testing.T) {
		ep, whsec, err := e.hooks.AddEndpoint(admin, partnerID, "  https://hooks.example.com/emi ", " Production ",
			[]emi.EventType{emi.EventCardActivated, emi.EventCardActivated, emi.EventAccountStatusChanged})
		if err != nil {
			t.Fatal(err)
		}
		raw := rawSecret(t, whsec)
		if ep.URL != "https://hooks.example.com/emi" || ep.Description != "Production" || !ep.Enabled ||
			len(ep.EventTypes) != 2 || ep.EventTypes[0] != emi.EventCardActivated {
			t.Fatalf("endpoint %+v", ep)
		}
		var enc []byte
		if err := e.db.GetContext(context.Background(), &enc, `SELECT secret_enc FROM webhook_endpoints WHERE id = $1`, ep.ID); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(enc, raw) || bytes.Contains(enc, []byte(whsec)) {
			t.Fatal("the secret is stored in clear")
		}
		if got, err := e.keys.Open(enc, "webhook_endpoints.secret:"+ep.ID); err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("the sealed secret does not open to the secret shown: %v", err)
		}
		if n := e.auditCount(t, "webhook_endpoint.create", ep.ID); n != 1 {
			t.Fatalf("%d audit rows", n)
		}
	})
	invalid := []struct {
		name, url, description string
		types                  []emi.EventType
		field                  string
	}{
		{"an empty URL is refused", " ", "", nil, "url"},
		{"a URL the guard refuses is refused with its reason", "https://blocked.example.com/", "", nil, "url"},
		{"a URL over 2000 characters is refused", "https://example.com/" + strings.Repeat("a", 2000), "", nil, "url"},
		{"a description over 200 characters is refused", "https://example.com/", strings.Repeat("é", 201), nil, "description"},
		{"an unknown event type is refused", "https://example.com/", "", []emi.EventType{emi.EventCardActivated, "card.exploded"}, "event_types[1]"},
		{"webhook.test cannot be listed in a filter", "https://example.com/", "", []emi.EventType{emi.EventWebhookTest}, "event_types[0]"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.hooks.AddEndpoint(admin, partnerID, tc.url, tc.description, tc.types)
			ae := emi.AsError(err)
			if !errors.Is(err, emi.ErrWebhookValidation) || len(ae.Fields) != 1 || ae.Fields[0].Field != tc.field {
				t.Fatalf("got %v %v, want a validation error naming %s", err, ae.Fields, tc.field)
			}
			if strings.Contains(tc.url, "blocked") && !strings.Contains(ae.Fields[0].Message, "private address") {
				t.Fatalf("the guard's reason is not shown: %q", ae.Fields[0].Message)
			}
		})
	}
	t.Run("an unknown partner is not found", func(t *testing.T) {
		if _, _, err := e.hooks.AddEndpoint(admin, kernel.NewToken(), "https://example.com/", "", nil); !errors.Is(err, emi.ErrPartnerNotFound) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("only roles that manage webhooks may add one", func(t *testing.T) {
		for _, r := range []emi.Role{emi.RoleAuditor, emi.RoleUnderwriter, emi.RoleCustomerService} {
			if _, _, err := e.hooks.AddEndpoint(staffCtx(kernel.NewToken(), r), partnerID, "https://example.com/", "", nil); !errors.Is(err, emi.ErrForbidden) {
				t.Fatalf("%s adds an endpoint: %v", r, err)
			}
		}
		if _, err := e.hooks.Endpoints(staffCtx(kernel.NewToken(), emi.RoleAuditor), partnerID); err != nil {
			t.Fatalf("an auditor lists the endpoints: %v", err)
		}
		if _, err := e.hooks.Endpoints(staffCtx(kernel.NewToken(), emi.RoleUnderwriter), partnerID); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("an underwriter lists the endpoints: %v", err)
		}
	})
}

func TestManageEndpoints(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, first, _ := e.partner(t)
	id, _ := e.endpoint(t, partnerID)

	t.Run("an update changes URL, description and filter and audits the changes", func(t *testing.T) {
		ep, err := e.hooks.UpdateEndpoint(sys(), partnerID, id, "https://new.example.com/h", "new", []emi.EventType{emi.EventCardConverted})
		if err != nil {
			t.Fatal(err)
		}
		if ep.URL != "https://new.example.com/h" || ep.Description != "new" || len(ep.EventTypes) != 1 {
			t.Fatalf("updated %+v", ep)
		}
		if got := e.endpointState(t, id); got.URL != ep.URL || got.EventTypes[0] != emi.EventCardConverted {
			t.Fatalf("stored %+v", got)
		}
		if n := e.auditCount(t, "webhook_endpoint.update", id); n != 1 {
			t.Fatalf("%d audit rows", n)
		}
		if _, err := e.hooks.UpdateEndpoint(sys(), partnerID, id, "https://blocked.example/", "", nil); !errors.Is(err, emi.ErrWebhookValidation) {
			t.Fatalf("update to a blocked URL: %v", err)
		}
	})
	t.Run("disabling cancels the pending deliveries and enabling clears the reason", func(t *testing.T) {
		ev := e.emit(t, partnerID, emi.EventCardConverted, kernel.NewToken(), map[string]any{"type": "plastic", "expiry": "04/30"})
		if err := e.hooks.SetEndpointEnabled(sys(), partnerID, id, false); err != nil {
			t.Fatal(err)
		}
		ep := e.endpointState(t, id)
		if ep.Enabled || ep.DisabledReason != "disabled by staff" {
			t.Fatalf("disabled endpoint %+v", ep)
		}
		d := e.deliveries(t, ev.ID)[id]
		if d.State != emi.DeliveryCanceled {
			t.Fatalf("pending delivery of a disabled endpoint: %s", d.State)
		}
		// Its job still runs, and sends nothing.
		e.run(t)
		testwait.Until(t, "the canceled delivery's job", func() bool { return e.jobState(t, d.ID) == string(emi.JobSucceeded) })
		for _, m := range e.recv.messages() {
			if m.Msg.ID == ev.ID && m.Msg.URL == "https://new.example.com/h" {
				t.Fatal("a canceled delivery was sent")
			}
		}
		if ev2 := e.emit(t, partnerID, emi.EventCardConverted, kernel.NewToken(), nil); len(e.deliveries(t, ev2.ID)) != 1 {
			t.Fatal("an event emitted while the endpoint is disabled has a delivery to it")
		}
		if err := e.hooks.SetEndpointEnabled(sys(), partnerID, id, true); err != nil {
			t.Fatal(err)
		}
		if ep := e.endpointState(t, id); !ep.Enabled || ep.DisabledReason != "" || ep.FailingSince != nil {
			t.Fatalf("enabled endpoint %+v", ep)
		}
		if n := e.auditCount(t, "webhook_endpoint.disable", id) + e.auditCount(t, "webhook_endpoint.enable", id); n != 2 {
			t.Fatalf("%d enable/disable audit rows, want 2", n)
		}
		if err := e.hooks.SetEndpointEnabled(sys(), partnerID, id, true); err != nil || e.auditCount(t, "webhook_endpoint.enable", id) != 1 {
			t.Fatalf("enabling an enabled endpoint: %v, or it was audited again", err)
		}
	})
	t.Run("another partner's endpoint is not found and not changed", func(t *testing.T) {
		other, _, _ := e.partner(t)
		before := e.endpointState(t, id)
		for name, err := range map[string]error{
			"update": func() error {
				_, err := e.hooks.UpdateEndpoint(sys(), other, id, "https://x.example/", "", nil)
				return err
			}(),
			"disable": e.hooks.SetEndpointEnabled(sys(), other, id, false),
			"rotate":  func() error { _, _, err := e.hooks.RotateEndpointSecret(sys(), other, id); return err }(),
			"delete":  e.hooks.DeleteEndpoint(sys(), other, id),
			"test":    func() error { _, err := e.hooks.SendTest(sys(), other, id); return err }(),
		} {
			if !errors.Is(err, emi.ErrWebhookEndpointNotFound) {
				t.Errorf("%s another partner's endpoint: %v, want not found", name, err)
			}
		}
		if after := e.endpointState(t, id); after.URL != before.URL || after.Enabled != before.Enabled ||
			!after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("another partner changed the endpoint: %+v, was %+v", after, before)
		}
	})
	t.Run("a deleted endpoint leaves the listing and gets no events", func(t *testing.T) {
		if err := e.hooks.DeleteEndpoint(sys(), partnerID, id); err != nil {
			t.Fatal(err)
		}
		eps, err := e.hooks.Endpoints(sys(), partnerID)
		if err != nil || len(eps) != 1 || eps[0].ID != first {
			t.Fatalf("endpoints after the deletion: %v %v", eps, err)
		}
		ev := e.emit(t, partnerID, emi.EventCardConverted, kernel.NewToken(), nil)
		if ds := e.deliveries(t, ev.ID); len(ds) != 1 || ds[first].ID == "" {
			t.Fatalf("deliveries after the deletion: %v", keys(ds))
		}
		for name, err := range map[string]error{
			"update": func() error {
				_, err := e.hooks.UpdateEndpoint(sys(), partnerID, id, "https://x.example/", "", nil)
				return err
			}(),
			"enable": e.hooks.SetEndpointEnabled(sys(), partnerID, id, true),
			"rotate": func() error { _, _, err := e.hooks.RotateEndpointSecret(sys(), partnerID, id); return err }(),
			"delete": e.hooks.DeleteEndpoint(sys(), partnerID, id),
			"test":   func() error { _, err := e.hooks.SendTest(sys(), partnerID, id); return err }(),
		} {
			if !errors.Is(err, emi.ErrWebhookEndpointNotFound) {
				t.Errorf("%s a deleted endpoint: %v, want not found", name, err)
			}
		}
	})
	t.Run("an id that is not a UUID is not found", func(t *testing.T) {
		if err := e.hooks.SetEndpointEnabled(sys(), partnerID, "nope", false); !errors.Is(err, emi.ErrWebhookEndpointNotFound) {
			t.Fatalf("got %v", err)
		}
		if err := e.hooks.Replay(sys(), partnerID, "nope"); !errors.Is(err, emi.ErrWebhookDeliveryNotFound) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestDeliverySuccessIsRecorded(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, whsec := e.partner(t)
	token := kernel.NewToken()
	ev := e.emit(t, partnerID, emi.EventCardActivated, token, nil)
	d := e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
	if d.State != emi.DeliverySucceeded || d.SucceededAt == nil || d.LastStatus != 200 || d.LastError != "" || d.NextAttemptAt != nil {
		t.Fatalf("delivery %+v", d)
	}
	a := d.AttemptLog[0]
	if a.Attempt != 1 || a.Status != 200 || a.Latency != 3*time.Millisecond || a.ResponseExcerpt != `{"ok":true}` || a.Replay ||
		!a.StartedAt.Equal(e.clock.Now()) {
		t.Fatalf("attempt %+v", a)
	}
	if st := e.jobState(t, d.ID); st != string(emi.JobSucceeded) {
		t.Fatalf("job %s", st)
	}
	msgs := e.recv.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0].Msg
	var body []byte
	if err := e.db.GetContext(context.Background(), &body, `SELECT body FROM events WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	if m.ID != ev.ID || !bytes.Equal(m.Body, body) || m.URL != "http://127.0.0.1:9/hooks" || !m.Timestamp.Equal(e.clock.Now()) ||
		len(m.Secrets) != 1 || !bytes.Equal(m.Secrets[0], rawSecret(t, whsec)) {
		t.Fatalf("message %+v", m)
	}
	if ep := e.endpointState(t, epID); ep.Health.Attempts != 1 || ep.Health.Succeeded != 1 || ep.Health.LastStatus != 200 {
		t.Fatalf("health %+v", ep.Health)
	}

	t.Run("a delivery whose job runs again after its success is not sent again", func(t *testing.T) {
		payload, _ := json.Marshal(map[string]string{"delivery": d.ID})
		if err := e.hooks.Deliver(context.Background(), emi.Job{ID: 1, Kind: kernel.JobWebhookDeliver, Payload: payload}); err != nil {
			t.Fatalf("second run: %v", err)
		}
		if n := e.recv.count(ev.ID); n != 1 {
			t.Fatalf("sent %d times", n)
		}
		if d2, _ := e.hooks.Delivery(sys(), d.ID); d2.Attempts != 1 {
			t.Fatalf("%d attempts", d2.Attempts)
		}
	})
	t.Run("a job with a bad payload or an unknown delivery is permanent", func(t *testing.T) {
		for _, p := range []string{`{}`, `nope`, `{"delivery":"` + kernel.NewToken() + `"}`} {
			err := e.hooks.Deliver(context.Background(), emi.Job{ID: 2, Payload: json.RawMessage(p)})
			if err == nil || !strings.Contains(err.Error(), "webhook delivery job 2") {
				t.Fatalf("payload %s: %v", p, err)
			}
		}
	})
}

func TestFailedDeliveriesFollowTheRetrySchedule(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, _ := e.partner(t)
	e.recv.answerStatus(500, 0)
	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	id := e.delivery(t, ev.ID).ID
	start := e.clock.Now()
	// The Standard Webhooks schedule, without jitter.
	delays := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
		10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}
	for i, delay := range delays {
		d := e.waitAttempts(t, id, i+1)
		if d.State != emi.DeliveryPending || d.LastStatus != 500 || d.LastError != "HTTP 500" {
			t.Fatalf("after attempt %d: %+v", i+1, d)
		}
		if want := e.clock.Now().Add(delay); d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(want) {
			t.Fatalf("after attempt %d: next attempt at %v, want %v", i+1, d.NextAttemptAt, want)
		}
		// The job queue was asked to wait exactly that long.
		if in := e.jobRunIn(t, id); math.Abs(in-delay.Seconds()) > 2 {
			t.Fatalf("after attempt %d: job due in %.1f s, want %v", i+1, in, delay)
		}
		if i == 0 {
			if ep := e.endpointState(t, epID); ep.FailingSince == nil || !ep.FailingSince.Equal(start) || !ep.Enabled {
				t.Fatalf("after the first failure: %+v", ep)
			}
		}
		e.clock.Advance(delay)
		e.dueNow(t, id)
	}
	d := e.waitAttempts(t, id, 10)
	if d.State != emi.DeliveryFailed || !strings.Contains(d.LastError, "gave up after 10 attempts") || d.NextAttemptAt != nil {
		t.Fatalf("after the last attempt: %+v", d)
	}
	if st := e.jobState(t, id); st != string(emi.JobSucceeded) {
		t.Fatalf("the job of a delivery that gave up is %s, want succeeded (the delivery records the failure)", st)
	}
	if horizon := d.AttemptLog[9].StartedAt.Sub(d.AttemptLog[0].StartedAt); horizon < 72*time.Hour {
		t.Fatalf("retries span %v, want at least 72 h", horizon)
	}
	for i, a := range d.AttemptLog {
		if a.Attempt != i+1 || a.Status != 500 || a.Latency != 7*time.Millisecond || a.ResponseExcerpt != "status 500" {
			t.Fatalf("attempt %d: %+v", i+1, a)
		}
	}
	// 75.5 h of failures is short of the 5 days that disable an endpoint.
	if ep := e.endpointState(t, epID); !ep.Enabled || ep.FailingSince == nil {
		t.Fatalf("endpoint after a delivery gave up: %+v", ep)
	}

	t.Run("Retry-After longer than the schedule is respected", func(t *testing.T) {
		e.recv.answerStatus(429, 2*time.Minute)
		ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
		id := e.delivery(t, ev.ID).ID
		e.waitAttempts(t, id, 1)
		if in := e.jobRunIn(t, id); math.Abs(in-120) > 2 {
			t.Fatalf("job due in %.1f s, want 120 s", in)
		}
	})
	t.Run("a success ends the endpoint's failure streak", func(t *testing.T) {
		e.recv.setAnswer(nil)
		ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
		if d := e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1); d.State != emi.DeliverySucceeded {
			t.Fatalf("delivery %s", d.State)
		}
		if ep := e.endpointState(t, epID); ep.FailingSince != nil {
			t.Fatalf("failing since %v after a success", ep.FailingSince)
		}
	})
}

func TestGoneDisablesTheEndpointAtOnce(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, _ := e.partner(t)
	// A delivery waiting for a retry, to see it canceled.
	e.recv.answerStatus(503, 0)
	waiting := e.emit(t, partnerID, emi.EventAccountStatusChanged, kernel.NewToken(), nil)
	e.waitAttempts(t, e.delivery(t, waiting.ID).ID, 1)

	e.recv.answerStatus(410, 0)
	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	d := e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
	if d.State != emi.DeliveryFailed || !strings.Contains(d.LastError, "410 Gone") {
		t.Fatalf("delivery answered 410: %+v", d)
	}
	ep := e.endpointState(t, epID)
	if ep.Enabled || ep.DisabledReason != "the endpoint answered 410 Gone" {
		t.Fatalf("endpoint after 410: %+v", ep)
	}
	if w := e.delivery(t, waiting.ID); w.State != emi.DeliveryCanceled || !strings.Contains(w.LastError, "410") {
		t.Fatalf("the other pending delivery: %+v", w)
	}
	if n := e.auditCount(t, "webhook_endpoint.auto_disable", epID); n != 1 {
		t.Fatalf("%d audit rows for the automatic disabling", n)
	}
	if st := e.jobState(t, d.ID); st != string(emi.JobSucceeded) {
		t.Fatalf("job %s: a 410 is not retried", st)
	}
	if later := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil); len(e.deliveries(t, later.ID)) != 0 {
		t.Fatal("an event after the 410 has a delivery")
	}
}

func TestFiveDaysOfFailuresDisableTheEndpoint(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, _ := e.partner(t)
	e.recv.answerStatus(500, 0)
	first := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	e.waitAttempts(t, e.delivery(t, first.ID).ID, 1)

	e.clock.Advance(5*24*time.Hour - time.Minute)
	almost := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	e.waitAttempts(t, e.delivery(t, almost.ID).ID, 1)
	if ep := e.endpointState(t, epID); !ep.Enabled {
		t.Fatalf("disabled after failing for 5 days minus a minute: %+v", ep)
	}

	e.clock.Advance(time.Minute)
	last := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	d := e.waitAttempts(t, e.delivery(t, last.ID).ID, 1)
	ep := e.endpointState(t, epID)
	if ep.Enabled || !strings.HasPrefix(ep.DisabledReason, "failing since 2026-03-02T10:00:00Z") {
		t.Fatalf("endpoint after failing for 5 days: %+v", ep)
	}
	if d.State != emi.DeliveryFailed {
		t.Fatalf("the delivery that found the 5 days: %s", d.State)
	}
	for _, ev := range []emi.Event{first, almost} {
		if st := e.delivery(t, ev.ID).State; st != emi.DeliveryCanceled {
			t.Fatalf("an earlier delivery still retrying: %s, want canceled", st)
		}
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, _ := e.partner(t)
	staffID := kernel.NewToken()
	admin := staffCtx(staffID, emi.RoleAdmin)

	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	id := e.delivery(t, ev.ID).ID
	e.waitAttempts(t, id, 1)

	t.Run("a replay of a succeeded delivery makes a new attempt marked as a replay, with the same bytes", func(t *testing.T) {
		if err := e.hooks.Replay(admin, partnerID, id); err != nil {
			t.Fatal(err)
		}
		d := e.waitAttempts(t, id, 2)
		a := d.AttemptLog[1]
		if !a.Replay || a.ReplayedBy != staffID || a.Status != 200 || d.State != emi.DeliverySucceeded || d.ReplayRequested {
			t.Fatalf("replayed delivery %+v, attempt %+v", d, a)
		}
		msgs := e.recv.messages()
		if len(msgs) != 2 || msgs[0].Msg.ID != msgs[1].Msg.ID || !bytes.Equal(msgs[0].Msg.Body, msgs[1].Msg.Body) {
			t.Fatalf("the replay did not resend the same event bytes")
		}
		if n := e.auditCount(t, "webhook_delivery.replay", id); n != 1 {
			t.Fatalf("%d audit rows for the replay", n)
		}
		var actor string
		if err := e.db.GetContext(context.Background(), &actor, `SELECT actor_id FROM audit_log WHERE action = 'webhook_delivery.replay'`); err != nil || actor != staffID {
			t.Fatalf("replay audited as %q (%v), want %s", actor, err, staffID)
		}
	})
	t.Run("a failed delivery of a disabled endpoint is replayed once the endpoint is enabled", func(t *testing.T) {
		e.recv.answerStatus(410, 0)
		ev := e.emit(t, partnerID, emi.EventAccountStatusChanged, kernel.NewToken(), nil)
		id := e.delivery(t, ev.ID).ID
		if d := e.waitAttempts(t, id, 1); d.State != emi.DeliveryFailed {
			t.Fatalf("delivery %s", d.State)
		}
		if err := e.hooks.Replay(admin, partnerID, id); !errors.Is(err, emi.ErrWebhookEndpointDisabled) {
			t.Fatalf("replay to a disabled endpoint: %v", err)
		}
		e.recv.setAnswer(nil)
		if err := e.hooks.SetEndpointEnabled(admin, partnerID, epID, true); err != nil {
			t.Fatal(err)
		}
		if err := e.hooks.Replay(admin, partnerID, id); err != nil {
			t.Fatal(err)
		}
		d := e.waitAttempts(t, id, 2)
		if d.State != emi.DeliverySucceeded || !d.AttemptLog[1].Replay {
			t.Fatalf("replayed failed delivery %+v", d)
		}
	})
	t.Run("a replay of a delivery waiting for its retry runs now and keeps the schedule", func(t *testing.T) {
		e.recv.answerStatus(500, 0)
		ev := e.emit(t, partnerID, emi.EventAccountStatusChanged, kernel.NewToken(), nil)
		id := e.delivery(t, ev.ID).ID
		next := *e.waitAttempts(t, id, 1).NextAttemptAt
		if err := e.hooks.Replay(admin, partnerID, id); err != nil {
			t.Fatal(err)
		}
		d := e.waitAttempts(t, id, 2)
		if !d.AttemptLog[1].Replay || d.State != emi.DeliveryPending || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(next) {
			t.Fatalf("after a failed replay: %+v", d)
		}
		if in := e.jobRunIn(t, id); in < 2 || in > 6 {
			t.Fatalf("the scheduled retry is due in %.1f s, want about 5 s", in)
		}
		e.recv.setAnswer(nil)
	})
	t.Run("another partner's delivery is not found, whatever its endpoint's state", func(t *testing.T) {
		other, _, _ := e.partner(t)
		if err := e.hooks.Replay(admin, other, id); !errors.Is(err, emi.ErrWebhookDeliveryNotFound) {
			t.Fatalf("replay of another partner's delivery: %v", err)
		}
		if d, _ := e.hooks.Delivery(sys(), id); d.ReplayRequested {
			t.Fatal("the refused replay was recorded")
		}
	})
	t.Run("replaying needs the manage permission", func(t *testing.T) {
		if err := e.hooks.Replay(staffCtx(kernel.NewToken(), emi.RoleAuditor), partnerID, id); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("auditor replays: %v", err)
		}
	})
}

func TestRotatedSecretsSignTogetherFor24Hours(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, old := e.partner(t)
	whsec, until, err := e.hooks.RotateEndpointSecret(sys(), partnerID, epID)
	if err != nil {
		t.Fatal(err)
	}
	if !until.Equal(e.clock.Now().Add(24 * time.Hour)) {
		t.Fatalf("previous secret valid until %v", until)
	}
	if ep := e.endpointState(t, epID); ep.PreviousValidUntil == nil || !ep.PreviousValidUntil.Equal(until) {
		t.Fatalf("endpoint %+v", ep)
	}
	if n := e.auditCount(t, "webhook_endpoint.rotate_secret", epID); n != 1 {
		t.Fatalf("%d audit rows", n)
	}
	secrets := func() [][]byte {
		ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
		e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
		msgs := e.recv.messages()
		return msgs[len(msgs)-1].Msg.Secrets
	}
	got := secrets()
	if len(got) != 2 || !bytes.Equal(got[0], rawSecret(t, whsec)) || !bytes.Equal(got[1], rawSecret(t, old)) {
		t.Fatal("during the overlap a message is not signed with the new and the old secret")
	}
	e.clock.Advance(24*time.Hour + time.Second)
	got = secrets()
	if len(got) != 1 || !bytes.Equal(got[0], rawSecret(t, whsec)) {
		t.Fatal("after the overlap a message is not signed with the new secret only")
	}
}

// A second rotation during the overlap (the secret just shown was lost or
// exposed) must not drop the secret the partner's receiver still verifies
// with, nor extend its life: the old secret keeps signing until the first
// rotation's end, the replaced one stops at once, and once the overlap is
// over a rotation starts a new one. The old code made the replaced secret
// the previous one: deliveries to a receiver still on the original secret
// failed at once, and this test failed there.
func TestRotatingTwiceKeepsTheDeployedSecret(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, original := e.partner(t)
	lost, until1, err := e.hooks.RotateEndpointSecret(sys(), partnerID, epID)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Minute)
	fresh, until2, err := e.hooks.RotateEndpointSecret(sys(), partnerID, epID)
	if err != nil {
		t.Fatal(err)
	}
	if !until2.Equal(until1) {
		t.Fatalf("the second rotation moved the original secret's end from %v to %v", until1, until2)
	}
	secrets := func() [][]byte {
		ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
		e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
		msgs := e.recv.messages()
		return msgs[len(msgs)-1].Msg.Secrets
	}
	got := secrets()
	if len(got) != 2 || !bytes.Equal(got[0], rawSecret(t, fresh)) || !bytes.Equal(got[1], rawSecret(t, original)) {
		t.Fatal("after two rotations a message is not signed with the newest and the original secret")
	}
	for _, g := range got {
		if bytes.Equal(g, rawSecret(t, lost)) {
			t.Fatal("the replaced secret still signs")
		}
	}
	if n := e.auditCount(t, "webhook_endpoint.rotate_secret", epID); n != 2 {
		t.Fatalf("%d audit rows, want 2", n)
	}
	e.clock.Advance(24 * time.Hour)
	newest, until3, err := e.hooks.RotateEndpointSecret(sys(), partnerID, epID)
	if err != nil {
		t.Fatal(err)
	}
	if !until3.Equal(e.clock.Now().Add(24 * time.Hour)) {
		t.Fatalf("a rotation after the overlap: previous valid until %v", until3)
	}
	got = secrets()
	if len(got) != 2 || !bytes.Equal(got[0], rawSecret(t, newest)) || !bytes.Equal(got[1], rawSecret(t, fresh)) {
		t.Fatal("a rotation after the overlap does not sign with the newest and the one it replaced")
	}
}

func TestAttemptLogKeepsTextThePostgreSQLWay(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, _, _ := e.partner(t)
	// 1020 bytes of é, then an invalid byte, a NUL and more: replacing them
	// makes the first 1024 bytes longer, and the excerpt is cut again.
	answer := append(bytes.Repeat([]byte("é"), 510), 0xff, 'a', 0x00, 'b')
	answer = append(answer, bytes.Repeat([]byte("x"), 2000)...)
	e.recv.setAnswer(func(emi.WebhookMessage) emi.WebhookResult {
		return emi.WebhookResult{Status: 500, Body: answer, Error: "bad\x00 \xffbytes"}
	})
	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	d := e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
	a := d.AttemptLog[0]
	if len(a.ResponseExcerpt) > 1024 || !utf8.ValidString(a.ResponseExcerpt) || strings.ContainsRune(a.ResponseExcerpt, 0) ||
		a.ResponseExcerpt != strings.Repeat("é", 510)+"\uFFFDa" {
		t.Fatalf("excerpt of %d bytes: %q", len(a.ResponseExcerpt), a.ResponseExcerpt[1000:])
	}
	if a.Error != "bad\uFFFD \uFFFDbytes" {
		t.Fatalf("error %q", a.Error)
	}
}

func TestEndpointHealth(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, _ := e.partner(t)
	e.recv.answerStatus(500, 0)
	old := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	e.waitAttempts(t, e.delivery(t, old.ID).ID, 1) // more than 24 h ago below
	e.clock.Advance(25 * time.Hour)
	e.recv.setAnswer(nil)
	for range 2 {
		ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
		e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
	}
	e.recv.answerStatus(502, 0)
	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
	h := e.endpointState(t, epID).Health
	rate, ok := h.SuccessRate()
	if h.Attempts != 3 || h.Succeeded != 2 || !ok || math.Abs(rate-2.0/3) > 1e-9 || h.LastStatus != 502 ||
		h.LastAttemptAt == nil || !h.LastAttemptAt.Equal(e.clock.Now()) || h.Pending != 2 {
		t.Fatalf("health %+v (the old delivery and the last one are pending)", h)
	}
}

func TestEventsLog(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	a, epA, _ := e.partner(t)
	b, _, _ := e.partner(t)
	card := kernel.NewToken()
	first := e.emit(t, a, emi.EventCardActivated, card, nil)
	e.waitAttempts(t, e.delivery(t, first.ID).ID, 1)
	e.clock.Advance(time.Hour)
	second := e.emit(t, a, emi.EventAccountStatusChanged, kernel.NewToken(), map[string]any{"status": "blocked"})
	e.clock.Advance(time.Hour)
	third := e.emit(t, a, emi.EventCardStatusChanged, card, map[string]any{"status": "inactive"})
	e.emit(t, b, emi.EventCardActivated, kernel.NewToken(), nil)
	viewer := staffCtx(kernel.NewToken(), emi.RoleAuditor)
	ids := func(l emi.EventLog) []string {
		out := make([]string, len(l.Items))
		for i, it := range l.Items {
			out[i] = it.ID
		}
		return out
	}
	cases := []struct {
		name  string
		f     emi.EventLogFilter
		want  []string
		total int64
	}{
		{"a partner's events come newest first", emi.EventLogFilter{PartnerID: a}, []string{third.ID, second.ID, first.ID}, 3},
		{"the type filter keeps one type", emi.EventLogFilter{PartnerID: a, Type: emi.EventAccountStatusChanged}, []string{second.ID}, 1},
		{"the resource filter keeps a resource's events", emi.EventLogFilter{PartnerID: a, ResourceToken: " " + card + " "}, []string{third.ID, first.ID}, 2},
		{"from is inclusive and to exclusive", emi.EventLogFilter{PartnerID: a, From: second.CreatedAt, To: third.CreatedAt}, []string{second.ID}, 1},
		{"pages have limit events", emi.EventLogFilter{PartnerID: a, Page: 2, Limit: 2}, []string{first.ID}, 3},
		{"no partner means every partner", emi.EventLogFilter{Limit: 100}, nil, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := e.hooks.EventsLog(viewer, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if l.Total != tc.total || (tc.want != nil && strings.Join(ids(l), ",") != strings.Join(tc.want, ",")) {
				t.Fatalf("got %v (total %d), want %v (total %d)", ids(l), l.Total, tc.want, tc.total)
			}
		})
	}
	t.Run("each event comes with its deliveries and their attempts", func(t *testing.T) {
		l, err := e.hooks.EventsLog(viewer, emi.EventLogFilter{PartnerID: a, Type: emi.EventCardActivated})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("%v %v", l, err)
		}
		it := l.Items[0]
		if len(it.Deliveries) != 1 || it.Deliveries[0].EndpointID != epA || it.Deliveries[0].EndpointURL != "http://127.0.0.1:9/hooks" ||
			len(it.Deliveries[0].AttemptLog) != 1 || it.ResourceToken != card || it.Data["card"] != card || len(it.Body) == 0 {
			t.Fatalf("entry %+v", it)
		}
	})
	t.Run("bad filters are validation errors", func(t *testing.T) {
		for _, f := range []emi.EventLogFilter{{Limit: 101}, {Page: -1}, {Type: "nope"}} {
			if _, err := e.hooks.EventsLog(viewer, f); !errors.Is(err, emi.ErrWebhookValidation) {
				t.Fatalf("%+v: %v", f, err)
			}
		}
	})
	t.Run("the log needs the view permission", func(t *testing.T) {
		if _, err := e.hooks.EventsLog(staffCtx(kernel.NewToken(), emi.RoleUnderwriter), emi.EventLogFilter{}); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("underwriter reads the log: %v", err)
		}
	})
}

// W5-lite: two worker pools (two emi processes) share one database and
// drain the same events.
func TestTwoPoolsDeliverEveryEventOnce(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, _, _ := e.partner(t)
	const n = 1000
	// Real time here: the attempts' intervals are compared.
	recv := &fakeReceiver{hold: 200 * time.Microsecond}
	hooksA, hooksB := e.newWebhooks(recv, time.Now), e.newWebhooks(recv, time.Now)
	eventsAt := time.Now()
	ids := map[string]bool{}
	for i := 0; i < n; i += 50 {
		err := e.db.InTx(context.Background(), func(ctx context.Context) error {
			for range 50 {
				ev, err := e.events.Emit(ctx, partnerID, emi.EventCardActivated, "card", kernel.NewToken(), nil)
				if err != nil {
					return err
				}
				ids[ev.ID] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	e.startPool(t, "process-a", hooksA, 30*time.Second)
	e.startPool(t, "process-b", hooksB, 30*time.Second)
	testwait.Until(t, "every delivery to succeed", func() bool {
		var pending int
		if err := e.db.GetContext(context.Background(), &pending, `SELECT count(*) FROM webhook_deliveries WHERE state <> 'succeeded'`); err != nil {
			t.Fatal(err)
		}
		return pending == 0
	})
	took := time.Since(eventsAt)
	msgs := recv.messages()
	byID := map[string][]received{}
	for _, m := range msgs {
		byID[m.Msg.ID] = append(byID[m.Msg.ID], m)
	}
	for id := range ids {
		if len(byID[id]) == 0 {
			t.Fatalf("event %s was never delivered", id)
		}
	}
	if dups := len(msgs) - len(ids); float64(dups) >= 0.001*n {
		t.Fatalf("%d duplicate deliveries of %d events, want < 0.1 %%", dups, n)
	}
	for id, ms := range byID {
		for i := 1; i < len(ms); i++ {
			if ms[i].Start.Before(ms[i-1].End) {
				t.Fatalf("event %s: two attempts overlap", id)
			}
		}
	}
	var byPool []struct {
		LockedBy string `db:"locked_by"`
		N        int    `db:"n"`
	}
	if err := e.db.SelectContext(context.Background(), &byPool, `SELECT locked_by, count(*) AS n FROM jobs GROUP BY locked_by ORDER BY locked_by`); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events delivered in %v (%.0f/s) by %v", n, took.Round(time.Millisecond), n/took.Seconds(), byPool)
}

// A worker that sent a delivery and died before recording it: the job's
// lease runs out and another worker delivers it again, with the same
// webhook-id and the same bytes (at least once, never lost).
func TestAKilledWorkersDeliveryIsRetried(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, _, _ := e.partner(t)
	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	id := e.delivery(t, ev.ID).ID

	jobs, err := e.jobs.Claim(context.Background(), "doomed", []string{kernel.JobWebhookDeliver}, 300*time.Millisecond, 1, 0)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	// The doomed worker's HTTP call reaches the receiver; then the worker
	// dies (runtime.Goexit: nothing after the call runs).
	crashing := &fakeReceiver{}
	crashing.setAnswer(func(msg emi.WebhookMessage) emi.WebhookResult {
		e.recv.Deliver(context.Background(), msg)
		runtime.Goexit()
		return emi.WebhookResult{}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.newWebhooks(crashing, e.clock.Now).Deliver(context.Background(), jobs[0])
	}()
	<-done
	if n := e.recv.count(ev.ID); n != 1 {
		t.Fatalf("the doomed attempt reached the receiver %d times", n)
	}
	if d, _ := e.hooks.Delivery(sys(), id); d.Attempts != 0 || d.State != emi.DeliveryPending {
		t.Fatalf("the crash recorded something: %+v", d)
	}

	d := e.waitAttempts(t, id, 1)
	if d.State != emi.DeliverySucceeded {
		t.Fatalf("delivery after the crash: %s", d.State)
	}
	msgs := e.recv.messages()
	if len(msgs) != 2 || msgs[0].Msg.ID != msgs[1].Msg.ID || !bytes.Equal(msgs[0].Msg.Body, msgs[1].Msg.Body) {
		t.Fatalf("after the crash the receiver got %d messages; want the same event twice, byte for byte", len(msgs))
	}
	var job struct {
		Attempt   int    `db:"attempt"`
		LastError string `db:"last_error"`
	}
	if err := e.db.GetContext(context.Background(), &job, `SELECT attempt, last_error FROM jobs WHERE id = $1`, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if job.Attempt != 2 || !strings.Contains(job.LastError, "lease expired: worker doomed") {
		t.Fatalf("job %+v", job)
	}
}

func TestAnAttemptCutShortByAShutdownDoesNotCount(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, _ := e.partner(t)
	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	id := e.delivery(t, ev.ID).ID
	ctx, cancel := context.WithCancel(context.Background())
	e.recv.setAnswer(func(emi.WebhookMessage) emi.WebhookResult {
		cancel() // the worker shuts down while the request is out
		return emi.WebhookResult{Error: "context canceled"}
	})
	payload, _ := json.Marshal(map[string]string{"delivery": id})
	if err := e.hooks.Deliver(ctx, emi.Job{ID: 1, Payload: payload}); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("interrupted attempt: %v, want a retry", err)
	}
	d, _ := e.hooks.Delivery(sys(), id)
	if d.Attempts != 1 || d.State != emi.DeliveryPending || d.AttemptLog[0].Error != "context canceled" {
		t.Fatalf("after the interrupted attempt: %+v", d)
	}
	if ep := e.endpointState(t, epID); ep.FailingSince != nil {
		t.Fatalf("an interrupted attempt started a failure streak: %+v", ep)
	}
	// The next failure is the schedule's first: retried after 5 s.
	e.recv.answerStatus(500, 0)
	d = e.waitAttempts(t, id, 2)
	if d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(e.clock.Now().Add(5*time.Second)) {
		t.Fatalf("after the first real failure: next attempt at %v", d.NextAttemptAt)
	}
}
