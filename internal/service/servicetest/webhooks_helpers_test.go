package servicetest_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/seal"
	"emi/internal/service/kernel"
	partnerssvc "emi/internal/service/partners"
	"emi/internal/service/servicetest"
	"emi/internal/testwait"
	"emi/internal/validate"
	"emi/internal/webhook"
	"emi/internal/worker"
)

// received is one message as a fake receiver got it.
type received struct {
	Msg        emi.WebhookMessage
	Start, End time.Time // real time, for the overlap checks
}

// fakeReceiver is the deliverer of the tests: it records every message and
// answers what answer says (200 by default), without any network.
type fakeReceiver struct {
	mu     sync.Mutex
	got    []received
	answer func(msg emi.WebhookMessage) emi.WebhookResult
	hold   time.Duration // how long each attempt takes (real time)
}

func (r *fakeReceiver) Deliver(ctx context.Context, msg emi.WebhookMessage) emi.WebhookResult {
	start := time.Now()
	if r.hold > 0 {
		time.Sleep(r.hold)
	}
	r.mu.Lock()
	answer := r.answer
	r.mu.Unlock()
	res := emi.WebhookResult{Status: 200, Latency: 3 * time.Millisecond, Body: []byte(`{"ok":true}`)}
	if answer != nil {
		res = answer(msg)
	}
	r.mu.Lock()
	r.got = append(r.got, received{Msg: msg, Start: start, End: time.Now()})
	r.mu.Unlock()
	return res
}

// setAnswer changes the answer of the next attempts.
func (r *fakeReceiver) setAnswer(f func(msg emi.WebhookMessage) emi.WebhookResult) {
	r.mu.Lock()
	r.answer = f
	r.mu.Unlock()
}

// answerStatus makes every attempt get status (with an optional Retry-After).
func (r *fakeReceiver) answerStatus(status int, retryAfter time.Duration) {
	r.setAnswer(func(emi.WebhookMessage) emi.WebhookResult {
		return emi.WebhookResult{Status: status, Latency: 7 * time.Millisecond, Body: []byte("status " + strconv.Itoa(status)), RetryAfter: retryAfter}
	})
}

// messages returns a copy of what was received.
func (r *fakeReceiver) messages() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// count returns how many messages carried the event id.
func (r *fakeReceiver) count(eventID string) int {
	n := 0
	for _, m := range r.messages() {
		if m.Msg.ID == eventID {
			n++
		}
	}
	return n
}

// fakeChecker refuses URLs containing "blocked", like the SSRF guard would.
type fakeChecker struct{}

func (fakeChecker) CheckURL(_ context.Context, u string) error {
	if strings.Contains(u, "blocked") {
		return errors.New("blocked address: 10.0.0.1 is a private address; webhooks are delivered only to public internet addresses")
	}
	return nil
}

// noJitter makes the retry schedule exact: every delay is the schedule's.
func noJitter() float64 { return 0.5 }

// testRetryPolicy is the production policy (webhook.DelayAfter) without
// jitter.
func testRetryPolicy(res emi.WebhookResult, failed int, elapsed time.Duration) (time.Duration, bool) {
	return webhook.DelayAfter(res, failed, elapsed, noJitter)
}

// hookEnv is the webhook services on a fresh database with a fake clock and
// a fake receiver.
type hookEnv struct {
	db       *postgres.DB
	store    *postgres.WebhookStore
	jobs     *postgres.Jobs
	keys     *seal.Keyring
	audit    *kernel.Auditor
	events   *kernel.Events
	hooks    *partnerssvc.Webhooks
	partners *partnerssvc.Partners
	clock    *fakeClock
	recv     *fakeReceiver
	pool     *worker.Pool
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	db := pgtest.DB(t)
	key := make([]byte, seal.MasterKeySize)
	_, _ = rand.Read(key)
	keys, err := seal.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	e := &hookEnv{db: db, store: postgres.NewWebhookStore(db), jobs: postgres.NewJobs(db), keys: keys,
		audit: kernel.NewAuditor(postgres.NewAuditStore(db)),
		clock: servicetest.NewFakeClock(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)), recv: &fakeReceiver{}}
	e.events = kernel.NewEvents(kernel.EventsDeps{Tx: db, Store: e.store, Jobs: e.jobs, Now: e.clock.Now})
	e.hooks = e.newWebhooks(e.recv, e.clock.Now)
	e.partners = partnerssvc.NewPartners(partnerssvc.PartnersDeps{Tx: db, Store: postgres.NewPartnerStore(db), Sealer: keys, Audit: e.audit, Validate: validate.New(), Config: partnerssvc.PartnersConfig{SecretOverlap: time.Hour, Endpoints: e.hooks}, Now: e.clock.Now})
	return e
}

