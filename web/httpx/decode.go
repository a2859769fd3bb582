package httpx

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"emi/internal/emi"
)

// MaxDepth is the deepest JSON nesting accepted; real requests need 4.
const MaxDepth = 32

// ReadBody reads at most limit bytes of the request body. Returns
// emi.ErrTooLarge when the body is longer (reading stops there: the rest is
// never buffered) and emi.ErrBadRequest when it cannot be read.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, emi.ErrTooLarge.WithDetail("content-length %d over %d", r.ContentLength, limit)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, emi.ErrTooLarge.WithDetail("body over %d bytes", limit)
		}
		return nil, emi.ErrBadRequest.Field(BodyField, "could not be read to its end").WithDetail("read body: %v", err)
	}
	return b, nil
}

// ContentTypeField and BodyField name what is wrong in the errors entry
// of a 10005 answer: the Content-Type header (header names are written in
// lower case, as CheckHeaders does), or the body as a whole. No request
// schema has a top-level field named "body" (the negative test checks it),
// so the name is never ambiguous.
const (
	ContentTypeField = "content-type"
	BodyField        = "body"
)

// badBody is 10005 with one errors entry naming the body and the cause.
func badBody(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return emi.ErrBadRequest.WithFields(emi.FieldError{Field: BodyField, Message: msg}).WithDetail("body %s", msg)
}

// CheckJSONContentType returns emi.ErrBadRequest unless a non-empty body is
// declared as application/json (any charset parameter must be utf-8); its
// errors entry names content-type.
func CheckJSONContentType(r *http.Request, body []byte) error {
	if len(body) == 0 {
		return nil
	}
	bad := func(msg string) error {
		return emi.ErrBadRequest.WithFields(emi.FieldError{Field: ContentTypeField, Message: msg}).WithDetail("%s", msg)
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return bad("content type must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return bad("charset must be utf-8")
	}
	return nil
}

// Schema is what the documentation (openapi.yaml) declares of a request
// body beyond what the Go type of dst can tell: DecodeJSONWith applies it
// to the decoded value. Problems returns one FieldError per value the
// schema refuses, with its JSON path.
type Schema interface {
	Problems(v any) []emi.FieldError
	// Rules returns the problems of the decoded input's own rules (the
	// service's validation tags), or none. It is asked only when the
	// schema refused a value of a body that is otherwise well typed, so
	// that the answer still lists every problem at once (contract §3),
	// not only the schema's.
	Rules(dst any) []emi.FieldError
}

// DecodeJSON is DecodeJSONWith without a schema.
func DecodeJSON(body []byte, dst any, validation *emi.Error) error {
	return DecodeJSONWith(body, dst, validation, nil)
}

// DecodeJSONWith decodes body into dst, which must point to a struct,
// strictly. It is the one decoder of every request body of the partner
// API (web/api's decode and decodeAll).
//
// The body must be one JSON object; otherwise emi.ErrBadRequest (10005)
// with one errors entry, field "body", naming the cause:
//   - "starts with a byte order mark (U+FEFF): send UTF-8 without one";
//   - "is not valid UTF-8 (offset N)";
//   - "is malformed JSON at offset N: <what the parser met>";
//   - "has data after the JSON value (offset N)";
//   - "must be a JSON object, not an array" (or a string, a number, ...);
//   - "is nested deeper than 32 levels" (MaxDepth).
//
// Then the endpoint's validation error (validation), listing every problem
// with its JSON path (payout_details[0].iban, company.legal_name; never a
// leading dot):
//   - a key written twice in one object, at any depth: "appears more than
//     once" (encoding/json would keep the last one silently, so that
//     {"last_name":"Doe","last_name":"Smith"} screened one name and stored
//     another);
//   - a key that is not a field of dst at that place (exact,
//     case-sensitive match): "is not a known field";
//   - a value not of the field's JSON type (a JSON number for a string
//     field included: "must be a string"; an amount must be a string too);
//   - null, "must not be null", except for a field tagged
//     `nullable:"true"` (where openapi.yaml allows null, and null leaves it
//     unset) and inside free-form values: Go would silently keep the zero
//     value, so a client's null would mean something the schema does not
//     say;
//   - what schema refuses (web/api: "" where the documented enum, pattern
//     or minLength refuses it, a JSON number where only a string is
//     declared).
//
// An empty body decodes as {}. Unknown fields include create-only fields
// sent to an update, since update inputs do not declare them. Nothing is
// decoded into dst unless every check passes. The work is linear in the
// size of the body, which the caller has already bounded.
func DecodeJSONWith(body []byte, dst any, validation *emi.Error, schema Schema) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return emi.Internal(errors.New("DecodeJSON: dst must point to a struct"))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) || bytes.HasPrefix(body, []byte("\xfe\xff")) || bytes.HasPrefix(body, []byte("\xff\xfe")) {
		return badBody("starts with a byte order mark (U+FEFF): send UTF-8 without one")
	}
	if !utf8.Valid(body) {
		return badBody("is not valid UTF-8 (offset %d)", invalidUTF8At(body))
	}
	dups, err := scan(body)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// scan has checked the syntax: not reached
		return badBody("is malformed JSON")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return badBody("must be a JSON object") // scan has checked it: not reached
	}
	fields := dups
	check(obj, rv.Elem().Type(), "", &fields)
	if schema != nil {
		wellTyped := len(fields) == 0
		named := map[string]bool{}
		add := func(fs []emi.FieldError) {
			for _, f := range fs {
				if !named[f.Field] {
					named[f.Field] = true
					fields = append(fields, f)
				}
			}
		}
		for _, f := range fields {
			named[f.Field] = true
		}
		refused := schema.Problems(obj)
		add(refused)
		if wellTyped && len(refused) > 0 {
			// The input's own rules too, read from a copy: dst stays
			// untouched by a refused body.
			cp := reflect.New(rv.Elem().Type())
			if json.Unmarshal(body, cp.Interface()) == nil {
				add(schema.Rules(cp.Interface()))
			}
		}
	}
	if len(fields) > 0 {
		return validation.WithFields(fields...)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		// check() mirrors encoding/json's rules, so this is only reached
		// through a custom UnmarshalJSON that check could not run alone.
		return validation.Field(BodyField, "is invalid")
	}
	return nil
}

