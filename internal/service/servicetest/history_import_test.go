package servicetest_test

// The history import books chunk by chunk (Ledger.PostBatch, one insert
// of the chunk's monitoring movements) and then evaluates what it
// recorded, reading a subject's windows once for a large batch: these
// tests book files in many small chunks and check that what is booked,
// refused, recorded and raised does not depend on the chunks nor on how
// the windows are read.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"emi/internal/service/monitoring"
	"emi/internal/service/ops"
)

// importer is the application's history import booking chunk lines a
// transaction.
func (m *monitoringApp) importer(chunk int) *ops.HistoryImport {
	a := m.env.App
	return ops.NewHistoryImport(ops.HistoryImportDeps{Tx: a.DB, Ledger: a.Ledger, Parties: a.TransferStore, Monitor: a.Monitor,
		Audit: a.Audit, Now: a.Now, Sandbox: true, Chunk: chunk})
}

func jsonLines(lines ...line) *bytes.Buffer {
	var b bytes.Buffer
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return &b
}

// TestHistoryImportInChunksBooksAndRecordsEachLine: a file booked three
// lines a transaction, in any order, with refusals in the middle of
// chunks: the refused lines are reported with their ref and reason and
// leave nothing; each booked line is one ledger transaction ("history
// REF") and its monitoring movements, as of the line's time, with the
// transaction as source; both sides of an internal transfer are recorded;
// the balances are what the lines say, and the ledger's invariants hold.
func TestHistoryImportInChunksBooksAndRecordsEachLine(t *testing.T) {
	m := newMonitoringApp(t)
	_, a := m.person(t, "", "", "", "")
	_, b := m.person(t, "", "", "", "")
	internal := func(ref, at, from, to, amount string) line {
		return line{"ref": ref, "at": at, "kind": "transfer_internal", "account": from, "to_account": to, "amount": amount, "currency": "EUR"}
	}
	file := []line{ // shuffled: booked in time order
		outgoing("o2", m.at(5*day), a, "30.00", iban(3)),                         // 30 of 40 left: booked
		incoming("i1", m.at(day), a, "100.00", iban(1)),                          // 100
		internal("t1", m.at(2*day), a, b, "50.00"),                               // 50 | 50
		outgoing("o1", m.at(3*day), a, "60.00", iban(2)),                         // refused: 50
		card("card_payment", "c1", m.at(4*day), a, "10.00", "5411"),              // 40
		internal("t2", m.at(4*day+time.Hour), b, a, "50.01"),                     // refused: 50
		outgoing("o3", m.at(6*day), a, "10.01", iban(4)),                         // refused: 10
		card("card_withdrawal", "w1", m.at(6*day+time.Hour), b, "50.00", "6011"), // b: 0
		incoming("i2", m.at(7*day), b, "5.00", iban(5)),                          // b: 5
	}
	res, err := m.importer(3).Import(context.Background(), m.p.ID, jsonLines(file...))
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, r := range res.Refused {
		refused = append(refused, r.Ref)
		if r.Reason != "service.transfers.insufficient_funds" {
			t.Errorf("%s refused for %q", r.Ref, r.Reason)
		}
	}
	if res.Booked != 6 || !slices.Equal(refused, []string{"o1", "t2", "o3"}) {
		t.Fatalf("booked %d, refused %v: want 6 booked and o1, t2, o3 refused", res.Booked, refused)
	}
	var rows []struct {
		Ref       string    `db:"ref"`
		Account   string    `db:"account"`
		Direction string    `db:"direction"`
		At        time.Time `db:"at"`
		Source    string    `db:"source"`
		Reference string    `db:"reference"`
	}
	if err := m.env.App.DB.Select(&rows, `SELECT mv.ref, mv.account, mv.direction, mv.at, mv.source, t.reference
		FROM monitoring_movements mv JOIN ledger_transactions t ON 'ledger:' || t.id = mv.source
		WHERE mv.partner_id = $1 ORDER BY mv.at, mv.id`, m.p.ID); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s %s %s %s", r.Ref, map[string]string{a: "a", b: "b"}[r.Account], r.Direction,
			r.At.UTC().Sub(m.base)))
		if r.Reference != "history "+r.Ref {
			t.Errorf("%s recorded with the ledger transaction %q", r.Ref, r.Reference)
		}
	}
	want := []string{"i1 a in 24h0m0s", "t1 a out 48h0m0s", "t1 b in 48h0m0s", "c1 a out 96h0m0s", "o2 a out 120h0m0s",
		"w1 b out 145h0m0s", "i2 b in 168h0m0s"}
	if !slices.Equal(got, want) {
		t.Errorf("recorded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var txns int
	if err := m.env.App.DB.Get(&txns, `SELECT count(*) FROM ledger_transactions WHERE partner_id = $1 AND reference LIKE 'history %'`, m.p.ID); err != nil || txns != 6 {
		t.Fatalf("%d ledger transactions (%v), want one per booked line", txns, err)
	}
	for acct, want := range map[string]string{a: "10.00", b: "5.00"} {
		var posted, available int64
		if err := m.env.App.DB.QueryRow(`SELECT posted, available FROM balances WHERE account = $1`, acct).Scan(&posted, &available); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%d.%02d", posted/100, posted%100); got != want || available != posted {
			t.Errorf("balance %s posted, %d available; want %s", got, available, want)
		}
	}
	var audits int
	if err := m.env.App.DB.Get(&audits, `SELECT count(*) FROM audit_log WHERE action = 'sandbox.history_import' AND partner_id = $1`, m.p.ID); err != nil || audits != 3 {
		t.Errorf("%d audit rows (%v), want one per chunk", audits, err)
	}
	var pending int
	if err := m.env.App.DB.Get(&pending, `SELECT count(*) FROM monitoring_movements WHERE evaluated_at IS NULL`); err != nil || pending != 0 {
		t.Errorf("%d movements not evaluated after the import (%v)", pending, err)
	}
}

