package screening

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"emi/internal/testwait"
)

// listServer serves the three files; tests change what it serves.
type listServer struct {
	mu     sync.Mutex
	files  map[string][]byte
	status map[string]int
	hits   int
}

func newListServer(tb testing.TB) (*listServer, *httptest.Server) {
	ls := &listServer{
		files: map[string][]byte{
			"/sdn.csv":          readShared(tb, FileSDN),
			"/alt.csv":          readShared(tb, FileALT),
			"/consolidated.xml": readShared(tb, FileUN),
		},
		status: map[string]int{},
	}
	srv := httptest.NewServer(ls)
	tb.Cleanup(srv.Close)
	return ls, srv
}

func (ls *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.hits++
	if code := ls.status[r.URL.Path]; code != 0 {
		http.Error(w, "unavailable", code)
		return
	}
	b, ok := ls.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Last-Modified", "Fri, 03 May 2024 18:43:00 GMT")
	w.Write(b)
}

func (ls *listServer) set(path string, b []byte, status int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if b != nil {
		ls.files[path] = b
	}
	ls.status[path] = status
}

func testUpdater(srv *httptest.Server, s *Screener) (*Updater, *[][2]*Index) {
	var swaps [][2]*Index
	u := &Updater{
		Sources:  Sources{SDN: srv.URL + "/sdn.csv", ALT: srv.URL + "/alt.csv", UN: srv.URL + "/consolidated.xml"},
		Client:   srv.Client(),
		Screener: s,
		OnSwap:   func(old, new *Index) { swaps = append(swaps, [2]*Index{old, new}) },
		Now:      func() time.Time { return time.Date(2024, 5, 4, 12, 0, 0, 0, time.UTC) },
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	return u, &swaps
}

func TestUpdater(t *testing.T) {
	ls, srv := newListServer(t)
	s := NewScreener()
	u, swaps := testUpdater(srv, s)
	ctx := context.Background()

	// 1. First load: swapped, OnSwap(nil, new).
	res, err := u.Update(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur := s.Current()
	if !res.OK || !res.Swapped || cur == nil || res.Version != cur.Version() || res.Changed != cur.Len() {
		t.Fatalf("first update: %+v", res)
	}
	if len(*swaps) != 1 || (*swaps)[0][0] != nil || (*swaps)[0][1] != cur {
		t.Fatalf("OnSwap: %v", *swaps)
	}
	last := u.Last()
	if !last.OK || last.Error != "" || last.Version != cur.Version() || !last.At.Equal(u.Now()) || len(last.Lists) != 2 {
		t.Errorf("Last: %+v", last)
	}
	if p := cur.Lists()[0].Published; p != "2024-05-03T18:43:00Z" {
		t.Errorf("OFAC published from Last-Modified: %q", p)
	}
	if src := cur.Lists()[1].Source; src != srv.URL+"/consolidated.xml" {
		t.Errorf("UN source %q", src)
	}

	// 2. Same data again: OK, nothing swapped.
	res, err = u.Update(ctx)
	if err != nil || !res.OK || res.Swapped || s.Current() != cur || len(*swaps) != 1 {
		t.Errorf("unchanged update: %+v, %v", res, err)
	}

	// 3. Failures: no swap, Last records the error.
	sdn := readShared(t, FileSDN)
	un := readShared(t, FileUN)
	lines := bytes.SplitAfter(sdn, []byte("\r\n"))
	failures := []struct {
		name    string
		setup   func()
		wantErr string
	}{
		{"truncated UN XML", func() { ls.set("/consolidated.xml", un[:len(un)/3], 0) }, "un xml"},
		{"garbage sdn.csv", func() { ls.set("/sdn.csv", []byte("<html><body>Maintenance</body></html>"), 0) }, "sdn.csv"},
		{"500 on alt.csv", func() { ls.set("/alt.csv", nil, http.StatusInternalServerError) }, "500"},
		{"404 on UN", func() { ls.set("/consolidated.xml", nil, http.StatusNotFound) }, "404"},
		{"far fewer entries", func() { ls.set("/sdn.csv", bytes.Join(lines[:5000], nil), 0) }, "less than 80%"},
	}
	for _, f := range failures {
		// restore the good files
		ls.set("/sdn.csv", sdn, 0)
		ls.set("/alt.csv", readShared(t, FileALT), 0)
		ls.set("/consolidated.xml", un, 0)
		f.setup()
		res, err := u.Update(ctx)
		if err == nil || !strings.Contains(err.Error(), f.wantErr) {
			t.Errorf("%s: err = %v, want it to mention %q", f.name, err, f.wantErr)
		}
		if s.Current() != cur || len(*swaps) != 1 {
			t.Errorf("%s: index swapped", f.name)
		}
		last := u.Last()
		if last.OK || last.Swapped || last.Error == "" || last.Version != cur.Version() || res.OK {
			t.Errorf("%s: Last = %+v", f.name, last)
		}
	}
	ls.set("/sdn.csv", sdn, 0)
	ls.set("/alt.csv", readShared(t, FileALT), 0)
	ls.set("/consolidated.xml", un, 0)

	// 4. Body size limit.
	u.MaxBytes = 1 << 20
	if _, err := u.Update(ctx); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("size limit: %v", err)
	}
	u.MaxBytes = 0

	// 5. A modified entry: swapped, exactly one change reported.
	mod := bytes.Replace(sdn, []byte("DOB 30 Aug 1954; alt. DOB 31 Aug 1954"), []byte("DOB 30 Aug 1954; alt. DOB 31 Aug 1955"), 1)
	ls.set("/sdn.csv", mod, 0)
	res, err = u.Update(ctx)
	if err != nil || !res.Swapped || res.Changed != 1 {
		t.Fatalf("modified entry: %+v %v", res, err)
	}
	if len(*swaps) != 2 || (*swaps)[1][0] != cur || (*swaps)[1][1] != s.Current() {
		t.Errorf("OnSwap(old, new): %v", *swaps)
	}
	if ch := Changed(cur, s.Current()); len(ch) != 1 || ch[0].ID != "9760" {
		t.Errorf("Changed: %+v", ch)
	}
}

func TestUpdaterMinEntries(t *testing.T) {
	_, srv := newListServer(t)
	s := NewScreener()
	u, swaps := testUpdater(srv, s)
	u.MinEntries = 5000 // the UN list has 1,003
	_, err := u.Update(context.Background())
	if err == nil || !strings.Contains(err.Error(), "fewer than the minimum") || s.Current() != nil || len(*swaps) != 0 {
		t.Errorf("min entries: %v", err)
	}
	if u.Last().OK {
		t.Error("Last().OK after failure")
	}
	if _, err := (&Updater{}).Update(context.Background()); err == nil {
		t.Error("Updater without Screener succeeded")
	}
}

func TestUpdaterTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	s := NewScreener()
	u, _ := testUpdater(srv, s)
	u.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := u.Update(context.Background())
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("timeout: %v after %v", err, time.Since(start))
	}
}