// invalidUTF8At returns the offset of the first byte of b that is not
// part of valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// duplicateMessage is the answer for a key written twice in one object.
const duplicateMessage = "appears more than once"

// frame is an object or array that scan is inside.
type frame struct {
	path   string
	object bool
	keys   map[string]struct{}
	// In an object: the last key read, and whether a key comes next. In
	// an array: the index of the next element.
	key       string
	expectKey bool
	index     int
}

// scan reads body (valid UTF-8) once, token by token, and returns the
// keys written twice in one object, each named by its JSON path, or the
// 10005 of the first reason the body is not one JSON object nested at most
// MaxDepth deep. It stops at the first such reason, so a deep or hostile
// body costs no more than its length.
func scan(body []byte) ([]emi.FieldError, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	var dups []emi.FieldError
	for {
		tok, err := dec.Token()
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, badBody("is malformed JSON at offset %d: %s", se.Offset, se.Error())
			}
			return nil, badBody("is malformed JSON at offset %d: it ends before the value is complete", dec.InputOffset())
		}
		delim, _ := tok.(json.Delim)
		if len(stack) == 0 && delim != '{' {
			return nil, badBody("must be a JSON object, not %s", jsonKind(tok))
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch {
		case top != nil && top.expectKey && delim == '}':
			stack = stack[:len(stack)-1]
		case top != nil && top.expectKey:
			k, _ := tok.(string) // the parser allows nothing else here
			if _, seen := top.keys[k]; seen {
				dups = append(dups, emi.FieldError{Field: join(top.path, k), Message: duplicateMessage})
			}
			top.keys[k] = struct{}{}
			top.key, top.expectKey = k, false
			continue
		case delim == ']':
			stack = stack[:len(stack)-1]
		default: // a value starts
			path := ""
			if top != nil && top.object {
				path = join(top.path, top.key)
			} else if top != nil {
				path = top.path + "[" + strconv.Itoa(top.index) + "]"
				top.index++
			}
			if delim == '{' || delim == '[' {
				if len(stack) >= MaxDepth {
					return nil, badBody("is nested deeper than %d levels", MaxDepth)
				}
				stack = append(stack, &frame{path: path, object: delim == '{', keys: map[string]struct{}{}, expectKey: delim == '{'})
				continue
			}
		}
		// A value is complete.
		if len(stack) == 0 {
			off := dec.InputOffset()
			if _, err := dec.Token(); err != io.EOF {
				return nil, badBody("has data after the JSON value (offset %d)", off)
			}
			return dups, nil
		}
		if t := stack[len(stack)-1]; t.object {
			t.expectKey = true
		}
	}
}

// jsonKind names the JSON value a token starts.
func jsonKind(tok any) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "true or false"
	}
	return "null"
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func join(path, key string) string { return emi.JoinField(path, key) }

