package servicetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/service/kernel"
	partnerssvc "emi/internal/service/partners"
)

// Rotations of one endpoint's signing secret that race: a partner's
// integration retrying its rotate call through the API while an
// administrator presses "Rotate" in the back office (or a script firing the
// call several times at once). The endpoint row is locked for the whole
// rotation (EndpointForUpdate inside the transaction), so the rotations run
// one after the other. Whatever the order, the state must stay the one the
// rules of a second rotation inside the overlap give:
//
//   - the previous secret is the original one, the one receivers were using
//     before the race, still signing until the first rotation's deadline;
//   - the current secret is one of the secrets a caller was told, never one
//     nobody saw;
//   - every other secret handed out was superseded, and the audit trail
//     shows it: one rotation that started the overlap, and one row marked
//     during_overlap and replaced_current for each rotation that replaced
//     the secret just shown, each with its actor (the staff user or the
//     partner's key);
//   - a delivery made after the race is signed with exactly the final
//     secret and the original one.
//
// Without the lock (a plain read, then the write) two rotations both read
// "no overlap yet" and both made the secret they read the previous one: a
// secret nobody kept could become the previous one and the original was
// lost (with FOR UPDATE taken out of EndpointForUpdate this test fails). The lock was already there when this test was
// written and the state was right, but the audit trail was not: the marker
// was stored under "replaced_unconfirmed_secret", and the auditor redacts
// the value of every key naming a secret, so each row said "[redacted]"
// instead of true. This test failed there; the marker is now
// during_overlap and replaced_current.
func TestConcurrentWebhookSecretRotationsStayConsistent(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	partnerID, epID, original := e.partner(t)
	const keyID = "key-race"
	apiCtx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: keyID, PartnerID: partnerID})
	staffID := kernel.NewToken()
	admin := staffCtx(staffID, emi.RoleAdmin)

	const n = 8 // half through the partner API, half by staff
	type answer struct {
		secret string
		until  time.Time
		err    error
	}
	answers := make([]answer, n)
	atOnce(n, func(i int) {
		a := &answers[i]
		if i%2 == 0 {
			a.secret, a.until, a.err = e.hooks.PartnerRotateEndpointSecret(apiCtx, epID)
		} else {
			a.secret, a.until, a.err = e.hooks.RotateEndpointSecret(admin, partnerID, epID)
		}
	})

	deadline := e.clock.Now().Add(partnerssvc.DefaultWebhookSecretOverlap)
	told := map[string]bool{}
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("rotation %d: %v", i, a.err)
		}
		if !a.until.Equal(deadline) {
			t.Errorf("rotation %d: previous secret valid until %v, want the first rotation's %v", i, a.until, deadline)
		}
		if told[a.secret] {
			t.Fatalf("two rotations answered the same secret")
		}
		told[a.secret] = true
	}

	// The stored state: current = one secret a caller was told, previous =
	// the original, until the first rotation's deadline.
	stored, err := e.store.Endpoint(context.Background(), epID)
	if err != nil {
		t.Fatal(err)
	}
	open := func(enc []byte) []byte {
		t.Helper()
		raw, err := e.keys.Open(enc, partnerssvc.WebhookSecretContext(epID))
		if err != nil {
			t.Fatalf("open a stored secret: %v", err)
		}
		return raw
	}
	if stored.PreviousSecretEnc == nil || !bytes.Equal(open(stored.PreviousSecretEnc), rawSecret(t, original)) {
		t.Fatal("after the race the previous secret is not the original one the receivers use")
	}
	if stored.PreviousValidUntil == nil || !stored.PreviousValidUntil.Equal(deadline) {
		t.Fatalf("previous secret valid until %v, want %v", stored.PreviousValidUntil, deadline)
	}
	current := open(stored.SecretEnc)
	final := ""
	for s := range told {
		if bytes.Equal(rawSecret(t, s), current) {
			final = s
		}
	}
	if final == "" {
		t.Fatal("the current secret is none of the secrets the callers were told")
	}

	// The audit trail: n rotations, the first started the overlap, every
	// other one says it replaced the secret shown before it; the actors
	// are the callers.
	var rows []struct {
		ActorType string          `db:"actor_type"`
		ActorID   string          `db:"actor_id"`
		Changes   json.RawMessage `db:"changes"`
	}
	if err := e.db.SelectContext(context.Background(), &rows, `SELECT actor_type, actor_id, changes FROM audit_log
		WHERE action = 'webhook_endpoint.rotate_secret' AND resource_token = $1 ORDER BY id`, epID); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d audit rows for %d rotations", len(rows), n)
	}
	byActor := map[string]int{}
	for i, r := range rows {
		var c struct {
			Overlap  bool `json:"during_overlap"`
			Replaced bool `json:"replaced_current"`
		}
		if err := json.Unmarshal(r.Changes, &c); err != nil {
			t.Fatalf("audit row %d: %s: %v", i, r.Changes, err)
		}
		if c.Replaced != (i > 0) || c.Overlap != (i > 0) {
			t.Errorf("audit row %d: %s; want only the first rotation to start the overlap and every later one to say it replaced the current secret", i, r.Changes)
		}
		byActor[r.ActorType+":"+r.ActorID]++
	}
	if byActor["system:"+keyID] != n/2 || byActor["staff:"+staffID] != n/2 {
		t.Fatalf("audit actors %v; want %d rows by the partner's key and %d by the staff user", byActor, n/2, n/2)
	}

	// What a receiver gets now: the final secret and the original one,
	// nothing else.
	ev := e.emit(t, partnerID, emi.EventCardActivated, kernel.NewToken(), nil)
	e.waitAttempts(t, e.delivery(t, ev.ID).ID, 1)
	msgs := e.recv.messages()
	got := msgs[len(msgs)-1].Msg.Secrets
	if len(got) != 2 || !bytes.Equal(got[0], rawSecret(t, final)) || !bytes.Equal(got[1], rawSecret(t, original)) {
		t.Fatal("after the race a message is not signed with exactly the final and the original secret")
	}
}

