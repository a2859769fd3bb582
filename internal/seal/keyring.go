package seal

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// MasterKeySize is the length in bytes of every master key.
const MasterKeySize = 32

// HKDF info labels. Each derived key has its own label, so the keys are
// independent of each other. Changing a label makes every stored ciphertext
// and lookup digest unreadable: the labels are part of the stored format.
const (
	infoDataKey   = "emi/seal/aes-256-gcm/v1"
	infoKeyID     = "emi/seal/key-id/v1"
	infoLookupKey = "emi/seal/lookup-hmac/v1"
)

const (
	dataKeySize   = 32 // AES-256
	keyIDSize     = 8
	lookupKeySize = 32 // HMAC-SHA256; as long as the hash output
)

// ErrInvalidKey is wrapped by the errors of NewKeyring and ParseMasterKey when
// a master key is malformed: wrong length, not base64, or a duplicate.
var ErrInvalidKey = errors.New("seal: invalid master key")

// Keyring holds the keys derived from one current master key and any number
// of previous ones. Seal and Lookup use the current key; Open and LookupAll
// also use the previous ones, which is what makes key rotation possible.
//
// A Keyring is immutable after NewKeyring and safe for concurrent use. It
// never holds the master keys themselves, only keys derived from them, and
// its String, GoString, Format and LogValue methods print only the current
// key id and the number of keys.
//
// The zero Keyring holds no keys: Seal and Lookup fail or return nil on it.
type Keyring struct {
	// The keys sit behind a pointer so that even a Keyring value embedded in
	// an unexported field (where fmt cannot call Format) prints as an
	// address, never as key bytes.
	r *ring
}

// ring is the immutable content of a Keyring.
type ring struct {
	keys []*derivedKey // keys[0] is the current key; never empty
}

// derivedKey is everything derived from one master key.
type derivedKey struct {
	id        [keyIDSize]byte
	dataKey   []byte // AES-256-GCM key
	lookupKey []byte // HMAC-SHA256 key for Lookup
}

// NewKeyring derives a keyring from the current master key and zero or more
// previous master keys (oldest last, by convention). Each master key must be
// exactly MasterKeySize bytes. The master keys are not retained; the caller
// may wipe them after the call.
//
// Returns an error wrapping ErrInvalidKey, naming which key is wrong (by
// position, never by value), if a key has the wrong length or if the same
// key (or two keys with the same key id) is given twice.
func NewKeyring(current []byte, previous ...[]byte) (*Keyring, error) {
	masters := make([][]byte, 0, 1+len(previous))
	masters = append(masters, current)
	masters = append(masters, previous...)

	r := &ring{keys: make([]*derivedKey, 0, len(masters))}
	for i, m := range masters {
		name := keyName(i)
		if len(m) != MasterKeySize {
			return nil, fmt.Errorf("%w: %s is %d bytes, want %d", ErrInvalidKey, name, len(m), MasterKeySize)
		}
		for j := range i {
			if subtle.ConstantTimeCompare(m, masters[j]) == 1 {
				return nil, fmt.Errorf("%w: %s duplicates %s", ErrInvalidKey, name, keyName(j))
			}
		}
		dk, err := derive(m)
		if err != nil {
			return nil, fmt.Errorf("seal: deriving keys from %s: %w", name, err)
		}
		for j, other := range r.keys {
			// Distinct master keys colliding on a 64-bit id is a 2^-64 event,
			// but Open could not tell them apart, so refuse rather than guess.
			if other.id == dk.id {
				return nil, fmt.Errorf("%w: %s has the same key id as %s", ErrInvalidKey, name, keyName(j))
			}
		}
		r.keys = append(r.keys, dk)
	}
	return &Keyring{r: r}, nil
}

// keyName names a master key by its position in the NewKeyring arguments.
func keyName(i int) string {
	if i == 0 {
		return "current key"
	}
	return fmt.Sprintf("previous key #%d", i)
}

