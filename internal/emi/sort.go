package emi

// SortOrder is the order a back-office list is asked for: a
// column key the list knows and a direction. The zero value is the list's
// default order.
type SortOrder struct {
	Key  string
	Desc bool
}
