package monitoring

import (
	_ "embed"
	"strings"
	"sync"
)

// Tiers of high_risk_countries.tsv, strictest first.
const (
	TierCallForAction       = "call_for_action"
	TierEUHighRisk          = "eu_high_risk"
	TierIncreasedMonitoring = "increased_monitoring"
)

// Country is a high-risk jurisdiction.
type Country struct {
	Code, Tier, Name string
}

//go:embed high_risk_countries.tsv
var highRiskTSV string

// HighRiskCountries returns the list in high_risk_countries.tsv, by code.
// The file is parsed once; a malformed line panics at the first use (a
// test reads it, so a bad edit never ships).
var HighRiskCountries = sync.OnceValue(func() map[string]Country {
	out := map[string]Country{}
	for line := range strings.Lines(highRiskTSV) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 || len(f[0]) != 2 || (f[1] != TierCallForAction && f[1] != TierEUHighRisk && f[1] != TierIncreasedMonitoring) {
			panic("monitoring: high_risk_countries.tsv: bad line " + line)
		}
		if _, dup := out[f[0]]; dup {
			panic("monitoring: high_risk_countries.tsv: " + f[0] + " twice")
		}
		out[f[0]] = Country{Code: f[0], Tier: f[1], Name: f[2]}
	}
	return out
})