// newWebhooks builds another webhooks service on the same database, as
// another emi process would have.
func (e *hookEnv) newWebhooks(d partnerssvc.WebhookDeliverer, now kernel.Clock) *partnerssvc.Webhooks {
	return partnerssvc.NewWebhooks(partnerssvc.WebhooksDeps{Tx: e.db, Store: e.store, Events: e.events, Jobs: e.jobs, Sealer: e.keys, Audit: e.audit, Deliverer: d, URLs: fakeChecker{}, Retry: testRetryPolicy, Config: partnerssvc.WebhooksConfig{}, Now: now})
}

// startPool runs a worker pool with the delivery handler of hooks until the
// test ends, and returns it.
func (e *hookEnv) startPool(t *testing.T, id string, hooks *partnerssvc.Webhooks, lease time.Duration) *worker.Pool {
	t.Helper()
	p := worker.New(e.jobs, worker.Config{ID: id, Concurrency: 4, PollInterval: 10 * time.Millisecond, Lease: lease,
		Retention: -1, ShutdownTimeout: 5 * time.Second}, nil)
	p.Handle(kernel.JobWebhookDeliver, hooks.Deliver)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pool %s: %v", id, err)
		}
	})
	return p
}

// run starts the env's pool on first use.
func (e *hookEnv) run(t *testing.T) {
	t.Helper()
	if e.pool == nil {
		e.pool = e.startPool(t, "pool-a", e.hooks, 30*time.Second)
	}
	e.pool.Notify()
}

// partner creates a partner through Partners.Create with a webhook URL, as
// `emi partner create --webhook-url` does, and returns its id, the id of
// that endpoint and its secret. The name ends with the token's random
// part: its first characters are the time (UUIDv7), alike for partners
// made in the same minute, and names are unique.
func (e *hookEnv) partner(t *testing.T) (partnerID, endpointID, whsec string) {
	t.Helper()
	creds, err := e.partners.Create(sys(), emi.PartnerCreate{Name: "Partner " + kernel.NewToken()[24:], WebhookURL: "http://127.0.0.1:9/hooks"})
	if err != nil {
		t.Fatalf("create partner: %v", err)
	}
	eps, err := e.hooks.Endpoints(sys(), creds.Partner.ID)
	if err != nil || len(eps) != 1 {
		t.Fatalf("endpoints of a new partner: %v, %v; want the one of --webhook-url", eps, err)
	}
	return creds.Partner.ID, eps[0].ID, creds.WebhookSecret
}

// endpoint adds an endpoint to the partner and returns its id and secret.
// Each is on a host of its own (a partner may have only a few on one).
func (e *hookEnv) endpoint(t *testing.T, partnerID string, types ...emi.EventType) (string, string) {
	t.Helper()
	ep, secret, err := e.hooks.AddEndpoint(sys(), partnerID, "https://h"+kernel.NewToken()[24:]+".example.com/hooks", "", types)
	if err != nil {
		t.Fatalf("add endpoint: %v", err)
	}
	return ep.ID, secret
}

// emit emits one event in a transaction of its own.
func (e *hookEnv) emit(t *testing.T, partnerID string, typ emi.EventType, token string, fields map[string]any) emi.Event {
	t.Helper()
	var ev emi.Event
	err := e.db.InTx(context.Background(), func(ctx context.Context) error {
		var err error
		ev, err = e.events.Emit(ctx, partnerID, typ, typ.Resource(), token, fields)
		return err
	})
	if err != nil {
		t.Fatalf("emit %s: %v", typ, err)
	}
	return ev
}

