package people

// Unit tests of the people area's rules that need no database: the person
// and the hit keys of the false-positive memory and how many people a
// decision takes, what of a merchant is screened, the checks of uploaded
// documents and of the hosted KYC page's upload (every problem at once,
// the pixel budget), the watch list's web addresses, threshold and
// fingerprints, and the paging checks of the back-office lists. The flows
// themselves are tested against PostgreSQL in internal/service/servicetest
// and web/...

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"

	"emi/internal/emi"
)

// lower is a name normaliser for the tests: lower case, punctuation kept.
func lower(s string) string { return strings.ToLower(s) }

func staffCtx(roles ...emi.Role) context.Context {
	rs := make([]string, len(roles))
	for i, r := range roles {
		rs[i] = string(r)
	}
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorStaff, ActorID: "staff-1", StaffRoles: rs})
}

func partnerCtx() context.Context {
	return emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, ActorID: "key-1", PartnerID: "p1", MasterMerchant: "mm1"})
}

// fields returns the "field: message" lines of err, or fails the test
// when err is not want.
func fields(t *testing.T, err error, want *emi.Error) []string {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	var out []string
	for _, f := range emi.AsError(err).Fields {
		out = append(out, f.Field+": "+f.Message)
	}
	return out
}

func TestPersonKeyIgnoresWordOrderButNotTheBirthday(t *testing.T) {
	t.Parallel()
	k := PersonKey(lower, "Kim", "Jong Un", "1984-01-08")
	if len(k) != sha256.Size {
		t.Fatalf("key of %d bytes, want a SHA-256", len(k))
	}
	for _, same := range [][3]string{
		{"Jong Un", "Kim", "1984-01-08"},
		{"KIM", "jong   un", "1984-01-08"},
		{"", "Un Kim Jong", "1984-01-08"},
	} {
		if !bytes.Equal(PersonKey(lower, same[0], same[1], same[2]), k) {
			t.Errorf("%q %q %q is another person", same[0], same[1], same[2])
		}
	}
	for _, other := range [][3]string{
		{"Kim", "Jong Un", "1984-01-09"},
		{"Kim", "Jong Un", ""},
		{"Kim", "Jong", "1984-01-08"},
	} {
		if bytes.Equal(PersonKey(lower, other[0], other[1], other[2]), k) {
			t.Errorf("%q %q %q is the same person", other[0], other[1], other[2])
		}
	}
	if got := NormalizedName(lower, "  Zoltan  FEKETE-Brannigan "); got != "fekete-brannigan zoltan" {
		t.Errorf("NormalizedName: %q", got)
	}
}

func TestFalsePositiveKeyKeepsItsPartsApart(t *testing.T) {
	t.Parallel()
	if FalsePositiveKey("ofac", "12", "ab") == FalsePositiveKey("ofac1", "2", "ab") ||
		FalsePositiveKey("ofac", "12", "ab") == FalsePositiveKey("ofac", "1", "2ab") {
		t.Error("two different (list, entry, fingerprint) make the same key")
	}
	if got := FalsePositiveKey("ofac", "12", "ab"); got != "ofac\x0012\x00ab" {
		// internal/postgres (PeopleStore.FalsePositives) builds the keys of
		// the remembered decisions by hand, in this form.
		t.Errorf("key %q, want list, entry and fingerprint joined by NUL, as the store builds it", got)
	}
}

func TestPeopleForFalsePositive(t *testing.T) {
	t.Parallel()
	for score, want := range map[float64]int{0: 1, 0.85: 1, emi.TwoPersonHitScore - 0.0001: 1, emi.TwoPersonHitScore: 2, 0.97: 2, 1: 2} {
		if got := PeopleForFalsePositive(score); got != want {
			t.Errorf("a hit of score %v takes %d people, want %d", score, got, want)
		}
	}
}

