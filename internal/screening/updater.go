package screening

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Official download locations.
const (
	DefaultSDNURL = "https://www.treasury.gov/ofac/downloads/sdn.csv"
	DefaultALTURL = "https://www.treasury.gov/ofac/downloads/alt.csv"
	DefaultUNURL  = "https://scsanctions.un.org/resources/xml/en/consolidated.xml"
	// DefaultEUURL is the EU Financial Sanctions Files XML export (the
	// token is the public one the FSF site publishes for anonymous
	// downloads).
	DefaultEUURL = "https://webgate.ec.europa.eu/fsd/fsf/public/files/xmlFullSanctionsList_1_1/content?token=dG9rZW4tMjAxNw"
	// DefaultUKURL is OFSI's consolidated list in its CSV (2022) format.
	DefaultUKURL = "https://ofsistorage.blob.core.windows.net/publishlive/2022format/ConList.csv"
)

// Updater defaults.
const (
	DefaultMaxBytes   = 64 << 20 // per file
	DefaultMinEntries = 500      // per list
	DefaultMinRatio   = 0.8      // of the current index's count, per list
	DefaultTimeout    = 2 * time.Minute
)

// Sources are the URLs of the list files. SDN, ALT and UN take the
// official URLs when empty; EU and UK are downloaded only when set (the EU
// and UK lists are then screened beside OFAC and the UN).
type Sources struct{ SDN, ALT, UN, EU, UK string }

// DefaultSources returns the official URLs of all five files.
func DefaultSources() Sources {
	return Sources{SDN: DefaultSDNURL, ALT: DefaultALTURL, UN: DefaultUNURL, EU: DefaultEUURL, UK: DefaultUKURL}
}

// Result describes one update attempt.
type Result struct {
	At time.Time
	// OK is true when the files were downloaded and validated (whether or
	// not the data had changed).
	OK    bool
	Error string
	// Swapped is true when a new index was installed (false when the data
	// were identical to the current index's, or on failure).
	Swapped bool
	// Version of the index in use after the attempt.
	Version string
	// Changed is the number of entries new or modified compared with the
	// previous index (all entries on the first load).
	Changed int
	// Lists describes the downloaded lists (empty on failure).
	Lists    []ListInfo
	Duration time.Duration
}

// Updater downloads the official files, validates them and installs the new
// index in Screener. An attempt swaps only when every file downloaded and
// parsed and every list passed the size checks; otherwise the current index
// stays in place.
type Updater struct {
	// Sources are the URLs; zero fields take the official ones.
	Sources Sources
	// Client defaults to an http.Client with Timeout as its timeout.
	Client *http.Client
	// Screener receives the new index. Required.
	Screener *Screener
	// MinEntries is the minimum number of entries per list
	// (DefaultMinEntries when 0).
	MinEntries int
	// MinRatio: a list must keep at least this share of the entries it has
	// in the current index (DefaultMinRatio when 0). Guards against a
	// truncated or partial publication.
	MinRatio float64
	// MaxBytes bounds each downloaded file (DefaultMaxBytes when 0).
	MaxBytes int64
	// Timeout bounds one attempt (DefaultTimeout when 0).
	Timeout time.Duration
	// OnSwap, when set, is called after a swap with the previous index
	// (nil on the first load) and the new one, for example to re-screen
	// the customers matching Changed(old, new).
	OnSwap func(old, new *Index)
	// Now defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	mu   sync.Mutex // serializes attempts
	lmu  sync.Mutex
	last Result
}

func (u *Updater) now() time.Time {
	if u.Now != nil {
		return u.Now()
	}
	return time.Now()
}

func (u *Updater) logger() *slog.Logger {
	if u.Logger != nil {
		return u.Logger
	}
	return slog.Default()
}

// Last returns the result of the last completed attempt (zero before the
// first).
func (u *Updater) Last() Result {
	u.lmu.Lock()
	defer u.lmu.Unlock()
	r := u.last
	r.Lists = append([]ListInfo(nil), r.Lists...)
	return r
}

// Update performs one attempt: download, parse, validate, swap. On any
// failure the current index stays in place and the error is returned and
// recorded in Last (except when ctx itself was canceled: a shutdown is not
// a failed attempt).
func (u *Updater) Update(ctx context.Context) (Result, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	start := u.now()
	res := Result{At: start}
	ix, err := u.attempt(ctx)
	res.Duration = u.now().Sub(start)
	if err != nil {
		res.Error = err.Error()
		if cur := u.Screener.current(); cur != nil {
			res.Version = cur.Version()
		}
		if ctx.Err() == nil { // an attempt cut short by the caller is not recorded
			u.setLast(res)
		}
		return res, err
	}
	res.OK = true
	res.Lists = ix.Lists()
	old := u.Screener.Current()
	if old != nil && old.Version() == ix.Version() {
		res.Version = old.Version()
		u.setLast(res)
		return res, nil
	}
	res.Changed = len(Changed(old, ix))
	u.Screener.Swap(ix)
	res.Swapped = true
	res.Version = ix.Version()
	u.setLast(res)
	if u.OnSwap != nil {
		u.OnSwap(old, ix)
	}
	return res, nil
}

