package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"emi/internal/app"
	"emi/internal/app/apptest"
	"emi/internal/config"
	"emi/internal/emi"
	"emi/internal/postgres"
	"emi/internal/seal"
	cardssvc "emi/internal/service/cards"
	"emi/internal/service/kernel"
	"emi/internal/service/ops"
	"emi/internal/testwait"
)

// Card data security: checks P1, P3, P4, P5 and P6 of
// ../shared/design/security-checks.md and the log test (no card data in the
// server's log). Helpers are prefixed sec so that they stay apart from
// cards_test.go.

// secCard is a card and the card data the test learnt through the reveal
// operations.
type secCard struct {
	token string
	pan   string
	cvv   string
	pin   string
	// oldCVVs are the CVV2s the card had before a conversion.
	oldCVVs []string
}

// secRun sends one partner's requests and keeps every answer that is not
// a reveal: those must not hold card data either.
type secRun struct {
	t     *testing.T
	env   *apptest.Env
	p     *apptest.Partner
	plain []string
	// bulk skips the openapi.yaml check of the answers (cards_test.go
	// checks the contract; here it would only serialise the workers).
	bulk bool
}

func (r *secRun) do(method, path, op string, body any) apptest.Response {
	r.t.Helper()
	// Each request gets its own second: two GETs of one operation at the
	// same timestamp have the same signature and the second is a replay.
	r.env.Clock.Advance(time.Second)
	res := r.p.Do(r.t, apptest.Request{Method: method, Path: path, Operation: op, JSON: body, SkipOpenAPI: r.bulk})
	if op != "card_number" && op != "card_retrieve_pin" {
		r.plain = append(r.plain, string(res.Raw))
	}
	return res
}

func (r *secRun) ok(what string, res apptest.Response, status int) apptest.Response {
	r.t.Helper()
	apptest.Expect(r.t, what, res, 0, status)
	return res
}

// create issues a card; body gets a random PIN unless it has one.
func (r *secRun) create(body map[string]any) *secCard {
	r.t.Helper()
	if body["pin"] == nil {
		body["pin"] = secPIN()
	}
	res := r.ok("card_create", r.do(http.MethodPost, "/v2/cards", "card_create", body), http.StatusCreated)
	return &secCard{token: res.Data["token"].(string), pin: body["pin"].(string)}
}

// reveal reads a card's PAN, CVV2 and PIN through the three reveal
// operations, checks them against what the test knows and records them.
func (r *secRun) reveal(c *secCard) {
	r.t.Helper()
	base := "/v2/cards/" + c.token
	a := r.ok("first-half", r.do(http.MethodGet, base+"/first-half", "card_number", nil), http.StatusOK)
	b := r.ok("second-half", r.do(http.MethodGet, base+"/second-half", "card_number", nil), http.StatusOK)
	p := r.ok("pin", r.do(http.MethodGet, base+"/pin", "card_retrieve_pin", nil), http.StatusOK)
	pan := a.Data["first_half"].(string) + b.Data["second_half"].(string)
	if len(pan) != 16 || !cardssvc.LuhnValid(pan) {
		r.t.Fatalf("card %s: the halves do not make a Luhn-valid 16-digit PAN", c.token)
	}
	if c.pan != "" && pan != c.pan {
		r.t.Fatalf("card %s: the PAN changed", c.token)
	}
	if pin := p.Data["pin"].(string); pin != c.pin {
		r.t.Fatalf("card %s: card_retrieve_pin gives %q, the card was issued with %q", c.token, pin, c.pin)
	}
	c.pan, c.cvv = pan, a.Data["cvv"].(string)
}

// secUser creates a user whose e-mail holds no digits (a long digit run in
// a text column would be a false positive of the Luhn scan).
func (r *secRun) user() string {
	r.t.Helper()
	body := validUser(r.p)
	body["email"] = "holder." + secLetters(12) + "@example.com"
	return createUser(r.t, r.env, r.p, body)
}

func (r *secRun) account(user string) string {
	r.t.Helper()
	return createAccount(r.t, r.env, r.p, map[string]any{"program": "account_eur", "user": user}).Data["token"].(string)
}

// lifecycle runs every card operation and the error paths on cards of its
// own, including a forced 500, and returns those cards with what they
// revealed.
func (r *secRun) lifecycle(other *apptest.Partner) []*secCard {
	t := r.t
	t.Helper()
	var out []*secCard

	// A customer card through every operation, converted (new CVV2), then
	// terminated with its account.
	user := r.user()
	acc := r.account(user)
	c := r.create(map[string]any{"account": acc, "type": "virtual", "emboss_name": "MARA VELIKOVA"})
	out = append(out, c)
	r.reveal(c)
	base := "/v2/cards/" + c.token
	r.ok("card_details", r.do(http.MethodGet, base, "card_details", nil), http.StatusOK)
	r.ok("cards_list", r.do(http.MethodGet, "/v2/cards/1/100?user="+user, "cards_list", nil), http.StatusOK)
	r.ok("status inactive", r.do(http.MethodPut, base+"/status", "card_status", map[string]any{"status": "inactive"}), http.StatusOK)
	r.ok("status active", r.do(http.MethodPut, base+"/status", "card_status", map[string]any{"status": "active"}), http.StatusOK)
	r.ok("groups", r.do(http.MethodPut, base+"/groups", "card_groups", map[string]any{"limits": "limits_high", "usage": ""}), http.StatusOK)
	r.ok("3ds enrol", r.do(http.MethodPost, base+"/3ds", "card_3ds_enrol", map[string]any{"otp_sms": "+46701234567", "biometric": true}), http.StatusOK)
	r.ok("3ds update", r.do(http.MethodPut, base+"/3ds", "card_3ds_update", map[string]any{"otp_sms": "+46709999999"}), http.StatusOK)
	r.ok("send pin", r.do(http.MethodPost, base+"/pin/send", "card_send_pin", nil), http.StatusOK)
	r.ok("reset pin", r.do(http.MethodDelete, base+"/pin/reset", "card_reset_pin", nil), http.StatusOK)
	r.ok("wallet", r.do(http.MethodPost, base+"/wallets", "card_wallet_provision", map[string]any{"wallet": "google_pay", "device_name": "Pixel"}), http.StatusCreated)
	r.ok("3ds remove", r.do(http.MethodDelete, base+"/3ds", "card_3ds_remove", map[string]any{"type": "all"}), http.StatusOK)
	r.ok("convert", r.do(http.MethodPut, base+"/convert", "card_convert", map[string]any{"delivery_details": delivery()}), http.StatusOK)
	old := c.cvv
	r.reveal(c)
	c.oldCVVs = append(c.oldCVVs, old)
	r.ok("account_terminate", r.do(http.MethodDelete, "/v2/accounts/"+acc, "account_terminate", nil), http.StatusOK)
	if d := r.do(http.MethodGet, base, "card_details", nil); d.Data["status"] != "terminated" {
		t.Fatalf("the card of a terminated account is %v", d.Data["status"])
	}
	apptest.Expect(t, "reveal of a terminated card", r.do(http.MethodGet, base+"/first-half", "card_number", nil), 12005, http.StatusConflict)

	// A plastic card: activated, then terminated.
	pl := r.create(map[string]any{"program": "card_eur", "type": "plastic", "delivery_details": delivery()})
	out = append(out, pl)
	r.reveal(pl)
	r.ok("activate", r.do(http.MethodPut, "/v2/cards/"+pl.token+"/activate", "card_activate", map[string]any{}), http.StatusOK)
	r.ok("terminate", r.do(http.MethodDelete, "/v2/cards/"+pl.token, "card_terminate", nil), http.StatusOK)
	apptest.Expect(t, "pin of a terminated card", r.do(http.MethodGet, "/v2/cards/"+pl.token+"/pin", "card_retrieve_pin", nil), 12005, http.StatusConflict)

	// A non-personalized card assigned to an account.
	np := r.create(map[string]any{"program": "card_eur", "type": "virtual"})
	out = append(out, np)
	r.reveal(np)
	r.ok("assign", r.do(http.MethodPut, "/v2/cards/"+np.token+"/assign", "card_assign", map[string]any{"account": r.account(r.user())}), http.StatusOK)

	// Error paths: refused PINs (the answer must not echo them), unknown
	// and foreign cards.
	for _, bad := range []string{"12a4", "7654321", "987"} {
		res := r.do(http.MethodPost, "/v2/cards", "card_create", map[string]any{"program": "card_eur", "type": "virtual", "pin": bad})
		apptest.Expect(t, "card_create with PIN "+bad, res, 12001, http.StatusBadRequest)
		if strings.Contains(string(res.Raw), bad) {
			t.Fatalf("the refusal of a PIN repeats it: %s", res.Raw)
		}
	}
	unknown := kernel.NewToken()
	for _, op := range []struct{ path, op string }{{"/first-half", "card_number"}, {"/second-half", "card_number"}, {"/pin", "card_retrieve_pin"}} {
		apptest.Expect(t, "reveal of an unknown card", r.do(http.MethodGet, "/v2/cards/"+unknown+op.path, op.op, nil), 12002, http.StatusNotFound)
		r.env.Clock.Advance(time.Second)
		apptest.Expect(t, "reveal of another partner's card", other.Do(t, apptest.Request{Method: http.MethodGet,
			Path: "/v2/cards/" + np.token + op.path, Operation: op.op}), 12002, http.StatusNotFound)
	}

	// A forced 500: a PIN ciphertext moved from another card's row does
	// not open, and the answer and the log carry no card data.
	victim := r.create(map[string]any{"program": "card_eur", "type": "virtual"})
	out = append(out, victim)
	r.reveal(victim)
	secCopySealed(t, r.env, "pin_sealed", np.token, victim.token)
	res := r.do(http.MethodGet, "/v2/cards/"+victim.token+"/pin", "card_retrieve_pin", nil)
	apptest.Expect(t, "PIN moved from another row", res, emi.ErrInternal.Code, http.StatusInternalServerError)
	r.plain = append(r.plain, string(res.Raw)) // an error answer holds no card data
	return out
}

