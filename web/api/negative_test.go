package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi/datamodel/high/base"

	"emi/internal/app/apptest"
	"emi/internal/emi"
)

// The spec-driven negative test: for every operation, one request per
// constraint openapi.yaml states, each violating it and nothing else, must
// be refused with the operation's validation code and change nothing. The
// constraints are read from the document, so a constraint added there is
// tested without editing this file, and a constraint the server does not
// enforce fails here.

// violation is one request that breaks one constraint.
type violation struct {
	what  string
	path  string
	body  []byte
	field string
}

// mergedSchema resolves allOf into one schema's properties, required list
// and additionalProperties (false when any part closes it, or when
// unevaluatedProperties is false).
type mergedSchema struct {
	props    map[string]*base.Schema
	order    []string
	required []string
	closed   bool
}

func merge(s *base.Schema) mergedSchema {
	m := mergedSchema{props: map[string]*base.Schema{}}
	var walk func(s *base.Schema)
	walk = func(s *base.Schema) {
		if s == nil {
			return
		}
		for _, sub := range s.AllOf {
			walk(sub.Schema())
		}
		m.required = append(m.required, s.Required...)
		if s.AdditionalProperties != nil && s.AdditionalProperties.IsB() && !s.AdditionalProperties.B {
			m.closed = true
		}
		if s.UnevaluatedProperties != nil && s.UnevaluatedProperties.IsB() && !s.UnevaluatedProperties.B {
			m.closed = true
		}
		if s.Properties != nil {
			for name, p := range s.Properties.FromOldest() {
				if _, ok := m.props[name]; !ok {
					m.order = append(m.order, name)
				}
				m.props[name] = p.Schema()
			}
		}
	}
	walk(s)
	return m
}

// badFormat is a value of the wrong format, by format name.
var badFormat = map[string]any{"date": "2020-13-45", "email": "not-an-email", "date-time": "yesterday",
	"uri": "::not a uri", "ipv4": "999.1.1.1", "ip": "not-an-ip"}

