package monitoring

import (
	"testing"
	"time"
)

func TestHighRiskCountriesFileParses(t *testing.T) {
	list := HighRiskCountries()
	if len(list) < 20 {
		t.Fatalf("%d countries: the file is not read", len(list))
	}
	for code, want := range map[string]string{"KP": TierCallForAction, "IR": TierCallForAction, "SY": TierEUHighRisk, "BG": TierIncreasedMonitoring} {
		if got := list[code].Tier; got != want {
			t.Errorf("%s: tier %q, want %q", code, got, want)
		}
	}
	for _, clean := range []string{"DE", "FR", "GB", ""} {
		if _, ok := list[clean]; ok {
			t.Errorf("%q is listed", clean)
		}
	}
}

func TestFmtEUR(t *testing.T) {
	for minor, want := range map[int64]string{0: "0.00 EUR", 5: "0.05 EUR", 100000: "1,000.00 EUR", 1420000: "14,200.00 EUR",
		123456789: "1,234,567.89 EUR", -1420000: "-14,200.00 EUR"} {
		if got := fmtEUR(minor); got != want {
			t.Errorf("fmtEUR(%d) = %q, want %q", minor, got, want)
		}
	}
}

func TestToEUR(t *testing.T) {
	if got := ToEUR(195583, "BGN"); got != 100000 {
		t.Errorf("1,955.83 BGN = %d EUR minor, want 100000", got)
	}
	if got := ToEUR(86000, "GBP"); got != 100000 {
		t.Errorf("860 GBP = %d EUR minor, want 100000", got)
	}
	if got := ToEUR(12345, "EUR"); got != 12345 {
		t.Errorf("EUR converted to %d", got)
	}
}

func TestProfileBands(t *testing.T) {
	p := Profile{IncomingBand: "Between 1001 and 5000 EUR", OutgoingBand: "More than 15 000 EUR", FrequencyBand: "Between 3-5 times"}
	p.derive()
	if p.IncomingMonthlyEUR != 500000 || p.OutgoingMonthlyEUR != 0 || p.IncomingPerMonth != 5 {
		t.Errorf("derived %+v: want 5,000 EUR in, unbounded out, 5 a month", p)
	}
}

func TestMonthStartAndCounterparties(t *testing.T) {
	at := time.Date(2026, 3, 31, 23, 59, 0, 0, time.FixedZone("x", 3*3600))
	if got := monthStart(at); !got.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("month start %v", got)
	}
	if CounterpartyKey(" de89 3704 ") != CounterpartyKey("DE893704") || CounterpartyKey("") != "" {
		t.Error("counterparty keys ignore spaces and case; an empty identifier has none")
	}
	if IBANCountry("ir06 2960") != "IR" || IBANCountry("12345") != "" {
		t.Error("IBAN country")
	}
}