// secWideWindow is the environment option of tests that use secEach: its
// workers advance the shared clock one second per request each, so a
// signature may be several seconds old when the server checks it; a wide
// timestamp window keeps that from failing as 10002.
var secWideWindow = apptest.Options{Configure: func(c *config.Config) { c.AuthWindow = time.Hour }}

// secKeys gives the partner of r n more API keys, for secEach's workers.
func secKeys(t *testing.T, r *secRun, n int) []*apptest.Partner {
	t.Helper()
	sys := emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test"))
	var out []*apptest.Partner
	for range n {
		c, err := r.env.App.Partners.CreateKey(sys, r.p.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.env.As(&apptest.Partner{ID: r.p.ID, KeyID: c.KeyID, APIKey: c.APIKey, APISecret: c.APISecret, Merchant: r.p.Merchant}))
	}
	return out
}

// secEach runs fn(w, i) for i from 0 to n-1 on one worker per key, in
// parallel. Each worker signs with its own API key: two requests of one
// operation signed in the same second with the same key would be replays
// of each other. The answers the workers keep join r's.
func secEach(t *testing.T, r *secRun, keys []*apptest.Partner, n int, fn func(w *secRun, i int)) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	runs := make([]*secRun, len(keys))
	for k, key := range keys {
		runs[k] = &secRun{t: t, env: r.env, p: r.env.As(key), bulk: true}
		wg.Add(1)
		go func(w *secRun) {
			defer wg.Done()
			for !t.Failed() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(w, i)
			}
		}(runs[k])
	}
	wg.Wait()
	for _, w := range runs {
		r.plain = append(r.plain, w.plain...)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// secPIN returns a random PIN of 4 to 6 digits. Four-digit PINs avoid
// 1900 to 2199, which a years-and-dates search near a card token could hit
// by chance.
func secPIN() string {
	switch secInt(3) {
	case 0:
		return strconv.Itoa(2200 + secInt(7800))
	case 1:
		return fmt.Sprintf("%05d", secInt(100000))
	}
	return fmt.Sprintf("%06d", secInt(1000000))
}

func secInt(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err)
	}
	return int(v.Int64())
}

func secLetters(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + secInt(26))
	}
	return string(b)
}

// secCopySealed copies a sealed column of card from into card to, as an
// attacker with write access to the database would.
func secCopySealed(t *testing.T, env *apptest.Env, column, from, to string) {
	t.Helper()
	if _, err := env.App.DB.Exec(`UPDATE cards SET `+column+` = (SELECT `+column+` FROM cards WHERE token = $1) WHERE token = $2`, from, to); err != nil {
		t.Fatal(err)
	}
}

// secHook is a webhook receiver that keeps every body.
type secHook struct {
	mu     sync.Mutex
	bodies []string
	srv    *httptest.Server
}

func newSecHook(t *testing.T) *secHook {
	h := &secHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *secHook) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

// secHaystack is a place searched for card data.
type secHaystack struct {
	name string
	text string
}

// secBound is what may surround a number for it to be a number of its own:
// not a letter, digit or dash (so that a run of digits inside a hex string
// or a UUID is not one).
const secBound = `[^0-9A-Za-z-]`

// secNextTo matches b written next to a: separated only by punctuation and
// at most one field name (`"card":"<token>","pin":"1234"`,
// `1234	567`, `last4=1234 cvv=567`), in either order.
func secNextTo(a, b string) *regexp.Regexp {
	sep := `[^0-9A-Za-z]{1,8}(?:[A-Za-z_][A-Za-z0-9_]{0,15}[^0-9A-Za-z]{1,8})?`
	qa, qb := regexp.QuoteMeta(a), regexp.QuoteMeta(b)
	return regexp.MustCompile(`(?:^|` + secBound + `)` + qa + sep + qb + `(?:` + secBound + `|$)|(?:^|` + secBound + `)` + qb + sep + qa + `(?:` + secBound + `|$)`)
}

// secPANForms are the ways a PAN could be written: plain, in groups of
// four with spaces or dashes, base64 and hex of its digits.
func secPANForms(pan string) []string {
	var groups []string
	for i := 0; i < len(pan); i += 4 {
		groups = append(groups, pan[i:min(i+4, len(pan))])
	}
	b := []byte(pan)
	return []string{pan, strings.Join(groups, " "), strings.Join(groups, "-"),
		base64.RawStdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b))}
}