// objectViolations returns, for the object value obj of schema s at path
// (a JSON path prefix), every single-constraint violation, as functions
// that mutate a copy of the whole body.
func objectViolations(s *base.Schema, obj map[string]any, path string, set func(mut func(map[string]any)) []byte, out *[]violation, reqPath string) {
	m := merge(s)
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for _, r := range m.required {
		if _, ok := obj[r]; !ok {
			continue // the example leaves it out: it is not really required
		}
		*out = append(*out, violation{what: "required " + join(r) + " left out", path: reqPath, field: join(r),
			body: set(func(o map[string]any) { delete(o, r) })})
	}
	if m.closed {
		*out = append(*out, violation{what: "additional property in " + path, path: reqPath, field: join("zz_extra"),
			body: set(func(o map[string]any) { o["zz_extra"] = 1 })})
	}
	names := append([]string(nil), m.order...)
	sort.Strings(names)
	for _, name := range names {
		ps := m.props[name]
		if ps == nil || ps.ReadOnly != nil && *ps.ReadOnly {
			continue
		}
		f := join(name)
		put := func(what string, v any) {
			*out = append(*out, violation{what: what, path: reqPath, field: f, body: set(func(o map[string]any) { o[name] = v })})
		}
		if !slices.Contains(ps.Type, "null") && len(ps.OneOf) == 0 && len(ps.AnyOf) == 0 {
			put(f+" null (not nullable)", nil)
		}
		if len(ps.Enum) > 0 && (slices.Contains(ps.Type, "string") || len(ps.Type) == 0) {
			put(f+" not in its enum", "zz-not-in-enum")
		}
		// The strict decoding classes (issue 34): a JSON number where only
		// a string is declared is refused, never read as the string, and
		// "" is held to the field's enum, pattern and minLength like any
		// other value (an optional field left out is absent; sent as "" it
		// is a value).
		if stringOnly(ps) {
			put(f+" as a JSON number (declared a string)", 12345)
		}
		if why := emptyRefused(ps); why != "" {
			put(f+` "" (`+why+`)`, "")
		}
		if ps.Items != nil && ps.Items.IsA() && (slices.Contains(ps.Type, "array") || len(ps.Type) == 0) {
			is := ps.Items.A.Schema()
			if stringOnly(is) {
				put(f+"[0] as a JSON number (items declared strings)", []any{12345})
			}
			if why := emptyRefused(is); why != "" {
				put(f+`[0] "" (`+why+`)`, []any{""})
			}
		}
		if ps.MinLength != nil && *ps.MinLength > 0 {
			put(fmt.Sprintf("%s shorter than minLength %d", f, *ps.MinLength), strings.Repeat("1", int(*ps.MinLength-1)))
		}
		if ps.MaxLength != nil && *ps.MaxLength < 100000 {
			put(fmt.Sprintf("%s longer than maxLength %d", f, *ps.MaxLength), strings.Repeat("a", int(*ps.MaxLength+1)))
		}
		if ps.Maximum != nil {
			put(fmt.Sprintf("%s above maximum %v", f, *ps.Maximum), *ps.Maximum+1)
		}
		if ps.Minimum != nil {
			put(fmt.Sprintf("%s below minimum %v", f, *ps.Minimum), *ps.Minimum-1)
		}
		if v, ok := badFormat[ps.Format]; ok {
			put(f+" not a "+ps.Format, v)
		}
		if ps.MaxItems != nil && *ps.MaxItems < 100 {
			items := make([]any, *ps.MaxItems+1)
			if cur, ok := obj[name].([]any); ok && len(cur) > 0 {
				for i := range items {
					items[i] = cur[0]
				}
				put(fmt.Sprintf("%s with more than maxItems %d", f, *ps.MaxItems), items)
			}
		}
		if ps.MinItems != nil && *ps.MinItems > 0 {
			put(fmt.Sprintf("%s with fewer than minItems %d", f, *ps.MinItems), []any{})
		}
		// Nested objects the example fills: their own constraints.
		if sub, ok := obj[name].(map[string]any); ok && (slices.Contains(ps.Type, "object") || ps.Properties != nil || len(ps.AllOf) > 0) {
			objectViolations(ps, sub, f, func(mut func(map[string]any)) []byte {
				return set(func(o map[string]any) {
					c := deepCopy(o[name]).(map[string]any)
					mut(c)
					o[name] = c
				})
			}, out, reqPath)
		}
		if arr, ok := obj[name].([]any); ok && len(arr) > 0 && ps.Items != nil && ps.Items.IsA() {
			if first, ok := arr[0].(map[string]any); ok {
				objectViolations(ps.Items.A.Schema(), first, f+"[0]", func(mut func(map[string]any)) []byte {
					return set(func(o map[string]any) {
						c := deepCopy(o[name]).([]any)
						e := c[0].(map[string]any)
						mut(e)
						o[name] = c
					})
				}, out, reqPath)
			}
		}
	}
}

// stringOnly reports whether s declares a string and no number: a JSON
// number there must be refused.
func stringOnly(s *base.Schema) bool {
	return s != nil && slices.Contains(s.Type, "string") && !slices.Contains(s.Type, "number") &&
		!slices.Contains(s.Type, "integer") && len(s.OneOf) == 0 && len(s.AnyOf) == 0
}

// emptyFormats are the formats that "" does not satisfy.
var emptyFormats = map[string]bool{"date": true, "date-time": true, "email": true, "uri": true, "ipv4": true, "ipv6": true, "uuid": true}

