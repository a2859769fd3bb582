package ops_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/app"
	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/postgres/pgtest"
	"emi/internal/seal"
	cardssvc "emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/ops"
	"emi/internal/service/servicetest"
)

// notSealed are the bytea columns that hold no sealed value, with why.
// Every other bytea column must be listed by service.SealedTables.
var notSealed = map[string]string{
	"api_signatures.hash":              "SHA-256 of a request signature (replay guard)",
	"idempotency_keys.fingerprint":     "SHA-256 of a request",
	"idempotency_keys.body":            "legacy clear answer stored before migration 00054 (pruned after 24 h; new answers are sealed in body_enc)",
	"revoked_sessions.token_hash":      "SHA-256 of a signed-out session token",
	"staff_recovery_codes.code_hash":   "hash of a recovery code",
	"sessions.token_hash":              "SHA-256 of a session token",
	"sessions.data":                    "scs session data",
	"events.body":                      "event body as sent (P1 searches it)",
	"documents.sha256":                 "digest of the document content",
	"monitoring_case_documents.sha256": "digest of the document content",
	"aml_checks.person_key":            "digest of a normalised name and birthday",
	"aml_false_positives.person_key":   "digest of a normalised name and birthday",
	"kyc_sessions.secret_hash":         "SHA-256 of the session's URL secret",
}