// secSearch returns every place where a card's data is found: a PAN in any
// form, its second half (which with the public BIN gives the PAN), a CVV2
// next to the PAN's last four digits, a PIN next to the card token.
func secSearch(hay []secHaystack, cards []*secCard) []string {
	var hits []string
	where := func(h secHaystack, i int, what string) {
		from, to := max(0, i-60), min(len(h.text), i+60)
		hits = append(hits, fmt.Sprintf("%s: %s in %q", h.name, what, h.text[from:to]))
	}
	for _, h := range hay {
		runs := secRuns(h.text)
		for _, c := range cards {
			for _, f := range secPANForms(c.pan) {
				if i := strings.Index(h.text, f); i >= 0 {
					where(h, i, "PAN of card "+c.token+" as "+f)
				}
			}
			for _, i := range runs[c.pan[8:]] {
				where(h, i, "second half of the PAN of card "+c.token)
			}
			// The patterns run on windows around each occurrence of the
			// token or of the last four digits: fast, and the same result.
			pinNear := secNextTo(c.token, c.pin)
			for _, w := range secWindows(h.text, c.token) {
				if loc := pinNear.FindStringIndex(h.text[w[0]:w[1]]); loc != nil {
					where(h, w[0]+loc[0], "PIN of card "+c.token+" next to its token")
				}
			}
			last4 := runs[c.pan[len(c.pan)-4:]]
			if len(last4) == 0 {
				continue
			}
			for _, cvv := range append([]string{c.cvv}, c.oldCVVs...) {
				re := secNextTo(c.pan[len(c.pan)-4:], cvv)
				for _, i := range last4 {
					from, to := max(0, i-64), min(len(h.text), i+4+64)
					if loc := re.FindStringIndex(h.text[from:to]); loc != nil {
						where(h, from+loc[0], "CVV2 of card "+c.token+" next to its last four digits")
					}
				}
			}
		}
	}
	return hits
}

// secRuns indexes the runs of digits of text that stand on their own
// (between two secBound characters or the ends) by their positions.
func secRuns(text string) map[string][]int {
	out := map[string][]int{}
	for i := 0; i < len(text); {
		if text[i] < '0' || text[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if (i == 0 || !secAlnum(text[i-1]) && text[i-1] != '-') && (j == len(text) || !secAlnum(text[j]) && text[j] != '-') {
			out[text[i:j]] = append(out[text[i:j]], i)
		}
		i = j
	}
	return out
}

// secWindows returns the spans of text within 64 bytes of each occurrence
// of s.
func secWindows(text, s string) [][2]int {
	var out [][2]int
	for off := 0; ; {
		i := strings.Index(text[off:], s)
		if i < 0 {
			return out
		}
		i += off
		out = append(out, [2]int{max(0, i-64), min(len(text), i+len(s)+64)})
		off = i + 1
	}
}

// secLuhnRuns returns the runs of 13 to 19 digits standing on their own
// (not inside a longer word, number or hex string) that pass the Luhn
// check: what a card-data discovery scan flags as a PAN.
var secDigitRun = regexp.MustCompile(`[0-9]{13,}`)

func secLuhnRuns(s string) []string {
	var out []string
	for _, loc := range secDigitRun.FindAllStringIndex(s, -1) {
		run := s[loc[0]:loc[1]]
		if len(run) > 19 {
			continue
		}
		if loc[0] > 0 && secAlnum(s[loc[0]-1]) || loc[1] < len(s) && secAlnum(s[loc[1]]) {
			continue
		}
		if cardssvc.LuhnValid(run) {
			out = append(out, run)
		}
	}
	return out
}

func secAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// secTextColumnsWithPANs scans every text, varchar, json and array column
// of the database for a Luhn-valid run of 13 to 19 digits.
func secTextColumnsWithPANs(t *testing.T, env *apptest.Env) []string {
	t.Helper()
	var cols []struct {
		Table  string `db:"table_name"`
		Column string `db:"column_name"`
	}
	if err := env.App.DB.Select(&cols, `SELECT c.table_name, c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
		WHERE c.table_schema = 'public'
		  AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY')
		ORDER BY 1, 2`); err != nil {
		t.Fatal(err)
	}
	if len(cols) < 50 {
		t.Fatalf("only %d text columns found: the scan would prove nothing", len(cols))
	}
	var hits []string
	for _, c := range cols {
		q := fmt.Sprintf(`SELECT %[2]s::text FROM %[1]s WHERE %[2]s::text ~ '[0-9]{13}'`, c.Table, c.Column)
		var vals []string
		if err := env.App.DB.Select(&vals, q); err != nil {
			t.Fatalf("%s.%s: %v", c.Table, c.Column, err)
		}
		for _, v := range vals {
			for _, run := range secLuhnRuns(v) {
				hits = append(hits, fmt.Sprintf("%s.%s holds the Luhn-valid %s", c.Table, c.Column, run))
			}
		}
	}
	return hits
}

// secPGDump returns pg_dump --data-only of the test database. pg_dump is
// looked for where .ci/postgres.sh finds the server binaries (beside
// pg_ctl on the PATH, then /usr/lib/postgresql/*/bin, newest first), then
// on the PATH; one at least as new as the server is used. The test is
// skipped only when there is none.
func secPGDump(t *testing.T, env *apptest.Env) string {
	t.Helper()
	var candidates []string
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Join(filepath.Dir(real), "pg_dump"))
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
	sort.Slice(dirs, func(i, j int) bool { return secMajor(dirs[i]) > secMajor(dirs[j]) })
	candidates = append(candidates, dirs...)
	if p, err := exec.LookPath("pg_dump"); err == nil {
		candidates = append(candidates, p)
	}
	var server int
	if err := env.App.DB.Get(&server, `SELECT current_setting('server_version_num')::int / 10000`); err != nil {
		t.Fatal(err)
	}
	var tried []string
	for _, c := range candidates {
		out, err := exec.Command(c, "--version").Output()
		if err != nil {
			continue
		}
		m := regexp.MustCompile(`(\d+)(\.\d+)?`).FindStringSubmatch(string(out))
		if m == nil {
			continue
		}
		if v, _ := strconv.Atoi(m[1]); v < server {
			tried = append(tried, fmt.Sprintf("%s (%d)", c, v))
			continue
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(c, "--data-only", "--no-owner", "--no-privileges", "--dbname="+env.DBURL)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, stderr.String())
		}
		return stdout.String()
	}
	t.Skipf("P1 needs pg_dump at least as new as the server (PostgreSQL %d) and none was found (looked beside pg_ctl, in /usr/lib/postgresql/*/bin and on the PATH; too old: %v); install postgresql-client-%d", server, tried, server)
	return ""
}

