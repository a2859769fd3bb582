// Package worker runs background jobs from the job queue (postgres.Jobs):
// webhook delivery, automatic checks, list updates. A Pool claims due jobs of
// the kinds it has handlers for, runs a bounded number at once, keeps their
// leases alive while they run, and records each outcome: success, a retry
// after an exponential backoff with jitter, or death after the last attempt
// or a permanent error.
//
// Delivery is at least once: a job whose worker dies, or whose result cannot
// be recorded, runs again after its lease runs out. Handlers must therefore
// be idempotent (a webhook carries its event id, a check overwrites its
// previous result). Several pools, in one process or many, may share a
// queue: the store never hands one job to two of them at once.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"emi/internal/emi"
)

// Handler runs one job. It should return when ctx is cancelled: the pool
// cancels it when the job's lease was lost to another worker or when a
// shutdown has waited long enough. A nil error marks the job succeeded; any
// other error is a failed attempt, retried after Backoff unless it is (or
// wraps) a Permanent error or sets its own delay with RetryAfter. A panic
// counts as a failed attempt.
type Handler func(ctx context.Context, job emi.Job) error

// Store is the job queue the pool works from; postgres.Jobs implements it.
// Every method that takes an attempt must refuse, with an error wrapping
// emi.ErrJobLeaseLost, when that attempt no longer holds the job.
type Store interface {
	// Claim hands up to limit due jobs of the given kinds to workerID, each
	// under a lease of the given length, with its attempt counter raised.
	// perKey > 0 caps the jobs of one concurrency key that workerID runs at
	// once: the others are passed over, left as they are (see
	// Config.KeyConcurrency).
	Claim(ctx context.Context, workerID string, kinds []string, lease time.Duration, limit, perKey int) ([]emi.Job, error)
	// Complete marks the job succeeded.
	Complete(ctx context.Context, id int64, attempt int) error
	// Fail records a failed attempt: the job runs again retryIn from now, or
	// is dead when that was its last attempt. It returns the job's new state.
	Fail(ctx context.Context, id int64, attempt int, errText string, retryIn time.Duration) (emi.JobState, error)
	// Discard marks the job dead at once.
	Discard(ctx context.Context, id int64, attempt int, errText string) error
	// Extend renews the attempt's lease to lease from now.
	Extend(ctx context.Context, id int64, attempt int, lease time.Duration) error
	// Prune deletes the succeeded jobs that finished before olderThan.
	Prune(ctx context.Context, olderThan time.Time) (int64, error)
}

