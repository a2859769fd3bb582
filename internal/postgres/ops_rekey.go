package postgres

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/lib/pq"

	"emi/internal/emi"
	"emi/internal/service/ops"
)

// RekeyStore reads and writes the sealed columns of the tables listed by
// ops.SealedTables, for the key-rotation job (emi rekey). Table and
// column names come from that fixed list, never from input; they are
// checked and quoted all the same.
type RekeyStore struct {
	db *DB
}

// NewRekeyStore returns the store of the re-encryption job.
func NewRekeyStore(db *DB) *RekeyStore { return &RekeyStore{db: db} }

var _ ops.RekeyStore = (*RekeyStore)(nil)

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

func ident(name string) (string, error) {
	if !identifier.MatchString(name) {
		return "", emi.Internal(fmt.Errorf("rekey: %q is not a plain identifier", name))
	}
	return pq.QuoteIdentifier(name), nil
}

// whole reports whether column c of t is read whole by SealedRows (the
// lookup digest and the column it is computed from).
func whole(t ops.SealedTable, c string) bool {
	return t.Lookup != nil && (c == t.Lookup.Column || c == t.Lookup.Of)
}

// rekeyColumns is every column SealedRows reads: the sealed columns, then
// the lookup digest.
func rekeyColumns(t ops.SealedTable) []string {
	cols := make([]string, 0, len(t.Columns)+1)
	for _, c := range t.Columns {
		cols = append(cols, c.Name)
	}
	if t.Lookup != nil {
		cols = append(cols, t.Lookup.Column)
	}
	return cols
}

// SealedRows implements ops.RekeyStore.
func (s *RekeyStore) SealedRows(ctx context.Context, t ops.SealedTable, after string, limit, prefix int, lock bool) ([]ops.SealedRow, error) {
	table, err := ident(t.Name)
	if err != nil {
		return nil, err
	}
	key, err := ident(t.Key)
	if err != nil {
		return nil, err
	}
	cols := rekeyColumns(t)
	sel := make([]string, len(cols))
	for i, c := range cols {
		q, err := ident(c)
		if err != nil {
			return nil, err
		}
		if prefix > 0 && !whole(t, c) {
			// substring of bytea counts bytes; NULL stays NULL.
			q = "substring(" + q + " from 1 for " + strconv.Itoa(prefix) + ")"
		}
		sel[i] = q
	}
	args := []any{limit}
	where := ""
	if after != "" {
		where = " WHERE " + key + " > $2"
		args = append(args, after)
	}
	q := "SELECT " + key + "::text, " + strings.Join(sel, ", ") + " FROM " + table + where + " ORDER BY " + key + " LIMIT $1"
	if lock {
		q += " FOR UPDATE"
	}
	rows, err := s.db.Ext(ctx).QueryxContext(ctx, q, args...)
	if err != nil {
		return nil, Translate(err)
	}
	defer rows.Close()
	var out []ops.SealedRow
	for rows.Next() {
		var k string
		vals := make([][]byte, len(cols))
		dest := make([]any, 0, len(cols)+1)
		dest = append(dest, &k)
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, Translate(err)
		}
		r := ops.SealedRow{Key: k, Values: make(map[string][]byte, len(cols))}
		for i, c := range cols {
			r.Values[c] = vals[i]
		}
		out = append(out, r)
	}
	return out, Translate(rows.Err())
}

// SealedValues implements ops.RekeyStore.
func (s *RekeyStore) SealedValues(ctx context.Context, t ops.SealedTable, columns, keys []string) (map[string]map[string][]byte, error) {
	table, err := ident(t.Name)
	if err != nil {
		return nil, err
	}
	key, err := ident(t.Key)
	if err != nil {
		return nil, err
	}
	sel := make([]string, len(columns))
	for i, c := range columns {
		if sel[i], err = ident(c); err != nil {
			return nil, err
		}
	}
	rows, err := s.db.Ext(ctx).QueryxContext(ctx, "SELECT "+key+"::text, "+strings.Join(sel, ", ")+" FROM "+table+
		" WHERE "+key+" = ANY($1)", pq.StringArray(keys))
	if err != nil {
		return nil, Translate(err)
	}
	defer rows.Close()
	out := make(map[string]map[string][]byte, len(keys))
	for rows.Next() {
		var k string
		vals := make([][]byte, len(columns))
		dest := make([]any, 0, len(columns)+1)
		dest = append(dest, &k)
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, Translate(err)
		}
		m := make(map[string][]byte, len(columns))
		for i, c := range columns {
			m[c] = vals[i]
		}
		out[k] = m
	}
	return out, Translate(rows.Err())
}

// UpdateSealed implements ops.RekeyStore: one UPDATE ... FROM
// (VALUES ...) for the rows, coalesce keeping the columns a row does not
// set.
func (s *RekeyStore) UpdateSealed(ctx context.Context, t ops.SealedTable, rows []ops.SealedRow) error {
	if len(rows) == 0 {
		return nil
	}
	table, err := ident(t.Name)
	if err != nil {
		return err
	}
	key, err := ident(t.Key)
	if err != nil {
		return err
	}
	var cols []string
	seen := map[string]bool{}
	for _, r := range rows {
		for c := range r.Values {
			if !seen[c] {
				seen[c] = true
				cols = append(cols, c)
			}
		}
	}
	sort.Strings(cols)
	quoted := make([]string, len(cols))
	set := make([]string, len(cols))
	for i, c := range cols {
		if quoted[i], err = ident(c); err != nil {
			return err
		}
		set[i] = quoted[i] + " = coalesce(v." + quoted[i] + ", t." + quoted[i] + ")"
	}
	args := make([]any, 0, len(rows)*(len(cols)+1))
	tuples := make([]string, len(rows))
	for i, r := range rows {
		ph := make([]string, 0, len(cols)+1)
		args = append(args, r.Key)
		ph = append(ph, "$"+strconv.Itoa(len(args))+"::uuid")
		for _, c := range cols {
			args = append(args, r.Values[c]) // nil: NULL, the column is kept
			ph = append(ph, "$"+strconv.Itoa(len(args))+"::bytea")
		}
		tuples[i] = "(" + strings.Join(ph, ", ") + ")"
	}
	q := "UPDATE " + table + " AS t SET " + strings.Join(set, ", ") + " FROM (VALUES " + strings.Join(tuples, ", ") +
		") AS v(k, " + strings.Join(quoted, ", ") + ") WHERE t." + key + " = v.k"
	res, err := s.db.Ext(ctx).ExecContext(ctx, q, args...)
	if err != nil {
		return Translate(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Translate(err)
	}
	if n != int64(len(rows)) {
		return emi.Internal(fmt.Errorf("rekey: %s: %d of %d rows updated", t.Name, n, len(rows)))
	}
	return nil
}
