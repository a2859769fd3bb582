// Package transfers is money moving: transfers between accounts and
// to other banks (Transfers), their reversal, incoming payments and the
// suspense queue (Incoming), and staff adjustments (Adjustments), each posted
// through the accounts ledger. It imports the kernel, staff (controls) and
// accounts (ledger).
package transfers