// emptyRefused returns why "" breaks the string schema s (its enum, its
// pattern, its format or its minLength), or "" when the schema allows "".
func emptyRefused(s *base.Schema) string {
	if s == nil || !slices.Contains(s.Type, "string") || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return ""
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if e.Value == "" && e.Tag == "!!str" {
				return ""
			}
		}
		return "not in its enum"
	}
	if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString("") {
		return "against its pattern " + s.Pattern
	}
	if emptyFormats[s.Format] {
		return "not a " + s.Format
	}
	if s.MinLength != nil && *s.MinLength > 0 {
		return "shorter than minLength"
	}
	return ""
}

// duplicateKeyBodies returns, for every object of the example v (the body,
// nested objects, the first element of arrays of objects), the example
// written with that object's first key twice, the same value both times,
// and the JSON path of that key: the body is otherwise the valid example,
// so a refusal is the duplicate's.
func duplicateKeyBodies(v any) (bodies [][]byte, fields []string) {
	var paths []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) > 0 {
				paths = append(paths, path)
			}
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], joinPath(path, k))
			}
		case []any:
			if len(t) > 0 {
				walk(t[0], path+"[0]")
			}
		}
	}
	walk(v, "")
	for _, target := range paths {
		var b bytes.Buffer
		var dup string
		var write func(v any, path string)
		write = func(v any, path string) {
			switch t := v.(type) {
			case map[string]any:
				b.WriteByte('{')
				keys := slices.Sorted(maps.Keys(t))
				if path == target {
					keys = append([]string{keys[0]}, keys...)
					dup = joinPath(path, keys[0])
				}
				for i, k := range keys {
					if i > 0 {
						b.WriteByte(',')
					}
					b.Write(jsonOf(k))
					b.WriteByte(':')
					write(t[k], joinPath(path, k))
				}
				b.WriteByte('}')
			case []any:
				b.WriteByte('[')
				for i, e := range t {
					if i > 0 {
						b.WriteByte(',')
					}
					write(e, path+"["+strconv.Itoa(i)+"]")
				}
				b.WriteByte(']')
			default:
				b.Write(jsonOf(t))
			}
		}
		write(v, "")
		bodies = append(bodies, b.Bytes())
		fields = append(fields, dup)
	}
	return bodies, fields
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// bodyCauses are the causes of 10005 for a body: each must be named in
// errors (field and the start of the message), so that a client sees what
// to fix.
func bodyCauses(example []byte) []struct {
	what, ctype  string
	body         []byte
	field, words string
} {
	if len(example) == 0 {
		example = []byte(`{}`)
	}
	return []struct {
		what, ctype  string
		body         []byte
		field, words string
	}{
		{"content type text/plain", "text/plain", example, "content-type", "must be application/json"},
		{"charset latin-1", "application/json; charset=iso-8859-1", example, "content-type", "charset must be utf-8"},
		{"byte order mark", "", append([]byte("\xef\xbb\xbf"), example...), "body", "starts with a byte order mark"},
		{"malformed JSON", "", example[:len(example)-1], "body", "is malformed JSON"},
		{"trailing data", "", append(slices.Clone(example), " {}"...), "body", "has data after the JSON value"},
		{"array body", "", append(append([]byte("["), example...), ']'), "body", "must be a JSON object, not an array"},
		{"invalid UTF-8", "", []byte("{\"a\":\"\xff\"}"), "body", "is not valid UTF-8"},
		{"nested 40 deep", "", deep(40), "body", "is nested deeper than"},
	}
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// TestEveryDocumentedConstraintIsEnforced sends, for every operation, one
// request per constraint of its request body, query and path parameters.
func TestEveryDocumentedConstraintIsEnforced(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, apptest.Options{})
	a := newTenant(t, env, "Negative")
	routes := walkAPI(t, env)
	docs := map[string]documentedOperation{}
	for _, o := range documentedOperations(t, openAPIModel(t)) {
		docs[o.method+" "+o.path] = o
	}
	run := newHostileRun(t, env, a.p)
	total, dups, causes, numbers, empties := 0, 0, 0, 0, 0
	for _, rt := range routes {
		o := docs[rt.method+" "+rt.pattern]
		path := fill(rt.pattern, a.tok, "", "")
		var vs []violation
		if rt.body && rt.example != nil {
			var example map[string]any
			if err := json.Unmarshal(rt.example, &example); err != nil {
				t.Fatalf("%s: example: %v", rt.op, err)
			}
			mt := o.op.RequestBody.Content.GetOrZero("application/json")
			objectViolations(mt.Schema.Schema(), example, "", func(mut func(map[string]any)) []byte {
				c := deepCopy(example).(map[string]any)
				mut(c)
				b, _ := json.Marshal(c)
				return b
			}, &vs, path)
		} else if rt.body {
			t.Errorf("%s %s: a body without a request example cannot be checked", rt.method, rt.pattern)
		}
		for _, prm := range o.op.Parameters {
			if prm.Schema == nil {
				continue
			}
			s := prm.Schema.Schema()
			switch prm.In {
			case "path":
				if s.Minimum != nil {
					vs = append(vs, violation{what: prm.Name + " below minimum", field: prm.Name,
						path: fill(rt.pattern, a.tok, prm.Name, strconv.Itoa(int(*s.Minimum)-1))})
				}
				if s.Maximum != nil {
					vs = append(vs, violation{what: prm.Name + " above maximum", field: prm.Name,
						path: fill(rt.pattern, a.tok, prm.Name, strconv.Itoa(int(*s.Maximum)+1))})
				}
			case "query":
				q := func(what, v string) {
					vs = append(vs, violation{what: prm.Name + " " + what, field: prm.Name, path: path + "?" + prm.Name + "=" + v})
				}
				if s.MinLength != nil && *s.MinLength > 0 {
					q("shorter than minLength", strings.Repeat("1", int(*s.MinLength-1)))
				}
				if len(s.Enum) > 0 {
					q("not in its enum", "zz-not-in-enum")
				}
				if v, ok := badFormat[s.Format]; ok {
					q("not a "+s.Format, fmt.Sprint(v))
				}
				if s.Pattern != "" {
					q("not matching its pattern", "zz%20not%20matching")
				}
			}
		}
		for _, v := range vs {
			switch {
			case strings.Contains(v.what, "as a JSON number"):
				numbers++
			case strings.Contains(v.what, `"" (`):
				empties++
			}
			c := sent{what: v.what, path: v.path, body: v.body, status: http.StatusBadRequest, code: rt.invalid.Code, field: v.field}
			if rt.body && v.body == nil {
				c.body = validBody(rt)
			}
			run.do(rt, c)
			total++
		}
		if rt.body && rt.example != nil {
			var example any
			_ = json.Unmarshal(rt.example, &example)
			bodies, fields := duplicateKeyBodies(example)
			for i, b := range bodies {
				run.do(rt, sent{what: "duplicate key " + fields[i], path: path, body: b, status: http.StatusBadRequest,
					code: rt.invalid.Code, field: fields[i], words: "appears more than once"})
				total++
				dups++
			}
		}
		if rt.body {
			for _, c := range bodyCauses(rt.example) {
				run.do(rt, sent{what: "10005: " + c.what, path: path, body: c.body, ctype: c.ctype, status: http.StatusBadRequest,
					code: emi.ErrBadRequest.Code, field: c.field, words: c.words})
				total++
				causes++
			}
			if rt.props["body"] != nil {
				t.Errorf("%s has a top-level field named body: the 10005 errors entry \"body\" would be ambiguous", rt.op)
			}
		}
		env.Clock.Advance(time.Second)
	}
	t.Logf("spec-driven negative test: %d routes, %d violations sent (%d JSON numbers for strings, %d \"\" refused, %d duplicate keys, %d causes of 10005), %d wrong answers",
		len(routes), total, numbers, empties, dups, causes, run.fails)
	if total < 200 {
		t.Errorf("only %d violations: the walk of openapi.yaml is broken", total)
	}
}