func secMajor(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// secBytea returns every non-sealed bytea value of the database as text
// (event bodies, stored Idempotency-Key answers, session data...): the dump
// shows them in hex, where a plain PAN would not be seen.
func secBytea(t *testing.T, env *apptest.Env) []secHaystack {
	t.Helper()
	sealed := map[string]bool{}
	for _, tb := range ops.SealedTables() {
		for _, c := range tb.Columns {
			sealed[tb.Name+"."+c.Name] = true
		}
		if tb.Lookup != nil {
			sealed[tb.Name+"."+tb.Lookup.Column] = true
		}
	}
	var cols []struct {
		Table  string `db:"table_name"`
		Column string `db:"column_name"`
	}
	if err := env.App.DB.Select(&cols, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type = 'bytea' ORDER BY 1, 2`); err != nil {
		t.Fatal(err)
	}
	var out []secHaystack
	for _, c := range cols {
		if sealed[c.Table+"."+c.Column] {
			continue
		}
		var vals [][]byte
		if err := env.App.DB.Select(&vals, fmt.Sprintf(`SELECT %s FROM %s WHERE %[1]s IS NOT NULL`, c.Column, c.Table)); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, v := range vals {
			b.Write(v)
			b.WriteByte('\n')
		}
		out = append(out, secHaystack{name: c.Table + "." + c.Column, text: b.String()})
	}
	return out
}

// TestCardSearchFindsPlantedCardData shows that the searches of P1 find
// each form of card data they look for, so that their 0 hits mean
// something.
func TestCardSearchFindsPlantedCardData(t *testing.T) {
	t.Parallel()
	c := &secCard{token: kernel.NewToken(), pan: cardssvc.NewPAN("53999404"), cvv: "042", pin: "73920", oldCVVs: []string{"913"}}
	last4 := c.pan[12:]
	planted := []string{
		"x " + c.pan + " y",
		c.pan[:4] + " " + c.pan[4:8] + " " + c.pan[8:12] + " " + last4,
		c.pan[:4] + "-" + c.pan[4:8] + "-" + c.pan[8:12] + "-" + last4,
		`{"data":"` + base64.StdEncoding.EncodeToString([]byte(c.pan)) + `"}`,
		`\x` + hex.EncodeToString([]byte(c.pan)),
		`"second_half":"` + c.pan[8:] + `"`,
		`{"last4":"` + last4 + `","cvv":"042"}`,
		last4 + "\t913\t",
		`{"card":"` + c.token + `","pin":"73920"}`,
		"PIN 73920 card " + c.token,
	}
	for _, p := range planted {
		if hits := secSearch([]secHaystack{{name: "planted", text: p}}, []*secCard{c}); len(hits) == 0 {
			t.Errorf("the search misses %q", p)
		}
	}
	clean := []string{
		`{"token":"` + c.token + `","masked_pan":"` + cardssvc.MaskPAN(c.pan) + `","created_at":"2026-11-22T19:39:00.484509Z"}`,
		c.token + "\t" + kernel.NewToken() + "\tcard_eur\t" + c.pan[:6] + "\t" + last4 + "\t11\t2029\t\\x01deadbeef042\t0\t0",
	}
	for _, p := range clean {
		if hits := secSearch([]secHaystack{{name: "clean", text: p}}, []*secCard{c}); len(hits) > 0 {
			t.Errorf("false positive on %q: %v", p, hits)
		}
	}
	longer := c.pan + "0" // a 17-digit run that fails the Luhn check
	if cardssvc.LuhnValid(longer) {
		longer = c.pan + "1"
	}
	if got := secLuhnRuns("pan=" + c.pan + "; iban BG80EMIB96611012345678; " + longer); len(got) != 1 || got[0] != c.pan {
		t.Errorf("Luhn scan: %v", got)
	}
}

// TestCardDataNeverInClear is P1 and the log test: 200 cards issued through
// the API with known PINs, revealed (PAN halves, CVV2, PIN), taken through
// every operation, the webhooks delivered and the error paths run with a
// forced 500. Then no PAN (plain, grouped with spaces or dashes, base64,
// hex, or its second half), no CVV2 next to its PAN's last four digits and
// no PIN next to its card token is found in a pg_dump --data-only of the
// database, in any bytea value decoded, in the server log, in the outbox
// events, in the webhook bodies received or in any API answer other than a
// reveal; and no text column holds a Luhn-valid run of 13 to 19 digits.
func TestCardDataNeverInClear(t *testing.T) {
	t.Parallel()
	start := time.Now()
	hook := newSecHook(t)
	env := apptest.New(t, secWideWindow)
	startWorkers(t, env)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Card data", WebhookURL: hook.srv.URL + "/hooks"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Other partner"})
	r := &secRun{t: t, env: env, p: p}

	cards := r.lifecycle(other)
	life := len(cards)
	cards = append(cards, make([]*secCard, 200-life)...)
	secEach(t, r, secKeys(t, r, 6), 200-life, func(w *secRun, i int) {
		body := map[string]any{"program": "card_eur", "type": "virtual"}
		if i%50 == 0 {
			body["pin"] = "1234" // the same PIN on several cards
		}
		c := w.create(body)
		w.reveal(c)
		if i%20 == 0 { // status events for the webhooks
			w.ok("status", w.do(http.MethodPut, "/v2/cards/"+c.token+"/status", "card_status", map[string]any{"status": "inactive"}), http.StatusOK)
		}
		cards[life+i] = c
	})
	issued := time.Since(start)

	// Every webhook delivered (or given up), then the evidence.
	testwait.For(t, "every webhook delivery to be delivered or given up (deliveries pending)", func() (int, bool) {
		var pending int
		if err := env.App.DB.Get(&pending, `SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`); err != nil {
			t.Fatal(err)
		}
		return pending, pending == 0
	})
	bodies := hook.all()
	var cardEvents int
	for _, b := range bodies {
		if strings.Contains(b, `"card.`) {
			cardEvents++
		}
	}
	if cardEvents < 10 {
		t.Fatalf("only %d card events reached the webhook: the webhook path was not exercised", cardEvents)
	}
	var events []string
	if err := env.App.DB.Select(&events, `SELECT data::text || ' ' || convert_from(body, 'UTF8') FROM events ORDER BY seq`); err != nil {
		t.Fatal(err)
	}
	dump := secPGDump(t, env)
	for _, c := range cards {
		if !strings.Contains(dump, c.token) {
			t.Fatalf("card %s is not in the dump: the dump is not of the test database", c.token)
		}
	}
	logs := env.Logs.String()
	if !strings.Contains(logs, `"status":500`) || !strings.Contains(logs, "card_retrieve_pin") {
		t.Fatal("the server log does not hold the forced 500: it is not the log of this run")
	}
	hay := []secHaystack{
		{name: "pg_dump --data-only", text: dump},
		{name: "server log", text: logs},
		{name: "events", text: strings.Join(events, "\n")},
		{name: "webhook bodies", text: strings.Join(bodies, "\n")},
		{name: "API answers other than reveals", text: strings.Join(r.plain, "\n")},
	}
	hay = append(hay, secBytea(t, env)...)
	if hits := secSearch(hay, cards); len(hits) > 0 {
		t.Errorf("%d places hold card data in clear:\n%s", len(hits), strings.Join(hits[:min(len(hits), 30)], "\n"))
	}
	if hits := secTextColumnsWithPANs(t, env); len(hits) > 0 {
		t.Errorf("text columns hold Luhn-valid digit runs:\n%s", strings.Join(hits, "\n"))
	}
	t.Logf("P1: %d cards issued and revealed, %d API answers, %d events, %d webhook bodies, dump %d KiB, log %d KiB; issue+reveal %s, total %s",
		len(cards), len(r.plain), len(events), len(bodies), len(dump)>>10, len(logs)>>10, issued.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestCardLogHoldsNoCardData is the log test on its own: a full card run
// (create, reveal both halves and the PIN, status, groups, 3DS, PIN by SMS,
// wallet, convert, activate, assign, terminate, the account cascade,
// refused PINs, unknown and foreign cards, a forced 500) with the server
// log captured at debug level; no form of any PAN, CVV2 or PIN is in it.
func TestCardLogHoldsNoCardData(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Log"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	r := &secRun{t: t, env: env, p: p}
	cards := r.lifecycle(other)
	logs := env.Logs.String()
	if n := strings.Count(logs, `"msg":"request"`); n < 40 {
		t.Fatalf("only %d requests logged", n)
	}
	if hits := secSearch([]secHaystack{{name: "server log", text: logs}}, cards); len(hits) > 0 {
		t.Errorf("the server log holds card data:\n%s", strings.Join(hits, "\n"))
	}
	// A PIN or CVV2 alone, anywhere in a logged string (numbers such as
	// "status":404 are not strings and are left out).
	secrets := map[string]string{}
	for _, c := range cards {
		for _, v := range append([]string{c.pin, c.cvv}, c.oldCVVs...) {
			secrets[v] = c.token
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var entry any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		for _, v := range secStrings(entry) {
			for run := range secRuns(v) {
				if card, ok := secrets[run]; ok {
					t.Errorf("the log has a PIN or CVV2 of card %s in %q", card, v)
				}
			}
		}
	}
}

// secStrings returns every string value in a decoded JSON value.
func secStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, secStrings(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, secStrings(e)...)
		}
		return out
	}
	return nil
}

