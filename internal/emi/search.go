package emi

// SearchHit is one result of the back office's global search. Each area
// (partners, staff, later users, accounts, cards) contributes hits; the
// portal turns Kind and Token into a link.
type SearchHit struct {
	Kind   string
	Token  string
	Title  string
	Detail string
}
