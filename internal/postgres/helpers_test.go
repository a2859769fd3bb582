package postgres_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
)

func randSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