// secAuditRow is an audit_log row as P3 checks it.
type secAuditRow struct {
	ID       int64  `db:"id"`
	Actor    string `db:"actor_type"`
	ActorID  string `db:"actor_id"`
	Partner  string `db:"partner_id"`
	Action   string `db:"action"`
	Token    string `db:"resource_token"`
	Outcome  string `db:"outcome"`
	IP       string `db:"ip"`
	Changes  string `db:"changes"`
	Whole    string `db:"whole"`
	AgeMilli int64  `db:"age_ms"`
}

func secAudit(t *testing.T, env *apptest.Env, after int64) []secAuditRow {
	t.Helper()
	var rows []secAuditRow
	if err := env.App.DB.Select(&rows, `SELECT id, actor_type, actor_id, coalesce(partner_id::text, '') AS partner_id, action,
		resource_token, outcome, coalesce(host(ip), '') AS ip, changes::text AS changes, row_to_json(a)::text AS whole,
		(extract(epoch FROM now() - at) * 1000)::bigint AS age_ms
		FROM audit_log a WHERE id > $1 AND action = 'card.reveal' ORDER BY id`, after); err != nil {
		t.Fatal(err)
	}
	return rows
}

func secLastAudit(t *testing.T, env *apptest.Env) int64 {
	t.Helper()
	var id int64
	if err := env.App.DB.Get(&id, `SELECT coalesce(max(id), 0) FROM audit_log`); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCardRevealsAreAudited is P3: each successful reveal writes exactly
// one audit row naming the partner key, the card, the fields, the IP and
// the outcome, never the value; a reveal of another partner's card, of an
// unknown card or of a terminated card writes a denied row; the audit log
// refuses UPDATE, DELETE and TRUNCATE from the application's role.
func TestCardRevealsAreAudited(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Audited"})
	other := env.NewPartner(t, emi.PartnerCreate{Name: "Other"})
	r := &secRun{t: t, env: env, p: p}
	c := r.create(map[string]any{"program": "card_eur", "type": "virtual"})
	r.reveal(c)
	secret := append(secPANForms(c.pan), c.pan[:8], c.pan[8:], `"`+c.cvv+`"`, `"`+c.pin+`"`)

	reveals := []struct {
		path, op string
		fields   []string
	}{
		{"/first-half", "card_number", []string{"pan_first_half", "cvv"}},
		{"/second-half", "card_number", []string{"pan_second_half", "expiry"}},
		{"/pin", "card_retrieve_pin", []string{"pin"}},
	}
	check := func(what string, rows []secAuditRow, outcome, actor, partner, token string, fields []string) {
		t.Helper()
		if len(rows) != 1 {
			t.Fatalf("%s: %d audit rows, want exactly 1: %+v", what, len(rows), rows)
		}
		a := rows[0]
		var changes struct {
			Fields []string `json:"fields"`
		}
		_ = json.Unmarshal([]byte(a.Changes), &changes)
		if a.Actor != string(emi.ActorPartnerKey) || a.ActorID != actor || a.Partner != partner || a.Token != token ||
			a.Outcome != outcome || a.IP != "127.0.0.1" || strings.Join(changes.Fields, ",") != strings.Join(fields, ",") || a.AgeMilli > 60000 {
			t.Fatalf("%s: audit row %+v", what, a)
		}
		for _, s := range secret {
			if strings.Contains(a.Whole, s) {
				t.Fatalf("%s: the audit row holds the revealed value: %s", what, a.Whole)
			}
		}
	}
	for _, rv := range reveals {
		before := secLastAudit(t, env)
		r.ok(rv.op, r.do(http.MethodGet, "/v2/cards/"+c.token+rv.path, rv.op, nil), http.StatusOK)
		check("reveal "+rv.path, secAudit(t, env, before), "success", p.KeyID, p.ID, c.token, rv.fields)

		before = secLastAudit(t, env)
		env.Clock.Advance(time.Second)
		apptest.Expect(t, "foreign reveal", other.Do(t, apptest.Request{Method: http.MethodGet, Path: "/v2/cards/" + c.token + rv.path, Operation: rv.op}),
			12002, http.StatusNotFound)
		check("another partner's reveal "+rv.path, secAudit(t, env, before), "denied", other.KeyID, other.ID, c.token, rv.fields)

		before = secLastAudit(t, env)
		unknown := kernel.NewToken()
		apptest.Expect(t, "unknown card", r.do(http.MethodGet, "/v2/cards/"+unknown+rv.path, rv.op, nil), 12002, http.StatusNotFound)
		check("reveal of an unknown card "+rv.path, secAudit(t, env, before), "denied", p.KeyID, p.ID, unknown, rv.fields)
	}
	r.ok("terminate", r.do(http.MethodDelete, "/v2/cards/"+c.token, "card_terminate", nil), http.StatusOK)
	before := secLastAudit(t, env)
	apptest.Expect(t, "terminated", r.do(http.MethodGet, "/v2/cards/"+c.token+"/pin", "card_retrieve_pin", nil), 12005, http.StatusConflict)
	check("reveal of a terminated card", secAudit(t, env, before), "denied", p.KeyID, p.ID, c.token, []string{"pin"})

	// Append-only, for the application's own database role.
	var n0 int
	if err := env.App.DB.Get(&n0, `SELECT count(*) FROM audit_log`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE audit_log SET outcome = 'success' WHERE action = 'card.reveal'`,
		`UPDATE audit_log SET changes = '{}'`,
		`DELETE FROM audit_log WHERE action = 'card.reveal'`,
		`DELETE FROM audit_log`,
		`TRUNCATE audit_log`,
	} {
		_, err := env.App.DB.Exec(q)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: want the append-only refusal, got %v", q, err)
		}
	}
	var n1 int
	if err := env.App.DB.Get(&n1, `SELECT count(*) FROM audit_log`); err != nil || n1 != n0 {
		t.Fatalf("audit rows %d → %d (%v)", n0, n1, err)
	}
}

// secSealed reads a card's sealed columns.
func secSealed(t *testing.T, env *apptest.Env, card string) (pan, lookup, cvv, pin []byte) {
	t.Helper()
	row := env.App.DB.QueryRow(`SELECT pan_sealed, pan_lookup, cvv_sealed, pin_sealed FROM cards WHERE token = $1`, card)
	if err := row.Scan(&pan, &lookup, &cvv, &pin); err != nil {
		t.Fatal(err)
	}
	return pan, lookup, cvv, pin
}

// TestCardCiphertextIsRandomAndBoundToItsRow is P4: two cards with PIN
// 1234 have unrelated PIN ciphertexts; a PIN, PAN or CVV2 ciphertext moved
// into another card's row (or another column) does not open, and the
// reveal answers 500 / 10000 with no data; the PAN lookup is an HMAC under
// the seal's lookup key, not a bare hash.
// docURL is an error answer's documentation address.
var docURL = regexp.MustCompile(`"doc_url":"[^"]*"`)

func TestCardCiphertextIsRandomAndBoundToItsRow(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Bound"})
	r := &secRun{t: t, env: env, p: p}
	a := r.create(map[string]any{"program": "card_eur", "type": "virtual", "pin": "1234"})
	b := r.create(map[string]any{"program": "card_eur", "type": "virtual", "pin": "1234"})
	r.reveal(a)
	r.reveal(b)
	_, aLookup, _, aPIN := secSealed(t, env, a.token)
	bPAN, _, bCVV, bPIN := secSealed(t, env, b.token)
	if bytes.Equal(aPIN, bPIN) || bytes.Equal(aPIN[21:], bPIN[21:]) {
		t.Fatal("two cards with PIN 1234 have the same PIN ciphertext")
	}
	if len(aPIN) != len("1234")+seal.Overhead || aPIN[0] != seal.Version {
		t.Fatalf("PIN ciphertext of %d bytes, version %#x", len(aPIN), aPIN[0])
	}

	failures := 0
	internal := func(what, path, op, field string) {
		t.Helper()
		res := r.do(http.MethodGet, "/v2/cards/"+b.token+path, op, nil)
		apptest.Expect(t, what, res, emi.ErrInternal.Code, http.StatusInternalServerError)
		if res.Data != nil || strings.Contains(string(res.Raw), field) {
			t.Fatalf("%s: the failed reveal returns data: %s", what, res.Raw)
		}
		// The envelope's own digits ("code":10000) are not card data: a
		// CVV2 of 100 or 000 would match them.
		body := strings.Replace(string(res.Raw), fmt.Sprintf(`"code":%d`, emi.ErrInternal.Code), "", 1)
		// Nor is the error's documentation address: the test server's
		// random port held a 4-digit PIN once (42317 and PIN 4231).
		body = docURL.ReplaceAllString(body, "")
		for _, s := range append(secPANForms(a.pan), a.pin, a.cvv) {
			if strings.Contains(body, s) {
				t.Fatalf("%s: the answer holds card A's data: %s", what, res.Raw)
			}
		}
		// The failed attempt is audited too (outcome failure).
		failures++
		var n int
		if err := env.App.DB.Get(&n, `SELECT count(*) FROM audit_log WHERE action = 'card.reveal' AND resource_token = $1
			AND outcome = 'failure'`, b.token); err != nil || n != failures {
			t.Fatalf("%s: %d failure audit rows, want %d (%v)", what, n, failures, err)
		}
	}
	restore := func() {
		t.Helper()
		if _, err := env.App.DB.Exec(`UPDATE cards SET pan_sealed = $2, cvv_sealed = $3, pin_sealed = $4 WHERE token = $1`,
			b.token, bPAN, bCVV, bPIN); err != nil {
			t.Fatal(err)
		}
		r.reveal(b)
	}

	secCopySealed(t, env, "pin_sealed", a.token, b.token)
	internal("card A's PIN in card B's row", "/pin", "card_retrieve_pin", `"pin"`)
	restore()
	secCopySealed(t, env, "pan_sealed", a.token, b.token)
	internal("card A's PAN in card B's row (first half)", "/first-half", "card_number", "first_half")
	internal("card A's PAN in card B's row (second half)", "/second-half", "card_number", "second_half")
	restore()
	secCopySealed(t, env, "cvv_sealed", a.token, b.token)
	internal("card A's CVV2 in card B's row", "/first-half", "card_number", "first_half")
	restore()
	// Another column of the same row: B's own PIN ciphertext as its CVV2.
	if _, err := env.App.DB.Exec(`UPDATE cards SET cvv_sealed = pin_sealed WHERE token = $1`, b.token); err != nil {
		t.Fatal(err)
	}
	internal("card B's PIN as its CVV2", "/first-half", "card_number", "first_half")
	restore()

	// The PAN lookup digest: keyed (HMAC-SHA256 under the lookup key), not
	// SHA-256 of the PAN, and what a search by PAN computes.
	bare := sha256.Sum256([]byte(a.pan))
	if len(aLookup) != sha256.Size || bytes.Equal(aLookup, bare[:]) {
		t.Fatal("the PAN lookup is a bare SHA-256 of the PAN")
	}
	if !bytes.Equal(aLookup, env.App.Keys.Lookup("cards.pan", []byte(a.pan))) {
		t.Fatal("the PAN lookup is not the keyring's HMAC of the PAN")
	}
	other, err := seal.NewKeyring(secKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(aLookup, other.Lookup("cards.pan", []byte(a.pan))) {
		t.Fatal("the PAN lookup does not depend on the key")
	}
	spaced := a.pan[:4] + " " + a.pan[4:8] + " " + a.pan[8:12] + " " + a.pan[12:]
	found, err := env.App.Cards.SearchPAN(secCSCtx(), spaced)
	if err != nil || len(found) != 1 || found[0].Token != a.token {
		t.Fatalf("search by PAN: %v %v", found, err)
	}
	// The plain search refuses a full PAN (it is a reveal).
	if _, err := env.App.Cards.Search(secCSCtx(), spaced); !errors.Is(err, emi.ErrCardValidation) {
		t.Fatalf("plain search by PAN: %v", err)
	}
}

// secCSCtx is a customer-service staff member's context.
func secCSCtx() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(),
		StaffRoles: []string{string(emi.RoleCustomerService)}})
}

func secKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, seal.MasterKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestCardSADIsErasedOnTermination is P6. The service erases the CVV2 and
// PIN in the same transaction as the termination (and the schema's CHECK
// refuses a terminated card that keeps them), so there is no retention
// period and no retention job to run with a fake clock: right after
// card_terminate, and after an account's termination reaches its card,
// cvv_sealed and pin_sealed are NULL. card_convert replaces the CVV2
// ciphertext; the old one is nowhere in the database. No job deletes audit
// rows older than 12 months.
func TestCardSADIsErasedOnTermination(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Retention"})
	r := &secRun{t: t, env: env, p: p}

	erased := func(what, card string) {
		t.Helper()
		pan, lookup, cvv, pin := secSealed(t, env, card)
		if cvv != nil || pin != nil {
			t.Fatalf("%s: CVV2 or PIN ciphertext kept after termination", what)
		}
		if len(pan) == 0 || len(lookup) == 0 {
			t.Fatalf("%s: the sealed PAN and its lookup must stay (card record, search)", what)
		}
	}
	c := r.create(map[string]any{"program": "card_eur", "type": "virtual"})
	r.reveal(c)
	r.ok("terminate", r.do(http.MethodDelete, "/v2/cards/"+c.token, "card_terminate", nil), http.StatusOK)
	erased("card_terminate", c.token)

	acc := r.account(r.user())
	ac := r.create(map[string]any{"account": acc, "type": "plastic", "delivery_details": delivery()})
	r.reveal(ac)
	r.ok("account_terminate", r.do(http.MethodDelete, "/v2/accounts/"+acc, "account_terminate", nil), http.StatusOK)
	erased("account termination", ac.token)

	// The database itself refuses a terminated card with SAD.
	if _, err := env.App.DB.Exec(`UPDATE cards SET cvv_sealed = pan_sealed WHERE token = $1`, c.token); err == nil {
		t.Fatal("the schema accepts a CVV2 on a terminated card")
	}

	v := r.create(map[string]any{"program": "card_eur", "type": "virtual"})
	r.reveal(v)
	_, _, oldCVV, oldPIN := secSealed(t, env, v.token)
	r.ok("convert", r.do(http.MethodPut, "/v2/cards/"+v.token+"/convert", "card_convert", map[string]any{"delivery_details": delivery()}), http.StatusOK)
	_, _, newCVV, newPIN := secSealed(t, env, v.token)
	if bytes.Equal(oldCVV, newCVV) || !bytes.Equal(oldPIN, newPIN) {
		t.Fatal("card_convert must replace the CVV2 ciphertext and keep the PIN")
	}
	var n int
	if err := env.App.DB.Get(&n, `SELECT count(*) FROM cards WHERE $1 IN (pan_sealed, cvv_sealed, pin_sealed)`, oldCVV); err != nil || n != 0 {
		t.Fatalf("the old CVV2 ciphertext is still stored (%d, %v)", n, err)
	}
	r.reveal(v) // a new random CVV2 equals the old one once in a thousand: not asserted
	if len(v.cvv) != 3 {
		t.Fatalf("CVV2 after conversion: %q", v.cvv)
	}

	// Audit rows older than 12 months survive every maintenance job.
	var before int
	if err := env.App.DB.Get(&before, `SELECT count(*) FROM audit_log`); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(400 * 24 * time.Hour)
	if err := env.App.Maintenance.Run(emi.WithPrincipal(context.Background(), emi.SystemPrincipal("test")), emi.Job{}); err != nil {
		t.Fatal(err)
	}
	var after int
	if err := env.App.DB.Get(&after, `SELECT count(*) FROM audit_log`); err != nil || after < before {
		t.Fatalf("audit rows %d → %d after maintenance 400 days later (%v)", before, after, err)
	}
}

