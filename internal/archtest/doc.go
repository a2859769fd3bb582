// Package archtest holds no code: its test enforces the dependency direction
// described in shared/design/architecture.md ("Layout"), so that a forbidden
// import fails `go test ./...` (and so `make test` and CI) with the rule's
// reason and the import chain that breaks it.
//
// It is a Go test rather than golangci-lint's depguard because it needs no
// tool to install or keep in step with the Go version, it runs wherever the
// tests run, it also catches a forbidden package reached through another
// package of the module, and its own self-test proves the rules can fail.
// The rules are the table at the top of arch_test.go.
package archtest