// check walks v (a value decoded with UseNumber) against type t and appends a
// FieldError for every unknown key and every value of the wrong JSON type.
func check(v any, t reflect.Type, path string, out *[]emi.FieldError) {
	if v == nil {
		return // a nullable field: null leaves it unset (callers refuse the others)
	}
	if nul(v, path, out) {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		raw, _ := json.Marshal(v)
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			*out = append(*out, emi.FieldError{Field: path, Message: unmarshalerMessage(err)})
		}
		return
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		s, ok := v.(string)
		if !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a string"})
			return
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			*out = append(*out, emi.FieldError{Field: path, Message: unmarshalerMessage(err)})
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be an object"})
			return
		}
		fields := structFields(t)
		for _, k := range sortedKeys(obj) {
			f, ok := fields[k]
			if !ok {
				*out = append(*out, emi.FieldError{Field: join(path, k), Message: "is not a known field"})
				continue
			}
			if obj[k] == nil && !f.nullable && f.typ.Kind() != reflect.Interface {
				*out = append(*out, emi.FieldError{Field: join(path, k), Message: nullMessage})
				continue
			}
			check(obj[k], f.typ, join(path, k), out)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be an array"})
			return
		}
		if t.Kind() == reflect.Array && len(arr) > t.Len() {
			*out = append(*out, emi.FieldError{Field: path, Message: "has too many elements"})
		}
		for i, e := range arr {
			if e == nil && t.Elem().Kind() != reflect.Interface {
				*out = append(*out, emi.FieldError{Field: path + "[" + strconv.Itoa(i) + "]", Message: nullMessage})
				continue
			}
			check(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", out)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be an object"})
			return
		}
		for _, k := range sortedKeys(obj) {
			if strings.IndexByte(k, 0) >= 0 {
				*out = append(*out, emi.FieldError{Field: join(path, k), Message: nulMessage})
				continue
			}
			if obj[k] == nil && t.Elem().Kind() != reflect.Interface {
				*out = append(*out, emi.FieldError{Field: join(path, k), Message: nullMessage})
				continue
			}
			check(obj[k], t.Elem(), join(path, k), out)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a string"})
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be true or false"})
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a number"})
			return
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(i) {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a whole number in range"})
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a number"})
			return
		}
		u, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(u) {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a whole number in range"})
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a number"})
			return
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil || math.IsInf(f, 0) || reflect.Zero(t).OverflowFloat(f) {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a number in range"})
		}
	case reflect.Interface:
		// any value is accepted, but no NUL inside (stored as jsonb,
		// which refuses \u0000 as text does)
		nulDeep(v, path, out)
	default:
		*out = append(*out, emi.FieldError{Field: path, Message: "is not accepted"})
	}
}

// StorableText reports whether a PostgreSQL text column can hold s: valid
// UTF-8 without a NUL character. PostgreSQL refuses anything else with an
// error, which would answer 500 for a client's mistake, so every value
// from outside that reaches a query is checked with it first (the JSON
// decoder, API query filters, back-office forms).
func StorableText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// nulMessage is the answer for a string with a NUL character: PostgreSQL
// text and jsonb cannot hold one, so it would otherwise fail at the
// database as a 500 after passing every rule.
const nulMessage = "must not contain NUL characters"

// nul appends a FieldError and reports true when v is a string holding a
// NUL character.
func nul(v any, path string, out *[]emi.FieldError) bool {
	if s, ok := v.(string); ok && strings.IndexByte(s, 0) >= 0 {
		*out = append(*out, emi.FieldError{Field: path, Message: nulMessage})
		return true
	}
	return false
}

// nulDeep checks every string and key inside a free-form value.
func nulDeep(v any, path string, out *[]emi.FieldError) {
	switch t := v.(type) {
	case string:
		nul(t, path, out)
	case []any:
		for i, e := range t {
			nulDeep(e, path+"["+strconv.Itoa(i)+"]", out)
		}
	case map[string]any:
		for _, k := range sortedKeys(t) {
			if strings.IndexByte(k, 0) >= 0 {
				*out = append(*out, emi.FieldError{Field: join(path, k), Message: nulMessage})
				continue
			}
			nulDeep(t[k], join(path, k), out)
		}
	}
}

// FieldMessager is implemented by errors from custom UnmarshalJSON methods
// whose text may be shown to clients.
type FieldMessager interface{ FieldMessage() string }

func unmarshalerMessage(err error) string {
	var fm FieldMessager
	if errors.As(err, &fm) {
		return fm.FieldMessage()
	}
	return "is invalid"
}

// nullMessage is the answer for null where the schema does not allow it.
const nullMessage = "must not be null"

// structField is a JSON field of a request struct.
type structField struct {
	typ reflect.Type
	// nullable: the field's `nullable:"true"` tag; null is accepted and
	// leaves it unset.
	nullable bool
}

// structFields maps JSON names to fields, following embedded structs as
// encoding/json does.
func structFields(t reflect.Type) map[string]structField {
	m := map[string]structField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range structFields(et) {
					if _, dup := m[k]; !dup {
						m[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = structField{typ: f.Type, nullable: f.Tag.Get("nullable") == "true"}
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Sorted so that error lists are stable for clients and tests.
	slices.Sort(keys)
	return keys
}