// The same race on a partner's API key: N rotations at once without the
// overlap confirmation. The key row is locked (PartnerKeyForUpdate), so
// exactly one rotation wins and every other one is refused with
// emi.ErrRotationInOverlap and changes nothing; the original secret stays
// the previous one. A rotation confirmed during the overlap is audited
// with markers an auditor can read: the old code stored
// "current_secret": "replaced at once", which the auditor's redaction
// turned into "[redacted]"; this test failed there.
func TestConcurrentAPIKeyRotationsOneWins(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	creds, err := e.partners.Create(sys(), emi.PartnerCreate{Name: "Partner " + kernel.NewToken()[24:]})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	secrets := make([]string, n)
	errs := make([]error, n)
	atOnce(n, func(i int) {
		secrets[i], errs[i] = e.partners.RotateSecret(staffCtx(kernel.NewToken(), emi.RoleAdmin), creds.KeyID, false)
	})
	won := ""
	for i, err := range errs {
		switch {
		case err == nil && won == "":
			won = secrets[i]
		case err == nil:
			t.Fatal("two unconfirmed rotations inside one overlap both succeeded")
		case !errors.Is(err, emi.ErrRotationInOverlap):
			t.Fatalf("rotation %d: %v, want emi.ErrRotationInOverlap", i, err)
		}
	}
	if won == "" {
		t.Fatal("no rotation succeeded")
	}
	if n := e.auditCount(t, "partner_key.rotate_secret", creds.KeyID); n != 1 {
		t.Fatalf("%d audit rows, want the winner's only", n)
	}

	// A confirmed rotation during the overlap: audited readably.
	if _, err := e.partners.RotateSecret(sys(), creds.KeyID, true); err != nil {
		t.Fatal(err)
	}
	var changes json.RawMessage
	if err := e.db.GetContext(context.Background(), &changes, `SELECT changes FROM audit_log
		WHERE action = 'partner_key.rotate_secret' AND resource_token = $1 ORDER BY id DESC LIMIT 1`, creds.KeyID); err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(changes, &c); err != nil {
		t.Fatal(err)
	}
	if c["during_overlap"] != true || c["replaced_current"] != true || bytes.Contains(changes, []byte("redacted")) {
		t.Fatalf("audit changes %s; want during_overlap and replaced_current, nothing redacted", changes)
	}
}

// atOnce runs f(0) … f(n-1) in n goroutines released together, and waits
// for all of them.
func atOnce(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}
