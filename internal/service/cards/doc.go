// Package cards is payment cards: issue, replacement, status and block
// reasons, PIN, 3-D Secure, groups, wallets and the audited card-number
// reveal (Cards), card-number generation (NewPAN), and card authorizations
// against the account's balance (Authorizations). It imports the kernel,
// people (the holder's AML check) and accounts (ledger holds).
package cards
