package monitoring_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/service/kernel"
	"emi/internal/service/monitoring"
)

// TestSubjectWindowsAreTheStoresWindows: the windows evaluateSubject
// reads from the subject's movements read once answer every window and
// previous movement exactly as the store's query does, at the boundaries
// too: movements of one instant, at a month's first instant, with
// nanoseconds the database rounds, declined ones, and windows that start
// before what was read so far.
func TestSubjectWindowsAreTheStoresWindows(t *testing.T) {
	env := apptest.New(t, apptest.Options{NoSanctions: true})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Windows Partner"})
	pctx := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: p.KeyID, PartnerID: p.ID,
		MasterMerchant: p.Merchant})
	in := emi.UserCreate{Email: kernel.NewToken() + "@example.com"}
	in.FirstName, in.LastName = "Wanda", "Indow"
	u, err := env.App.Users.Create(pctx, in)
	if err != nil {
		t.Fatal(err)
	}
	a, err := env.App.Accounts.Create(pctx, emi.AccountCreate{Program: "account_eur", User: u.Token})
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.NewMonitoringStore(env.App.DB)
	subject := monitoring.Subject{Kind: monitoring.SubjectUser, Token: u.Token}

	now := time.Now().UTC()
	month := func(at time.Time) time.Time { return time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC) }
	base := month(now).AddDate(0, -3, 0)
	r := rand.New(rand.NewPCG(1, 2))
	kinds := []struct{ kind, direction string }{
		{monitoring.KindIncoming, monitoring.In}, {monitoring.KindTransferOut, monitoring.Out},
		{monitoring.KindTransferInternal, monitoring.In}, {monitoring.KindTransferInternal, monitoring.Out},
		{monitoring.KindCardPayment, monitoring.Out}, {monitoring.KindCardWithdrawal, monitoring.Out},
	}
	var last time.Time
	err = env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
		for i := range 400 {
			var at time.Time
			switch x := r.IntN(10); {
			case x == 0:
				at = base.AddDate(0, r.IntN(3), 0) // a month's first instant
			case x == 1 && !last.IsZero():
				at = last // the instant of the one before
			case x == 2:
				at = base.Add(time.Duration(r.Int64N(int64(85 * 24 * time.Hour)))) // nanoseconds, rounded by the database
			default:
				at = base.Add(time.Duration(r.Int64N(85*24*3600)) * time.Second)
			}
			last = at
			k := kinds[r.IntN(len(kinds))]
			mv := monitoring.Movement{PartnerID: p.ID, Account: a.Token, Kind: k.kind, Direction: k.direction, Currency: "EUR",
				Amount: 100 * (1 + r.Int64N(12000)), At: at, Ref: "w" + time.Duration(i).String()}
			if r.IntN(5) > 0 {
				mv.CounterpartyKey = monitoring.CounterpartyKey(string(rune('A' + r.IntN(8))))
			}
			if (k.kind == monitoring.KindCardPayment || k.kind == monitoring.KindCardWithdrawal) && r.IntN(3) == 0 {
				mv.Declined, mv.Amount = true, 100*(1+r.Int64N(15))
			}
			if err := env.App.Monitor.RecordUnqueued(ctx, mv); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := store.Unevaluated(context.Background(), subject, 1000)
	if err != nil || len(all) != 400 {
		t.Fatalf("%d movements: %v", len(all), err)
	}

	ctx := context.Background()
	queries := 0
	same := func(what string, w monitoring.WindowReader, q monitoring.WindowQuery) {
		t.Helper()
		queries++
		want, err := store.Window(ctx, subject, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.Window(ctx, subject, q)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s %+v: windows %+v, store %+v", what, q, got, want)
		}
	}
	allIn := []string{monitoring.KindIncoming, monitoring.KindTransferInternal}
	allOut := []string{monitoring.KindTransferOut, monitoring.KindTransferInternal, monitoring.KindCardPayment, monitoring.KindCardWithdrawal}
	for _, batch := range [][2]int{{0, 150}, {150, 400}, {398, 399}, {300, 360}} {
		mvs := all[batch[0]:batch[1]]
		w := monitoring.NewSubjectWindows(store, subject, mvs)
		for i, mv := range mvs {
			dirs := map[string][]string{monitoring.In: allIn, monitoring.Out: allOut}
			for dir, ks := range dirs {
				from := month(mv.At).Add(-time.Nanosecond)
				same("month", w, monitoring.WindowQuery{Direction: dir, Kinds: ks, From: from, To: mv.At, ToID: mv.ID})
				same("48 hours", w, monitoring.WindowQuery{Direction: dir, Kinds: ks, From: mv.At.Add(-48 * time.Hour), To: mv.At, ToID: mv.ID})
				same("7 days, before", w, monitoring.WindowQuery{Direction: dir, Kinds: ks[:1], From: mv.At.Add(-7 * 24 * time.Hour), To: mv.At, ToID: mv.ID, Excluding: true})
				same("5 days, an amount range", w, monitoring.WindowQuery{Direction: dir, Kinds: ks, From: mv.At.Add(-5 * 24 * time.Hour), To: mv.At, ToID: mv.ID,
					MinEUR: 800000, MaxEUR: 1000000})
			}
			same("declined", w, monitoring.WindowQuery{Direction: monitoring.Out, Kinds: allOut[2:], From: mv.At.Add(-60 * time.Minute), To: mv.At,
				ToID: mv.ID, MaxEUR: 1001, Declined: true})
			// Now and then a window that starts anywhere before, even before
			// what the windows read so far, or ends at a time with
			// nanoseconds.
			if i%7 == 0 {
				from := base.Add(-time.Hour).Add(time.Duration(r.Int64N(int64(mv.At.Sub(base) + time.Hour))))
				same("anywhere", w, monitoring.WindowQuery{Direction: monitoring.In, Kinds: allIn, From: from, To: mv.At, ToID: mv.ID})
				same("nanoseconds", w, monitoring.WindowQuery{Direction: monitoring.Out, Kinds: allOut, From: from,
					To: mv.At.Add(-time.Duration(r.IntN(2000))), ToID: 1 << 62})
			}
			wantAt, wantOK, err := store.PreviousMovement(ctx, subject, mv.At, mv.ID)
			if err != nil {
				t.Fatal(err)
			}
			gotAt, gotOK, err := w.PreviousMovement(ctx, subject, mv.At, mv.ID)
			if err != nil {
				t.Fatal(err)
			}
			if gotOK != wantOK || !gotAt.Equal(wantAt) {
				t.Fatalf("previous movement of %d at %s: windows %s %v, store %s %v", mv.ID, mv.At, gotAt, gotOK, wantAt, wantOK)
			}
		}
		// After the batch's last movement: the store answers.
		lastMv := mvs[len(mvs)-1]
		same("after the batch", w, monitoring.WindowQuery{Direction: monitoring.In, Kinds: allIn, From: base, To: lastMv.At.Add(time.Hour)})
		// A batch of one has a budget of 40 movements: the months it reads
		// hold more, so it reads from the store (and agrees all the same).
		if spent := monitoring.ReadsFromStore(w); spent != (len(mvs) == 1) {
			t.Errorf("batch %v reads from the store: %v", batch, spent)
		}
	}
	if !monitoring.ReadsFromStore(monitoring.WindowsFor(store, subject, all[:15])) || monitoring.ReadsFromStore(monitoring.WindowsFor(store, subject, all[:16])) {
		t.Error("batches of fewer than 16 movements read from the store, larger ones once")
	}
	if queries < 4000 {
		t.Fatalf("%d windows compared", queries)
	}
}
