package httpx

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
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
		return nil, emi.ErrBadRequest.WithDetail("read body: %v", err)
	}
	return b, nil
}

// CheckJSONContentType returns emi.ErrBadRequest unless a non-empty body is
// declared as application/json (any charset parameter must be utf-8).
func CheckJSONContentType(r *http.Request, body []byte) error {
	if len(body) == 0 {
		return nil
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return emi.ErrBadRequest.WithDetail("content type must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return emi.ErrBadRequest.WithDetail("charset must be utf-8")
	}
	return nil
}

// DecodeJSON decodes body into dst, which must point to a struct, strictly:
//   - the body must be one JSON object, valid UTF-8, nested at most MaxDepth
//     deep, with nothing after it; otherwise emi.ErrBadRequest (10005);
//   - every key must be a field of dst at that place (exact, case-sensitive
//     match), and every value of the field's JSON type; otherwise
//     validation (the endpoint's validation error) listing every such field
//     with its JSON path, e.g. payout_details[0].iban.
//
// An empty body decodes as {}. null is refused (validation, "must not be
// null") except for a field tagged `nullable:"true"` (where openapi.yaml
// allows null, and null leaves it unset) and inside free-form values: Go
// would silently keep the zero value, so a client's null would mean
// something the schema does not say. Unknown fields include create-only
// fields sent to an update, since update inputs do not declare them.
func DecodeJSON(body []byte, dst any, validation *emi.Error) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return emi.Internal(errors.New("DecodeJSON: dst must point to a struct"))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if !utf8.Valid(body) {
		return emi.ErrBadRequest.WithDetail("body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return emi.ErrBadRequest.WithDetail("malformed JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return emi.ErrBadRequest.WithDetail("data after the JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return emi.ErrBadRequest.WithDetail("body must be a JSON object")
	}
	if depth(v) > MaxDepth {
		return emi.ErrBadRequest.WithDetail("JSON nested too deep")
	}
	var fields []emi.FieldError
	check(obj, rv.Elem().Type(), "", &fields)
	if len(fields) > 0 {
		return validation.WithFields(fields...)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		// check() mirrors encoding/json's rules, so this is only reached
		// through a custom UnmarshalJSON that check could not run alone.
		return validation.Field("", "is invalid")
	}
	return nil
}

func depth(v any) int {
	switch t := v.(type) {
	case map[string]any:
		d := 0
		for _, e := range t {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		d := 0
		for _, e := range t {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

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
