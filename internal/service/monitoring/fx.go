package monitoring

import "math"

// EUR per unit of each currency emi holds, for monitoring only: the
// thresholds and declared bands are in euros and need an order of
// magnitude, not accounting precision (the ledger never converts). BGN is
// pegged to the euro (1 EUR = 1.95583 BGN, the currency board's rate);
// GBP is the ECB euro reference rate's order of magnitude in 2025–2026
// (1 EUR ≈ 0.86 GBP). Update the GBP figure when it drifts by more than a
// few per cent.
var eurPer = map[string]float64{
	"EUR": 1,
	"BGN": 1 / 1.95583,
	"GBP": 1 / 0.86,
}

// ToEUR converts minor units of currency to EUR minor units (an unknown
// currency counts as EUR).
func ToEUR(minor int64, currency string) int64 {
	r, ok := eurPer[currency]
	if !ok {
		return minor
	}
	return int64(math.Round(float64(minor) * r))
}
