package postgres

import (
	"context"
	"log/slog"
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
