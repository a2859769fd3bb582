package apptest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// DigestOptions shapes TableDigest: Skip leaves tables out (each with the
// reason a refused request may change it), Volatile leaves columns out of
// a table's rows, and Extra adds queries of the form
// `SELECT 'name', value::text ...` (for example a count of the rows of a
// skipped table that must not change).
type DigestOptions struct {
	Skip     map[string]string
	Volatile map[string][]string
	Extra    []string
}

// TableDigest returns an md5 of every row of every table of the test
// database, by table, in one round trip: two digests differ exactly where
// the content changed. The hostile-input tests use it to prove that a
// refused request changed nothing.
func (e *Env) TableDigest(t testing.TB, o DigestOptions) map[string]string {
	t.Helper()
	var tables []string
	if err := e.App.DB.Select(&tables, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, tb := range tables {
		if _, skip := o.Skip[tb]; skip {
			continue
		}
		row := "to_jsonb(t)"
		for _, c := range o.Volatile[tb] {
			row += " - '" + c + "'"
		}
		parts = append(parts, fmt.Sprintf(`SELECT '%s' AS name, md5(coalesce(string_agg((%s)::text, '|' ORDER BY (%s)::text), '')) AS sum FROM %q t`, tb, row, row, tb))
	}
	parts = append(parts, o.Extra...)
	var rows []struct {
		Name string `db:"name"`
		Sum  string `db:"sum"`
	}
	if err := e.App.DB.Select(&rows, strings.Join(parts, " UNION ALL ")); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Sum
	}
	return out
}

// ChangedTables lists, sorted, the names whose digest differs between a
// and b (TableDigest), or that only one of them has.
func ChangedTables(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