// Config tunes a Pool. Zero values take the defaults given per field.
type Config struct {
	// ID names this pool in jobs.locked_by; default host-pid-random.
	ID string
	// Concurrency is how many jobs run at once; default 10.
	Concurrency int
	// KeyConcurrency is how many jobs of one concurrency key
	// (emi.JobSpec.ConcurrencyKey) run at once in this pool; 0: no limit.
	// The jobs beyond wait in the queue, untouched (no attempt used), and
	// the pool takes other jobs meanwhile: webhook deliveries are keyed by
	// partner, so one partner's fan-out cannot take every slot
	// (EMI_WEBHOOK_PARTNER_CONCURRENCY).
	//
	// The budget is kept where jobs are claimed (Store.Claim passes over
	// a full key's jobs) rather than by handlers that would postpone the
	// jobs over budget: a postponing handler claims, loads and reschedules
	// every waiting job again and again while a backlog lasts, uses the
	// job's attempts unless the queue learns to give them back, and puts
	// the jobs behind later ones; and a rate (jobs per second) instead of
	// a number at once would still let slow receivers (10 s each) hold
	// every slot. The price is one more claim when a key reaches its
	// budget (to find the other keys' jobs behind its backlog), and a key
	// alone on the pool runs at its budget's pace.
	KeyConcurrency int
	// PollInterval is how often the pool looks for due jobs when it has
	// nothing to do; default 500 ms. Notify wakes it earlier.
	PollInterval time.Duration
	// Lease is how long a claimed job stays held without news from its
	// worker; default 30 s. The pool renews it every Lease/3 while the
	// handler runs, so it bounds how late a dead worker's jobs are retried,
	// not how long a job may run.
	Lease time.Duration
	// ShutdownTimeout is how long Run waits for running jobs once its
	// context is cancelled, before it cancels their contexts; default 30 s.
	ShutdownTimeout time.Duration
	// CancelGrace is how long Run then waits for cancelled handlers to return
	// and their results to be recorded; default 5 s.
	CancelGrace time.Duration
	// BackoffBase and BackoffMax shape the retry delays (see Backoff);
	// defaults DefaultBackoffBase (5 s) and DefaultBackoffMax (6 h).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Retention is how long succeeded jobs are kept before the pool prunes
	// them; default 7 days; negative disables pruning.
	Retention time.Duration
	// PruneInterval is how often the pool prunes; default 1 h.
	PruneInterval time.Duration
	// Rand returns a number in [0, 1) for the backoff jitter; default
	// math/rand/v2's Float64.
	Rand func() float64
	// Now is the clock the pruning cut-off is computed with; default
	// time.Now. Leases and retry times use the database clock.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultConcurrency     = 10
	DefaultPollInterval    = 500 * time.Millisecond
	DefaultLease           = 30 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
	DefaultCancelGrace     = 5 * time.Second
	DefaultRetention       = 7 * 24 * time.Hour
	DefaultPruneInterval   = time.Hour
)

// storeTimeout bounds one store call of the pool, which runs on a context
// that outlives Run's so results are recorded during a shutdown.
const storeTimeout = 15 * time.Second

// maxErrorText bounds the error text stored with a failed attempt.
const maxErrorText = 8 << 10

func (c Config) withDefaults() Config {
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.IntN(1<<16)) // #nosec G404 -- a worker name, not a secret
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = DefaultPruneInterval
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Pool runs the jobs of the kinds it has handlers for. Build it with New,
// register handlers with Handle, then call Run once.
type Pool struct {
	store Store
	cfg   Config
	log   *slog.Logger

	mu       sync.Mutex
	handlers map[string]Handler
	started  bool

	wake     chan struct{} // Notify: look for jobs now
	finished chan struct{} // a job finished: a slot is free
	active   atomic.Int64  // jobs running

	keysMu sync.Mutex
	keys   map[string]int // running jobs per concurrency key (KeyConcurrency)
	// keyFreed: a job of a key that had its whole budget running finished,
	// so due jobs of that key passed over by the last claims may now run.
	// Set before the finished signal, read by Run with it: a signal sent
	// while fill was deciding whether to expect more is not lost.
	keyFreed atomic.Bool
}

// New returns a pool working from store. A nil logger discards the logs.
func New(store Store, cfg Config, logger *slog.Logger) *Pool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	return &Pool{
		store:    store,
		cfg:      cfg,
		log:      logger.With("worker", cfg.ID),
		handlers: make(map[string]Handler),
		keys:     make(map[string]int),
		wake:     make(chan struct{}, 1),
		finished: make(chan struct{}, 1),
	}
}

// ID returns the name the pool claims jobs under.
func (p *Pool) ID() string { return p.cfg.ID }

// Handle registers the handler of a job kind. It panics, like
// http.ServeMux.Handle, on an empty kind, a nil handler, a kind registered
// twice, or a call after Run started: all are wiring mistakes.
func (p *Pool) Handle(kind string, h Handler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case kind == "":
		panic("worker: Handle with an empty kind")
	case h == nil:
		panic("worker: Handle " + kind + " with a nil handler")
	case p.started:
		panic("worker: Handle " + kind + " after Run started")
	case p.handlers[kind] != nil:
		panic("worker: Handle " + kind + " registered twice")
	}
	p.handlers[kind] = h
}

