package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"emi/internal/postgres/pgtest"
)

// postgres.Open turns on lib/pq's binary_parameters (one round trip per
// statement). Under it []byte parameters travel in binary format: right for
// bytea, wrong for jsonb, which is why the stores pass JSON as text. This test
// pins both halves, so that turning the option off (or passing JSON as []byte
// again) is noticed.
func TestBinaryParameters(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := context.Background()

	var s string
	err := db.GetContext(ctx, &s, `SELECT $1::jsonb::text`, []byte(`{"a":1}`))
	if err == nil || !strings.Contains(err.Error(), "unsupported jsonb version number") {
		t.Fatalf("jsonb from []byte: %q, %v; want the binary-format error (is binary_parameters on?)", s, err)
	}
	if err := db.GetContext(ctx, &s, `SELECT $1::jsonb::text`, `{"a": 1}`); err != nil || s != `{"a": 1}` {
		t.Fatalf("jsonb from string: %q, %v", s, err)
	}

	// bytea arrives byte for byte, including what text format would escape.
	in := []byte("\\x00\x00\xff'\"\\")
	var out []byte
	if err := db.GetContext(ctx, &out, `SELECT $1::bytea`, in); err != nil || !bytes.Equal(out, in) {
		t.Fatalf("bytea round trip: %q, %v; want %q", out, err, in)
	}
}
