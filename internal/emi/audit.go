package emi

import (
	"net/netip"
	"time"
)

// Outcome of an audited action.
type Outcome string

// Outcomes.
const (
	OutcomeSuccess Outcome = "success"
	OutcomeDenied  Outcome = "denied"
	OutcomeFailure Outcome = "failure"
)

// AuditEntry is one row of the append-only audit log.
type AuditEntry struct {
	ID            int64          `db:"id"`
	At            time.Time      `db:"at"`
	ActorType     ActorType      `db:"actor_type"`
	ActorID       string         `db:"actor_id"`
	PartnerID     string         `db:"partner_id"`
	Action        string         `db:"action"`
	ResourceType  string         `db:"resource_type"`
	ResourceToken string         `db:"resource_token"`
	Outcome       Outcome        `db:"outcome"`
	RequestID     string         `db:"request_id"`
	IP            netip.Addr     `db:"-"`
	Changes       map[string]any `db:"-"`
	// ActorName is filled when listing: a staff actor's name, or the name
	// of the partner whose API key acted ("" for the system or a deleted
	// actor).
	ActorName string `db:"actor_name"`
	// ResourceName is filled when listing, for a partner's or staff
	// user's row: their name.
	ResourceName string `db:"resource_name"`
}

// AuditFilter selects audit rows; zero fields match everything. Rows come
// newest first; BeforeID pages backwards (keyset pagination).
type AuditFilter struct {
	// ActorID matches the actor's id exactly, a staff actor whose name or
	// e-mail contains it, or a partner API key whose partner's name
	// contains it (case-insensitive).
	ActorID       string
	Action        string
	ResourceType  string
	ResourceToken string
	From, To      time.Time
	Limit         int
	BeforeID      int64
	// Sort is another order than the newest first (time, action,
	// resource, outcome); BeforeID then names the last row seen
	// and the page holds the rows after it in that order.
	Sort SortOrder
}