// Notify makes the pool look for due jobs now rather than at its next poll,
// e.g. right after a transaction that enqueued one committed. It never
// blocks.
func (p *Pool) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run claims and runs jobs until ctx is cancelled. It then stops claiming and
// waits up to ShutdownTimeout for the running jobs; if some are still running
// it cancels their contexts and waits up to CancelGrace more for their
// results. A failure to claim is logged and retried with a growing pause, so
// Run survives a database outage.
// Returns nil after a clean shutdown, an error counting the jobs still
// running when the grace ran out (their leases expire and they run again
// elsewhere), or an error at once when no handler is registered or Run was
// already called.
func (p *Pool) Run(ctx context.Context) error {
	kinds, err := p.start()
	if err != nil {
		return err
	}
	// Handlers run on a context that outlives ctx: cancelling ctx stops
	// claiming, and the running jobs get until the shutdown deadline.
	jobsCtx, cancelJobs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelJobs(nil)
	var jobs, bg sync.WaitGroup
	defer bg.Wait()
	if p.cfg.Retention > 0 {
		bg.Go(func() { p.pruneLoop(ctx) })
	}
	p.log.Info("worker pool started", "kinds", kinds, "concurrency", p.cfg.Concurrency)

	poll := time.NewTimer(0)
	defer poll.Stop()
	backlog := false // the last claim filled every free slot: more may be due
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return p.shutdown(&jobs, cancelJobs)
		case <-p.wake:
		case <-poll.C:
		case <-p.finished:
			if !backlog && !p.keyFreed.Swap(false) {
				continue
			}
		}
		if ctx.Err() != nil {
			continue // the next select shuts down
		}
		full, err := p.fill(ctx, jobsCtx, &jobs, kinds)
		next := p.cfg.PollInterval
		if err != nil {
			failures++
			next = min(p.cfg.PollInterval<<min(failures, 6), 30*time.Second)
			p.log.Error("claim jobs failed", "err", err, "failures", failures, "retry_in", next)
		} else {
			failures = 0
		}
		backlog = full
		poll.Reset(next)
	}
}

// start freezes the handlers and returns their kinds, sorted.
func (p *Pool) start() ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return nil, errors.New("worker: Run called twice")
	}
	if len(p.handlers) == 0 {
		return nil, errors.New("worker: Run with no handler registered")
	}
	p.started = true
	kinds := make([]string, 0, len(p.handlers))
	for k := range p.handlers {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds, nil
}

// fill claims jobs for the free slots and starts them. It reports whether
// more jobs may be waiting: the claims filled every free slot (or there was
// none), or a concurrency key has its budget running, so due jobs of that
// key may have been passed over and the next job to finish should make
// the pool claim again rather than wait for the poll.
//
// With KeyConcurrency, a claim may take fewer jobs than there are free
// slots while others are due: the oldest due jobs were mostly of one key
// whose budget the claim used up. fill then claims again at once (that key
// is now passed over), until the slots are full or a claim finds nothing,
// so the other keys' jobs do not wait for the next poll.
func (p *Pool) fill(ctx, jobsCtx context.Context, jobs *sync.WaitGroup, kinds []string) (bool, error) {
	for {
		free := p.cfg.Concurrency - int(p.active.Load())
		if free <= 0 {
			return true, nil
		}
		// A claim that succeeds in the database must not be lost to a
		// cancellation racing its answer: its jobs would sit out their
		// leases.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		claimed, err := p.store.Claim(cctx, p.cfg.ID, kinds, p.cfg.Lease, free, p.cfg.KeyConcurrency)
		cancel()
		if err != nil {
			return false, err
		}
		for _, job := range claimed {
			p.active.Add(1)
			p.keyRuns(job.ConcurrencyKey, 1)
			jobs.Go(func() {
				defer p.release(job.ConcurrencyKey)
				p.work(jobsCtx, job)
			})
		}
		if len(claimed) == free {
			return true, nil
		}
		if len(claimed) == 0 || p.cfg.KeyConcurrency <= 0 || ctx.Err() != nil {
			return p.keyFull(), nil
		}
	}
}