// derive computes the data key, key id and lookup key of one master key with
// HKDF-SHA256. The salt is empty: master keys are uniformly random, so the
// extract step needs none (RFC 5869 section 3.1). Returns an error only if
// HKDF itself fails, which it cannot for these lengths.
func derive(master []byte) (*derivedKey, error) {
	dataKey, err := hkdf.Key(sha256.New, master, nil, infoDataKey, dataKeySize)
	if err != nil {
		return nil, err
	}
	id, err := hkdf.Key(sha256.New, master, nil, infoKeyID, keyIDSize)
	if err != nil {
		return nil, err
	}
	lookupKey, err := hkdf.Key(sha256.New, master, nil, infoLookupKey, lookupKeySize)
	if err != nil {
		return nil, err
	}
	dk := &derivedKey{dataKey: dataKey, lookupKey: lookupKey}
	copy(dk.id[:], id)
	return dk, nil
}

// ParseMasterKey decodes a master key given as base64: standard or URL-safe
// alphabet, padded or not. Surrounding white space (a trailing newline from a
// secrets file) is ignored.
//
// Returns an error wrapping ErrInvalidKey if the text is empty, is not base64
// or does not decode to exactly MasterKeySize bytes. The error never contains
// the text itself.
func ParseMasterKey(b64 string) ([]byte, error) {
	s := strings.TrimSpace(b64)
	if s == "" {
		return nil, fmt.Errorf("%w: master key is empty", ErrInvalidKey)
	}
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.URLEncoding,
		base64.RawStdEncoding, base64.RawURLEncoding,
	} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != MasterKeySize {
			// Do not print the decoder's error or the text: only the length.
			return nil, fmt.Errorf("%w: master key decodes to %d bytes, want %d", ErrInvalidKey, len(key), MasterKeySize)
		}
		return key, nil
	}
	return nil, fmt.Errorf("%w: master key is not valid base64 (standard or URL-safe, %d characters given)", ErrInvalidKey, len(s))
}

// CurrentKeyID returns the id of the current key as 16 hex digits, for status
// output and logs. The id is derived one-way from the master key and is also
// written in clear into every ciphertext, so it is not secret. Returns "" for
// the zero Keyring.
func (k *Keyring) CurrentKeyID() string {
	if k == nil || k.r == nil {
		return ""
	}
	return hex.EncodeToString(k.r.keys[0].id[:])
}

// current returns the current key, or nil for the zero Keyring.
func (k *Keyring) current() *derivedKey {
	if k == nil || k.r == nil {
		return nil
	}
	return k.r.keys[0]
}

// keys returns every loaded key, current first; nil for the zero Keyring.
func (k *Keyring) keys() []*derivedKey {
	if k == nil || k.r == nil {
		return nil
	}
	return k.r.keys
}

// byID returns the loaded key with the given id, or nil if none has it.
func (k *Keyring) byID(id []byte) *derivedKey {
	for _, dk := range k.keys() {
		if subtle.ConstantTimeCompare(dk.id[:], id) == 1 {
			return dk
		}
	}
	return nil
}

// String returns a redacted description such as
// "seal.Keyring{current:0123456789abcdef, keys:2}". It never contains key
// material.
func (k Keyring) String() string {
	if k.r == nil {
		return "seal.Keyring{current:none, keys:0}"
	}
	return fmt.Sprintf("seal.Keyring{current:%s, keys:%d}", k.CurrentKeyID(), len(k.r.keys))
}

// GoString returns the same redacted description as String, so %#v cannot
// print key material either.
func (k Keyring) GoString() string { return k.String() }

// Format prints the redacted description of String for every verb and flag
// (%v, %+v, %#v, %s, %q, %x, %d...), so no fmt verb reaches the fields.
func (k Keyring) Format(f fmt.State, _ rune) {
	_, _ = f.Write([]byte(k.String()))
}

// LogValue returns the redacted description of String for log/slog.
func (k Keyring) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalText returns the redacted description of String, so encoding/json,
// encoding/xml and text handlers print it instead of an empty object. It never
// fails.
func (k Keyring) MarshalText() ([]byte, error) { return []byte(k.String()), nil }