// secCount counts every table's rows.
func secCount(t *testing.T, db *postgres.DB) map[string]int {
	t.Helper()
	var tables []string
	if err := db.Select(&tables, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, tb := range tables {
		var n int
		if err := db.Get(&n, `SELECT count(*) FROM `+tb); err != nil {
			t.Fatal(err)
		}
		out[tb] = n
	}
	return out
}

// secSealedValues reads every sealed value of the database with its
// context, as "table.column:row" → value.
func secSealedValues(t *testing.T, db *postgres.DB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, tb := range ops.SealedTables() {
		for _, c := range tb.Columns {
			rows, err := db.Query(fmt.Sprintf(`SELECT %s::text, %s FROM %s WHERE %[2]s IS NOT NULL`, tb.Key, c.Name, tb.Name))
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k string
				var v []byte
				if err := rows.Scan(&k, &v); err != nil {
					t.Fatal(err)
				}
				out[tb.Name+"."+c.Name+":"+k] = v
			}
			rows.Close()
		}
	}
	return out
}

// TestCardKeyRotation is P5: 200 cards (some terminated, some converted),
// partner API keys with a rotated secret, a webhook endpoint with a rotated
// secret, staff TOTP secrets, a user's document and a KYC session, all
// sealed under key 1. With key 2 current and key 1 previous, the rekey job
// re-seals every value under key 2 (and recomputes the PAN lookups); then
// an application with only key 2 reveals every card's PAN, CVV2 and PIN,
// authenticates the partner, opens the TOTP secrets, the document and the
// KYC session; the row counts are unchanged and a check reports 0.
func TestCardKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sys := emi.WithPrincipal(ctx, emi.SystemPrincipal("test"))
	env := apptest.New(t, secWideWindow)
	key1 := env.Config.MasterKey
	env.SeedStaff(t)
	p := env.NewPartner(t, emi.PartnerCreate{Name: "Rotation", WebhookURL: "http://127.0.0.1:9/hooks"})
	secret, err := env.App.Partners.RotateSecret(sys, p.KeyID, false)
	if err != nil {
		t.Fatal(err)
	}
	p.APISecret = secret
	var endpoint string
	if err := env.App.DB.Get(&endpoint, `SELECT id::text FROM webhook_endpoints WHERE partner_id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.App.Webhooks.RotateEndpointSecret(sys, p.ID, endpoint); err != nil {
		t.Fatal(err)
	}
	r := &secRun{t: t, env: env, p: p}
	body := validUser(p)
	body["documents"] = []map[string]any{{"file": b64(pdfBytes), "file_type": "pdf", "document_type": "passport"}}
	user := createUser(t, env, p, body)
	kyc := r.do(http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	if kyc.Code != 0 {
		t.Fatalf("kyc_init: %s", kyc)
	}
	// A stored idempotent answer (sealed: it may hold personal data).
	if keyed := p.Do(t, apptest.Request{Method: http.MethodPost, Path: "/v1/aml", Operation: "aml_check",
		JSON:   map[string]any{"first_name": "Elin", "last_name": "Sandqvist", "nationality": "SE", "birthday": "1987-03-02"},
		Header: map[string]string{"Idempotency-Key": "rekey-1"}}); keyed.Status >= 500 {
		t.Fatalf("keyed aml_check: %s", keyed)
	}
	var doc string
	if err := env.App.DB.Get(&doc, `SELECT token::text FROM documents WHERE owner_token = $1`, user); err != nil {
		t.Fatal(err)
	}

	keys := secKeys(t, r, 6)
	cards := make([]*secCard, 200)
	secEach(t, r, keys, len(cards), func(w *secRun, i int) {
		c := w.create(map[string]any{"program": "card_eur", "type": "virtual"})
		w.reveal(c)
		cards[i] = c
	})
	terminated := map[string]bool{}
	for i := 0; i < 10; i++ {
		r.ok("terminate", r.do(http.MethodDelete, "/v2/cards/"+cards[i].token, "card_terminate", nil), http.StatusOK)
		terminated[cards[i].token] = true
		c := cards[10+i]
		r.ok("convert", r.do(http.MethodPut, "/v2/cards/"+c.token+"/convert", "card_convert", map[string]any{"delivery_details": delivery()}), http.StatusOK)
		r.reveal(c) // the new CVV2
	}
	// A pending privileged staff change holds the approver's sealed half of
	// its temporary password (staff_changes.second_half_enc).
	admin := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: kernel.NewToken(),
		StaffRoles: []string{string(emi.RoleAdmin)}})
	if out, err := env.App.Staff.Create(admin, emi.StaffCreate{Email: "pending@rekey.test", Name: "Pending Agent",
		Roles: []emi.Role{emi.RoleCustomerService}}); err != nil || out.Change.Status != emi.StaffChangePending {
		t.Fatalf("a pending privileged staff change: %+v %v", out.Change, err)
	}
	// A compliance case's document and approved report.
	sealedCase(t, env, p, user)
	counts := secCount(t, env.App.DB)
	before := secSealedValues(t, env.App.DB)
	k1, err := seal.NewKeyring(key1)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range before {
		if hex.EncodeToString(v[1:9]) != k1.CurrentKeyID() {
			t.Fatalf("%s is not under key 1 before the rotation", name)
		}
	}
	tables := map[string]bool{}
	for name := range before {
		tables[name[:strings.Index(name, ".")]] = true
	}
	if len(tables) != len(ops.SealedTables()) {
		t.Fatalf("the fixture has sealed values in %d tables, want every one of %d: %v", len(tables), len(ops.SealedTables()), tables)
	}

	// Key 2 current, key 1 previous: the rekey job.
	key2 := secKey(t)
	cfg := env.Config
	cfg.MasterKey, cfg.PreviousKeys = key2, [][]byte{key1}
	a2, err := app.Open(ctx, cfg, app.NewLogger(cfg, io.Discard), env.Clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	rk := ops.NewRekeyer(ops.RekeyerDeps{Tx: a2.DB, Store: postgres.NewRekeyStore(a2.DB), Vault: a2.Keys})
	chk, err := rk.Check(ctx, ops.RekeyOptions{})
	if err != nil || chk.Totals().Remaining != len(before) {
		t.Fatalf("check before the rekey: %d remaining of %d values (%v)", chk.Totals().Remaining, len(before), err)
	}
	startRekey := time.Now()
	rep, err := rk.Rekey(ctx, ops.RekeyOptions{Batch: 64})
	took := time.Since(startRekey)
	if err != nil {
		t.Fatalf("rekey: %v (%v)", err, rep.Failures)
	}
	tot := rep.Totals()
	if tot.Resealed != len(before) || tot.Current != 0 || tot.Failed != 0 || tot.Lookups != len(cards) {
		t.Fatalf("rekey report: %+v, want %d re-sealed and %d lookups", tot, len(before), len(cards))
	}
	after := secSealedValues(t, a2.DB)
	if len(after) != len(before) {
		t.Fatalf("%d sealed values after the rekey, %d before", len(after), len(before))
	}
	for name, v := range after {
		if hex.EncodeToString(v[1:9]) != a2.Keys.CurrentKeyID() {
			t.Fatalf("%s is not under key 2 after the rekey", name)
		}
		if bytes.Equal(v, before[name]) {
			t.Fatalf("%s unchanged", name)
		}
	}
	for _, c := range cards {
		var lookup []byte
		if err := a2.DB.Get(&lookup, `SELECT pan_lookup FROM cards WHERE token = $1`, c.token); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(lookup, a2.Keys.Lookup("cards.pan", []byte(c.pan))) {
			t.Fatalf("card %s: the PAN lookup is not key 2's", c.token)
		}
	}
	again, err := rk.Rekey(ctx, ops.RekeyOptions{})
	if err != nil || again.Totals().Resealed != 0 || again.Totals().Lookups != 0 || again.Totals().Current != len(before) {
		t.Fatalf("a second rekey must change nothing: %+v (%v)", again.Totals(), err)
	}
	if c, err := rk.Check(ctx, ops.RekeyOptions{}); err != nil || c.Remaining() != 0 {
		t.Fatalf("check after the rekey: %d remaining (%v)", c.Remaining(), err)
	}
	if got := secCount(t, a2.DB); fmt.Sprint(got) != fmt.Sprint(counts) {
		t.Fatalf("row counts changed:\nbefore %v\nafter  %v", counts, got)
	}

	// Key 1 removed: everything still opens and works.
	only2 := *env
	only2.Config.MasterKey, only2.Config.PreviousKeys = key2, nil
	env2 := apptest.Attach(t, &only2)
	k2 := env2.App.Keys
	for _, tb := range ops.SealedTables() {
		for _, c := range tb.Columns {
			for name, v := range after {
				prefix := tb.Name + "." + c.Name + ":"
				if !strings.HasPrefix(name, prefix) {
					continue
				}
				if _, err := k2.Open(v, c.Context(name[len(prefix):])); err != nil {
					t.Fatalf("%s does not open with key 2 alone: %v", name, err)
				}
			}
		}
	}
	r2 := &secRun{t: t, env: env2, p: env2.As(p)}
	keys2 := make([]*apptest.Partner, len(keys))
	for i, k := range keys {
		keys2[i] = env2.As(k)
	}
	secEach(t, r2, keys2, len(cards), func(w *secRun, i int) {
		c := cards[i]
		if terminated[c.token] {
			apptest.Expect(t, "reveal of a terminated card", w.do(http.MethodGet, "/v2/cards/"+c.token+"/pin", "card_retrieve_pin", nil), 12005, http.StatusConflict)
			return
		}
		cvv := c.cvv
		w.reveal(c) // checks the PAN and the PIN
		if c.cvv != cvv {
			t.Errorf("card %s: CVV2 changed by the rotation", c.token)
		}
	})
	r2.ok("partner_details", r2.do(http.MethodGet, "/v2/partner", "partner_details", nil), http.StatusOK)
	found, err := env2.App.Cards.SearchPAN(secCSCtx(), cards[50].pan)
	if err != nil || len(found) != 1 || found[0].Token != cards[50].token {
		t.Fatalf("search by PAN with key 2 alone: %v %v", found, err)
	}
	if code, err := env2.App.Staff.SandboxTOTPCode(ctx, apptest.AdminEmail); err != nil || len(code) != 6 {
		t.Fatalf("TOTP with key 2 alone: %q %v", code, err)
	}
	if _, content, err := env2.App.Users.Document(complianceCtx(), doc); err != nil || !bytes.Equal(content, pdfBytes) {
		t.Fatalf("document with key 2 alone: %v", err)
	}
	again2 := r2.do(http.MethodPost, "/v1/kyc", "kyc_init", map[string]any{"user": user})
	if again2.Code != 0 || again2.Data["url"] != kyc.Data["url"] {
		t.Fatalf("kyc_init with key 2 alone: %s (was %s)", again2, kyc)
	}
	t.Logf("P5: rekey of %d values in %d rows (%d cards) took %s; check %s", tot.Resealed, tot.Rows, len(cards), took.Round(time.Millisecond), chk.Totals().Elapsed.Round(time.Millisecond))
}