// TestMarkSuppressedNeverLowersThePeopleADecisionTakes: a remembered false
// positive answers a later hit only when as many people decided it as the
// hit's score needs now.
func TestMarkSuppressedNeverLowersThePeopleADecisionTakes(t *testing.T) {
	t.Parallel()
	low := emi.AMLHit{List: "ofac", EntryID: "1", Fingerprint: "f1", Score: 0.85}
	high := emi.AMLHit{List: "un", EntryID: "2", Fingerprint: "f2", Score: 0.95}
	key := func(h emi.AMLHit) string { return FalsePositiveKey(h.List, h.EntryID, h.Fingerprint) }

	for _, c := range []struct {
		name           string
		fps            map[string]int
		wantSuppressed []bool
		wantStatus     emi.AMLStatus
	}{
		{"nothing remembered", nil, []bool{false, false}, emi.AMLMatch},
		{"one person on each", map[string]int{key(low): 1, key(high): 1}, []bool{true, false}, emi.AMLMatch},
		{"two people on the high one, none on the low", map[string]int{key(high): 2}, []bool{false, true}, emi.AMLMatch},
		{"enough people on both", map[string]int{key(low): 1, key(high): 2}, []bool{true, true}, emi.AMLClear},
		{"another fingerprint (the entry changed)", map[string]int{FalsePositiveKey("ofac", "1", "old"): 2, key(high): 2}, []bool{false, true}, emi.AMLMatch},
	} {
		hits, st := markSuppressed([]emi.AMLHit{low, high}, c.fps)
		var got []bool
		for i, h := range hits {
			got = append(got, h.Suppressed)
			if h.N != i+1 {
				t.Errorf("%s: hit %d numbered %d", c.name, i, h.N)
			}
		}
		if !slices.Equal(got, c.wantSuppressed) || st != c.wantStatus {
			t.Errorf("%s: suppressed %v, status %s; want %v, %s", c.name, got, st, c.wantSuppressed, c.wantStatus)
		}
	}
	if hits, st := markSuppressed(nil, nil); len(hits) != 0 || st != emi.AMLClear {
		t.Errorf("no hit: %v %s, want clear", hits, st)
	}
}

func TestMerchantSubjects(t *testing.T) {
	t.Parallel()
	a := emi.Application{
		Company: &emi.CompanyFields{LegalName: "Sandbox Trading Ltd", TradeName: " Sandbox Trading Ltd "},
		Members: []emi.Member{
			{Token: "m1", Status: "active", Type: []string{"ubo"}, Birthday: "1987-03-02", Nationality: "SE",
				MemberFields: emi.MemberFields{FirstName: "Elin", LastName: "Sandqvist"}},
			{Token: "m2", Status: "active", Type: []string{"ubo", "legal-entity"},
				MemberFields: emi.MemberFields{FirstName: "Ignored", LastName: "Person", LegalName: "Holding AB"}},
			{Token: "m3", Status: "active", Type: []string{"director"}, MemberFields: emi.MemberFields{LegalName: "Nameless Services"}},
			{Token: "m4", Status: "active", Type: []string{"director"}},
			{Token: "m5", Status: "inactive", MemberFields: emi.MemberFields{FirstName: "Gone", LastName: "Member"}},
		},
	}
	subs := merchantSubjects(a)
	type got struct {
		member, name string
		person       bool
	}
	var have []got
	for _, s := range subs {
		have = append(have, got{s.member, s.name(), s.person})
	}
	want := []got{
		{"", "Sandbox Trading Ltd", false}, // the legal and trade names, once
		{"m1", "Elin Sandqvist", true},
		{"m2", "Holding AB", false}, // a legal entity by its legal name
		{"m3", "Nameless Services", false},
	}
	if !slices.Equal(have, want) {
		t.Errorf("subjects\n got %+v\nwant %+v", have, want)
	}
	if subs[1].query.Birthday != "1987-03-02" || subs[1].query.Nationality != "SE" {
		t.Errorf("a person is screened with the birthday and nationality: %+v", subs[1].query)
	}
	if !subs[1].fits("individual") || subs[1].fits("entity") || subs[0].fits("individual") || !subs[0].fits("vessel") {
		t.Error("fits: people against individual entries, the rest against the other entries")
	}
	if len(merchantSubjects(emi.Application{})) != 0 {
		t.Error("an application without company or members has something to screen")
	}
}

