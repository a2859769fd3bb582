package servicetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// W2 of security-checks.md: an event exists if and only if the change that
// caused it committed.
func TestEventsCommitIfAndOnlyIfTheirChangeCommits(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	ctx := context.Background()
	partnerID, _, _ := e.partner(t)
	e.endpoint(t, partnerID) // two endpoints: every event gets two deliveries
	if _, err := e.db.ExecContext(ctx, `CREATE TABLE w2_changes (token uuid PRIMARY KEY, status text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const total, workers = 1000, 8
	errFault := errors.New("injected fault after the event was written")
	var mu sync.Mutex
	var overtaken atomic.Int64
	committed := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < total; i += workers {
				token := kernel.NewToken()
				err := e.db.InTx(ctx, func(ctx context.Context) error {
					if _, err := e.db.Ext(ctx).ExecContext(ctx, `INSERT INTO w2_changes (token, status) VALUES ($1, 'blocked')`, token); err != nil {
						return err
					}
					if _, err := e.events.Emit(ctx, partnerID, emi.EventAccountStatusChanged, "account", token,
						map[string]any{"status": "blocked", "previous_status": "active"}); err != nil {
						return err
					}
					// While this transaction is open, no event of the partner
					// with a higher seq may have committed: events_list's
					// `after` relies on it. The count runs outside the
					// transaction, on another connection.
					var seq int64
					if err := sqlx.GetContext(ctx, e.db.Ext(ctx), &seq, `SELECT seq FROM events WHERE resource_token = $1`, token); err != nil {
						return err
					}
					var later int
					if err := e.db.GetContext(ctx, &later, `SELECT count(*) FROM events WHERE partner_id = $1 AND seq > $2`, partnerID, seq); err != nil {
						return err
					}
					if later > 0 {
						overtaken.Add(1)
					}
					if i%2 == 1 {
						return errFault
					}
					return nil
				})
				switch {
				case err == nil:
					mu.Lock()
					committed[token] = true
					mu.Unlock()
				case !errors.Is(err, errFault):
					t.Errorf("transaction %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	count := func(q string) int {
		t.Helper()
		var n int
		if err := e.db.GetContext(ctx, &n, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if len(committed) != total/2 {
		t.Fatalf("%d transactions committed, want %d", len(committed), total/2)
	}
	if n := count(`SELECT count(*) FROM w2_changes`); n != total/2 {
		t.Fatalf("%d changes in the table, want %d", n, total/2)
	}
	if n := count(`SELECT count(*) FROM events`); n != len(committed) {
		t.Fatalf("%d events for %d committed changes", n, len(committed))
	}
	if n := count(`SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM w2_changes c WHERE c.token::text = e.resource_token)`); n != 0 {
		t.Fatalf("%d events refer to a change that rolled back", n)
	}
	if n := count(`SELECT count(*) FROM w2_changes c WHERE (SELECT count(*) FROM events e WHERE e.resource_token = c.token::text) <> 1`); n != 0 {
		t.Fatalf("%d committed changes do not have exactly one event", n)
	}
	if n := count(`SELECT count(*) FROM webhook_deliveries`); n != 2*len(committed) {
		t.Fatalf("%d deliveries, want 2 per committed event (%d)", n, 2*len(committed))
	}
	if n := count(`SELECT count(*) FROM jobs WHERE kind = 'webhook.deliver'`); n != 2*len(committed) {
		t.Fatalf("%d delivery jobs, want one per delivery (%d)", n, 2*len(committed))
	}
	if n := count(`SELECT count(*) FROM jobs j WHERE kind = 'webhook.deliver' AND NOT EXISTS (
		SELECT 1 FROM webhook_deliveries d WHERE j.payload->>'delivery' = d.id::text)`); n != 0 {
		t.Fatalf("%d delivery jobs have no delivery", n)
	}
	if n := overtaken.Load(); n != 0 {
		t.Fatalf("%d times an event committed with a higher seq while an earlier one was still open: seq order is not commit order", n)
	}
}

func TestEmitOutsideATransactionIsRefused(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, _, _ := e.partner(t)
	_, err := e.events.Emit(context.Background(), partnerID, emi.EventCardActivated, "card", kernel.NewToken(), nil)
	if emi.AsError(err).Kind != emi.KindInternal || !strings.Contains(err.Error(), "no transaction") {
		t.Fatalf("emit without a transaction: %v, want an internal error saying so", err)
	}
	var n int
	if err := e.db.GetContext(context.Background(), &n, `SELECT count(*) FROM events`); err != nil || n != 0 {
		t.Fatalf("%d events stored (err %v), want none", n, err)
	}
}

func TestEmitRefusesCallerBugs(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, _, _ := e.partner(t)
	cases := []struct {
		name         string
		typ          emi.EventType
		resource     string
		token        string
		fields       map[string]any
		wantInternal bool
	}{
		{"an unknown event type is refused", "card.exploded", "card", kernel.NewToken(), nil, true},
		{"a resource name that does not match the type is refused", emi.EventCardActivated, "account", kernel.NewToken(), nil, true},
		{"an empty resource token is refused", emi.EventCardActivated, "card", "", nil, true},
		{"a body over 64 KiB is refused", emi.EventCardActivated, "card", kernel.NewToken(), map[string]any{"big": strings.Repeat("x", 70<<10)}, true},
		{"a test event to an endpoint the partner does not have is not found", emi.EventWebhookTest, "endpoint", kernel.NewToken(), nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := e.db.InTx(context.Background(), func(ctx context.Context) error {
				_, err := e.events.Emit(ctx, partnerID, tc.typ, tc.resource, tc.token, tc.fields)
				return err
			})
			if tc.wantInternal && emi.AsError(err).Kind != emi.KindInternal {
				t.Fatalf("got %v, want an internal error", err)
			}
			if !tc.wantInternal && !errors.Is(err, emi.ErrWebhookEndpointNotFound) {
				t.Fatalf("got %v, want %v", err, emi.ErrWebhookEndpointNotFound)
			}
		})
	}
	t.Run("a failed emit leaves nothing behind in a transaction that goes on", func(t *testing.T) {
		token := kernel.NewToken()
		err := e.db.InTx(context.Background(), func(ctx context.Context) error {
			if _, err := e.events.Emit(ctx, partnerID, emi.EventWebhookTest, "endpoint", kernel.NewToken(), nil); err == nil {
				t.Error("test event to an unknown endpoint: no error")
			}
			_, err := e.events.Emit(ctx, partnerID, emi.EventCardActivated, "card", token, nil)
			return err
		})
		if err != nil {
			t.Fatalf("the transaction after a failed emit: %v", err)
		}
		var types []string
		if err := e.db.SelectContext(context.Background(), &types, `SELECT type FROM events`); err != nil {
			t.Fatal(err)
		}
		if len(types) != 1 || types[0] != string(emi.EventCardActivated) {
			t.Fatalf("events %v, want only card.activated", types)
		}
	})
}

func TestEmitBuildsTheBodyOnceWithoutSensitiveData(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, _, _ := e.partner(t)
	token := kernel.NewToken()
	ev := e.emit(t, partnerID, emi.EventCardStatusChanged, token, map[string]any{
		"status": "inactive", "pan": "4111111111111111", "cvv": "123",
		"holder": map[string]any{"pin": "1234", "name": "Elin"},
	})
	var body []byte
	var data []byte
	if err := e.db.QueryRowContext(context.Background(), `SELECT body, data FROM events WHERE id = $1`, ev.ID).Scan(&body, &data); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"4111111111111111", `"123"`, "1234"} {
		if strings.Contains(string(body), secret) || strings.Contains(string(data), secret) {
			t.Fatalf("event stores %s: %s", secret, body)
		}
	}
	var got struct {
		ID        string         `json:"id"`
		Type      string         `json:"type"`
		CreatedAt string         `json:"created_at"`
		Data      map[string]any `json:"data"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if got.ID != ev.ID || got.Type != "card.status_changed" || got.CreatedAt != "2026-03-02T10:00:00Z" ||
		got.Data["card"] != token || got.Data["status"] != "inactive" || got.Data["pan"] != "[redacted]" {
		t.Fatalf("body %s", body)
	}
}

