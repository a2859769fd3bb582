package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// JobsChannel is the NOTIFY channel on which Enqueue announces due jobs.
const JobsChannel = "emi_jobs"

// ListenJobs calls wake whenever a transaction that enqueued a due job
// commits, in any process sharing the database, until ctx ends. It also
// calls wake after (re)connecting, since notifications sent while the
// connection was down are lost; the workers' poll remains the safety net.
// It returns when ctx ends.
//
// It proves that notifications arrive: after LISTEN, after each
// reconnection and every ListenProbeEvery it sends one of its own
// ("probe:" id) from another connection to url. live is true while the
// last probe came back; when one does not within ListenProbeWait
// (through a transaction-mode pooler LISTEN is accepted and nothing ever
// arrives) it is false and a warning says so, once per stretch.
func ListenJobs(ctx context.Context, url string, wake func(), live *atomic.Bool, logger *slog.Logger) {
	url, err := NormalizeURL(url)
	if err != nil {
		logger.Warn("job listener: workers fall back to polling", "error", err)
		return
	}
	l := pq.NewListener(url, 100*time.Millisecond, 30*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventConnectionAttemptFailed, pq.ListenerEventDisconnected:
			live.Store(false)
			logger.Warn("job listener connection", "event", int(ev), "error", err)
		}
	})
	defer l.Close()
	defer live.Store(false)
	if err := listen(ctx, l, JobsChannel); err != nil {
		if ctx.Err() == nil {
			logger.Warn("job listener: LISTEN failed; workers fall back to polling", "error", err)
		}
		return
	}
	probes := newProber(url, JobsChannel, live, func() {
		logger.Warn("job listener: its own notification did not come back: notifications do not arrive on this connection " +
			"(a transaction-mode pooler? set EMI_LISTEN_DATABASE_URL to a direct connection); workers find jobs by polling")
	})
	defer probes.close()
	wake()
	probes.send(ctx)
	tick := time.NewTicker(ListenProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-l.Notify:
			if n == nil {
				// A reconnection: catch up, and prove the new
				// connection.
				wake()
				probes.send(ctx)
				continue
			}
			if probes.received(n.Extra) {
				continue
			}
			wake()
		case <-probes.expired():
			probes.missed()
		case <-tick.C:
			// Also keeps the connection checked: a dead one
			// reconnects.
			probes.send(ctx)
		}
	}
}

// ListenProbeWait is how long a listener waits for its own probe; past it,
// notifications are taken not to arrive. ListenProbeEvery is how often it
// probes.
const (
	ListenProbeWait  = 5 * time.Second
	ListenProbeEvery = 60 * time.Second
)

// prober sends a listener's own notifications and tracks their return
// (ListenJobs). Used from the listener's goroutine only.
type prober struct {
	db       *sql.DB
	channel  string
	id       string
	live     *atomic.Bool
	warn     func()
	seq      uint64
	pending  map[string]bool
	deadline *time.Timer
	warned   bool
}

func newProber(url, channel string, live *atomic.Bool, warn func()) *prober {
	db, _ := sql.Open("postgres", withBinaryParameters(url)) // lazy: errors come with the first use
	db.SetMaxOpenConns(1)
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &prober{db: db, channel: channel, id: hex.EncodeToString(idb[:]), live: live, warn: warn, pending: map[string]bool{}, deadline: t}
}

func (p *prober) close() { p.deadline.Stop(); _ = p.db.Close() }

// send sends a probe and (re)arms the deadline of the oldest one pending.
func (p *prober) send(ctx context.Context) {
	p.seq++
	payload := "probe:" + p.id + ":" + strconv.FormatUint(p.seq, 10)
	sctx, cancel := context.WithTimeout(ctx, ListenProbeWait)
	defer cancel()
	if _, err := p.db.ExecContext(sctx, `SELECT pg_notify($1, $2)`, p.channel, payload); err != nil {
		return // the listener's own connection events report outages
	}
	if len(p.pending) == 0 {
		p.deadline.Reset(ListenProbeWait)
	}
	p.pending[payload] = true
}

// received reports whether payload is a probe (of any listener: none is
// a job's), and marks this listener live when it is one of its own.
func (p *prober) received(payload string) bool {
	if !strings.HasPrefix(payload, "probe:") {
		return false
	}
	if p.pending[payload] {
		clear(p.pending)
		p.deadline.Stop()
		p.live.Store(true)
		p.warned = false
	}
	return true
}

func (p *prober) expired() <-chan time.Time { return p.deadline.C }

// missed: a probe did not come back in time.
func (p *prober) missed() {
	clear(p.pending)
	p.live.Store(false)
	if !p.warned {
		p.warned = true
		p.warn()
	}
}

// PartnerKeysChannel is the NOTIFY channel on which a committed change to
// partner_keys or partners announces itself (migration 00017's trigger), and
// on which each listening process sends its own heartbeats.
const PartnerKeysChannel = "emi_partner_keys"