func TestCheckListPage(t *testing.T) {
	t.Parallel()
	token := "0f8fad5b-d9cb-469f-a165-70867728950e"
	if err := checkListPage(emi.AMLSortKeys, emi.SortOrder{}, ""); err != nil {
		t.Errorf("the default order, first page: %v", err)
	}
	if err := checkListPage(emi.AMLSortKeys, emi.SortOrder{Key: "created", Desc: true}, token); err != nil {
		t.Errorf("a known order after a token: %v", err)
	}
	fs := fields(t, checkListPage(emi.AMLSortKeys, emi.SortOrder{Key: "amount"}, "x' OR 1=1"), emi.ErrReviewValidation)
	if !slices.Equal(fs, []string{"sort: must be one of person, partner, status, created", "after: must be the token of the last row seen"}) {
		t.Errorf("an unknown order and a cursor that is not a token: %q", fs)
	}
}

// amlStore answers AMLChecks and records the filter it got; any other
// method is not expected (the embedded nil interface panics).
type amlStore struct {
	AMLStore
	got []emi.AMLFilter
}

func (s *amlStore) AMLChecks(_ context.Context, f emi.AMLFilter) ([]emi.AMLCheck, error) {
	s.got = append(s.got, f)
	return nil, nil
}

func TestAMLListChecksTheCallerAndThePageBeforeReading(t *testing.T) {
	t.Parallel()
	store := &amlStore{}
	a := &AML{store: store}
	for name, ctx := range map[string]context.Context{"a partner": partnerCtx(), "nobody": context.Background()} {
		if _, err := a.List(ctx, emi.AMLFilter{}); !errors.Is(err, emi.ErrForbidden) {
			t.Errorf("%s: %v, want ErrForbidden", name, err)
		}
	}
	if _, err := a.List(staffCtx(emi.RoleAuditor), emi.AMLFilter{Sort: emi.SortOrder{Key: "nope"}}); !errors.Is(err, emi.ErrReviewValidation) {
		t.Errorf("an unknown order: %v", err)
	}
	if len(store.got) != 0 {
		t.Fatalf("the store was read for a refused list: %+v", store.got)
	}
	for _, c := range []struct{ limit, want int }{{0, 100}, {-5, 100}, {201, 100}, {1, 1}, {200, 200}} {
		if _, err := a.List(staffCtx(emi.RoleCompliance), emi.AMLFilter{Limit: c.limit}); err != nil {
			t.Fatal(err)
		}
		if got := store.got[len(store.got)-1].Limit; got != c.want {
			t.Errorf("limit %d read %d rows, want %d", c.limit, got, c.want)
		}
	}
}

// onePixel returns a 1×1 image encoded as PNG or JPEG.
func onePixel(t *testing.T, format string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.White)
	var b bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngHeader is the start of a PNG that declares a w × h image: the
// signature and a valid IHDR chunk, no pixels (what a decompression bomb
// looks like to a header reader).
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk := append([]byte("IHDR"), ihdr...)
	out := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
}