// deliveries returns the deliveries of an event, by endpoint id.
func (e *hookEnv) deliveries(t *testing.T, eventID string) map[string]emi.WebhookDelivery {
	t.Helper()
	var ids []string
	if err := e.db.SelectContext(context.Background(), &ids, `SELECT id FROM webhook_deliveries WHERE event_id = $1`, eventID); err != nil {
		t.Fatal(err)
	}
	out := map[string]emi.WebhookDelivery{}
	for _, id := range ids {
		d, err := e.hooks.Delivery(sys(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[d.EndpointID] = d
	}
	return out
}

// delivery returns the one delivery of an event.
func (e *hookEnv) delivery(t *testing.T, eventID string) emi.WebhookDelivery {
	t.Helper()
	ds := e.deliveries(t, eventID)
	if len(ds) != 1 {
		t.Fatalf("event %s has %d deliveries, want 1", eventID, len(ds))
	}
	for _, d := range ds {
		return d
	}
	panic("unreachable")
}

// waitAttempts runs the pool until the delivery has n attempts and no
// running job, and returns it.
func (e *hookEnv) waitAttempts(t *testing.T, deliveryID string, n int) emi.WebhookDelivery {
	t.Helper()
	e.run(t)
	var d emi.WebhookDelivery
	testwait.Until(t, "attempt "+strconv.Itoa(n)+" of delivery "+deliveryID, func() bool {
		var err error
		if d, err = e.hooks.Delivery(sys(), deliveryID); err != nil {
			t.Fatal(err)
		}
		return d.Attempts >= n && e.jobState(t, deliveryID) != string(emi.JobRunning)
	})
	if d.Attempts != n {
		t.Fatalf("delivery %s: %d attempts, want %d", deliveryID, d.Attempts, n)
	}
	return d
}

// jobState returns the state of the delivery's job.
func (e *hookEnv) jobState(t *testing.T, deliveryID string) string {
	t.Helper()
	var st string
	err := e.db.GetContext(context.Background(), &st, `SELECT state FROM jobs WHERE unique_key = $1 ORDER BY id DESC LIMIT 1`,
		kernel.JobWebhookDeliver+":"+deliveryID)
	if err != nil {
		t.Fatalf("job of delivery %s: %v", deliveryID, err)
	}
	return st
}

// jobRunIn returns in how many seconds (by the database clock) the
// delivery's job is due.
func (e *hookEnv) jobRunIn(t *testing.T, deliveryID string) float64 {
	t.Helper()
	var s float64
	err := e.db.GetContext(context.Background(), &s, `
		SELECT extract(epoch FROM run_at - now())::float8 FROM jobs
		WHERE unique_key = $1 AND state = 'available'`, kernel.JobWebhookDeliver+":"+deliveryID)
	if err != nil {
		t.Fatalf("waiting job of delivery %s: %v", deliveryID, err)
	}
	return s
}

// dueNow makes the delivery's waiting job due at once: the job queue runs on
// the database clock, which the tests cannot move.
func (e *hookEnv) dueNow(t *testing.T, deliveryID string) {
	t.Helper()
	if _, err := e.db.ExecContext(context.Background(), `UPDATE jobs SET run_at = now() WHERE unique_key = $1 AND state = 'available'`,
		kernel.JobWebhookDeliver+":"+deliveryID); err != nil {
		t.Fatal(err)
	}
}

// endpointState reads an endpoint as the service shows it.
func (e *hookEnv) endpointState(t *testing.T, id string) emi.WebhookEndpoint {
	t.Helper()
	ep, err := e.hooks.Endpoint(sys(), id)
	if err != nil {
		t.Fatalf("endpoint %s: %v", id, err)
	}
	return ep
}

// auditCount counts audit rows with the action and resource token.
func (e *hookEnv) auditCount(t *testing.T, action, token string) int {
	t.Helper()
	var n int
	if err := e.db.GetContext(context.Background(), &n, `SELECT count(*) FROM audit_log WHERE action = $1 AND resource_token = $2`, action, token); err != nil {
		t.Fatal(err)
	}
	return n
}

// staffCtx is a context of a staff user with the roles.
func staffCtx(id string, roles ...emi.Role) context.Context {
	rs := make([]string, len(roles))
	for i, r := range roles {
		rs[i] = string(r)
	}
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: id, StaffRoles: rs})
}

// rawSecret decodes a whsec_ secret.
func rawSecret(t *testing.T, whsec string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(whsec, "whsec_"))
	if err != nil || len(b) != 32 || !strings.HasPrefix(whsec, "whsec_") {
		t.Fatalf("secret %q is not whsec_ + base64 of 32 bytes", whsec)
	}
	return b
}
