// Package archtest holds no code: its test enforces the dependency direction
// of docs/architecture ("Layout"), so that a forbidden import fails
// `go test ./...` (and so `make test` and CI) with the rule's reason, without
// a linter to install. See arch_test.go for the rules.
package archtest