func TestEventsGoToTheEndpointsWhoseFilterMatches(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, all, _ := e.partner(t)
	cards, _ := e.endpoint(t, partnerID, emi.EventCardActivated, emi.EventCardConverted)
	accounts, _ := e.endpoint(t, partnerID, emi.EventAccountStatusChanged)
	off, _ := e.endpoint(t, partnerID)
	if err := e.hooks.SetEndpointEnabled(sys(), partnerID, off, false); err != nil {
		t.Fatal(err)
	}
	other, _, _ := e.partner(t)
	cases := []struct {
		name string
		typ  emi.EventType
		want []string
	}{
		{"a card event goes to the endpoint for every type and the card endpoint", emi.EventCardActivated, []string{all, cards}},
		{"an account event goes to the endpoint for every type and the account endpoint", emi.EventAccountStatusChanged, []string{all, accounts}},
		{"an event no filter lists goes only to the endpoint for every type", emi.EventUserKYCUpdated, []string{all}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := e.emit(t, partnerID, tc.typ, kernel.NewToken(), nil)
			got := e.deliveries(t, ev.ID)
			if len(got) != len(tc.want) {
				t.Fatalf("deliveries to %v, want %v", keys(got), tc.want)
			}
			for _, id := range tc.want {
				if got[id].State != emi.DeliveryPending {
					t.Fatalf("no pending delivery to %s: %v", id, keys(got))
				}
			}
		})
	}
	t.Run("another partner's event reaches none of these endpoints", func(t *testing.T) {
		ev := e.emit(t, other, emi.EventCardActivated, kernel.NewToken(), nil)
		for id := range e.deliveries(t, ev.ID) {
			if id == all || id == cards || id == accounts || id == off {
				t.Fatalf("partner B's event goes to partner A's endpoint %s", id)
			}
		}
	})
}

