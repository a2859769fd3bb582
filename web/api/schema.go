package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	yaml "github.com/pb33f/go-yaml"

	"emi/internal/emi"
	"emi/internal/validate"
	"emi/web/httpx"
)

// The request schemas of openapi.yaml, applied by the strict decoder
// (httpx.DecodeJSONWith) where the Go type of the input cannot see what the
// document says:
//
//   - "" is a value, not an absent field: where a string field's documented
//     enum, pattern, format (date, email, ...) or minLength refuses "", "" is refused ("must not be
//     empty (...)"), even where the field is optional. The Go rules of such
//     fields (validate:"omitempty,country") skip "" as if the field were
//     left out, so `"nationality": ""` screened a person without a
//     nationality and `"merchant_country": ""` paid from nowhere. Where ""
//     means something (user_update clears a text field, card_groups removes
//     a group, a company's country is not known yet), the document says so
//     with a pattern or an enum that accepts "" ("^([A-Z]{2})?$").
//   - a JSON number where the document declares a string (and no number)
//     is refused ("must be a string"), whatever the Go type would read.
//
// The document is the contract partners build from (/docs): reading the
// rules from it keeps the server and the reference from drifting apart.
// Every other rule (formats, lengths, enums of non-empty values, required
// fields) is the service's, with its own messages; the negative test
// (TestEveryDocumentedConstraintIsEnforced) checks that the two agree on
// every documented constraint.

// schemaNode is what the decoder applies of one schema.
type schemaNode struct {
	types     []string
	enum      []string // string values of the enum, when it has one
	hasEnum   bool
	pattern   *regexp.Regexp
	format    string // one of emptyFormats, else ""
	minLength int
	props     map[string]*schemaNode
	items     *schemaNode
}

// requestSchemas are the request body schemas by operation name
// (x-emi-operation), built once per process from OpenAPI.
var requestSchemas = sync.OnceValues(func() (map[string]*schemaNode, error) {
	return buildRequestSchemas(OpenAPI)
})

// requestSchema returns the documented request body of the operation, or
// nil when the document has none (an extra operation of a test).
func requestSchema(op string) httpx.Schema {
	m, err := requestSchemas()
	if err != nil {
		// openapi.yaml is embedded and parsed by every test: not reached.
		panic(fmt.Errorf("openapi.yaml: %w", err))
	}
	if n := m[op]; n != nil {
		return n
	}
	return nil
}

func buildRequestSchemas(doc []byte) (map[string]*schemaNode, error) {
	var root map[string]any
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	comps, _ := root["components"].(map[string]any)
	b := &schemaBuilder{schemas: map[string]any{}, built: map[string]*schemaNode{}}
	if comps != nil {
		b.schemas, _ = comps["schemas"].(map[string]any)
	}
	out := map[string]*schemaNode{}
	paths, _ := root["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, o := range ops {
			op, _ := o.(map[string]any)
			name, _ := op["x-emi-operation"].(string)
			rb, _ := op["requestBody"].(map[string]any)
			if name == "" || rb == nil {
				continue
			}
			content, _ := rb["content"].(map[string]any)
			mt, _ := content["application/json"].(map[string]any)
			if mt == nil || mt["schema"] == nil {
				continue
			}
			n, err := b.node(mt["schema"])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = n
		}
	}
	return out, nil
}

// schemaBuilder resolves $ref (to #/components/schemas) and merges allOf.
type schemaBuilder struct {
	schemas map[string]any
	built   map[string]*schemaNode
}

func (b *schemaBuilder) node(v any) (*schemaNode, error) {
	s, _ := v.(map[string]any)
	if s == nil {
		return nil, nil
	}
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/components/schemas/")
		if !found || b.schemas[name] == nil {
			return nil, fmt.Errorf("unresolved $ref %q", ref)
		}
		if n, ok := b.built[name]; ok {
			return n, nil // also ends a recursive schema
		}
		n := &schemaNode{}
		b.built[name] = n
		built, err := b.node(b.schemas[name])
		if err != nil || built == nil {
			return built, err
		}
		*n = *built
		return n, nil
	}
	n := &schemaNode{}
	// oneOf / anyOf: only "that or null" is applied; a real choice is the
	// service's to check.
	for _, k := range []string{"oneOf", "anyOf"} {
		alts, _ := s[k].([]any)
		if len(alts) == 0 {
			continue
		}
		var other []any
		for _, a := range alts {
			if m, _ := a.(map[string]any); len(m) == 1 && m["type"] == "null" {
				continue
			}
			other = append(other, a)
		}
		if len(other) != 1 {
			return nil, nil
		}
		alt, err := b.node(other[0])
		if err != nil || alt == nil {
			return nil, err
		}
		*n = *alt
		if len(n.types) > 0 {
			n.types = append(slices.Clone(n.types), "null")
		}
	}
	for _, sub := range anySlice(s["allOf"]) {
		part, err := b.node(sub)
		if err != nil {
			return nil, err
		}
		n.merge(part)
	}
	switch t := s["type"].(type) {
	case string:
		n.types = []string{t}
	case []any:
		n.types = nil
		for _, e := range t {
			if str, ok := e.(string); ok {
				n.types = append(n.types, str)
			}
		}
	}
	if e, ok := s["enum"].([]any); ok {
		n.hasEnum = true
		n.enum = nil
		for _, v := range e {
			if str, ok := v.(string); ok {
				n.enum = append(n.enum, str)
			}
		}
	}
	if p, ok := s["pattern"].(string); ok {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
		n.pattern = re
	}
	if f, ok := s["format"].(string); ok && emptyFormats[f] != "" {
		n.format = f
	}
	if ml, ok := s["minLength"]; ok {
		v, err := strconv.Atoi(fmt.Sprint(ml))
		if err != nil {
			return nil, fmt.Errorf("minLength %v", ml)
		}
		n.minLength = v
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if n.props == nil {
			n.props = map[string]*schemaNode{}
		}
		for k, v := range props {
			p, err := b.node(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if p != nil {
				n.props[k] = p
			}
		}
	}
	if items, ok := s["items"]; ok {
		it, err := b.node(items)
		if err != nil {
			return nil, err
		}
		n.items = it
	}
	return n, nil
}

