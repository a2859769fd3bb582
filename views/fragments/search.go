package fragments

// Hit is one search result. Each area's search contributes hits (people,
// accounts, cards, companies); opsview's Search lists them.
type Hit struct {
	Kind   string
	Title  string
	Detail string
	Href   string
	// Token is the whole token of what was found, shown on hover over
	// the details (which may shorten it).
	Token string
}
