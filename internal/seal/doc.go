// Package seal encrypts the secrets emi stores (card numbers, CVV2s, PINs,
// partner API secrets) and computes keyed lookup digests for them. It uses
// only the Go standard library.
//
// # Keys and derivation
//
// Operators provide 32-byte random master keys, as base64 (ParseMasterKey).
// A Keyring holds one current master key and any previous ones
// (NewKeyring(current, previous...)). No master key is ever used directly:
// from each one, HKDF-SHA256 (RFC 5869, empty salt since master keys are
// uniformly random) derives three independent values, each with its own info
// label:
//
//	"emi/seal/aes-256-gcm/v1"  32-byte AES-256-GCM data key
//	"emi/seal/key-id/v1"        8-byte key id, stored in clear in each value
//	"emi/seal/lookup-hmac/v1"  32-byte HMAC-SHA256 key for Lookup
//
// The key id names a key without revealing it, so a Keyring can find the key
// a value was sealed under. The lookup key is separate from the data key
// (PCI DSS 3.5.1.1 asks for keyed hashes, and using one key for two
// algorithms is poor practice). The labels are part of the stored format:
// changing one makes existing data unreadable, and a test pins them.
//
// # Format
//
// Seal returns
//
//	version 0x01 | key id (8 bytes) | nonce (12 bytes) | ciphertext | GCM tag (16 bytes)
//
// which is Overhead (37) bytes longer than the plaintext. The nonce is 96
// random bits from crypto/rand, fresh for every call, so sealing the same
// value twice (two cards with PIN 1234) gives unrelated ciphertexts. Random
// nonces limit one key to 2^32 sealed values (NIST SP 800-38D); rotate long
// before that.
//
// # Context as associated data
//
// Every call names a context, the place where the value is stored, for example
// "cards.pan:<card token>" or "partner_keys.secret:<key id>". The GCM
// associated data is the 9-byte header (version and key id) followed by the
// context. The context is authenticated but not stored, so a ciphertext
// copied into another row or column (an attacker with write access to the
// database swapping card A's PIN into card B's row) fails to open with
// ErrCorrupt instead of revealing A's PIN as B's. Callers must build contexts
// from values that identify the row and never change (tokens, not
// positions), and must use the same context to open.
//
// # Lookups
//
// Sealed values are randomised, so they cannot be compared. For equality
// searches (is this PAN already on file?), store Lookup(context, value) next
// to the ciphertext: an HMAC-SHA256 under the lookup key over a
// length-prefixed context and the value. It is never a bare hash: the PANs
// of one BIN are few enough to enumerate, so an unkeyed hash would give them
// away, while this digest cannot be computed without the lookup key.
//
// # Rotation
//
//  1. Generate a new master key and deploy it as the current key, with the
//     old one listed as previous: NewKeyring(new, old). New values are
//     sealed under the new key; old values still open.
//  2. Search with LookupAll, which returns the digest under every loaded key,
//     current first, so rows whose digest is still under the old key are
//     found.
//  3. Run the re-encryption job: for every stored value with
//     NeedsRekey(value), store Rekey(value, context), and recompute its
//     lookup digest with Lookup. Rekey checks the value under the old key
//     before sealing it under the new one; an error is a row to investigate,
//     not to skip.
//  4. When no row needs a rekey, remove the old key: NewKeyring(new). A
//     value still under the old key now fails with ErrUnknownKey, which is
//     the signal the job missed something.
//
// # Safety
//
// A Keyring is immutable and safe for concurrent use. It keeps only derived
// keys, never master keys. Its String, GoString, Format, LogValue and
// MarshalText methods print "seal.Keyring{current:<key id>, keys:<n>}" and
// nothing more, so logging or printing a Keyring by accident leaks no key.
// Errors name what is wrong (length, version, key id) and never contain
// plaintext or key material.
//
// # Known gap: software keys, no HSM
//
// The keys live in the process memory of the emi server, and the master keys
// come from its configuration. There is no hardware security module (HSM) or
// external key management service, no split knowledge or dual control of
// master keys, and Go cannot reliably erase key bytes from memory (the
// garbage collector may copy them). Anyone who can read the server's memory
// or configuration can decrypt everything. PCI PIN Security expects a
// cleartext PIN to exist only inside a secure cryptographic device; this
// package does not meet that, and the deployment documentation must say so.
// The Keyring interface (Seal, Open, Lookup) is narrow enough that an
// HSM-backed implementation could replace it later.
package seal
