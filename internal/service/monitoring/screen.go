package monitoring

import (
	"context"
	"sync"
	"time"

	"emi/internal/emi"
)

// Rules that stop money: a rule whose outcome is OutcomeHold or
// OutcomeDecline runs twice. Before the money moves, the booking code
// (a transfer, a card authorization) calls Screen in its transaction: the
// movement is recorded there and the rules that stop money are evaluated
// on it, with every movement of the subject recorded before it; the
// verdict holds the transfer, declines it, or lets it through. After the
// fact, the evaluation runs every other rule on it as on any movement.
//
// Incoming money is not screened: it has arrived from outside already,
// and the after-the-fact rules alert on it. An internal transfer is
// screened on its paying side; the receiving side is recorded when the
// money reaches it.
//
// Two bookings of one subject screened at once are serialised by the
// subject's screening lock (taken only when a rule that stops money reads
// a window), so the second sees the first: two transfers racing past a
// threshold are both counted.

// Verdict is what the rules that stop money decided on a movement.
type Verdict struct {
	// Outcome is "" (let through), OutcomeHold or OutcomeDecline.
	Outcome string
	// Hits are the findings of the rules that stop money, raised into
	// the subject's alert (Alert).
	Hits     []Hit
	Alert    string
	Movement int64
	Subject  Subject
	// Received reports that the receiving side given to Screen was
	// recorded with the movement.
	Received bool
	// recorded is the movement as recorded, for RecordDeclined.
	recorded Movement
}

// Stops reports whether the verdict stops the money (hold or decline).
func (v Verdict) Stops() bool { return v.Outcome == OutcomeHold || v.Outcome == OutcomeDecline }

// rulesCacheTTL is how long a process keeps the rules in force before
// reading them again: a rule change approved elsewhere applies to
// screening within it (at once in the process that applied it).
const rulesCacheTTL = 2 * time.Second

// ruleCache keeps the rules in force for screening, which must not read
// them on every payment.
type ruleCache struct {
	mu     sync.Mutex
	set    ruleSet
	loaded time.Time
}

func (m *Monitor) screenRules(ctx context.Context) (ruleSet, error) {
	m.cache.mu.Lock()
	defer m.cache.mu.Unlock()
	if m.cache.set != nil && time.Since(m.cache.loaded) < rulesCacheTTL {
		return m.cache.set, nil
	}
	rules, err := m.store.Rules(ctx)
	if err != nil {
		return nil, err
	}
	m.cache.set, m.cache.loaded = newRuleSet(rules), time.Now()
	return m.cache.set, nil
}

// forgetRules drops the cached rules (a rule change was applied).
func (m *Monitor) forgetRules() {
	m.cache.mu.Lock()
	m.cache.set = nil
	m.cache.mu.Unlock()
}

