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
func ListenJobs(ctx context.Context, url string, wake func(), logger *slog.Logger) {
	l := pq.NewListener(url, 100*time.Millisecond, 30*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventConnectionAttemptFailed, pq.ListenerEventDisconnected:
			logger.Warn("job listener connection", "event", int(ev), "error", err)
		}
	})
	defer l.Close()
	if err := l.Listen(JobsChannel); err != nil {
		logger.Warn("job listener: LISTEN failed; workers fall back to polling", "error", err)
		return
	}
	wake()
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-l.Notify:
			// n is nil after a reconnection: catch up as well.
			_ = n
			wake()
		case <-time.After(90 * time.Second):
			// Keep the connection checked; a dead one reconnects.
			go func() { _ = l.Ping() }()
		}
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
func ListenPartnerKeys(ctx context.Context, url string, to KeyChanges, logger *slog.Logger) {
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	l := pq.NewListener(url, 100*time.Millisecond, 2*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
			to.Lost()
			logger.Warn("partner key listener connection", "event", int(ev), "error", err)
		}
	})
	defer l.Close()
	defer to.Lost()
	if err := l.Listen(PartnerKeysChannel); err != nil {
		logger.Warn("partner key listener: LISTEN failed; API keys are not cached", "error", err)
		return
	}
	// The heartbeats go through a pool of one connection of their own, so
	// a busy application pool never delays them.
	hb, err := sql.Open("postgres", url)
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
	for {
		select {
		case <-ctx.Done():
			return
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