func keys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTestEventsGoOnlyToTheirEndpoint(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, all, _ := e.partner(t)
	cards, _ := e.endpoint(t, partnerID, emi.EventCardActivated)
	ev, err := e.hooks.SendTest(staffCtx(kernel.NewToken(), emi.RoleAdmin), partnerID, cards)
	if err != nil {
		t.Fatal(err)
	}
	got := e.deliveries(t, ev.ID)
	if len(got) != 1 || got[cards].ID == "" {
		t.Fatalf("test event delivered to %v, want only %s (not %s)", keys(got), cards, all)
	}
	if ev.Type != emi.EventWebhookTest || ev.Data["endpoint"] != cards {
		t.Fatalf("test event %+v", ev)
	}
	if n := e.auditCount(t, "webhook_endpoint.send_test", cards); n != 1 {
		t.Fatalf("%d audit rows for the test event, want 1", n)
	}
	d := e.waitAttempts(t, got[cards].ID, 1)
	if d.State != emi.DeliverySucceeded {
		t.Fatalf("test delivery %s", d.State)
	}
	t.Run("a failed test event gets one attempt and does not start a failure streak", func(t *testing.T) {
		e.recv.answerStatus(500, 0)
		defer e.recv.setAnswer(nil)
		ev, err := e.hooks.SendTest(sys(), partnerID, all)
		if err != nil {
			t.Fatal(err)
		}
		d := e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
		if d.State != emi.DeliveryFailed || e.jobState(t, d.ID) != string(emi.JobSucceeded) {
			t.Fatalf("failed test delivery: %s, job %s; want failed and no retry", d.State, e.jobState(t, d.ID))
		}
		if ep := e.endpointState(t, all); ep.FailingSince != nil {
			t.Fatalf("failing since %v after a test event", ep.FailingSince)
		}
	})
	t.Run("a test event may be sent to a disabled endpoint", func(t *testing.T) {
		if err := e.hooks.SetEndpointEnabled(sys(), partnerID, cards, false); err != nil {
			t.Fatal(err)
		}
		ev, err := e.hooks.SendTest(sys(), partnerID, cards)
		if err != nil {
			t.Fatal(err)
		}
		if d := e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1); d.State != emi.DeliverySucceeded {
			t.Fatalf("test delivery to a disabled endpoint: %s", d.State)
		}
	})
	t.Run("sending a test event needs the manage permission", func(t *testing.T) {
		if _, err := e.hooks.SendTest(staffCtx(kernel.NewToken(), emi.RoleAuditor), partnerID, all); !errors.Is(err, emi.ErrForbidden) {
			t.Fatalf("auditor sends a test event: %v", err)
		}
	})
}