var pdf = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestDecodeDocument(t *testing.T) {
	t.Parallel()
	d, fe := DecodeDocument("documents[0]", emi.Document{File: b64(pdf), FileType: "pdf", DocumentType: "bill"})
	if fe != nil || d.contentType != "application/pdf" || !bytes.Equal(d.content, pdf) || d.DocumentType != "bill" {
		t.Fatalf("a PDF: %+v %v", d, fe)
	}
	if d, fe := DecodeDocument("d", emi.Document{File: b64(onePixel(t, "jpeg")), FileType: "jpg"}); fe != nil || d.contentType != "image/jpeg" {
		t.Errorf("a JPEG declared jpg: %v", fe)
	}
	// At the pixel budget, not over it: 8,000 × 5,000 is 40 megapixels.
	if _, fe := DecodeDocument("d", emi.Document{File: b64(pngHeader(8000, 5000)), FileType: "png"}); fe != nil {
		t.Errorf("a 40-megapixel PNG: %v", fe)
	}

	for _, c := range []struct {
		name string
		doc  emi.Document
		want string // field: message
	}{
		{"an unknown file type", emi.Document{File: b64(pdf), FileType: "exe"},
			"d.file_type: must be one of: " + strings.Join(emi.FileTypes, ", ")},
		{"not base64", emi.Document{File: "%%%", FileType: "pdf"}, "d.file: must be standard base64"},
		{"URL-safe base64", emi.Document{File: base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe}), FileType: "pdf"},
			"d.file: must be standard base64"},
		{"empty", emi.Document{File: "", FileType: "pdf"}, "d.file: must not be empty"},
		{"a PNG declared a PDF", emi.Document{File: b64(onePixel(t, "png")), FileType: "pdf"},
			"d.file: content is image/png, which does not match file_type pdf"},
		{"a PDF declared a JPEG", emi.Document{File: b64(pdf), FileType: "jpeg"},
			"d.file: content is application/pdf, which does not match file_type jpeg"},
		{"a decompression bomb", emi.Document{File: b64(pngHeader(60000, 60000)), FileType: "png"},
			"d.file: image is 60000 × 60000 pixels: at most 40 megapixels are accepted"},
		{"one pixel over the budget", emi.Document{File: b64(pngHeader(8000, 5001)), FileType: "png"},
			"d.file: image is 8000 × 5001 pixels: at most 40 megapixels are accepted"},
		{"text longer than 10 MiB can decode to", emi.Document{File: strings.Repeat("A", maxEncodedDocument+1), FileType: "pdf"},
			"d.file: must be at most 10 MiB once decoded"},
		{"10 MiB and one byte", emi.Document{File: b64(append(slices.Clone(pdf), make([]byte, emi.MaxDocumentBytes+1-len(pdf))...)), FileType: "pdf"},
			"d.file: must be at most 10 MiB once decoded"},
	} {
		d, fe := DecodeDocument("d", c.doc)
		if fe == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if got := fe.Field + ": " + fe.Message; got != c.want || d.content != nil {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDecodeDocumentsReportsEveryProblemByIndex(t *testing.T) {
	t.Parallel()
	docs := []emi.Document{
		{File: b64(pdf), FileType: "pdf", DocumentType: "bill"},
		{File: "", FileType: "pdf"},
		{File: b64(onePixel(t, "png")), FileType: "png", DocumentType: "selfie"},
		{File: b64(pdf), FileType: "mov"},
	}
	out, bad := DecodeDocuments("documents", docs)
	if len(out) != 2 || out[0].DocumentType != "bill" || out[1].DocumentType != "selfie" {
		t.Errorf("decoded %d documents, want the first and the third", len(out))
	}
	var got []string
	for _, fe := range bad {
		got = append(got, fe.Field)
	}
	if !slices.Equal(got, []string{"documents[1].file", "documents[3].file"}) {
		t.Errorf("problems on %v", got)
	}
}

func TestContextsBindSealedValuesToTheirRow(t *testing.T) {
	t.Parallel()
	// A sealed value opens only under the context it was sealed with:
	// these strings are part of every stored document and KYC secret.
	if DocumentContext("tok") != "documents.content:tok" || KYCSecretContext("tok") != "kyc_sessions.secret:tok" {
		t.Errorf("contexts %q %q changed: sealed values already stored would no longer open", DocumentContext("tok"), KYCSecretContext("tok"))
	}
	if h := secretHash("s"); len(h) != sha256.Size || bytes.Equal(h, secretHash("t")) {
		t.Error("secretHash is the SHA-256 of the secret")
	}
	if got := (HostedKYC{PublicURL: "https://emi.example/"}).URL("abc"); got != "https://emi.example/kyc/abc" {
		t.Errorf("hosted page URL %q", got)
	}
	if got := (HostedKYC{PublicURL: "https://emi.example"}).URL("abc"); got != "https://emi.example/kyc/abc" {
		t.Errorf("hosted page URL without a trailing slash %q", got)
	}
}

func TestWebAddress(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"https://news.example/case":         true,
		"http://news.example/a?b=c#d":       true,
		"javascript:alert(1)":               false,
		"data:text/html,<script>":           false,
		"file:///etc/passwd":                false,
		"https://":                          false,
		"//news.example/case":               false,
		"news.example/case":                 false,
		"https://user:pw@news.example/case": false,
		"https://news.example/a b":          false,
		`https://news.example/"onclick`:     false,
		"https://news.example/<x>":          false,
		"ftp://news.example/case":           false,
	} {
		if got := webAddress(s); got != want {
			t.Errorf("webAddress(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestWatchlistMatchThresholdAndRounding(t *testing.T) {
	t.Parallel()
	var score float64
	w := &Watchlist{similar: func(a, b string) float64 { return score }}
	e := emi.WatchlistEntry{Name: "Elin Sandqvist"}
	for _, c := range []struct {
		similar, want float64
		ok            bool
	}{
		{WatchlistThreshold, 0.88, true},
		{WatchlistThreshold - 0.0001, 0.88, false}, // rounds to 0.88 and is still below
		{0.91234, 0.912, true},
		{0.91251, 0.913, true},
		{1, 1, true},
		{0.5, 0.5, false},
	} {
		score = c.similar
		got, ok := w.match("Elin Sandqvist", e)
		if got != c.want || ok != c.ok {
			t.Errorf("similarity %v: %v %v, want %v %v", c.similar, got, ok, c.want, c.ok)
		}
	}
}

func TestWatchlistFingerprintChangesWithWhatWasDecided(t *testing.T) {
	t.Parallel()
	e := emi.WatchlistEntry{ID: "1", Name: "Elin Sandqvist", Category: "fraud", Note: "case 1", Source: "https://a.example"}
	fp := watchlistFingerprint(e)
	if len(fp) != 16 {
		t.Errorf("fingerprint %q, want 16 hex digits", fp)
	}
	same := e
	same.ID, same.Source = "2", "https://b.example"
	if watchlistFingerprint(same) != fp {
		t.Error("another id or source changed the fingerprint: a decided hit would be raised again")
	}
	for _, change := range []func(*emi.WatchlistEntry){
		func(x *emi.WatchlistEntry) { x.Name = "Elin Sandqvist-Berg" },
		func(x *emi.WatchlistEntry) { x.Category = "sanctions" },
		func(x *emi.WatchlistEntry) { x.Note = "case 2" },
		// The parts are kept apart: moving text between them is a change.
		func(x *emi.WatchlistEntry) { x.Name, x.Category = "Elin Sandqvistf", "raud" },
	} {
		other := e
		change(&other)
		if watchlistFingerprint(other) == fp {
			t.Errorf("%+v has the fingerprint of %+v", other, e)
		}
	}
}

func TestSetFieldsNamesTheFieldsWithAValue(t *testing.T) {
	t.Parallel()
	got := setFields(emi.UserFields{FirstName: "Ada", LastName: "Lovelace", Birthday: "1815-12-10", Country: "GB"})
	if !slices.Equal(got, []string{"first_name", "last_name", "country", "birthday"}) {
		t.Errorf("setFields: %v, want the set fields in the profile's order", got)
	}
	if got := setFields(emi.UserFields{}); len(got) != 0 {
		t.Errorf("an empty profile: %v", got)
	}
	a, b := emi.UserFields{City: "Leeds"}, emi.UserFields{City: "York"}
	if fieldEqual(a, b, "city") || !fieldEqual(a, b, "zip") || !fieldEqual(a, b, "no_such_field") {
		t.Error("fieldEqual compares the field with that JSON name, and an unknown name is equal")
	}
	if !hasField([]emi.FieldError{{Field: "aml"}}, "aml") || hasField([]emi.FieldError{{Field: "aml.x"}}, "aml") {
		t.Error("hasField matches the whole field name")
	}
}

func TestPartnerOf(t *testing.T) {
	t.Parallel()
	if mm, err := partnerOf(partnerCtx()); err != nil || mm != "mm1" {
		t.Errorf("a partner: %q %v", mm, err)
	}
	noMaster := emi.WithPrincipal(context.Background(), emi.Principal{Type: emi.ActorPartnerKey, PartnerID: "p1"})
	if _, err := partnerOf(noMaster); !errors.Is(err, emi.ErrInternal) {
		t.Errorf("a partner principal without a master merchant: %v, want an internal error", err)
	}
}

// kycStore answers KYCSessionBySecret with a fixed session and records
// the hashes it was asked; any other method is not expected.
type kycStore struct {
	KYCStore
	session emi.KYCSession
	asked   [][]byte
}

func (s *kycStore) KYCSessionBySecret(_ context.Context, hash []byte) (emi.KYCSession, error) {
	s.asked = append(s.asked, hash)
	return s.session, nil
}

// inline runs a transaction's function without a database.
type inline struct{}

func (inline) InTx(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }

// TestKYCSubmitReportsEveryProblemOfTheUpload: the hosted page's upload is
// checked as a whole (consent, kind, each photo's presence, size, type and
// pixel budget) and refused with every problem at once, before anything
// is stored; a link already used answers that first.
func TestKYCSubmitReportsEveryProblemOfTheUpload(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	secret := strings.Repeat("s", 32)
	newKYC := func(st emi.KYCStatus) (*KYC, *kycStore) {
		store := &kycStore{session: emi.KYCSession{Token: "k1", Status: st, ExpiresAt: now.Add(time.Hour)}}
		return &KYC{tx: inline{}, store: store, now: func() time.Time { return now }}, store
	}
	jpg, pngImg := onePixel(t, "jpeg"), onePixel(t, "png")

	for _, c := range []struct {
		name string
		up   emi.KYCUpload
		want []string
	}{
		{"nothing", emi.KYCUpload{}, []string{
			"consent: Please confirm that you agree to the processing of your identity data.",
			"kind: Choose a passport or an ID card.",
			"selfie: Please add this photo."}},
		{"an ID card without its back", emi.KYCUpload{Kind: "idcard", Consent: true, Front: jpg, Selfie: pngImg}, []string{
			"back: Please add this photo."}},
		{"a PDF selfie and a text front", emi.KYCUpload{Kind: "passport", Consent: true, Front: []byte("just text, no document here"), Selfie: pdf}, []string{
			"front: This file is not a JPEG or PNG photo or a PDF.",
			"selfie: This file is not a JPEG or PNG photo."}},
		{"a bomb for a selfie", emi.KYCUpload{Kind: "passport", Consent: true, Front: pdf, Selfie: pngHeader(60000, 60000)}, []string{
			"selfie: This photo is too large: image is 60000 × 60000 pixels: at most 40 megapixels are accepted. Please send a smaller photo."}},
		{"a file over 10 MiB", emi.KYCUpload{Kind: "passport", Consent: true, Front: make([]byte, emi.MaxDocumentBytes+1), Selfie: jpg}, []string{
			"front: This file is over 10 MiB."}},
	} {
		k, store := newKYC(emi.KYCPending)
		_, err := k.Submit(context.Background(), secret, c.up)
		if got := fields(t, err, emi.ErrKYCUploadInvalid); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if len(store.asked) != 1 || !bytes.Equal(store.asked[0], secretHash(secret)) {
			t.Errorf("%s: the session was looked up by %x, want the secret's hash", c.name, store.asked)
		}
	}

	// A link already used says so, whatever the upload.
	k, _ := newKYC(emi.KYCSubmitted)
	if _, err := k.Submit(context.Background(), secret, emi.KYCUpload{}); !errors.Is(err, emi.ErrKYCLinkUsed) {
		t.Errorf("a used link: %v, want ErrKYCLinkUsed", err)
	}
	// A secret of the wrong length is not looked up at all.
	for _, s := range []string{"short", strings.Repeat("s", 101)} {
		k, store := newKYC(emi.KYCPending)
		if _, err := k.Submit(context.Background(), s, emi.KYCUpload{}); !errors.Is(err, emi.ErrKYCLinkInvalid) || len(store.asked) != 0 {
			t.Errorf("a secret of %d characters: %v after %d lookups, want ErrKYCLinkInvalid and none", len(s), err, len(store.asked))
		}
	}
}
