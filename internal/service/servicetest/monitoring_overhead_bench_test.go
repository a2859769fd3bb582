package servicetest_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"emi/internal/app/apptest"
	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// Issue 32 item 7: the rules that can stop money add at most 2 ms at p99
// to transfer_create and to a card authorization, and throughput with
// monitoring on is at least 0.85 of throughput with it off, measured in
// the same run.
//
// BenchmarkMonitoringOverhead runs two applications side by side, one
// with monitoring on (the shipped rules) and one with it off
// (apptest.Options.MonitoringOff), each with overheadWorkers pairs of
// funded accounts of one partner's people and a card with a PIN on the
// first account of each pair, and compares two operations: an internal
// transfer (Transfers.Create, 1.00 EUR between the pair's accounts, one
// way then the other) and a POS payment with the PIN
// (Authorizations.Authorize, 0.10 EUR, approved).
//
// First with overheadWorkers goroutines, each on its own accounts and
// card (so lock waits between them do not blur the comparison), for
// overheadRound, on and off in turn (on, off, then off, on, …: drift of
// the machine falls on both sides), overheadRounds times after a warm-up
// round: the latencies of every operation and the throughput of the
// rounds (the metrics without a prefix: p50, p99, p99 added = on − off,
// ops/s and throughput on/off). The machine is then saturated, and a
// latency is mostly the time spent waiting behind the other goroutines:
// what monitoring costs one operation shows in it multiplied by the
// queue. Then with one goroutine, on and off alternating operation by
// operation for overheadPaired: the cost itself (the metrics c1-…: p50
// and p99 added).
//
// The after-the-fact evaluation is a job, which nothing runs here: the
// figures are the cost of what monitoring does inside the booking
// transaction (recording the movement, screening, queueing the job).
// BenchmarkMonitoringEvaluate measures the evaluation. The figures of a
// shared machine are noisy: compare runs, not one figure.
func BenchmarkMonitoringOverhead(b *testing.B) {
	on, off := newOverheadApp(b, false), newOverheadApp(b, true)
	ops := []struct {
		name, short string
		run         func(o *overheadApp, worker, i int) error
	}{
		{"transfer_create", "transfer", (*overheadApp).transfer},
		{"card_authorize", "auth", (*overheadApp).authorize},
	}
	for b.Loop() {
		// With overheadWorkers goroutines: rounds, on and off in turn.
		res := make([]overheadSides, len(ops))
		for round := -1; round < overheadRounds; round++ {
			for k, op := range ops {
				// The warm-up round (-1) is thrown away; then the order
				// alternates so neither side always runs first.
				first, second := on, off
				if round%2 != 0 {
					first, second = off, on
				}
				x := runOverheadRound(b, first, overheadWorkers, overheadRound, op.run)
				y := runOverheadRound(b, second, overheadWorkers, overheadRound, op.run)
				if round < 0 {
					continue
				}
				if first == off {
					x, y = y, x
				}
				res[k].on.add(x)
				res[k].off.add(y)
			}
		}
		// With one goroutine: on and off alternate operation by
		// operation, so both meet the same machine.
		seq := make([]overheadSides, len(ops))
		for k, op := range ops {
			seq[k] = runOverheadPaired(b, on, off, overheadPaired, op.run)
		}
		report := func(title, prefix string, res []overheadSides, throughput bool) {
			b.Logf("%s (2 cores shared with other work: noisy)", title)
			b.Logf("%-16s %6s %8s %8s %8s %8s %8s %9s %8s %8s %6s", "operation", "n on", "p50 on", "p50 off", "p99 on", "p99 off",
				"p50 added", "p99 added", "tput on", "tput off", "ratio")
			for k, op := range ops {
				s := res[k]
				p50on, p99on := s.on.quantile(0.50), s.on.quantile(0.99)
				p50off, p99off := s.off.quantile(0.50), s.off.quantile(0.99)
				ratio := s.on.throughput() / s.off.throughput()
				b.Logf("%-16s %6d %6.2fms %6.2fms %6.2fms %6.2fms %7.2fms %7.2fms %6.0f/s %6.0f/s %6.3f", op.name, len(s.on.lat),
					p50on, p50off, p99on, p99off, p50on-p50off, p99on-p99off, s.on.throughput(), s.off.throughput(), ratio)
				m := prefix + op.short
				if throughput {
					b.ReportMetric(p50on, m+"-on-p50-ms")
					b.ReportMetric(p50off, m+"-off-p50-ms")
					b.ReportMetric(p99on, m+"-on-p99-ms")
					b.ReportMetric(p99off, m+"-off-p99-ms")
					b.ReportMetric(s.on.throughput(), m+"-on-ops/s")
					b.ReportMetric(s.off.throughput(), m+"-off-ops/s")
					b.ReportMetric(ratio, m+"-throughput-on/off")
				} else {
					b.ReportMetric(p50on-p50off, m+"-p50-added-ms")
				}
				b.ReportMetric(p99on-p99off, m+"-p99-added-ms")
			}
		}
		report(fmt.Sprintf("monitoring on against off, %d goroutines, %d rounds of %s each", overheadWorkers, overheadRounds, overheadRound),
			"", res, true)
		report(fmt.Sprintf("monitoring on against off, one goroutine alternating, %s per operation", overheadPaired), "c1-", seq, false)
	}
	// The time per iteration is the whole comparison's: it says nothing.
	b.ReportMetric(0, "ns/op")
}

// overheadSides are the figures of both applications.
type overheadSides struct{ on, off overheadStats }

const (
	overheadWorkers = 8
	overheadRounds  = 8
	overheadRound   = 750 * time.Millisecond
	overheadPaired  = 15 * time.Second
	// overheadPIN is the cards' PIN, which a POS payment needs.
	overheadPIN = "739264"
)

