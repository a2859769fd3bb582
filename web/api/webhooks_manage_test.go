package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/testwait"
)

// pathReceiver records the path and body of every webhook it gets, and
// answers 500 while failing.
type pathReceiver struct {
	mu      sync.Mutex
	failing bool
	got     []string // "path body"
}

func (rc *pathReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.got = append(rc.got, r.URL.Path+" "+string(b))
	if rc.failing {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func (rc *pathReceiver) setFailing(f bool) {
	rc.mu.Lock()
	rc.failing = f
	rc.mu.Unlock()
}

// received returns the path each delivery of event came to, in order.
func (rc *pathReceiver) received(event string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, g := range rc.got {
		if path, body, _ := strings.Cut(g, " "); strings.Contains(body, `"id":"`+event+`"`) {
			out = append(out, path)
		}
	}
	return out
}

// waitReceived waits until event has arrived n times and returns the
// path of the last arrival.
func (rc *pathReceiver) waitReceived(t *testing.T, event string, n int) string {
	t.Helper()
	var path string
	testwait.Until(t, fmt.Sprintf("delivery %d of %s", n, event), func() bool {
		got := rc.received(event)
		if len(got) >= n {
			path = got[n-1]
		}
		return len(got) >= n
	})
	return path
}

// delivery is the state of the delivery of an event to an endpoint.
type deliveryRow struct {
	State     string     `db:"state"`
	Attempts  int        `db:"attempts"`
	LastError string     `db:"last_error"`
	Next      *time.Time `db:"next_attempt_at"`
}

// deliveryOf returns the delivery of event to endpoint; ok is false when
// there is none.
func deliveryOf(t *testing.T, env *apptest.Env, event, endpoint string) (deliveryRow, bool) {
	t.Helper()
	var ds []deliveryRow
	if err := env.App.DB.Select(&ds, `SELECT state, attempts, last_error, next_attempt_at FROM webhook_deliveries
		WHERE event_id = $1 AND endpoint_id = $2`, event, endpoint); err != nil {
		t.Fatal(err)
	}
	if len(ds) == 0 {
		return deliveryRow{}, false
	}
	return ds[0], true
}

// triggerEvent emits a sample event through sandbox_event_trigger and
// returns its id.
func triggerEvent(t *testing.T, env *apptest.Env, p *apptest.Partner, typ emi.EventType) string {
	t.Helper()
	r := call(t, env, p, http.MethodPost, "/v2/sandbox/events", "sandbox_event_trigger", map[string]any{"type": typ})
	apptest.Expect(t, "trigger "+string(typ), r, 0, http.StatusCreated)
	return r.Data["event"].(string)
}

// waitFailedAttempt waits until the delivery of event to endpoint has
// failed once and waits for its retry.
func waitFailedAttempt(t *testing.T, env *apptest.Env, event, endpoint string) {
	t.Helper()
	testwait.Until(t, "a failed attempt of "+event, func() bool {
		d, ok := deliveryOf(t, env, event, endpoint)
		return ok && d.Attempts >= 1 && d.State == string(emi.DeliveryPending) && d.Next != nil
	})
}

// auditActions returns the audit actions recorded on the endpoint, oldest
// first, with their changes.
func auditActions(t *testing.T, env *apptest.Env, endpoint string) map[string][]string {
	t.Helper()
	var rows []struct {
		Action  string `db:"action"`
		Changes string `db:"changes"`
	}
	if err := env.App.DB.Select(&rows, `SELECT action, changes::text AS changes FROM audit_log
		WHERE resource_type = 'webhook_endpoint' AND resource_token = $1 ORDER BY id`, endpoint); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range rows {
		out[r.Action] = append(out[r.Action], r.Changes)
	}
	return out
}

// TestPartnerUpdatesDisablesEnablesAndDeletesItsEndpoints: through the
// signed API a partner changes its endpoint's URL and filter (checked as
// create checks them, a field left out unchanged, each change audited),
// disables it (its retrying delivery is canceled, events emitted meanwhile
// get no delivery to it, a test event still reaches it), enables it
// (nothing missed is sent by itself; a canceled delivery can be replayed),
// and deletes it with DELETE (its retrying delivery is canceled, it leaves
// the list, a second delete is 15002). Endpoints answer token and the
// deprecated id with the same value.
func TestPartnerUpdatesDisablesEnablesAndDeletesItsEndpoints(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	rc := &pathReceiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Endpoint Keeper"})

	cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{
		"url": srv.URL + "/first", "description": "first receiver", "event_types": []string{"card.activated"}})
	apptest.Expect(t, "create", cr, 0, http.StatusCreated)
	id := cr.Data["token"].(string)
	if cr.Data["id"] != id {
		t.Fatalf("create: token %v and id %v differ", cr.Data["token"], cr.Data["id"])
	}
	update := func(body any) apptest.Response {
		return call(t, env, p, http.MethodPut, "/v2/webhooks/"+id, "webhook_endpoint_update", body)
	}
	listed := func() map[string]any {
		l := call(t, env, p, http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil)
		apptest.Expect(t, "list", l, 0, http.StatusOK)
		for _, it := range l.Data["items"].([]any) {
			if ep := it.(map[string]any); ep["token"] == id {
				if ep["id"] != id {
					t.Fatalf("list: token %v and id %v differ", ep["token"], ep["id"])
				}
				return ep
			}
		}
		return nil
	}

	// Refused updates change nothing, and report every problem at once,
	// with create's messages.
	bad := update(map[string]any{"url": "ftp://x", "description": strings.Repeat("d", 201), "event_types": []string{"card.activated", "webhook.test"}})
	apptest.Expect(t, "a bad update", bad, emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
	for _, f := range []string{"url", "description", "event_types[1]"} {
		apptest.ExpectField(t, "a bad update", bad, f)
	}
	badCreate := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "ftp://x"})
	urlProblem := func(r apptest.Response) string {
		for _, f := range r.Errors {
			if f.Field == "url" {
				return f.Message
			}
		}
		return ""
	}
	if m := urlProblem(bad); m == "" || m != urlProblem(badCreate) {
		t.Errorf("update and create word the url problem differently: %s / %s", bad, badCreate)
	}
	for _, body := range []map[string]any{{"url": nil}, {"url": ""}, {"secret": "whsec_x"}, {"enabled": false}, {"event_types": nil}} {
		apptest.Expect(t, fmt.Sprintf("update %v", body), update(body), emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
	}
	for _, u := range []string{"http://10.0.0.1/hooks", "http://example.com/hooks"} {
		r := update(map[string]any{"url": u})
		apptest.Expect(t, "update to "+u, r, emi.ErrAPIWebhookValidation.Code, http.StatusBadRequest)
		apptest.ExpectField(t, "update to "+u, r, "url")
	}
	if ep := listed(); ep["url"] != srv.URL+"/first" || ep["description"] != "first receiver" {
		t.Fatalf("refused updates changed the endpoint: %v", ep)
	}

	// A field left out keeps its value.
	up := update(map[string]any{"url": "  " + srv.URL + "/moved  "})
	apptest.Expect(t, "move", up, 0, http.StatusOK)
	if up.Data["url"] != srv.URL+"/moved" || up.Data["description"] != "first receiver" ||
		fmt.Sprint(up.Data["event_types"]) != "[card.activated]" || up.Data["token"] != id || up.Data["secret"] != nil {
		t.Fatalf("move: %s", up)
	}
	up = update(map[string]any{"event_types": []string{"card.status_changed", "card.status_changed"}, "description": "cards"})
	apptest.Expect(t, "filter", up, 0, http.StatusOK)
	if fmt.Sprint(up.Data["event_types"]) != "[card.status_changed]" || up.Data["description"] != "cards" || up.Data["url"] != srv.URL+"/moved" {
		t.Fatalf("filter: %s", up)
	}
	// The filter applies: card.activated is not sent any more,
	// card.status_changed is, to the new URL.
	skipped := triggerEvent(t, env, p, emi.EventCardActivated)
	sent := triggerEvent(t, env, p, emi.EventCardStatusChanged)
	if path := rc.waitReceived(t, sent, 1); path != "/moved" {
		t.Fatalf("after the move, an event went to %s", path)
	}
	if _, ok := deliveryOf(t, env, skipped, id); ok {
		t.Fatal("an event outside the new filter was addressed to the endpoint")
	}
	apptest.Expect(t, "every type again", update(map[string]any{"event_types": []string{}}), 0, http.StatusOK)
	same := update(map[string]any{})
	apptest.Expect(t, "an empty update", same, 0, http.StatusOK)
	if fmt.Sprint(same.Data["event_types"]) != "[]" {
		t.Fatalf("an empty update: %s", same)
	}
	audit := auditActions(t, env, id)
	if len(audit["webhook_endpoint.update"]) != 3 || !strings.Contains(audit["webhook_endpoint.update"][0], "/moved") {
		t.Fatalf("one audit row per update that changed something (3), got %q", audit["webhook_endpoint.update"])
	}

	// Disable while a delivery is retrying: it is canceled.
	rc.setFailing(true)
	retrying := triggerEvent(t, env, p, emi.EventAccountStatusChanged)
	waitFailedAttempt(t, env, retrying, id)
	dis := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/disable", "webhook_endpoint_disable", nil)
	apptest.Expect(t, "disable", dis, 0, http.StatusOK)
	if dis.Data["enabled"] != false || dis.Data["disabled_reason"] != "disabled by the partner through the API" {
		t.Fatalf("disable: %s", dis)
	}
	if d, _ := deliveryOf(t, env, retrying, id); d.State != string(emi.DeliveryCanceled) || d.Next != nil ||
		d.LastError != "endpoint disabled by the partner through the API" {
		t.Fatalf("the retrying delivery after disable: %+v", d)
	}
	rc.setFailing(false)
	missed := triggerEvent(t, env, p, emi.EventCardStatusChanged)
	if _, ok := deliveryOf(t, env, missed, id); ok {
		t.Fatal("an event emitted while the endpoint is disabled was addressed to it")
	}
	apptest.Expect(t, "disable again", call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/disable", "webhook_endpoint_disable", nil), 0, http.StatusOK)
	ts := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/test", "webhook_endpoint_test", nil)
	apptest.Expect(t, "a test event to the disabled endpoint", ts, 0, http.StatusAccepted)
	rc.waitReceived(t, ts.Data["event"].(string), 1)

	// Enable: nothing missed is sent by itself; the canceled delivery can
	// be replayed, the event emitted meanwhile was never addressed to it.
	en := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/enable", "webhook_endpoint_enable", map[string]any{})
	apptest.Expect(t, "enable", en, 0, http.StatusOK)
	if en.Data["enabled"] != true || en.Data["disabled_reason"] != "" {
		t.Fatalf("enable: %s", en)
	}
	after := triggerEvent(t, env, p, emi.EventCardStatusChanged)
	rc.waitReceived(t, after, 1)
	if d, _ := deliveryOf(t, env, retrying, id); d.State != string(emi.DeliveryCanceled) || len(rc.received(retrying)) != 1 {
		t.Fatalf("enabling sent a canceled delivery again: %+v, %d arrivals", d, len(rc.received(retrying)))
	}
	apptest.Expect(t, "replay of the canceled delivery", call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/replay",
		"webhook_delivery_replay", map[string]any{"event": retrying}), 0, http.StatusAccepted)
	rc.waitReceived(t, retrying, 2)
	apptest.Expect(t, "replay of an event emitted while disabled", call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/replay",
		"webhook_delivery_replay", map[string]any{"event": missed}), emi.ErrAPIWebhookDeliveryNotFound.Code, http.StatusNotFound)
	audit = auditActions(t, env, id)
	if len(audit["webhook_endpoint.disable"]) != 1 || !strings.Contains(audit["webhook_endpoint.disable"][0], `"canceled_deliveries": 1`) ||
		len(audit["webhook_endpoint.enable"]) != 1 {
		t.Fatalf("audit of disable and enable: %q", audit)
	}

	// DELETE while a delivery is retrying: it is canceled, so nothing is
	// retried for the days of the schedule.
	rc.setFailing(true)
	retrying = triggerEvent(t, env, p, emi.EventCardActivated)
	waitFailedAttempt(t, env, retrying, id)
	del := call(t, env, p, http.MethodDelete, "/v2/webhooks/"+id, "webhook_endpoint_delete", nil)
	apptest.Expect(t, "DELETE", del, 0, http.StatusOK)
	if del.Data["token"] != id || del.Data["id"] != id || del.Data["deleted"] != true {
		t.Fatalf("DELETE: %s", del)
	}
	if d, _ := deliveryOf(t, env, retrying, id); d.State != string(emi.DeliveryCanceled) || d.Next != nil || d.LastError != "endpoint deleted" {
		t.Fatalf("the retrying delivery after DELETE: %+v", d)
	}
	if listed() != nil {
		t.Fatal("a deleted endpoint is still listed")
	}
	for _, c := range []struct{ method, path, op string }{
		{http.MethodDelete, "", "webhook_endpoint_delete"}, {http.MethodPost, "/delete", "webhook_endpoint_delete"},
		{http.MethodPut, "", "webhook_endpoint_update"}, {http.MethodPost, "/enable", "webhook_endpoint_enable"},
	} {
		apptest.Expect(t, c.method+" "+c.path+" of a deleted endpoint", call(t, env, p, c.method, "/v2/webhooks/"+id+c.path, c.op, map[string]any{}),
			emi.ErrAPIWebhookEndpointNotFound.Code, http.StatusNotFound)
	}
	if a := auditActions(t, env, id)["webhook_endpoint.delete"]; len(a) != 1 || !strings.Contains(a[0], `"canceled_deliveries": 1`) {
		t.Fatalf("audit of the deletion: %q", a)
	}
}