// TestUpdaterRunSwapsConcurrentlyWithReaders: the update loop swaps the
// lists while this test reads them, so make test runs it under -race.
func TestUpdaterRunSwapsConcurrentlyWithReaders(t *testing.T) {
	ls, srv := newListServer(t)
	s := NewScreener()
	u, _ := testUpdater(srv, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		u.Run(ctx, 20*time.Millisecond)
		close(done)
	}()
	testwait.Until(t, "Run to update, in at least two attempts", func() bool {
		ls.mu.Lock()
		n := ls.hits
		ls.mu.Unlock()
		return n >= 6 && s.Current() != nil // at least two attempts
	})
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop")
	}
	if !u.Last().OK {
		t.Errorf("Last: %+v", u.Last())
	}
}

func TestDefaultSources(t *testing.T) {
	d := DefaultSources()
	if d.SDN != "https://www.treasury.gov/ofac/downloads/sdn.csv" || d.ALT != "https://www.treasury.gov/ofac/downloads/alt.csv" ||
		d.UN != "https://scsanctions.un.org/resources/xml/en/consolidated.xml" ||
		!strings.HasPrefix(d.EU, "https://webgate.ec.europa.eu/fsd/fsf/") || !strings.HasSuffix(d.UK, "/ConList.csv") {
		t.Errorf("%+v", d)
	}
}

