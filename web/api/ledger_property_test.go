package api_test

import (
	"context"
	"errors"
	"testing"

	"pgregory.net/rapid"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/accounts"
)

// TestLedgerProperties drives the real services with random sequences of
// incoming credits, internal transfers (within one partner and across
// partners), outgoing payments, returns of outgoing payments and
// reversals of transfers, and checks after every step that emi agrees
// with a trivial model (a map of balances): an operation succeeds exactly
// when the model says the money is there (and, for a return or reversal,
// that it was not undone before), and every touched balance then holds
// the model's figure. After each sequence the ledger's invariants hold
// over the whole database: every transaction sums to zero, the customer
// balances net against the institution's accounts per currency, no
// balance is negative, and every balance is the sum of its entries.
func TestLedgerProperties(t *testing.T) {
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Prop P"})
	q := env.NewPartner(t, emi.PartnerCreate{Name: "Prop Q"})
	type bal struct {
		ledgerAccount
		partner *apptest.Partner
	}
	var bals []bal
	for _, pp := range []*apptest.Partner{p, q} {
		for _, a := range fundedAccounts(t, env, pp, 3, 0) {
			bals = append(bals, bal{ledgerAccount: a, partner: pp})
		}
	}
	model := map[string]int64{}
	as := func(pp *apptest.Partner) context.Context {
		return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: pp.KeyID,
			PartnerID: pp.ID, MasterMerchant: pp.Merchant})
	}
	requester, approver := moneyStaff(), moneyStaff()
	type done struct {
		token    string // transfer token, or "" for an outgoing ledger txn
		txn      emi.PostedTxn
		from, to int
		amount   int64
		undone   bool
	}
	var history []*done
	ctx := context.Background()

	rapid.Check(t, func(rt *rapid.T) {
		expect := func(what string, err error, ok bool) {
			if ok && err != nil {
				rt.Fatalf("%s: the model expected success, got %v", what, err)
			}
			if !ok && err == nil {
				rt.Fatalf("%s: the model expected a refusal, it succeeded", what)
			}
		}
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for range steps {
			i := rapid.IntRange(0, len(bals)-1).Draw(rt, "balance")
			b := bals[i]
			amount := rapid.Int64Range(1, 50_000).Draw(rt, "amount")
			switch op := rapid.SampledFrom([]string{"credit", "transfer", "outgoing", "return", "reverse"}).Draw(rt, "op"); op {
			case "credit":
				_, err := env.App.Ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnIncoming, Entries: []emi.Entry{
					{Internal: emi.LedgerIncomingClearing, Currency: "EUR", Amount: -amount},
					{Balance: b.bal, Account: b.acc, Currency: "EUR", Amount: amount}}})
				expect(op, err, true)
				model[b.bal] += amount
			case "transfer":
				j := rapid.IntRange(0, len(bals)-1).Filter(func(j int) bool { return j != i }).Draw(rt, "to")
				// Another partner's customer is named by IBAN: its
				// tokens are that partner's own.
				dst := emi.TransferParty{Account: bals[j].acc}
				if bals[j].partner != b.partner {
					dst = emi.TransferParty{IBAN: bals[j].iban}
				}
				tr, err := env.App.Transfers.Create(as(b.partner), emi.TransferCreate{Source: emi.TransferParty{Balance: b.bal},
					Destination: dst, Amount: emi.Amount(amount), Currency: "EUR", Reference: "property"})
				ok := model[b.bal] >= amount
				expect(op, err, ok)
				if !ok && !errors.Is(err, emi.ErrInsufficientFunds) {
					rt.Fatalf("transfer refused with %v, want 14003", err)
				}
				if ok {
					model[b.bal] -= amount
					model[bals[j].bal] += amount
					history = append(history, &done{token: tr.Token, from: i, to: j, amount: amount})
				}
			case "outgoing":
				posted, err := env.App.Ledger.Post(ctx, emi.LedgerTxn{Kind: emi.TxnOutgoing, Entries: []emi.Entry{
					{Balance: b.bal, Account: b.acc, Currency: "EUR", Amount: -amount},
					{Internal: emi.LedgerOutgoingClearing, Currency: "EUR", Amount: amount}}})
				ok := model[b.bal] >= amount
				expect(op, err, ok)
				if ok {
					model[b.bal] -= amount
					history = append(history, &done{txn: posted, from: i, amount: amount})
				}
			case "return", "reverse":
				var candidates []*done
				for _, d := range history {
					if (op == "return") == (d.token == "") {
						candidates = append(candidates, d)
					}
				}
				if len(candidates) == 0 {
					continue
				}
				d := rapid.SampledFrom(candidates).Draw(rt, "undo")
				if op == "return" {
					_, err := env.App.Ledger.Post(ctx, accounts.Reversal(d.txn, "", "returned by the receiving bank"))
					expect(op, err, !d.undone)
					if !d.undone {
						model[bals[d.from].bal] += d.amount
					}
					d.undone = true
					continue
				}
				// Four-eyes: one staff member asks, another approves.
				rerr := env.App.Transfers.RequestReversal(requester, d.token, "property test reversal")
				expect("request "+op, rerr, !d.undone)
				_, err := env.App.Transfers.DecideReversal(approver, d.token, true)
				ok := !d.undone && model[bals[d.to].bal] >= d.amount
				expect(op, err, ok)
				if rerr == nil && err != nil {
					// Refused (the money was spent): withdraw the request.
					if _, err := env.App.Transfers.DecideReversal(requester, d.token, false); err != nil {
						rt.Fatal(err)
					}
				}
				if ok {
					model[bals[d.to].bal] -= d.amount
					model[bals[d.from].bal] += d.amount
					d.undone = true
				}
			}
			for _, bb := range bals {
				var posted int64
				if err := env.App.DB.Get(&posted, `SELECT posted FROM balances WHERE token = $1`, bb.bal); err != nil {
					rt.Fatal(err)
				}
				if posted != model[bb.bal] {
					rt.Fatalf("balance %s holds %d, the model %d", bb.bal, posted, model[bb.bal])
				}
			}
		}
		checkLedger(t, env)
	})
	all := make([]string, len(bals))
	for i, b := range bals {
		all[i] = b.bal
	}
	replayLedger(t, env, all)
}