// TestAnotherPartnersEndpointCannotBeChanged: every new write on another
// partner's endpoint answers exactly as on an endpoint that does not
// exist (404 / 15002, whatever the body, a bad one included), and the
// endpoint is left as it was (URL, filter, enabled, listed, no audit row).
func TestAnotherPartnersEndpointCannotBeChanged(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	owner := env.NewPartner(t, emi.PartnerCreate{Name: "Owner"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Intruder"})
	cr := call(t, env, owner, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "http://127.0.0.1:9999/owner"})
	apptest.Expect(t, "create", cr, 0, http.StatusCreated)
	id := cr.Data["token"].(string)
	before := call(t, env, owner, http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil)
	writes := []struct {
		method, path, op string
		body             any
	}{
		{http.MethodPut, "", "webhook_endpoint_update", map[string]any{"url": "http://127.0.0.1:9999/stolen"}},
		{http.MethodPut, "", "webhook_endpoint_update", map[string]any{"url": "ftp://bad"}},
		{http.MethodPut, "", "webhook_endpoint_update", map[string]any{"event_types": []string{}}},
		{http.MethodPost, "/disable", "webhook_endpoint_disable", nil},
		{http.MethodPost, "/enable", "webhook_endpoint_enable", nil},
		{http.MethodDelete, "", "webhook_endpoint_delete", nil},
		{http.MethodPost, "/delete", "webhook_endpoint_delete", nil},
	}
	for _, w := range writes {
		for _, target := range []string{id, "0190f5a0-8e3c-7b2a-9d4e-6f1a2b3c4d5e"} {
			r := call(t, env, other, w.method, "/v2/webhooks/"+target+w.path, w.op, w.body)
			apptest.Expect(t, fmt.Sprintf("%s %s on %s", w.method, w.path, target), r, emi.ErrAPIWebhookEndpointNotFound.Code, http.StatusNotFound)
		}
	}
	after := call(t, env, owner, http.MethodGet, "/v2/webhooks", "webhook_endpoints_list", nil)
	if !bytes.Equal(before.Raw, after.Raw) {
		t.Fatalf("another partner changed the endpoint:\n before %s\n after  %s", before.Raw, after.Raw)
	}
	if a := auditActions(t, env, id); len(a) != 1 || len(a["webhook_endpoint.create"]) != 1 {
		t.Fatalf("audit rows on the endpoint: %q", a)
	}
}

// TestEndpointWritesHonourIdempotencyKeys: disable, enable and the POST
// delete sent again with their Idempotency-Key answer the stored response
// byte for byte (a retried delete answers 200, not 404), and run once
// (one audit row each); the key with another operation's body is 10409.
func TestEndpointWritesHonourIdempotencyKeys(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Retrier"})
	cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": "http://127.0.0.1:9999/retried"})
	apptest.Expect(t, "create", cr, 0, http.StatusCreated)
	id := cr.Data["token"].(string)
	keyed := func(path, op, key string) apptest.Response {
		env.Clock.Advance(time.Second)
		return p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v2/webhooks/" + id + path, Operation: op,
			JSON: map[string]any{}, Header: map[string]string{"Idempotency-Key": key}})
	}
	for _, c := range []struct{ path, op, key, action string }{
		{"/disable", "webhook_endpoint_disable", "disable-1", "webhook_endpoint.disable"},
		{"/enable", "webhook_endpoint_enable", "enable-1", "webhook_endpoint.enable"},
		{"/delete", "webhook_endpoint_delete", "delete-1", "webhook_endpoint.delete"},
	} {
		first := keyed(c.path, c.op, c.key)
		apptest.Expect(t, c.op, first, 0, http.StatusOK)
		again := keyed(c.path, c.op, c.key)
		if again.Status != first.Status || !bytes.Equal(again.Raw, first.Raw) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s retried with its key:\n first %s\n again %s", c.op, first, again)
		}
		if n := len(auditActions(t, env, id)[c.action]); n != 1 {
			t.Fatalf("%s retried with its key ran %d times", c.op, n)
		}
	}
	// The key belongs to its first request: the same key on another path
	// is a conflict, not a second run.
	apptest.Expect(t, "a key reused on another operation", keyed("/enable", "webhook_endpoint_enable", "disable-1"),
		emi.ErrIdempotencyConflict.Code, http.StatusConflict)
	var stored map[string]any
	if err := json.Unmarshal(keyed("/delete", "webhook_endpoint_delete", "delete-1").Raw, &stored); err != nil || stored["code"] != float64(0) {
		t.Fatalf("the stored delete answer: %v %v", stored, err)
	}
}

