package postgres

import (
	"strings"
	"testing"
)

func TestNormalizeURLTakesBothHostListForms(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "postgres://emi@db1:5432,db2:5433/emi?sslmode=disable&target_session_attrs=read-write",
			want: "postgres://emi@/emi?host=db1%2Cdb2&port=5432%2C5433&sslmode=disable&target_session_attrs=read-write"},
		{in: "postgresql://emi:s%40cret@db1,db2:6000/emi",
			want: "postgresql://emi:s%40cret@/emi?host=db1%2Cdb2&port=5432%2C6000"},
		{in: "postgres://emi@db1,db2/emi?port=6432", want: "postgres://emi@/emi?host=db1%2Cdb2&port=6432%2C6432"},
		{in: "postgres://emi@[::1]:5432,[fd00::2]:5433/emi", want: "postgres://emi@/emi?host=%3A%3A1%2Cfd00%3A%3A2&port=5432%2C5433"},
		// Unchanged: one host, the query form, key=value strings.
		{in: "postgres://emi@db1:5432/emi?sslmode=disable", want: "postgres://emi@db1:5432/emi?sslmode=disable"},
		{in: "postgres://emi@/emi?host=db1,db2&port=1,2", want: "postgres://emi@/emi?host=db1,db2&port=1,2"},
		{in: "host=db1,db2 port=1,2 dbname=emi", want: "host=db1,db2 port=1,2 dbname=emi"},
		{in: "postgres://emi@db1,db2/emi?host=db3", err: "both"},
		{in: "postgres://emi@db1,,db2/emi", err: "empty host"},
		{in: "postgres://emi@db1:x:y,db2/emi", err: "not host:port"},
	} {
		got, err := NormalizeURL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("NormalizeURL(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestParsePooler(t *testing.T) {
	for in, want := range map[string]Pooler{"": PoolerTransaction, "transaction": PoolerTransaction, " Session ": PoolerNone,
		"direct": PoolerNone, "none": PoolerNone, "transaction-prepared": PoolerTransactionPrepared} {
		if got, err := ParsePooler(in); err != nil || got != want {
			t.Errorf("ParsePooler(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePooler("statement"); err == nil {
		t.Error("ParsePooler(statement): no error")
	}
	if PoolerTransaction.Prepares() || !PoolerNone.Prepares() || !PoolerTransactionPrepared.Prepares() {
		t.Error("Prepares: only none and transaction-prepared prepare")
	}
}

func TestBinaryParametersCannotBeTurnedOffBehindAPooler(t *testing.T) {
	for dsn, on := range map[string]bool{
		"postgres://h/db":                          true,
		"postgres://h/db?binary_parameters=no":     false,
		"host=h dbname=db":                         true,
		"host=h dbname=db binary_parameters=off":   false,
		"host=h dbname=db binary_parameters='yes'": true,
		"postgres://h1:1,h2:2/db?sslmode=disable":  true,
	} {
		n, err := NormalizeURL(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := binaryParametersOn(withBinaryParameters(n)); got != on {
			t.Errorf("%s: binary parameters on = %v, want %v", dsn, got, on)
		}
	}
}

func TestReadOnlyStatementSendsOnlyPlainReadsToAReplica(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT * FROM accounts WHERE token = $1":                true,
		"\n\t\tSELECT a.updated_at, last_update FROM accounts a": true,
		"WITH x AS (SELECT 1) SELECT * FROM x":                   true,
		"(SELECT 1) UNION (SELECT 2)":                            true,
		"SELECT * FROM accounts WHERE token = $1 FOR UPDATE":     false,
		"SELECT * FROM jobs FOR NO KEY UPDATE SKIP LOCKED":       false,
		"select * from t for share":                              false,
		"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d":  false,
		"INSERT INTO audit_log (action) VALUES ('x')":            false,
		"UPDATE t SET x = 1":                                     false,
		"SELECT nextval('serials')":                              false,
		"SELECT pg_notify('emi_jobs', '')":                       false,
		"SELECT pg_try_advisory_xact_lock(1)":                    false,
		"":                                                       false,
	} {
		if got := readOnlyStatement(q); got != want {
			t.Errorf("readOnlyStatement(%q) = %v, want %v", q, got, want)
		}
	}
}