// Screen records a movement about to be booked, in the transaction of ctx,
// and runs on it the rules that stop money. It replaces Record for that
// movement; the evaluation is queued as Record queues it. A hold or
// decline raises the subject's alert at once, in the same transaction.
// An account the partner does not own records nothing and lets the
// movement through (the booking code checked it already).
//
// received, when given, is the receiving side of an internal transfer
// (incoming for the destination's owner): it is recorded as Record records
// it when the verdict lets the money through (Verdict.Received), in the
// same statement as mv when no rule that stops money reads a window. A
// held transfer's receiving side is recorded when it is released.
func (m *Monitor) Screen(ctx context.Context, mv Movement, received ...Movement) (Verdict, error) {
	if m.off {
		return Verdict{}, nil
	}
	subject, program, ok, err := m.subjectOf(ctx, mv.PartnerID, mv.Account)
	if err != nil || !ok {
		return Verdict{}, err
	}
	mv.Subject, mv.Program = subject, program
	stamp := mv.At.IsZero()
	if stamp {
		mv.At = m.now.At(ctx).UTC()
	}
	mv.EUR = ToEUR(mv.Amount, mv.Currency)
	set, err := m.screenRules(ctx)
	if err != nil {
		return Verdict{}, err
	}
	stopping, windows := false, false
	for _, c := range checks {
		if r, ok := set.rule(c.code, program); ok && r.stops() {
			stopping = true
			windows = windows || !noWindow[c.code]
		}
	}
	mv.Screened = stopping
	if windows {
		last, err := m.store.LockScreen(ctx, subject)
		if err != nil {
			return Verdict{}, err
		}
		// Under the lock this movement comes after every one recorded
		// before it, also in (time, id) order, which the windows follow:
		// its time is read now (a booking that waited for the lock took
		// its first reading before the one it waited for), and never
		// before the subject's latest (clocks of other processes).
		if stamp {
			mv.At = m.now.At(ctx).UTC()
			if last.After(mv.At) {
				mv.At = last
			}
		}
	}
	var also []Movement
	for _, r := range received {
		subj, prog, ok, err := m.subjectOf(ctx, r.PartnerID, r.Account)
		if err != nil {
			return Verdict{}, err
		}
		if ok {
			r.Subject, r.Program, r.At, r.EUR = subj, prog, mv.At, ToEUR(r.Amount, r.Currency)
			also = append(also, r)
		}
	}
	v := Verdict{Subject: subject}
	var shadows []ShadowHit
	run := func() error {
		if !stopping {
			return nil
		}
		var profile Profile
		if windows {
			if profile, err = m.store.Profile(ctx, subject); err != nil {
				return err
			}
			profile.derive()
		}
		hits, sh, err := set.run(ctx, m.store, profile, mv, Rule.stops)
		if err != nil {
			return err
		}
		for _, h := range hits {
			r, _ := set.rule(h.Rule, program)
			if r.Outcome == OutcomeDecline || v.Outcome == "" {
				v.Outcome = r.Outcome
			}
		}
		v.Hits, shadows = hits, sh
		return nil
	}
	if windows {
		// The windows count the movement itself: record it first, and
		// the receiving side once the verdict lets the money through.
		if mv.ID, err = m.store.InsertMovement(ctx, mv); err != nil {
			return Verdict{}, err
		}
		if err := run(); err != nil {
			return Verdict{}, err
		}
		if len(also) > 0 && !v.Stops() {
			if err := m.store.InsertMovements(ctx, also); err != nil {
				return Verdict{}, err
			}
			v.Received = true
		}
	} else {
		// The rules read the movement alone: the verdict is known before
		// recording, and both sides are recorded in one statement.
		if err := run(); err != nil {
			return Verdict{}, err
		}
		if v.Stops() {
			also = nil
		}
		if mv.ID, err = m.store.InsertMovement(ctx, mv, also...); err != nil {
			return Verdict{}, err
		}
		v.Received = len(also) > 0
		for i := range v.Hits {
			v.Hits[i].Movement = mv.ID
		}
		for i := range shadows {
			shadows[i].Movement = mv.ID
		}
	}
	v.Movement, v.recorded = mv.ID, mv
	if len(shadows) > 0 {
		if err := m.store.InsertShadowHits(ctx, shadows); err != nil {
			return Verdict{}, err
		}
	}
	if v.Stops() {
		if v.Alert, err = m.raise(ctx, mv.PartnerID, subject, v.Hits); err != nil {
			return Verdict{}, err
		}
	}
	m.queueAfterCommit(ctx)
	return v, nil
}

// Declined marks a screened movement declined in the transaction of ctx
// (a card authorization the verdict declined): it counts as a declined
// authorization in the windows, not as money that moved.
func (m *Monitor) Declined(ctx context.Context, v Verdict) error {
	if m.off || v.Movement == 0 {
		return nil
	}
	return m.store.MarkDeclined(ctx, v.Movement)
}

// RecordDeclined records, in a transaction of its own, a movement whose
// booking the verdict declined and rolled back (a transfer refused with
// emi.ErrTransferDeclined): declined, with the verdict's hits raised, so
// compliance sees the attempt.
func (m *Monitor) RecordDeclined(ctx context.Context, v Verdict) error {
	if m.off || v.Movement == 0 {
		return nil
	}
	return m.tx.InTx(ctx, func(ctx context.Context) error {
		mv := v.recorded
		mv.ID, mv.Declined = 0, true
		id, err := m.store.InsertMovement(ctx, mv)
		if err != nil {
			return err
		}
		hits := make([]Hit, len(v.Hits))
		for i, h := range v.Hits {
			h.Movement = id
			hits[i] = h
		}
		if len(hits) == 0 {
			return nil
		}
		_, err = m.raise(ctx, mv.PartnerID, v.Subject, hits)
		return err
	})
}

