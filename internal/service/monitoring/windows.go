package monitoring

import (
	"context"
	"math"
	"slices"
	"sort"
	"time"
)

// windowsFor returns what the typologies read the windows of a subject's
// batch of movements from (evaluateSubject): the store, a query per
// window, for a small batch (the movements the API records, evaluated as
// they come); subjectWindows for a larger one (a backlog, an imported
// history), which reads the subject's movements once.
func windowsFor(store Store, s Subject, batch []Movement) windowReader {
	if len(batch) < minReadOnce {
		return store
	}
	return newSubjectWindows(store, s, batch)
}

// minReadOnce is the smallest batch whose windows are read once: below
// it, a few queries per movement cost less than reading a busy subject's
// month of movements.
const minReadOnce = 16

// readOnceBudget bounds the movements subjectWindows reads, per movement
// of its batch: a subject with more in the windows of the batch (a busy
// merchant's month) goes back to a query per window, whose aggregates
// the database computes without sending the rows.
const readOnceBudget = 40

// subjectWindows answers the windows of one subject's batch of movements
// (evaluateSubject) from the subject's movements read once, instead of a
// query per window: the typologies ask three to six windows of each
// movement, and a history import evaluates hundreds of thousands of
// movements.
//
// It reads, on the first window that needs them, every movement of the
// subject whose time is after the window's start, up to the batch's last
// movement, and reads further back when a later window starts earlier. So
// it holds every movement with a time after lo up to the batch's last
// movement, and a window within that is exactly what the store's Window
// would count. A window of another subject, or ending after the batch's
// last movement, goes to the store, and so does every window once the
// movements to read exceed the budget (readOnceBudget per movement of the
// batch). Times are compared as PostgreSQL compares them (pgTime: the
// store's timestamps have microseconds).
//
// Like the store's windows, each read sees the movements committed when it
// runs: a movement recorded while the batch is evaluated may or may not
// be counted, as with a query per window.
type subjectWindows struct {
	store   Store
	subject Subject
	hiAt    time.Time // the batch's last movement
	hiID    int64
	budget  int  // how many movements it may hold
	spent   bool // the budget ran out: the store answers
	loaded  bool
	lo      time.Time   // holds every movement after lo up to (hiAt, hiID)
	mvs     []windowRow // by (time, id)
	seen    map[string]struct{}
}

// windowRow is what a window reads of a movement.
type windowRow struct {
	at              time.Time
	id, eur         int64
	direction, kind string
	counterpartyKey string
	declined        bool
}

// newSubjectWindows returns the windows of the subject's batch (its
// movements, by time and id).
func newSubjectWindows(store Store, s Subject, batch []Movement) *subjectWindows {
	w := &subjectWindows{store: store, subject: s, budget: readOnceBudget * len(batch), seen: map[string]struct{}{}}
	for _, mv := range batch {
		if after(mv.At, mv.ID, w.hiAt, w.hiID) {
			w.hiAt, w.hiID = mv.At, mv.ID
		}
	}
	return w
}

// after reports whether (at, id) comes after (at2, id2).
func after(at time.Time, id int64, at2 time.Time, id2 int64) bool {
	return at.After(at2) || (at.Equal(at2) && id > id2)
}

// pgTime is t as PostgreSQL stores it from lib/pq's text parameter (all
// nine digits of nanoseconds): rounded to microseconds by rint(fraction
// × 10⁶) of the fraction read as a double, so a window's start is read
// here as the store's query reads it (the instant before a month is
// monthStart - 1 µs, exact in both).
func pgTime(t time.Time) time.Time {
	ns := t.Nanosecond()
	us := math.RoundToEven(float64(ns) / 1e9 * 1e6)
	return t.Add(time.Duration(int64(us)*1000 - int64(ns)))
}

// load makes the windows hold every movement after from, or spends the
// budget.
func (w *subjectWindows) load(ctx context.Context, from time.Time) error {
	if w.loaded && !from.Before(w.lo) {
		return nil
	}
	to, toID := w.hiAt, w.hiID
	if w.loaded {
		to, toID = w.lo, math.MaxInt64
	}
	left := w.budget - len(w.mvs)
	earlier, err := w.store.SubjectMovements(ctx, w.subject, from, to, toID, left+1)
	if err != nil {
		return err
	}
	if len(earlier) > left {
		w.spent, w.mvs = true, nil
		return nil
	}
	rows := make([]windowRow, len(earlier), len(earlier)+len(w.mvs))
	for i, mv := range earlier {
		rows[i] = windowRow{at: mv.At, id: mv.ID, eur: mv.EUR, direction: mv.Direction, kind: mv.Kind,
			counterpartyKey: mv.CounterpartyKey, declined: mv.Declined}
	}
	w.mvs = append(rows, w.mvs...)
	w.lo, w.loaded = from, true
	return nil
}

// covers reports whether the windows can answer for s up to (to, toID).
func (w *subjectWindows) covers(s Subject, to time.Time, toID int64) bool {
	return !w.spent && s == w.subject && !after(to, toID, w.hiAt, w.hiID)
}

// Window implements windowReader: MonitoringStore.Window's conditions on
// the movements held.
func (w *subjectWindows) Window(ctx context.Context, s Subject, q WindowQuery) (WindowStats, error) {
	from, to, toID := pgTime(q.From), pgTime(q.To), q.ToID
	if toID == 0 {
		toID = math.MaxInt64
	}
	if !w.covers(s, to, toID) {
		return w.store.Window(ctx, s, q)
	}
	if err := w.load(ctx, from); err != nil || w.spent {
		if err != nil {
			return WindowStats{}, err
		}
		return w.store.Window(ctx, s, q)
	}
	maxEUR := q.MaxEUR
	if maxEUR == 0 {
		maxEUR = math.MaxInt64
	}
	start := sort.Search(len(w.mvs), func(i int) bool { return w.mvs[i].at.After(from) })
	end := sort.Search(len(w.mvs), func(i int) bool {
		mv := w.mvs[i]
		if q.Excluding {
			return !after(to, toID, mv.at, mv.id) // (at, id) >= (to, toID)
		}
		return after(mv.at, mv.id, to, toID)
	})
	var st WindowStats
	clear(w.seen)
	for _, mv := range w.mvs[start:max(start, end)] {
		if mv.direction != q.Direction || !slices.Contains(q.Kinds, mv.kind) || mv.eur < q.MinEUR || mv.eur >= maxEUR ||
			mv.declined != q.Declined {
			continue
		}
		st.Count++
		st.SumEUR += mv.eur
		if mv.counterpartyKey != "" {
			w.seen[mv.counterpartyKey] = struct{}{}
		}
	}
	st.DistinctCounterparts = int64(len(w.seen))
	return st, nil
}

// PreviousMovement implements windowReader: the latest movement held
// before (at, id) that was not declined; when none is held, the store
// looks further back.
func (w *subjectWindows) PreviousMovement(ctx context.Context, s Subject, at time.Time, id int64) (time.Time, bool, error) {
	at = pgTime(at)
	if !w.covers(s, at, id) || !w.loaded {
		return w.store.PreviousMovement(ctx, s, at, id)
	}
	i := sort.Search(len(w.mvs), func(i int) bool { return !after(at, id, w.mvs[i].at, w.mvs[i].id) }) // first (at', id') >= (at, id)
	for i--; i >= 0; i-- {
		if !w.mvs[i].declined {
			return w.mvs[i].at, true, nil
		}
	}
	return w.store.PreviousMovement(ctx, s, at, id)
}