// merge adds the constraints of an allOf part to n.
func (n *schemaNode) merge(part *schemaNode) {
	if part == nil {
		return
	}
	if len(part.types) > 0 {
		n.types = part.types
	}
	if part.hasEnum {
		n.hasEnum, n.enum = true, part.enum
	}
	if part.pattern != nil {
		n.pattern = part.pattern
	}
	if part.format != "" {
		n.format = part.format
	}
	n.minLength = max(n.minLength, part.minLength)
	for k, p := range part.props {
		if n.props == nil {
			n.props = map[string]*schemaNode{}
		}
		n.props[k] = p
	}
	if part.items != nil {
		n.items = part.items
	}
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// emptyFormats are the formats "" does not satisfy, with what they ask for.
var emptyFormats = map[string]string{
	"date": "a date YYYY-MM-DD", "date-time": "an RFC 3339 date and time", "email": "an e-mail address",
	"uri": "an absolute URI", "ipv4": "an IPv4 address", "ipv6": "an IPv6 address", "uuid": "a UUID",
}

// ruleCheck applies the inputs' validation tags, with the rules the
// services register (validate.New registers them all), for
// schemaNode.Rules.
var ruleCheck = validate.New()

// Rules implements httpx.Schema: the problems of the validation tags of
// dst, so that a body refused for "" still hears of its other problems in
// the same answer. The service checks the same tags again once the body
// is accepted; its own checks beyond the tags (an IBAN's owner, a group of
// the program) run only then.
func (n *schemaNode) Rules(dst any) []emi.FieldError {
	err := ruleCheck.Struct(dst, emi.ErrValidation)
	if e := emi.AsError(err); err != nil && e.Kind == emi.KindInvalid {
		return e.Fields
	}
	return nil
}

// Problems implements httpx.Schema: v is the decoded body (UseNumber).
func (n *schemaNode) Problems(v any) []emi.FieldError {
	var out []emi.FieldError
	n.check(v, "", &out)
	return out
}

func (n *schemaNode) check(v any, path string, out *[]emi.FieldError) {
	if n == nil || v == nil {
		return
	}
	declares := func(t string) bool { return slices.Contains(n.types, t) }
	switch t := v.(type) {
	case json.Number, float64:
		if declares("string") && !declares("number") && !declares("integer") {
			*out = append(*out, emi.FieldError{Field: path, Message: "must be a string"})
		}
	case string:
		if t != "" || !declares("string") && len(n.types) > 0 {
			return
		}
		switch {
		case n.hasEnum && !slices.Contains(n.enum, ""):
			*out = append(*out, emi.FieldError{Field: path, Message: "must not be empty (one of: " + strings.Join(n.enum, "; ") + ")"})
		case !n.hasEnum && n.pattern != nil && !n.pattern.MatchString(""):
			*out = append(*out, emi.FieldError{Field: path, Message: "must not be empty (pattern " + n.pattern.String() + ")"})
		case !n.hasEnum && n.format != "":
			*out = append(*out, emi.FieldError{Field: path, Message: "must not be empty (" + emptyFormats[n.format] + ")"})
		case !n.hasEnum && n.minLength > 0:
			*out = append(*out, emi.FieldError{Field: path, Message: fmt.Sprintf("must not be empty (at least %d characters)", n.minLength)})
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) { // stable error lists
			if p := n.props[k]; p != nil {
				p.check(t[k], emi.JoinField(path, k), out)
			}
		}
	case []any:
		for i, e := range t {
			n.items.check(e, path+"["+strconv.Itoa(i)+"]", out)
		}
	}
}