// TestWebhookTestIsWordedForItsChannel: a webhook.test asked for through
// the API says so (source api, the key's id, not the back office), one
// asked for by staff in the back office says that.
func TestWebhookTestIsWordedForItsChannel(t *testing.T) {
	t.Parallel()
	env := onboardingEnv(t)
	env.SeedStaff(t)
	rc := &pathReceiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Tester"})
	cr := call(t, env, p, http.MethodPost, "/v2/webhooks", "webhook_endpoint_create", map[string]any{"url": srv.URL + "/t"})
	apptest.Expect(t, "create", cr, 0, http.StatusCreated)
	id := cr.Data["token"].(string)
	ev := call(t, env, p, http.MethodPost, "/v2/webhooks/"+id+"/test", "webhook_endpoint_test", nil).Data["event"].(string)
	rc.waitReceived(t, ev, 1)
	data := eventData(t, rc, ev)
	if data["source"] != "api" || strings.Contains(fmt.Sprint(data["message"]), "back office") ||
		!strings.Contains(fmt.Sprint(data["message"]), "API") || !strings.Contains(fmt.Sprint(data["message"]), p.KeyID) {
		t.Fatalf("a test sent through the API: %v", data)
	}

	admin := env.NewBrowser()
	admin.SignIn(t, apptest.AdminEmail)
	rc.mu.Lock()
	before := len(rc.got)
	rc.mu.Unlock()
	pg := admin.Post(t, "/backoffice/partners/"+p.ID+"/webhooks/"+id+"/test", nil)
	if pg.Status >= 400 {
		t.Fatalf("back office test: HTTP %d", pg.Status)
	}
	testwait.Until(t, "the back office's test event", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.got) > before
	})
	rc.mu.Lock()
	_, body, _ := strings.Cut(rc.got[before], " ")
	rc.mu.Unlock()
	var staff struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &staff); err != nil {
		t.Fatal(err)
	}
	if staff.Data["source"] != "back_office" || !strings.Contains(fmt.Sprint(staff.Data["message"]), "back office") {
		t.Fatalf("a test sent from the back office: %v", staff.Data)
	}
}

// eventData returns the data of the first arrival of event.
func eventData(t *testing.T, rc *pathReceiver, event string) map[string]any {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, g := range rc.got {
		if _, body, _ := strings.Cut(g, " "); strings.Contains(body, `"id":"`+event+`"`) {
			var ev struct {
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal([]byte(body), &ev); err != nil {
				t.Fatal(err)
			}
			return ev.Data
		}
	}
	t.Fatalf("event %s never arrived", event)
	return nil
}