func TestChanged(t *testing.T) {
	sdn, alt, un := readShared(t, FileSDN), readShared(t, FileALT), readShared(t, FileUN)
	parse := func(sdn, alt, un []byte) *Index {
		ix, err := Parse(bytes.NewReader(sdn), bytes.NewReader(alt), bytes.NewReader(un), Meta{})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	old := parse(sdn, alt, un)
	if n := len(Changed(nil, old)); n != old.Len() {
		t.Errorf("Changed(nil, ix) = %d, want %d", n, old.Len())
	}
	if n := len(Changed(old, old)); n != 0 {
		t.Errorf("Changed(ix, ix) = %d", n)
	}
	if Changed(old, nil) != nil {
		t.Error("Changed(old, nil) not nil")
	}

	// Modify one entry in a copy: exactly that entry is reported.
	mod := bytes.Replace(sdn, []byte(`"KIM, Jong Un"`), []byte(`"KIM, Jong-Un"`), 1)
	if bytes.Equal(mod, sdn) {
		t.Fatal("modification not applied")
	}
	nw := parse(mod, alt, un)
	ch := Changed(old, nw)
	e, _ := nw.Entry(ListOFAC, "20157")
	if len(ch) != 1 || ch[0] != (EntryRef{List: ListOFAC, ID: "20157", Fingerprint: e.Fingerprint}) {
		t.Errorf("Changed = %+v", ch)
	}
	o, _ := old.Entry(ListOFAC, "20157")
	if o.Fingerprint == e.Fingerprint {
		t.Error("fingerprint did not change")
	}

	// A new alias (alt.csv) and a UN nationality change are detected too.
	alt2 := append(bytes.TrimRight(bytes.Clone(alt), "\x1a"), []byte("9760,99999,\"aka\",\"LUKASHENKO, Sasha\",-0- \r\n\x1a")...)
	un2 := bytes.Replace(un, []byte("<VALUE>Rwanda</VALUE>"), []byte("<VALUE>Uganda</VALUE>"), 1)
	ch = Changed(old, parse(sdn, alt2, un2))
	if len(ch) != 2 || ch[0].ID != "9760" || ch[1].List != ListUN {
		t.Errorf("alias + nationality: %+v", ch)
	}

	// A program change does not alter what is screened: not reported.
	prog := bytes.Replace(sdn, []byte(`"KIM, Jong Un","individual","DPRK3"`), []byte(`"KIM, Jong Un","individual","DPRK4"`), 1)
	if n := len(Changed(old, parse(prog, alt, un))); n != 0 {
		t.Errorf("program change reported: %d", n)
	}

	// A new entry is reported.
	extra := bytes.TrimRight(sdn, "\x1a")
	extra = append(extra, []byte("99999,\"DOE, John\",\"individual\",\"SDGT\",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- \r\n\x1a")...)
	ch = Changed(old, parse(extra, alt, un))
	if len(ch) != 1 || ch[0].ID != "99999" {
		t.Errorf("new entry: %+v", ch)
	}
}

// TestUpdaterEUUK: with EU and UK addresses set, the updater downloads and
// screens those lists beside OFAC and the UN; a failing EU download fails
// the attempt and keeps the current index.
func TestUpdaterEUUK(t *testing.T) {
	ls, srv := newListServer(t)
	for path, file := range map[string]string{"/eu.xml": "eu_fsf_sample.xml", "/uk.csv": "uk_conlist_sample.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		ls.set(path, b, 0)
	}
	s := NewScreener()
	u, _ := testUpdater(srv, s)
	u.MinEntries = 3 // the fixtures are small
	u.Sources.EU, u.Sources.UK = srv.URL+"/eu.xml", srv.URL+"/uk.csv"
	res, err := u.Update(context.Background())
	if err != nil || !res.Swapped {
		t.Fatalf("update: %+v %v", res, err)
	}
	var names []string
	for _, l := range s.Current().Lists() {
		names = append(names, l.Name+" "+l.Source)
	}
	if len(names) != 4 || !strings.HasPrefix(names[2], ListEU+" "+srv.URL) || !strings.HasPrefix(names[3], ListUK+" "+srv.URL) {
		t.Fatalf("lists %v", names)
	}
	if found(s.Current().Screen(Query{FirstName: "Uladzimir", LastName: "Tsikhanovich"}), ListEU, "EU.9001.01") < 0 {
		t.Error("EU person not screened after the update")
	}
	before := s.Current()
	ls.set("/eu.xml", nil, http.StatusBadGateway)
	if _, err := u.Update(context.Background()); err == nil || s.Current() != before {
		t.Errorf("a failed EU download: err %v, index swapped %v", err, s.Current() != before)
	}
}
