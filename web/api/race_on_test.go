//go:build race

package api_test

// raceDetector: the tests run under -race, which slows every request
// several times; the ledger load tests then send fewer transfers (the race
// detector needs concurrency, not volume), and `make test` runs them again
// at full size without it.
const raceDetector = true
