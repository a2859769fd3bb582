package httpx

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"emi/internal/emi"
)

type amount string

// UnmarshalJSON accepts a JSON number or a decimal string, as
// payout_details.amount will.
func (a *amount) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || strings.Trim(s, "0123456789.") != "" {
		return fieldErr("must be a decimal amount")
	}
	*a = amount(s)
	return nil
}

type fieldErr string

func (f fieldErr) Error() string        { return string(f) }
func (f fieldErr) FieldMessage() string { return string(f) }

type inner struct {
	IBAN   string `json:"iban"`
	Amount amount `json:"amount"`
}

type embedded struct {
	Alias string `json:"alias"`
}

type sample struct {
	embedded
	Name    string            `json:"name"`
	Count   int8              `json:"count"`
	Size    uint              `json:"size"`
	Ratio   float64           `json:"ratio"`
	Active  *bool             `json:"active" nullable:"true"`
	Tags    []string          `json:"tags"`
	Payout  []inner           `json:"payout_details"`
	Meta    map[string]string `json:"meta"`
	Any     any               `json:"any"`
	Skipped string            `json:"-"`
}

func TestDecodeJSON(t *testing.T) {
	ok := []string{
		``, `{}`, ` {"name":"x"} `, `{"alias":"embedded field"}`, `{"count":-128,"size":0,"ratio":1.5e3}`,
		`{"payout_details":[{"iban":"X","amount":12.5},{"amount":"0.10"}]}`, `{"meta":{"k":"v"},"any":[1,{"x":null}]}`,
		`{"active":null}`, `{"active":false}`, `{"any":null}`,
	}
	for _, body := range ok {
		var s sample
		if err := DecodeJSON([]byte(body), &s, emi.ErrValidation); err != nil {
			t.Errorf("%s: unexpected %v", body, err)
		}
	}
	var s sample
	_ = DecodeJSON([]byte(`{"name":"n","payout_details":[{"amount":"7.25"}],"alias":"a"}`), &s, emi.ErrValidation)
	if s.Name != "n" || s.Payout[0].Amount != "7.25" || s.Alias != "a" {
		t.Fatalf("decoded %+v", s)
	}

	bad := map[string][]string{ // body -> field paths expected
		`{"Name":"x"}`:                          {"Name"},
		`{"-":"x","Skipped":"y"}`:               {"-", "Skipped"},
		`{"count":128}`:                         {"count"},
		`{"count":1.5}`:                         {"count"},
		`{"size":-1}`:                           {"size"},
		`{"ratio":"1"}`:                         {"ratio"},
		`{"ratio":1e999}`:                       {"ratio"},
		`{"active":"yes"}`:                      {"active"},
		`{"tags":"a"}`:                          {"tags"},
		`{"tags":["a",1]}`:                      {"tags[1]"},
		`{"payout_details":[{},{"x":1}]}`:       {"payout_details[1].x"},
		`{"payout_details":[{"amount":"abc"}]}`: {"payout_details[0].amount"},
		`{"payout_details":[1]}`:                {"payout_details[0]"},
		`{"meta":{"k":1}}`:                      {"meta.k"},
		`{"meta":[]}`:                           {"meta"},
		`{"a":1,"b":2,"name":3}`:                {"a", "b", "name"},
		// null only where the field is tagged nullable (Go kept the zero
		// value, so null silently meant "" or false).
		`{"tags":null,"name":null}`:          {"tags", "name"},
		`{"tags":["a",null]}`:                {"tags[1]"},
		`{"payout_details":[null]}`:          {"payout_details[0]"},
		`{"payout_details":[{"iban":null}]}`: {"payout_details[0].iban"},
		`{"meta":{"k":null}}`:                {"meta.k"},
		// NUL characters: PostgreSQL text and jsonb refuse them, so the
		// decoder does (a PUT /v2/users/{user} with one was a 500).
		`{"name":"a\u0000b"}`:                       {"name"},
		`{"alias":"\u0000"}`:                        {"alias"},
		`{"tags":["ok","\u0000"]}`:                  {"tags[1]"},
		`{"meta":{"k":"v\u0000"}}`:                  {"meta.k"},
		`{"meta":{"k\u0000":"v"}}`:                  {"meta.k\x00"},
		`{"any":{"x":["ok","\u0000"]}}`:             {"any.x[1]"},
		`{"any":{"k\u0000":1}}`:                     {"any.k\x00"},
		`{"payout_details":[{"amount":"1\u0000"}]}`: {"payout_details[0].amount"},
	}
	for body, fields := range bad {
		var s sample
		err := DecodeJSON([]byte(body), &s, emi.ErrCardValidation)
		var e *emi.Error
		if !errors.As(err, &e) || e.Code != emi.ErrCardValidation.Code {
			t.Errorf("%s: want the endpoint's validation error, got %v", body, err)
			continue
		}
		got := map[string]bool{}
		for _, f := range e.Fields {
			got[f.Field] = true
			if f.Message == "" {
				t.Errorf("%s: empty message for %s", body, f.Field)
			}
		}
		for _, f := range fields {
			if !got[f] {
				t.Errorf("%s: no error for %q in %+v", body, f, e.Fields)
			}
		}
		if len(e.Fields) != len(fields) {
			t.Errorf("%s: %d errors, want %d: %+v", body, len(e.Fields), len(fields), e.Fields)
		}
	}

	malformed := []string{`{`, `{"a":1}}`, `{"a":1} x`, `[]`, `"s"`, `null`, `1`, "{\"a\":\"\xff\"}", `{"a":1,}`,
		`{"any":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}`}
	for _, body := range malformed {
		var s sample
		if err := DecodeJSON([]byte(body), &s, emi.ErrValidation); !errors.Is(err, emi.ErrBadRequest) {
			t.Errorf("%q: want 10005, got %v", body, err)
		}
	}
	if err := DecodeJSON([]byte(`{}`), sample{}, emi.ErrValidation); err == nil || emi.AsError(err).Kind != emi.KindInternal {
		t.Errorf("non-pointer destination: want an internal error, got %v", err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"x","payout_details":[{"amount":1}]}`, `{"meta":{"a":"b"}}`, `[`, "{\"\xff\":1}", `{"count":1e2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var s sample
		err := DecodeJSON(body, &s, emi.ErrValidation)
		if err == nil {
			if len(strings.TrimSpace(string(body))) > 0 && !json.Valid(body) {
				t.Fatalf("accepted invalid JSON %q", body)
			}
			return
		}
		var e *emi.Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not a catalogue error", err)
		}
		switch e.Code {
		case emi.ErrBadRequest.Code:
		case emi.ErrValidation.Code:
			if len(e.Fields) == 0 {
				t.Fatalf("validation error without fields for %q", body)
			}
			if !json.Valid(body) {
				t.Fatalf("invalid JSON %q reported as a field error", body)
			}
		default:
			t.Fatalf("unexpected code %d for %q", e.Code, body)
		}
	})
}