// overheadApp is one application of the comparison: a partner, and per
// goroutine a pair of funded accounts and a card on the first.
type overheadApp struct {
	*monitoringApp
	off   bool
	pairs [overheadWorkers][2]string
	cards [overheadWorkers]string
}

func newOverheadApp(b *testing.B, off bool) *overheadApp {
	b.Helper()
	env := apptest.New(b, apptest.Options{NoSanctions: true, MonitoringOff: off})
	o := &overheadApp{monitoringApp: &monitoringApp{env: env, p: env.NewPartner(b, emi.PartnerCreate{Name: "Benchmarked Partner"})}, off: off}
	ctx := o.partner()
	for w := range overheadWorkers {
		for j := range 2 {
			u, err := env.App.Users.Create(ctx, emi.UserCreate{Email: kernel.NewToken() + "@example.com",
				UserFields: emi.UserFields{FirstName: "Bea", LastName: fmt.Sprintf("Marker %c%c", 'a'+w, 'a'+j)}})
			if err != nil {
				b.Fatalf("create person: %v", err)
			}
			a, err := env.App.Accounts.Create(ctx, emi.AccountCreate{Program: "account_eur", User: u.Token})
			if err != nil {
				b.Fatalf("open the person's account: %v", err)
			}
			env.Fund(b, a.Token, a.Balances[0].Token, "EUR", 1_000_000_00)
			o.pairs[w][j] = a.Token
		}
		c, err := env.App.Cards.Create(ctx, emi.CardCreate{Account: o.pairs[w][0], Type: emi.CardVirtual, PIN: overheadPIN})
		if err != nil {
			b.Fatalf("issue a card: %v", err)
		}
		o.cards[w] = c.Token
	}
	return o
}

// transfer sends 1.00 EUR between the worker's two accounts, one way then
// the other.
func (o *overheadApp) transfer(worker, i int) error {
	src, dst := o.pairs[worker][i%2], o.pairs[worker][1-i%2]
	_, err := o.env.App.Transfers.Create(o.partner(), emi.TransferCreate{Source: emi.TransferParty{Account: src},
		Destination: emi.TransferParty{Account: dst}, Amount: 100, Currency: "EUR", Reference: "bench"})
	return err
}

// authorize pays 0.10 EUR at a shop's terminal with the worker's card
// (the daily limit of 5,000 EUR is far away); anything but an approval
// is an error.
func (o *overheadApp) authorize(worker, _ int) error {
	au, err := o.env.App.Authorizations.Authorize(o.partner(), o.cards[worker], emi.AuthorizationRequest{Amount: 10, Currency: "EUR",
		MCC: "5411", Channel: emi.ChannelPOS, PIN: overheadPIN, MerchantName: "Corner Shop", MerchantCountry: "DE"})
	if err == nil && au.ReasonCode != emi.ReasonApproved {
		err = fmt.Errorf("declined %s (%s)", au.ReasonCode, emi.AuthorizationReason(au.ReasonCode))
	}
	return err
}

// overheadStats are the latencies of a side's operations, in
// milliseconds, and the rounds' operations and time.
type overheadStats struct {
	lat     []float64
	elapsed time.Duration
}

func (s *overheadStats) add(r overheadStats) {
	s.lat = append(s.lat, r.lat...)
	s.elapsed += r.elapsed
}

func (s *overheadStats) quantile(q float64) float64 {
	if len(s.lat) == 0 {
		return 0
	}
	slices.Sort(s.lat)
	return s.lat[int(q*float64(len(s.lat)-1)+0.5)]
}

func (s *overheadStats) throughput() float64 { return float64(len(s.lat)) / s.elapsed.Seconds() }

// runOverheadPaired runs op for d with one goroutine, on one application
// then on the other (on first, then off first, …), and returns each
// side's latencies; an operation's error fails the benchmark.
func runOverheadPaired(b *testing.B, on, off *overheadApp, d time.Duration, op func(o *overheadApp, worker, i int) error) overheadSides {
	b.Helper()
	var res overheadSides
	run := func(o *overheadApp, s *overheadStats, i int) {
		t0 := time.Now()
		if err := op(o, 0, i); err != nil {
			b.Fatalf("monitoring off %v: %v", o.off, err)
		}
		el := time.Since(t0)
		s.lat = append(s.lat, float64(el)/float64(time.Millisecond))
		s.elapsed += el
	}
	for i, deadline := 0, time.Now().Add(d); time.Now().Before(deadline); i++ {
		if i%2 == 0 {
			run(on, &res.on, i)
			run(off, &res.off, i)
		} else {
			run(off, &res.off, i)
			run(on, &res.on, i)
		}
	}
	return res
}

// runOverheadRound runs op with workers goroutines (at most
// overheadWorkers) for d and returns every operation's latency; an
// operation's error fails the benchmark.
func runOverheadRound(b *testing.B, o *overheadApp, workers int, d time.Duration, op func(o *overheadApp, worker, i int) error) overheadStats {
	b.Helper()
	var wg sync.WaitGroup
	lat := make([][]float64, workers)
	start := time.Now()
	deadline := start.Add(d)
	var failed sync.Once
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				if err := op(o, w, i); err != nil {
					failed.Do(func() { b.Errorf("monitoring off %v: %v", o.off, err) })
					return
				}
				lat[w] = append(lat[w], float64(time.Since(t0))/float64(time.Millisecond))
			}
		})
	}
	wg.Wait()
	s := overheadStats{elapsed: time.Since(start)}
	for _, l := range lat {
		s.lat = append(s.lat, l...)
	}
	if b.Failed() {
		b.FailNow()
	}
	return s
}
