package servicetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"emi/internal/service/monitoring"
)

// benchHistory is a history of 50 people × 100 movements: two thirds
// credits, one third payments, over a hundred hours.
func benchHistory(b *testing.B, m *monitoringApp) (file *bytes.Buffer, accounts []string) {
	const people, per = 50, 100
	file = &bytes.Buffer{}
	for i := range people {
		_, a := m.person(b, "Between 1001 and 5000 EUR", "Between 1001 and 5000 EUR", "Between 3-5 times", "Medium")
		accounts = append(accounts, a)
		for j := range per {
			l := incoming(fmt.Sprintf("r%d-%d", i, j), m.at(time.Duration(j)*time.Hour), a, "120.00", iban(j%17))
			if j%3 == 1 {
				l = outgoing(fmt.Sprintf("r%d-%d", i, j), m.at(time.Duration(j)*time.Hour), a, "50.00", iban(j%13))
			}
			line, _ := json.Marshal(l)
			file.Write(line)
			file.WriteByte('\n')
		}
	}
	return file, accounts
}

// BenchmarkHistoryImport books benchHistory through `emi sandbox
// import-history`'s service, the evaluation of every line included, and
// reports lines per second (the goal: 100,000 lines within a minute,
// 1,667 lines/s).
func BenchmarkHistoryImport(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		m := newMonitoringApp(b)
		file, _ := benchHistory(b, m)
		b.StartTimer()
		start := time.Now()
		res, err := m.env.App.HistoryImport.Import(context.Background(), m.p.ID, file)
		if err != nil || res.Booked != 5000 {
			b.Fatalf("import: %+v %v", res, err)
		}
		b.ReportMetric(float64(res.Booked)/time.Since(start).Seconds(), "lines/s")
	}
}

// BenchmarkMonitoringEvaluate records 5,000 movements and reports how many
// the rules evaluate per second after the fact (the goal: 500/s).
func BenchmarkMonitoringEvaluate(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		m := newMonitoringApp(b)
		_, accounts := benchHistory(b, m)
		err := m.env.App.DB.InTx(context.Background(), func(ctx context.Context) error {
			for i, a := range accounts {
				for j := range 100 {
					mv := monitoring.Movement{PartnerID: m.p.ID, Account: a, Kind: monitoring.KindIncoming, Direction: monitoring.In,
						Amount: 12000, Currency: "EUR", At: m.base.Add(time.Duration(j) * time.Hour),
						CounterpartyKey: monitoring.CounterpartyKey(iban(j % 17)), Ref: fmt.Sprintf("e%d-%d", i, j)}
					if j%3 == 1 {
						mv.Kind, mv.Direction, mv.Amount = monitoring.KindTransferOut, monitoring.Out, 5000
					}
					if err := m.env.App.Monitor.RecordUnqueued(ctx, mv); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		n, err := m.env.App.Monitor.Evaluate(context.Background())
		if err != nil || n != 5000 {
			b.Fatalf("evaluated %d: %v", n, err)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "movements/s")
	}
}
