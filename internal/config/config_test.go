package config

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func vars(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

var goodKey = base64.StdEncoding.EncodeToString(make([]byte, 32))

func TestLoadDefaults(t *testing.T) {
	c, err := Load(vars(map[string]string{"DATABASE_URL": "postgres://x@localhost/emi", "EMI_MASTER_KEY": goodKey}), "db", "key")
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeProduction || c.Addr != ":8080" || c.AuthWindow != 15*time.Second || c.RateLimit != 600 ||
		c.SecretOverlap != 24*time.Hour || len(c.MasterKey) != 32 || c.PublicURL != "http://localhost:8080" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestLoadReportsEveryBadVariableWithoutItsValue(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":             "mysql://secret-password@db/emi",
		"EMI_MASTER_KEY":           "c2hvcnQ=", // "short"
		"EMI_PREVIOUS_MASTER_KEYS": goodKey + ",not!base64",
		"EMI_MODE":                 "staging",
		"EMI_PUBLIC_URL":           "ftp://example.com",
		"EMI_LOG_LEVEL":            "loud",
		"EMI_LOG_FORMAT":           "xml",
		"EMI_RATE_LIMIT":           "-1",
		"EMI_RATE_WINDOW":          "10",
		"EMI_AUTH_WINDOW":          "0s",
		"EMI_WORKERS":              "0",
		"EMI_SHUTDOWN_TIMEOUT":     "soon",
	}
	_, err := Load(vars(env), "db", "key")
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for name := range env {
		if !strings.Contains(msg, name) {
			t.Errorf("error does not name %s:\n%s", name, msg)
		}
	}
	for _, secret := range []string{"secret-password", "c2hvcnQ=", "not!base64"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error repeats the value %q", secret)
		}
	}
}

func TestLoadRequiresOnlyWhatTheCommandNeeds(t *testing.T) {
	if _, err := Load(vars(nil)); err != nil {
		t.Fatalf("nothing needed: %v", err)
	}
	_, err := Load(vars(nil), "db")
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") || strings.Contains(err.Error(), "EMI_MASTER_KEY") {
		t.Fatalf("db needed: %v", err)
	}
}

func TestParseKeyAcceptsTheUsualBase64Forms(t *testing.T) {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(250 + i) // bytes that differ between the alphabets
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k, err := ParseKey(enc.EncodeToString(raw))
		if err != nil || string(k) != string(raw) {
			t.Errorf("%v: %v", enc, err)
		}
	}
}
