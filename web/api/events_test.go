package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
	"emi/internal/testwait"
)

// emitEvent emits one event of the partner in a transaction of its own, as
// a business change would.
func emitEvent(t *testing.T, env *apptest.Env, partnerID string, typ emi.EventType, fields map[string]any) emi.Event {
	t.Helper()
	var ev emi.Event
	ctx := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	err := env.App.DB.InTx(ctx, func(ctx context.Context) error {
		var err error
		ev, err = env.App.Events.Emit(ctx, partnerID, typ, typ.Resource(), kernel.NewToken(), fields)
		return err
	})
	if err != nil {
		t.Fatalf("emit %s: %v", typ, err)
	}
	return ev
}

// listEvents calls events_list. The clock moves a second first: a GET's
// signature does not cover the query, so two lists signed in one second
// would be replays.
func listEvents(t *testing.T, env *apptest.Env, p *apptest.Partner, path string) apptest.Response {
	t.Helper()
	env.Clock.Advance(time.Second)
	return p.Do(t, apptest.Request{Method: http.MethodGet, Path: path, Operation: "events_list"})
}

// itemIDs returns the ids of a list's items, and their raw bytes.
func itemIDs(t *testing.T, r apptest.Response) ([]string, []json.RawMessage) {
	t.Helper()
	var env struct {
		Data struct {
			Items []json.RawMessage `json:"items"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Raw, &env); err != nil {
		t.Fatalf("%s: %v", r, err)
	}
	ids := make([]string, len(env.Data.Items))
	for i, it := range env.Data.Items {
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &ev)
		ids[i] = ev.ID
	}
	return ids, env.Data.Items
}

func expectIDs(t *testing.T, what string, r apptest.Response, total int, want ...emi.Event) {
	t.Helper()
	apptest.Expect(t, what, r, 0, 200)
	got, _ := itemIDs(t, r)
	ids := make([]string, len(want))
	for i, e := range want {
		ids[i] = e.ID
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") || r.Data["total"] != float64(total) {
		t.Fatalf("%s: items %v total %v, want %v total %d", what, got, r.Data["total"], ids, total)
	}
}

func TestEventsList(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	a := env.NewPartner(t, emi.PartnerCreate{Name: "A"})
	b := env.NewPartner(t, emi.PartnerCreate{Name: "B"})
	var evs []emi.Event
	for i, typ := range []emi.EventType{emi.EventCardActivated, emi.EventAccountStatusChanged, emi.EventCardActivated,
		emi.EventApplicationApproved, emi.EventCardActivated} {
		fields := map[string]any{"n": i}
		if typ == emi.EventApplicationApproved {
			fields = map[string]any{"status": "approved", "merchant": kernel.NewToken(), "mid": "M1", "tid": "T1"}
		}
		evs = append(evs, emitEvent(t, env, a.ID, typ, fields))
		env.Clock.Advance(time.Second)
	}
	other := emitEvent(t, env, b.ID, emi.EventCardActivated, nil)

	t.Run("the newest events come first, page by page", func(t *testing.T) {
		expectIDs(t, "page 1", listEvents(t, env, a, "/v2/events/1/2"), 5, evs[4], evs[3])
		expectIDs(t, "page 2", listEvents(t, env, a, "/v2/events/2/2"), 5, evs[2], evs[1])
		expectIDs(t, "page 3", listEvents(t, env, a, "/v2/events/3/2"), 5, evs[0])
		r := listEvents(t, env, a, "/v2/events/4/2")
		expectIDs(t, "past the end", r, 5)
		if !strings.Contains(string(r.Raw), `"items":[]`) || r.Data["page"] != float64(4) || r.Data["limit"] != float64(2) {
			t.Fatalf("past the end: %s", r.Raw)
		}
	})
	t.Run("each item is the exact body the webhooks carry", func(t *testing.T) {
		_, items := itemIDs(t, listEvents(t, env, a, "/v2/events/1/100"))
		for i, it := range items {
			want := evs[len(evs)-1-i]
			var body []byte
			if err := env.App.DB.Get(&body, `SELECT body FROM events WHERE id = $1`, want.ID); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(it, body) {
				t.Fatalf("item %d is\n%s\nthe webhook body is\n%s", i, it, body)
			}
		}
	})
	t.Run("the type filter keeps one type", func(t *testing.T) {
		expectIDs(t, "card.activated", listEvents(t, env, a, "/v2/events/1/10?type=card.activated"), 3, evs[4], evs[2], evs[0])
		expectIDs(t, "user.kyc_updated", listEvents(t, env, a, "/v2/events/1/10?type=user.kyc_updated"), 0)
	})
	t.Run("after pages forward, oldest first", func(t *testing.T) {
		expectIDs(t, "after the first", listEvents(t, env, a, "/v2/events/1/2?after="+evs[0].ID), 4, evs[1], evs[2])
		expectIDs(t, "after the third", listEvents(t, env, a, "/v2/events/1/2?after="+evs[2].ID), 2, evs[3], evs[4])
		expectIDs(t, "page 2 after the first", listEvents(t, env, a, "/v2/events/2/2?after="+evs[0].ID), 4, evs[3], evs[4])
		expectIDs(t, "after the last", listEvents(t, env, a, "/v2/events/1/2?after="+evs[4].ID), 0)
		expectIDs(t, "after with a type", listEvents(t, env, a, "/v2/events/1/10?type=card.activated&after="+evs[0].ID), 2, evs[2], evs[4])
	})
	t.Run("a partner sees only its own events", func(t *testing.T) {
		expectIDs(t, "partner B", listEvents(t, env, b, "/v2/events/1/100"), 1, other)
		r := listEvents(t, env, b, "/v2/events/1/100?after="+evs[0].ID)
		apptest.Expect(t, "B pages after A's event", r, 11001, 400)
		apptest.ExpectField(t, "B pages after A's event", r, "after")
	})
	invalid := []struct {
		name, path string
		fields     []string
	}{
		{"page 0 is refused", "/v2/events/0/10", []string{"page"}},
		{"a page that is not a number is refused", "/v2/events/first/10", []string{"page"}},
		{"limit 0 is refused", "/v2/events/1/0", []string{"limit"}},
		{"limit 101 is refused", "/v2/events/1/101", []string{"limit"}},
		{"an unknown type is refused", "/v2/events/1/10?type=card.exploded", []string{"type"}},
		{"an after that is not an event id is refused", "/v2/events/1/10?after=nope", []string{"after"}},
		{"an after no event has is refused", "/v2/events/1/10?after=" + kernel.NewToken(), []string{"after"}},
		{"an unknown filter is refused", "/v2/events/1/10?typ=card.activated", []string{"typ"}},
		{"a filter given twice is refused", "/v2/events/1/10?type=card.activated&type=card.converted", []string{"type"}},
		{"every problem is reported", "/v2/events/0/1000?type=x", []string{"page", "limit", "type"}},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			r := listEvents(t, env, a, tc.path)
			apptest.Expect(t, tc.path, r, 11001, 400)
			if r.Message != emi.ErrValidation.Key || len(r.Errors) != len(tc.fields) {
				t.Fatalf("%s: %s", tc.path, r)
			}
			for _, f := range tc.fields {
				apptest.ExpectField(t, tc.path, r, f)
			}
		})
	}
	t.Run("an unsigned request is refused", func(t *testing.T) {
		env.Clock.Advance(time.Second)
		r := a.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/events/1/10", Operation: "events_list", NoAuth: true})
		apptest.Expect(t, "no signature", r, 10001, 401)
		env.Clock.Advance(time.Second)
		r = a.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/events/1/10", Operation: "partner_details"})
		apptest.Expect(t, "signed for another operation", r, 10001, 401)
	})
}

// The whole path: a partner created with --webhook-url, an event emitted
// with a change, the app's own worker pool and HTTP client, a receiver that
// verifies every delivery with the Standard Webhooks reference library, and
// events_list returning the bytes the receiver got.
func TestWebhooksAreDeliveredSignedEndToEnd(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got [][]byte
	var verifyErr error
	var wh *standardwebhooks.Webhook
	arrived := make(chan struct{}, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if err := wh.Verify(body, r.Header); err != nil && verifyErr == nil {
			verifyErr = err
		}
		if r.Header.Get("webhook-id") == "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			verifyErr = io.ErrUnexpectedEOF
		}
		got = append(got, body)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		arrived <- struct{}{}
	}))
	t.Cleanup(recv.Close)

	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Hooked", WebhookURL: recv.URL + "/emi"})
	var err error
	if wh, err = standardwebhooks.NewWebhook(p.Webhook); err != nil {
		t.Fatalf("the partner's webhook secret %q: %v", p.Webhook, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	pool := env.App.Pool()
	go func() { done <- pool.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	ev := emitEvent(t, env, p.ID, emi.EventCardActivated, nil)
	pool.Notify()
	select {
	case <-arrived:
	case <-time.After(testwait.Timeout):
		t.Fatal("no webhook arrived")
	}
	mu.Lock()
	defer mu.Unlock()
	if verifyErr != nil {
		t.Fatalf("the reference verifier refuses the delivery: %v", verifyErr)
	}
	_, items := itemIDs(t, listEvents(t, env, p, "/v2/events/1/10"))
	if len(got) != 1 || len(items) != 1 || !bytes.Equal(got[0], items[0]) {
		t.Fatalf("received %q, events_list has %q", got, items)
	}
	if !strings.Contains(string(got[0]), ev.ID) {
		t.Fatalf("received %s, want event %s", got[0], ev.ID)
	}
}