// TestHistoryImportRaisesTheSameInChunks: one history of several
// people, with typologies that fire and refusals, imported as one file in
// one chunk (each person's movements evaluated in one batch, the windows
// read once) and as files of four lines booked two a transaction (each
// file evaluated after it, a few movements a batch: a query per window)
// raises the same hits, with the same sentences and refs, in the same
// order.
func TestHistoryImportRaisesTheSameInChunks(t *testing.T) {
	history := func(m *monitoringApp, accounts []string) []line {
		var lines []line
		add := func(l line) { lines = append(lines, l) }
		for p, a := range accounts {
			r := func(s string) string { return fmt.Sprintf("%d-%s", p, s) }
			// Structuring, then a large amount and a pass-through.
			add(incoming(r("s1"), m.at(day), a, "9500.00", iban(1)))
			add(incoming(r("s2"), m.at(2*day), a, "9800.00", iban(2)))
			add(incoming(r("s3"), m.at(4*day), a, "9100.00", iban(3)))
			add(incoming(r("big"), m.at(5*day), a, "15000.00", iban(4)))
			add(outgoing(r("away"), m.at(5*day+20*time.Hour), a, "20000.00", iban(5)))
			add(outgoing(r("broke"), m.at(5*day+21*time.Hour), a, "99999.00", iban(5))) // refused
			// Fan-in and fan-out over a few days, across chunk boundaries.
			for i := range 12 {
				add(incoming(r(fmt.Sprintf("p%d", i)), m.at(10*day+time.Duration(i*(p+1))*time.Hour), a, "100.00", iban(10+i)))
				add(outgoing(r(fmt.Sprintf("q%d", i)), m.at(10*day+time.Duration(i*(p+1))*time.Hour+time.Minute), a, "10.00", iban(30+i)))
			}
			// Card cash and a high-risk merchant, next month.
			add(card("card_withdrawal", r("cash1"), m.base.AddDate(0, 1, 2).Format(time.RFC3339), a, "1500.00", "6011"))
			add(card("card_withdrawal", r("cash2"), m.base.AddDate(0, 1, 3).Format(time.RFC3339), a, "1500.00", "6011"))
			add(card("card_payment", r("bet"), m.base.AddDate(0, 1, 4).Format(time.RFC3339), a, "50.00", "7995"))
		}
		return lines
	}
	type hit struct{ Person, Rule, Sentence, Ref string }
	run := func(perFile, chunk int) ([]hit, ops.HistoryResult) {
		m := newMonitoringApp(t)
		bands := [][4]string{{"Between 1001 and 5000 EUR", "Between 1001 and 5000 EUR", "Between 3-5 times", "High"},
			{"", "", "", ""}, {"Less than 1000 EUR", "Less than 1000 EUR", "Less than 2 times", "Medium"}}
		var users, accounts []string
		for _, b := range bands {
			u, a := m.person(t, b[0], b[1], b[2], b[3])
			users, accounts = append(users, u), append(accounts, a)
		}
		lines := history(m, accounts)
		slices.SortStableFunc(lines, func(a, b line) int { return strings.Compare(a["at"].(string), b["at"].(string)) })
		var res ops.HistoryResult
		for file := range slices.Chunk(lines, perFile) {
			r, err := m.importer(chunk).Import(context.Background(), m.p.ID, jsonLines(file...))
			if err != nil {
				t.Fatal(err)
			}
			res.Booked += r.Booked
			res.Refused = append(res.Refused, r.Refused...)
		}
		var hits []hit
		for p, u := range users {
			for _, h := range m.alertOf(t, u).Hits {
				hits = append(hits, hit{Person: fmt.Sprint(p), Rule: h.Rule, Sentence: h.Sentence, Ref: h.Ref})
			}
		}
		return hits, res
	}
	whole, wholeRes := run(1000, 1000)
	chunked, chunkedRes := run(4, 2)
	if wholeRes.Booked != chunkedRes.Booked || !slices.Equal(wholeRes.Refused, chunkedRes.Refused) || len(wholeRes.Refused) != 3 {
		t.Fatalf("in one file %+v, in files of four %+v", wholeRes, chunkedRes)
	}
	if len(whole) < 10 {
		t.Fatalf("the history raised %d hits: %+v", len(whole), whole)
	}
	rules := map[string]bool{}
	for _, h := range whole {
		rules[h.Rule] = true
	}
	for _, r := range []string{monitoring.RuleStructuring, monitoring.RuleLargeAmount, monitoring.RulePassThrough, monitoring.RuleFanIn,
		monitoring.RuleFanOut, monitoring.RuleCardCash, monitoring.RuleCardHighRiskMCC, monitoring.RuleProfileIncoming} {
		if !rules[r] {
			t.Errorf("the history does not raise %s", r)
		}
	}
	if !slices.Equal(whole, chunked) {
		t.Errorf("in one file:\n%+v\nin files of four:\n%+v", whole, chunked)
	}
}

// TestHistoryImportRefusesARefTheLedgerCannotHold: a ref longer than a
// ledger reference allows after "history " makes the file malformed
// (before, its line failed the whole import after the chunks before it
// had been booked).
func TestHistoryImportRefusesARefTheLedgerCannotHold(t *testing.T) {
	m := newMonitoringApp(t)
	_, a := m.person(t, "", "", "", "")
	ok := strings.Repeat("r", 132)
	res, err := m.env.App.HistoryImport.Import(context.Background(), m.p.ID, jsonLines(incoming(ok, m.at(day), a, "5.00", iban(1))))
	if err != nil || res.Booked != 1 {
		t.Fatalf("a ref of 132 characters: %+v %v", res, err)
	}
	res, err = m.env.App.HistoryImport.Import(context.Background(), m.p.ID, jsonLines(incoming("first", m.at(day), a, "5.00", iban(1)),
		incoming(ok+"é", m.at(2*day), a, "5.00", iban(1))))
	if !errors.Is(err, ops.ErrHistoryMalformed) || !strings.Contains(err.Error(), "line 2: ref") || res.Booked != 0 {
		t.Fatalf("a ref of 133 characters: %+v %v, want the file refused", res, err)
	}
}
