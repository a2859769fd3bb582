package postgres

import "emi/internal/emi"

// sortable maps the keys a back-office list sorts by to SQL expressions
// over its table, which must never be NULL (coalesce them) so that keyset
// comparisons hold. Keys come from emi.SortOrder, which the portal limits
// to the list's keys; an unknown key here takes the default's expression,
// so no input reaches the SQL text.
type sortable struct {
	// def is the default key; cols the expression of every key.
	def  string
	cols map[string]string
	// table and tie name the table (as the query's FROM names it, alias
	// included: the cursor row is read under the same alias, which shadows
	// the outer one) and its unique column, the tie-breaker and the keyset
	// cursor.
	table, tie string
}

func (s sortable) expr(o emi.SortOrder) string {
	if e, ok := s.cols[o.Key]; ok {
		return e
	}
	return s.cols[s.def]
}

// orderBy is the ORDER BY clause of o, ties broken by the tie column in
// the same direction.
func (s sortable) orderBy(o emi.SortOrder) string {
	dir := " ASC"
	if o.Desc {
		dir = " DESC"
	}
	return " ORDER BY " + s.expr(o) + dir + ", " + s.tie + dir
}

// after is the keyset condition of the rows that follow, in o's order, the
// row whose tie column is the parameter cursor ($n): compared on (sort
// expression, tie) with the cursor row's own values, read in the same
// statement, so the page boundary holds whatever the column.
func (s sortable) after(o emi.SortOrder, cursor string) string {
	op := " > "
	if o.Desc {
		op = " < "
	}
	e := s.expr(o)
	return "(" + e + ", " + s.tie + ")" + op + "((SELECT " + e + " FROM " + s.table + " WHERE " + s.tie + " = " + cursor + "), " + cursor + ")"
}