// Hold is a transfer held for review: what held it, and how it ended.
type Hold struct {
	Transfer    string     `json:"transfer"`
	PartnerID   string     `json:"partner"`
	Subject     Subject    `json:"subject"`
	Alert       string     `json:"alert"`
	Movement    int64      `json:"movement"`
	Hits        []Hit      `json:"hits"`
	InitiatedBy string     `json:"initiated_by"`
	Status      string     `json:"status"`
	HeldAt      time.Time  `json:"held_at"`
	DecidedBy   string     `json:"decided_by,omitempty"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
	Reason      string     `json:"reason,omitempty"`
}

// Hold statuses.
const (
	HoldHeld     = "held"
	HoldReleased = "released"
	HoldReturned = "returned"
)

// Held records that the verdict held transfer, in the transaction that
// books it, with the actor of ctx as its initiator (an API key or a staff
// user), who may never release it.
func (m *Monitor) Held(ctx context.Context, v Verdict, transfer string) error {
	if m.off {
		return nil
	}
	return m.store.InsertHold(ctx, Hold{Transfer: transfer, PartnerID: v.recorded.PartnerID, Subject: v.Subject, Alert: v.Alert,
		Movement: v.Movement, Hits: v.Hits, InitiatedBy: ActorOf(ctx), Status: HoldHeld, HeldAt: m.now.At(ctx).UTC()})
}

// LockHold returns a transfer's hold, locked (false when it was never
// held).
func (m *Monitor) LockHold(ctx context.Context, transfer string) (Hold, bool, error) {
	return m.store.LockHold(ctx, transfer)
}

// DecideHold records the decision on a held transfer (status HoldReleased
// or HoldReturned) by the actor of ctx, in the transaction that moves the
// money. A returned transfer's movement counts as declined: the money
// never left.
func (m *Monitor) DecideHold(ctx context.Context, h Hold, status, reason string) error {
	if status == HoldReturned && h.Movement != 0 {
		if err := m.store.MarkDeclined(ctx, h.Movement); err != nil {
			return err
		}
	}
	if err := m.store.DecideHold(ctx, h.Transfer, status, ActorOf(ctx), m.now.At(ctx).UTC(), reason); err != nil {
		return err
	}
	caseToken, err := m.store.CaseOfAlert(ctx, h.Alert)
	if err != nil || caseToken == "" {
		return err
	}
	actor := ""
	if p, ok := emi.PrincipalFrom(ctx); ok && p.Type == emi.ActorStaff {
		actor = p.ActorID
	}
	return m.store.InsertCaseEvent(ctx, CaseEvent{Case: caseToken, At: m.now.At(ctx).UTC(), Actor: actor, Kind: "transfer_" + status,
		Body: reason, Data: map[string]any{"transfer": h.Transfer}})
}

// ActorOf names the actor of ctx as holds record it: "staff:ID",
// "partner_key:ID" (the API key), "system:component".
func ActorOf(ctx context.Context) string {
	p, ok := emi.PrincipalFrom(ctx)
	if !ok {
		return ""
	}
	return string(p.Type) + ":" + p.ActorID
}

// HoldsOf returns a subject's holds, newest first (ViewAlerts).
func (m *Monitor) HoldsOf(ctx context.Context, s Subject) ([]Hold, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return m.store.Holds(ctx, HoldFilter{Subject: s})
}

// HeldTransfers returns the transfers waiting for a decision, oldest
// first (ViewAlerts).
func (m *Monitor) HeldTransfers(ctx context.Context, limit int) ([]Hold, error) {
	if err := ViewAlerts.Require(ctx); err != nil {
		return nil, err
	}
	return m.store.Holds(ctx, HoldFilter{Status: HoldHeld, Limit: limit})
}

// HoldFilter selects holds: of a subject, in a status.
type HoldFilter struct {
	Subject Subject
	Status  string
	Limit   int
}
