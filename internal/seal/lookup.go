package seal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// LookupSize is the length in bytes of a digest from Lookup.
const LookupSize = sha256.Size

// Lookup returns a keyed digest of value for equality searches over sealed
// data (for example finding a card by PAN without decrypting every row):
// HMAC-SHA256 under the current key's lookup key of
//
//	uint64 big-endian len(context) | context | value
//
// The length prefix keeps ("a", "bc") and ("ab", "c") apart. The digest is
// deterministic, so it reveals which rows hold equal values in the same
// context, and nothing else; it is keyed (PCI DSS 3.5.1.1), so it cannot be
// recomputed or brute-forced without the key. Returns nil for the zero
// Keyring.
func (k *Keyring) Lookup(context string, value []byte) []byte {
	dk := k.current()
	if dk == nil {
		return nil
	}
	return lookup(dk, context, value)
}

// LookupAll returns the Lookup digest of value under every loaded key, the
// current key first and then the previous keys in NewKeyring order. During a
// rotation, a search for any of them still finds rows whose digest was stored
// under a previous key. Returns nil for the zero Keyring.
func (k *Keyring) LookupAll(context string, value []byte) [][]byte {
	keys := k.keys()
	if len(keys) == 0 {
		return nil
	}
	out := make([][]byte, len(keys))
	for i, dk := range keys {
		out[i] = lookup(dk, context, value)
	}
	return out
}

// lookup computes the digest of Lookup under dk.
func lookup(dk *derivedKey, context string, value []byte) []byte {
	mac := hmac.New(sha256.New, dk.lookupKey)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(context)))
	mac.Write(n[:])
	mac.Write([]byte(context))
	mac.Write(value)
	return mac.Sum(nil)
}
