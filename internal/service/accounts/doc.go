// Package accounts is where money is held: accounts and virtual
// accounts with their IBANs (Accounts), programs, statements, the staff's
// account views and two-person termination, and the double-entry ledger
// (Ledger: balances, holds, postings, the sides of a movement). It imports
// the kernel and staff (controls).
package accounts