// TestSealedTablesCoverEveryByteaColumn fails when a migration adds a
// bytea column that is neither sealed (and then re-sealed by the rekey
// job) nor listed above as holding no sealed value, and checks that every
// table and column of service.SealedTables exists with a uuid key.
func TestSealedTablesCoverEveryByteaColumn(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	var cols []string
	if err := db.Select(&cols, `SELECT table_name || '.' || column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type = 'bytea' ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tb := range ops.SealedTables() {
		var keyType string
		if err := db.Get(&keyType, `SELECT data_type FROM information_schema.columns WHERE table_schema = 'public'
			AND table_name = $1 AND column_name = $2`, tb.Name, tb.Key); err != nil || keyType != "uuid" {
			t.Errorf("%s.%s: key type %q (%v), want uuid", tb.Name, tb.Key, keyType, err)
		}
		for _, c := range tb.Columns {
			listed[tb.Name+"."+c.Name] = true
			if ctx := c.Context("k"); !strings.HasPrefix(ctx, strings.TrimSuffix(tb.Name, "s")) || !strings.HasSuffix(ctx, ":k") {
				t.Errorf("%s.%s: context %q does not name its table and row", tb.Name, c.Name, ctx)
			}
		}
		if tb.Lookup != nil {
			listed[tb.Name+"."+tb.Lookup.Column] = true
		}
	}
	seen := map[string]bool{}
	for _, c := range cols {
		seen[c] = true
		if !listed[c] && notSealed[c] == "" {
			t.Errorf("bytea column %s is not in service.SealedTables: if it holds sealed values, add it there (and to emi rekey); if not, to notSealed", c)
		}
	}
	for c := range listed {
		if !seen[c] {
			t.Errorf("service.SealedTables lists %s, which is not a bytea column", c)
		}
	}
}

// rekeyEnv is an application with data sealed under key 1, and the keys
// to rotate to.
type rekeyEnv struct {
	env   *apptest.Env
	key1  []byte
	p     emi.PartnerCredentials
	cards []string
}

func newKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, seal.MasterKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// newRekeyEnv starts an application (key 1) with a partner, its key and
// webhook endpoint, and n cards (PINs 2200, 2201...), issued 8 at a time.
func newRekeyEnv(t testing.TB, n int) *rekeyEnv {
	t.Helper()
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p, err := env.App.Partners.Create(servicetest.Sys(), emi.PartnerCreate{Name: "Rekey", WebhookURL: "http://127.0.0.1:9/hooks"})
	if err != nil {
		t.Fatal(err)
	}
	e := &rekeyEnv{env: env, key1: env.Config.MasterKey, p: p, cards: make([]string, n)}
	pctx := e.partnerCtx()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				c, err := env.App.Cards.Create(pctx, emi.CardCreate{Program: "card_eur", Type: emi.CardVirtual, PIN: fmt.Sprintf("%04d", 2200+i%7000)})
				if err != nil {
					errs <- err
					return
				}
				e.cards[i] = c.Token
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *rekeyEnv) partnerCtx() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: e.p.KeyID,
		PartnerID: e.p.Partner.ID, MasterMerchant: e.p.Merchant})
}

// rotated opens the application with keys (current first) on e's database
// and returns it with its rekey job.
func (e *rekeyEnv) rotated(t testing.TB, current []byte, previous ...[]byte) (*app.App, *ops.Rekeyer) {
	t.Helper()
	cfg := e.env.Config
	cfg.MasterKey, cfg.PreviousKeys = current, previous
	a, err := app.Open(context.Background(), cfg, app.NewLogger(cfg, io.Discard), e.env.Clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, ops.NewRekeyer(ops.RekeyerDeps{Tx: a.DB, Store: postgres.NewRekeyStore(a.DB), Vault: a.Keys})
}

// keyIDs counts the sealed values of the database by key id.
func keyIDs(t *testing.T, db *postgres.DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tb := range ops.SealedTables() {
		for _, c := range tb.Columns {
			var vals [][]byte
			if err := db.Select(&vals, fmt.Sprintf(`SELECT %s FROM %s WHERE %[1]s IS NOT NULL`, c.Name, tb.Name)); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if len(v) < 9 {
					out["short"]++
					continue
				}
				out[hex.EncodeToString(v[1:9])]++
			}
		}
	}
	return out
}

// TestRekeyReportsValuesThatDoNotOpen: a value moved from another row, a
// value under a key that is not loaded and a value that is not a sealed
// value at all are each reported by table, column and row, left as they
// are, and make Rekey fail; every other value is re-sealed all the same.
func TestRekeyReportsValuesThatDoNotOpen(t *testing.T) {
	t.Parallel()
	e := newRekeyEnv(t, 6)
	db := e.env.App.DB
	// A PIN copied from card 0 to card 1; card 2's CVV sealed under an
	// unknown key; the partner key's secret replaced with garbage.
	if _, err := db.Exec(`UPDATE cards SET pin_sealed = (SELECT pin_sealed FROM cards WHERE token = $1) WHERE token = $2`, e.cards[0], e.cards[1]); err != nil {
		t.Fatal(err)
	}
	stranger, err := seal.NewKeyring(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	// The plaintext has letters no token, key id or hex carries, so that
	// finding it in a failure means the failure names the value.
	foreign, _ := stranger.Seal([]byte("zqv"), "cards.cvv:"+e.cards[2])
	if _, err := db.Exec(`UPDATE cards SET cvv_sealed = $2 WHERE token = $1`, e.cards[2], foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE partner_keys SET secret_enc = '\x0102'::bytea WHERE id = $1`, e.p.KeyID); err != nil {
		t.Fatal(err)
	}
	var before struct {
		PIN []byte `db:"pin_sealed"`
		CVV []byte `db:"cvv_sealed"`
	}
	if err := db.Get(&before, `SELECT (SELECT pin_sealed FROM cards WHERE token = $1) AS pin_sealed,
		(SELECT cvv_sealed FROM cards WHERE token = $2) AS cvv_sealed`, e.cards[1], e.cards[2]); err != nil {
		t.Fatal(err)
	}

	key2 := newKey(t)
	a, rk := e.rotated(t, key2, e.key1)
	rep, err := rk.Rekey(context.Background(), ops.RekeyOptions{Batch: 4})
	if !errors.Is(err, ops.ErrRekeyFailed) {
		t.Fatalf("rekey with bad values: %v, want ErrRekeyFailed", err)
	}
	var got []string
	for _, f := range rep.Failures {
		got = append(got, f.Table+"."+f.Column+":"+f.Row+" "+kind(f.Err))
		if strings.Contains(f.String(), "zqv") {
			t.Errorf("a failure names the value: %s", f)
		}
	}
	sort.Strings(got)
	want := []string{
		"cards.cvv_sealed:" + e.cards[2] + " unknown key",
		"cards.pin_sealed:" + e.cards[1] + " corrupt",
		"partner_keys.secret_enc:" + e.p.KeyID + " corrupt",
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("failures:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tot := rep.Totals(); tot.Failed != 3 || tot.Resealed != tot.Scanned-3 {
		t.Fatalf("totals %+v: every other value must be re-sealed", tot)
	}
	var after struct {
		PIN []byte `db:"pin_sealed"`
		CVV []byte `db:"cvv_sealed"`
	}
	if err := a.DB.Get(&after, `SELECT (SELECT pin_sealed FROM cards WHERE token = $1) AS pin_sealed,
		(SELECT cvv_sealed FROM cards WHERE token = $2) AS cvv_sealed`, e.cards[1], e.cards[2]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after.PIN, before.PIN) || !bytes.Equal(after.CVV, before.CVV) {
		t.Fatal("a value that did not open was changed")
	}
	ids := keyIDs(t, a.DB)
	k1, _ := seal.NewKeyring(e.key1)
	if ids[k1.CurrentKeyID()] != 1 || ids[stranger.CurrentKeyID()] != 1 || ids["short"] != 1 {
		t.Fatalf("key ids after the rekey: %v (key 1 %s, key 2 %s)", ids, k1.CurrentKeyID(), a.Keys.CurrentKeyID())
	}
	chk, err := rk.Check(context.Background(), ops.RekeyOptions{})
	if err != nil || chk.Remaining() != 3 {
		t.Fatalf("check: %d remaining (%v), want the 3 bad values", chk.Remaining(), err)
	}
}

// kind names a seal error without its text.
func kind(err error) string {
	switch {
	case errors.Is(err, seal.ErrUnknownKey):
		return "unknown key"
	case errors.Is(err, seal.ErrCorrupt):
		return "corrupt"
	}
	return err.Error()
}

// TestRekeyResumesAfterAnInterruption: a run stopped after two batches has
// committed those batches; the next run re-seals only the rest, and a run
// after that re-seals nothing. The PAN lookups follow the PANs.
func TestRekeyResumesAfterAnInterruption(t *testing.T) {
	t.Parallel()
	e := newRekeyEnv(t, 23)
	key2 := newKey(t)
	a, rk := e.rotated(t, key2, e.key1)
	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	first, err := rk.Rekey(ctx, ops.RekeyOptions{Batch: 5, Tables: cardsOnly(), Progress: func(r ops.RekeyTableReport) {
		batches++
		if batches == 2 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if got := first.Totals(); got.Rows != 10 || got.Resealed != 30 || got.Lookups != 10 {
		t.Fatalf("interrupted after two batches of 5 cards: %+v", got)
	}
	chk, err := rk.Check(context.Background(), ops.RekeyOptions{Tables: cardsOnly()})
	if err != nil || chk.Totals().Remaining != 13*3 || chk.Totals().Current != 30 || chk.Totals().Lookups != 0 {
		t.Fatalf("check after the interruption: %+v (%v)", chk.Totals(), err)
	}
	second, err := rk.Rekey(context.Background(), ops.RekeyOptions{Batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	var cards ops.RekeyTableReport
	for _, tr := range second.Tables {
		if tr.Table == "cards" {
			cards = tr
		}
	}
	if cards.Resealed != 13*3 || cards.Current != 30 || cards.Lookups != 13 || cards.Rows != 23 {
		t.Fatalf("resumed run, cards: %+v", cards)
	}
	third, err := rk.Rekey(context.Background(), ops.RekeyOptions{Batch: 7})
	if err != nil || third.Totals().Resealed != 0 || third.Totals().Lookups != 0 {
		t.Fatalf("third run: %+v (%v)", third.Totals(), err)
	}
	if ids := keyIDs(t, a.DB); len(ids) != 1 || ids[a.Keys.CurrentKeyID()] == 0 {
		t.Fatalf("key ids: %v", ids)
	}

	// A stale lookup beside a current PAN is found by the check and
	// recomputed by the next run.
	if _, err := a.DB.Exec(`UPDATE cards SET pan_lookup = '\x00'::bytea || substring(pan_lookup from 2) WHERE token = $1`, e.cards[3]); err != nil {
		t.Fatal(err)
	}
	if chk, _ := rk.Check(context.Background(), ops.RekeyOptions{}); chk.Remaining() != 1 {
		t.Fatalf("check of a stale lookup: %d remaining", chk.Remaining())
	}
	fix, err := rk.Rekey(context.Background(), ops.RekeyOptions{})
	if err != nil || fix.Totals().Lookups != 1 || fix.Totals().Resealed != 0 {
		t.Fatalf("lookup repair: %+v (%v)", fix.Totals(), err)
	}
	found, err := a.Cards.Search(emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(),
		StaffRoles: []string{string(emi.RoleCustomerService)}}), e.cards[3])
	if err != nil || len(found) != 1 {
		t.Fatalf("search: %v %v", found, err)
	}
}

func cardsOnly() []ops.SealedTable {
	for _, tb := range ops.SealedTables() {
		if tb.Name == "cards" {
			return []ops.SealedTable{tb}
		}
	}
	return nil
}

// TestRekeyWhileCardsChange runs the rekey job in small batches while the
// service terminates, converts and reveals cards. The batch locks make
// each change wait or go first: afterwards every value is under the new
// key, terminated cards hold no CVV2 or PIN, converted cards reveal their
// new CVV2, and nothing failed.
func TestRekeyWhileCardsChange(t *testing.T) {
	t.Parallel()
	e := newRekeyEnv(t, 60)
	key2 := newKey(t)
	a, rk := e.rotated(t, key2, e.key1)
	pctx := e.partnerCtx()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, c := range e.cards {
			var err error
			switch i % 3 {
			case 0:
				_, err = a.Cards.Terminate(pctx, c, "")
			case 1:
				_, err = a.Cards.Reveal(pctx, c, cardssvc.RevealPIN)
			case 2:
				_, err = a.Cards.SetStatus(pctx, c, emi.CardInactive, "")
			}
			if err != nil {
				errs <- fmt.Errorf("card %d: %w", i, err)
			}
		}
	}()
	rep, err := rk.Rekey(context.Background(), ops.RekeyOptions{Batch: 3})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err != nil {
		t.Fatalf("rekey: %v %v", err, rep.Failures)
	}
	if chk, err := rk.Check(context.Background(), ops.RekeyOptions{}); err != nil || chk.Remaining() != 0 {
		t.Fatalf("check: %d remaining (%v)", chk.Remaining(), err)
	}
	var kept int
	if err := a.DB.Get(&kept, `SELECT count(*) FROM cards WHERE status = 'terminated' AND (cvv_sealed IS NOT NULL OR pin_sealed IS NOT NULL)`); err != nil || kept != 0 {
		t.Fatalf("%d terminated cards kept SAD (%v)", kept, err)
	}
	only2, _ := e.rotated(t, key2)
	for i, c := range e.cards {
		if i%3 == 0 {
			continue
		}
		if _, err := only2.Cards.Reveal(pctx, c, cardssvc.RevealFirstHalf); err != nil {
			t.Fatalf("card %d with key 2 alone: %v", i, err)
		}
	}
}

// TestRekeyProbeCoversTheHeader: NeedsRekey answers the same for the first
// RekeyProbeBytes of a value as for the whole value.
func TestRekeyProbeCoversTheHeader(t *testing.T) {
	t.Parallel()
	if ops.RekeyProbeBytes < seal.Overhead {
		t.Fatalf("RekeyProbeBytes %d < seal.Overhead %d", ops.RekeyProbeBytes, seal.Overhead)
	}
	k1, _ := seal.NewKeyring(newKey(t))
	k2, _ := seal.NewKeyring(newKey(t), newKey(t))
	for _, n := range []int{0, 1, 3, 27, 100, 5000} {
		v, _ := k1.Seal(make([]byte, n), "x")
		for _, k := range []*seal.Keyring{k1, k2} {
			if k.NeedsRekey(v) != k.NeedsRekey(v[:min(len(v), ops.RekeyProbeBytes)]) {
				t.Fatalf("%d-byte plaintext: the probe changes NeedsRekey", n)
			}
		}
	}
	for _, bad := range [][]byte{nil, {1}, bytes.Repeat([]byte{2}, 80)} {
		if !k1.NeedsRekey(bad[:min(len(bad), ops.RekeyProbeBytes)]) {
			t.Fatalf("a malformed value must be handed to Rekey: %x", bad)
		}
	}
}

// BenchmarkRekey re-seals 2,000 cards per iteration (6,000 values and
// 2,000 PAN lookups, plus the partner key and webhook secrets), rotating
// between two keys, in batches of 500.
func BenchmarkRekey(b *testing.B) {
	e := newRekeyEnv(b, 2000)
	key2 := newKey(b)
	_, to2 := e.rotated(b, key2, e.key1)
	_, to1 := e.rotated(b, e.key1, key2)
	jobs := []*ops.Rekeyer{to2, to1}
	values := 0
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := jobs[i%2].Rekey(context.Background(), ops.RekeyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if tot := rep.Totals(); tot.Resealed < 6000 || tot.Lookups != 2000 {
			b.Fatalf("iteration %d: %+v", i, tot)
		}
		values += rep.Totals().Resealed
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(values), "µs/value")
}