func TestStorableText(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "Jane Smith": true, "Zoë Łukasz 東京": true,
		"a\x00b": false, "\x00": false, "\xff\xfe": false, "ok\xc3\x28": false,
	} {
		if got := StorableText(s); got != want {
			t.Errorf("StorableText(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestDecodeJSONDuplicateKeys: a key written twice in one object is
// refused at any depth, named by its path, whatever the two values (the
// decoder would otherwise keep the last one silently); the same key in two
// objects is not a duplicate.
func TestDecodeJSONDuplicateKeys(t *testing.T) {
	bad := map[string][]string{
		`{"name":"a","name":"a"}`:                                   {"name"},
		`{"name":"a","count":1,"name":"b"}`:                         {"name"},
		`{"name":"a","name":"b","name":"c"}`:                        {"name", "name"},
		`{"payout_details":[{"iban":"X"},{"iban":"Y","iban":"Z"}]}`: {"payout_details[1].iban"},
		`{"meta":{"k":"v","k":"w"}}`:                                {"meta.k"},
		`{"any":{"x":[{"y":1},[{"z":1,"z":2}]]}}`:                   {"any.x[1][0].z"},
		`{"any":[[],{},{"a":{"b":1,"b":1}}]}`:                       {"any[2].a.b"},
		`{"zz":1,"zz":2}`:                                           {"zz", "zz"}, // unknown, and twice
	}
	for body, fields := range bad {
		var s sample
		err := DecodeJSON([]byte(body), &s, emi.ErrCardValidation)
		var e *emi.Error
		if !errors.As(err, &e) || e.Code != emi.ErrCardValidation.Code {
			t.Errorf("%s: want the endpoint's validation error, got %v", body, err)
			continue
		}
		var dups []string
		for _, f := range e.Fields {
			if f.Message == duplicateMessage {
				dups = append(dups, f.Field)
			}
		}
		if body == `{"zz":1,"zz":2}` {
			dups = append(dups, "zz") // and "is not a known field"
		}
		if strings.Join(dups, " ") != strings.Join(fields, " ") {
			t.Errorf("%s: duplicates named %v, want %v (%+v)", body, dups, fields, e.Fields)
		}
		if s.Name != "" || s.Payout != nil || s.Meta != nil || s.Any != nil {
			t.Errorf("%s: refused body decoded into %+v", body, s)
		}
	}
	for _, body := range []string{`{"payout_details":[{"iban":"X"},{"iban":"Y"}]}`, `{"meta":{"name":"x"},"name":"y"}`, `{"any":[{"a":1},{"a":1}]}`} {
		var s sample
		if err := DecodeJSON([]byte(body), &s, emi.ErrValidation); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestDecodeJSONBadRequestCauses: every 10005 of the decoder names the body
// and says what is wrong with it, with the offset where there is one.
func TestDecodeJSONBadRequestCauses(t *testing.T) {
	for body, want := range map[string]string{
		"\xef\xbb\xbf{}":                   "starts with a byte order mark",
		"\xff\xfe{\x00}\x00":               "starts with a byte order mark",
		"{\"a\":\"\xff\"}":                 "is not valid UTF-8 (offset 6)",
		`{"a":1,}`:                         "is malformed JSON at offset 7: invalid character '}'",
		`{"a":`:                            "is malformed JSON at offset 5: it ends before the value is complete",
		`{"a" 1}`:                          "is malformed JSON at offset 5: invalid character '1'",
		`{"a":1} x`:                        "has data after the JSON value (offset 7)",
		`{}{}`:                             "has data after the JSON value (offset 2)",
		`[{"a":1}]`:                        "must be a JSON object, not an array",
		`"x"`:                              "must be a JSON object, not a string",
		`12`:                               "must be a JSON object, not a number",
		`null`:                             "must be a JSON object, not null",
		`true`:                             "must be a JSON object, not true or false",
		string(deepBody(MaxDepth + 1)):     "is nested deeper than 32 levels",
		string(deepBody(10000)):            "is nested deeper than 32 levels",
		`{"a":[` + strings.Repeat(`[`, 31): "is nested deeper than 32 levels",
	} {
		var s sample
		err := DecodeJSON([]byte(body), &s, emi.ErrValidation)
		e := emi.AsError(err)
		if e.Code != emi.ErrBadRequest.Code || len(e.Fields) != 1 || e.Fields[0].Field != BodyField || !strings.HasPrefix(e.Fields[0].Message, want) {
			t.Errorf("%.40q: got %v %+v, want 10005 {body: %s...}", body, err, e.Fields, want)
		}
	}
	var s sample
	if err := DecodeJSON(deepBody(MaxDepth), &s, emi.ErrValidation); err == nil || emi.AsError(err).Code == emi.ErrBadRequest.Code {
		t.Errorf("32 levels: %v, want the validation error of an unknown field", err)
	}
}

// deepBody is an object n levels deep.
func deepBody(n int) []byte {
	return []byte(strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1))
}
