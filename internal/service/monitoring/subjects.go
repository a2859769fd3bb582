package monitoring

import (
	"context"
	"sync"
)

// subjectCacheSize bounds the accounts a process remembers the subject
// of; when it is full the cache starts again empty.
const subjectCacheSize = 100_000

// subjectCache remembers whose an account is: an account's partner,
// owner (its user or merchant) and program never change once it exists
// (only its status does), so screening and recording need not read them
// on every payment (issue 32 item 7: one statement fewer per movement).
// Only accounts found are remembered: an account of another partner, or
// none, is asked again each time.
type subjectCache struct {
	mu sync.Mutex
	m  map[string]subjectOf
}

type subjectOf struct {
	subject Subject
	program string
}

// subjectOf returns the owner and program of an account of the partner
// (false when the partner has no such account), as Store.SubjectOf.
func (m *Monitor) subjectOf(ctx context.Context, partnerID, account string) (Subject, string, bool, error) {
	key := partnerID + "/" + account
	m.subjects.mu.Lock()
	s, ok := m.subjects.m[key]
	m.subjects.mu.Unlock()
	if ok {
		return s.subject, s.program, true, nil
	}
	subject, program, ok, err := m.store.SubjectOf(ctx, partnerID, account)
	if err != nil || !ok {
		return subject, program, ok, err
	}
	m.subjects.mu.Lock()
	if m.subjects.m == nil || len(m.subjects.m) >= subjectCacheSize {
		m.subjects.m = make(map[string]subjectOf)
	}
	m.subjects.m[key] = subjectOf{subject: subject, program: program}
	m.subjects.mu.Unlock()
	return subject, program, true, nil
}