// keyRuns adds delta to the running jobs of key ("": none).
func (p *Pool) keyRuns(key string, delta int) {
	if key == "" || p.cfg.KeyConcurrency <= 0 {
		return
	}
	p.keysMu.Lock()
	defer p.keysMu.Unlock()
	if delta < 0 && p.keys[key] >= p.cfg.KeyConcurrency {
		p.keyFreed.Store(true)
	}
	if p.keys[key] += delta; p.keys[key] <= 0 {
		delete(p.keys, key)
	}
}

// keyFull reports whether some key has KeyConcurrency jobs running.
func (p *Pool) keyFull() bool {
	if p.cfg.KeyConcurrency <= 0 {
		return false
	}
	p.keysMu.Lock()
	defer p.keysMu.Unlock()
	for _, n := range p.keys {
		if n >= p.cfg.KeyConcurrency {
			return true
		}
	}
	return false
}

func (p *Pool) release(key string) {
	p.keyRuns(key, -1)
	p.active.Add(-1)
	select {
	case p.finished <- struct{}{}:
	default:
	}
}

// shutdown waits for the running jobs, cancelling them at the deadline.
func (p *Pool) shutdown(jobs *sync.WaitGroup, cancelJobs context.CancelCauseFunc) error {
	running := p.active.Load()
	p.log.Info("worker pool stopping", "running", running)
	done := make(chan struct{})
	go func() {
		jobs.Wait()
		close(done)
	}()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-done:
			return true
		case <-t.C:
			return false
		}
	}
	if wait(p.cfg.ShutdownTimeout) {
		p.log.Info("worker pool stopped")
		return nil
	}
	p.log.Warn("shutdown timeout: cancelling running jobs", "running", p.active.Load())
	cancelJobs(errShutdown)
	if wait(p.cfg.CancelGrace) {
		p.log.Info("worker pool stopped after cancelling its jobs")
		return nil
	}
	n := p.active.Load()
	p.log.Error("worker pool stopped with jobs still running", "running", n)
	return fmt.Errorf("worker: %d jobs still running after the shutdown timeout and grace", n)
}

var (
	errShutdown  = errors.New("worker pool shutting down")
	errLeaseLost = errors.New("job lease lost to another attempt")
)

// work runs one claimed job and records its outcome.
func (p *Pool) work(ctx context.Context, job emi.Job) {
	log := p.log.With("job_id", job.ID, "kind", job.Kind, "attempt", job.Attempt)
	hctx, abandon := context.WithCancelCause(ctx)
	defer abandon(nil)
	stopBeat := p.heartbeat(abandon, job, log)
	start := time.Now()
	err := p.call(hctx, job)
	stopBeat()
	p.record(job, err, context.Cause(hctx), time.Since(start), log)
}

// call runs the job's handler, turning a panic into an error.
func (p *Pool) call(ctx context.Context, job emi.Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	p.mu.Lock()
	h := p.handlers[job.Kind]
	p.mu.Unlock()
	if h == nil {
		// Claim only asks for registered kinds, so this is a store bug.
		return Permanent(fmt.Errorf("no handler for job kind %q", job.Kind))
	}
	return h(ctx, job)
}