func (s *Screener) current() *Index {
	if s == nil {
		return nil
	}
	return s.Current()
}

func (u *Updater) setLast(r Result) {
	u.lmu.Lock()
	u.last = r
	u.lmu.Unlock()
}

func (u *Updater) attempt(ctx context.Context) (*Index, error) {
	if u.Screener == nil {
		return nil, errors.New("screening: Updater.Screener is nil")
	}
	timeout := u.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	src := u.Sources
	if src.SDN == "" {
		src.SDN = DefaultSDNURL
	}
	if src.ALT == "" {
		src.ALT = DefaultALTURL
	}
	if src.UN == "" {
		src.UN = DefaultUNURL
	}
	urls := []string{src.SDN, src.ALT, src.UN, src.EU, src.UK}
	var (
		data [5][]byte
		mod  [5]string
		errs [5]error
		wg   sync.WaitGroup
	)
	for i, url := range urls {
		if url == "" {
			continue // EU or UK not configured
		}
		wg.Go(func() {
			data[i], mod[i], errs[i] = u.fetch(ctx, url)
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	in := Inputs{SDN: bytes.NewReader(data[0]), ALT: bytes.NewReader(data[1]), UN: bytes.NewReader(data[2])}
	if src.EU != "" {
		in.EU = bytes.NewReader(data[3])
	}
	if src.UK != "" {
		in.UK = bytes.NewReader(data[4])
	}
	ix, err := ParseAll(in, Meta{
		SDNSource: src.SDN, ALTSource: src.ALT, UNSource: src.UN, EUSource: src.EU, UKSource: src.UK,
		OFACPublished: mod[0], LoadedAt: u.now(),
	})
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if err := u.validate(ix, u.Screener.Current()); err != nil {
		return nil, err
	}
	return ix, nil
}

// validate checks the entry counts of every list of ix.
func (u *Updater) validate(ix, cur *Index) error {
	minEntries := u.MinEntries
	if minEntries <= 0 {
		minEntries = DefaultMinEntries
	}
	ratio := u.MinRatio
	if ratio <= 0 {
		ratio = DefaultMinRatio
	}
	counts := make(map[string]int)
	for _, l := range ix.Lists() {
		counts[l.Name] = l.Entries
		if l.Entries < minEntries {
			return fmt.Errorf("list %s: %d entries, fewer than the minimum %d", l.Name, l.Entries, minEntries)
		}
	}
	if cur == nil {
		return nil
	}
	for _, l := range cur.Lists() {
		n, ok := counts[l.Name]
		if !ok {
			return fmt.Errorf("list %s missing from the download", l.Name)
		}
		if float64(n) < ratio*float64(l.Entries) {
			return fmt.Errorf("list %s: %d entries, less than %.0f%% of the current %d", l.Name, n, ratio*100, l.Entries)
		}
	}
	return nil
}

// fetch downloads url, at most MaxBytes, and returns the body and the
// Last-Modified header.
func (u *Updater) fetch(ctx context.Context, url string) ([]byte, string, error) {
	max := u.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	client := u.Client
	if client == nil {
		t := u.Timeout
		if t <= 0 {
			t = DefaultTimeout
		}
		client = &http.Client{Timeout: t}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, "", fmt.Errorf("get %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, "", fmt.Errorf("get %s: %w", url, err)
	}
	if int64(len(body)) > max {
		return nil, "", fmt.Errorf("get %s: larger than %d bytes", url, max)
	}
	var lm string
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		lm = t.UTC().Format(time.RFC3339)
	}
	return body, lm, nil
}

// Run calls Update at once and then every interval until ctx is done,
// logging each attempt. After a failed attempt it retries after
// min(every, 15 minutes).
func (u *Updater) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 6 * time.Hour
	}
	log := u.logger()
	for {
		res, err := u.Update(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := every
		if err != nil {
			log.Error("sanctions list update failed", "error", err, "version", res.Version)
			wait = min(every, 15*time.Minute)
		} else if res.Swapped {
			log.Info("sanctions lists updated", "version", res.Version, "changed", res.Changed, "duration", res.Duration)
		} else {
			log.Info("sanctions lists unchanged", "version", res.Version)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