// KeyChanges receives what ListenPartnerKeys learns, in commit order, from
// one goroutine (Lost excepted: it comes from the listener's connection
// handling).
type KeyChanges interface {
	// KeyChanged: the key with that api_key changed.
	KeyChanged(apiKey string)
	// PartnerChanged: the partner with that id changed; "" means anything
	// may have changed (after a reconnection, or an unknown payload).
	PartnerChanged(partnerID string)
	// Confirmed: every change committed before sentAt has been passed on.
	Confirmed(sentAt time.Time)
	// Lost: the listening connection is gone; changes may go unseen
	// until Confirmed is called again with a later sentAt.
	Lost()
}

// KeyHeartbeat is how often ListenPartnerKeys sends its heartbeat.
const KeyHeartbeat = 200 * time.Millisecond

// ListenPartnerKeys passes the changes to API keys and partners, as they
// commit in any process sharing the database, to to, until ctx ends.
//
// It also proves, continuously, that it misses nothing: every KeyHeartbeat
// it sends a NOTIFY of its own ('h:' instance ':' sequence) on the same
// channel, from its own connection. PostgreSQL delivers a channel's
// notifications to a listener in commit order, so when its own heartbeat,
// sent at time S, comes back, every change committed before S has already
// been delivered and passed on: Confirmed(S). A cache may then serve
// entries until S plus a bound; when heartbeats stop coming back (the
// connection is half-open, the database stalls), the bound runs out on its
// own, which a disconnect event alone would not guarantee.
//
// live is true while heartbeats come back. When none has within
// ListenProbeWait of LISTEN (through a transaction-mode pooler LISTEN is
// accepted and nothing ever arrives) a warning says so.
func ListenPartnerKeys(ctx context.Context, url string, to KeyChanges, live *atomic.Bool, logger *slog.Logger) {
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	url, err := NormalizeURL(url)
	if err != nil {
		logger.Warn("partner key listener: API keys are not cached", "error", err)
		return
	}
	l := pq.NewListener(url, 100*time.Millisecond, 2*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
			live.Store(false)
			to.Lost()
			logger.Warn("partner key listener connection", "event", int(ev), "error", err)
		}
	})
	defer l.Close()
	defer to.Lost()
	defer live.Store(false)
	if err := listen(ctx, l, PartnerKeysChannel); err != nil {
		if ctx.Err() == nil {
			logger.Warn("partner key listener: LISTEN failed; API keys are not cached", "error", err)
		}
		return
	}
	// The heartbeats go through a pool of one connection of their own, so
	// a busy application pool never delays them.
	hb, err := sql.Open("postgres", withBinaryParameters(url))
	if err != nil {
		logger.Warn("partner key listener: heartbeat connection", "error", err)
		return
	}
	defer func() { _ = hb.Close() }()
	hb.SetMaxOpenConns(1)
	var mu sync.Mutex
	sent := map[uint64]time.Time{}
	go func() {
		t := time.NewTicker(KeyHeartbeat)
		defer t.Stop()
		for seq := uint64(1); ; seq++ {
			at := time.Now()
			mu.Lock()
			sent[seq] = at
			for s, st := range sent {
				if at.Sub(st) > 10*time.Second { // lost: never coming back
					delete(sent, s)
				}
			}
			mu.Unlock()
			hctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := hb.ExecContext(hctx, `SELECT pg_notify($1, $2)`, PartnerKeysChannel, "h:"+id+":"+strconv.FormatUint(seq, 10))
			cancel()
			if err != nil && ctx.Err() == nil {
				logger.Debug("partner key heartbeat", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	watchdog := time.NewTimer(ListenProbeWait)
	defer watchdog.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-watchdog.C:
			if !live.Load() {
				logger.Warn("partner key listener: no heartbeat came back: notifications do not arrive on this connection " +
					"(a transaction-mode pooler? set EMI_LISTEN_DATABASE_URL to a direct connection); the API-key cache is off, every request reads its key")
			}
		case n, ok := <-l.Notify:
			if !ok {
				return
			}
			if n == nil {
				// Reconnected: whatever was sent meanwhile is lost.
				to.PartnerChanged("")
				continue
			}
			kind, rest, _ := strings.Cut(n.Extra, ":")
			switch kind {
			case "h":
				from, seqText, _ := strings.Cut(rest, ":")
				if from != id {
					continue
				}
				seq, err := strconv.ParseUint(seqText, 10, 64)
				if err != nil {
					continue
				}
				mu.Lock()
				at, ok := sent[seq]
				delete(sent, seq)
				mu.Unlock()
				if ok {
					to.Confirmed(at)
					live.Store(true)
				}
			case "k":
				to.KeyChanged(rest)
			case "p":
				to.PartnerChanged(rest)
			default:
				to.PartnerChanged("")
			}
		}
	}
}

// listen is l.Listen(channel) bounded by ctx. pq's Listen waits, without a
// deadline, until the listener has a connection: against a server that
// keeps refusing (a standby answers every LISTEN "cannot execute LISTEN
// during recovery", so pq reconnects for ever) it never returned, and a
// SIGTERM waited for it without end. When ctx ends first, the listener is
// closed, which ends the wait.
func listen(ctx context.Context, l *pq.Listener, channel string) error {
	done := make(chan error, 1)
	go func() { done <- l.Listen(channel) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = l.Close()
		<-done
		return ctx.Err()
	}
}