// heartbeat renews the job's lease every Lease/3 until the returned stop is
// called. When the store says the lease is lost, it cancels the handler.
func (p *Pool) heartbeat(abandon context.CancelCauseFunc, job emi.Job, log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(max(p.cfg.Lease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			// Renewing goes on after a shutdown cancelled the handler: while
			// the handler runs, the job must stay ours.
			ctx, cancel := context.WithTimeout(context.Background(), max(p.cfg.Lease/3, time.Millisecond))
			err := p.store.Extend(ctx, job.ID, job.Attempt, p.cfg.Lease)
			cancel()
			if errors.Is(err, emi.ErrJobLeaseLost) {
				log.Warn("job lease lost: abandoning the attempt")
				abandon(errLeaseLost)
				return
			}
			if err != nil {
				log.Warn("extend job lease failed; trying again at the next heartbeat", "err", err)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// record stores the outcome of an attempt. cause is why the handler's
// context was cancelled, if it was.
func (p *Pool) record(job emi.Job, err, cause error, took time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	log = log.With("took", took)
	var serr error
	switch {
	case err == nil:
		serr = p.store.Complete(ctx, job.ID, job.Attempt)
		if serr == nil {
			log.Debug("job succeeded")
		}
	case isPermanent(err):
		serr = p.store.Discard(ctx, job.ID, job.Attempt, errorText(err))
		if serr == nil {
			log.Error("job failed permanently: dead", "err", err)
		}
	default:
		delay := Backoff(job.Attempt, p.cfg.BackoffBase, p.cfg.BackoffMax, p.cfg.Rand)
		var ra *retryAfterError
		if errors.As(err, &ra) {
			delay = ra.delay
		}
		if errors.Is(cause, errShutdown) {
			delay = 0 // not the job's fault: let the next worker take it at once
		}
		var state emi.JobState
		state, serr = p.store.Fail(ctx, job.ID, job.Attempt, errorText(err), delay)
		switch {
		case serr != nil:
		case state == emi.JobDead:
			log.Error("job failed on its last attempt: dead", "err", err)
		default:
			log.Warn("job failed: will retry", "err", err, "retry_in", delay)
		}
		var pe *panicError
		if errors.As(err, &pe) {
			log.Error("job handler panicked", "panic", fmt.Sprint(pe.value), "stack", string(pe.stack))
		}
	}
	switch {
	case serr == nil:
	case errors.Is(serr, emi.ErrJobLeaseLost):
		log.Warn("job result discarded: another attempt holds the job", "err", err)
	default:
		log.Error("record job result failed; the job runs again when its lease expires", "err", serr, "job_err", err)
	}
}

// errorText is err as stored in jobs.last_error: valid UTF-8 without NUL
// bytes (PostgreSQL text refuses both), bounded in size.
func errorText(err error) string {
	s := err.Error()
	var pe *panicError
	if errors.As(err, &pe) {
		s += "\n" + string(pe.stack)
	}
	if len(s) > maxErrorText {
		s = s[:maxErrorText]
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// pruneLoop deletes old succeeded jobs now and every PruneInterval until ctx
// is cancelled.
func (p *Pool) pruneLoop(ctx context.Context) {
	t := time.NewTicker(p.cfg.PruneInterval)
	defer t.Stop()
	for {
		n, err := p.store.Prune(ctx, p.cfg.Now().Add(-p.cfg.Retention))
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Error("prune succeeded jobs failed", "err", err)
		case n > 0:
			p.log.Info("pruned succeeded jobs", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Permanent marks err as one that retrying cannot fix: the job goes dead at
// once, whatever attempts it has left. Permanent(nil) is still an error.
func Permanent(err error) error {
	if err == nil {
		err = errors.New("permanent failure")
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func isPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}

// RetryAfter marks err as a failed attempt to retry after d instead of the
// backoff delay, e.g. from a Retry-After header. The attempt still counts:
// the job is dead when it was its last. RetryAfter(d, nil) is still an error.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &retryAfterError{delay: max(d, 0), err: err}
}

type retryAfterError struct {
	delay time.Duration
	err   error
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// panicError is a handler's panic turned into a failed attempt.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// IsRetryAfter reports whether err asks for its job to run again after a
// delay (RetryAfter).
func IsRetryAfter(err error) bool {
	var re *retryAfterError
	return errors.As(err, &re)
}
