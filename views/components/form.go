package components

import (
	"net/url"
	"strings"

	"github.com/a-h/templ"
)

// Form is what was typed into a refused back-office form, shown again (so
// nothing typed is lost): every value as typed, each refusal beside its
// field (aria-invalid and aria-describedby naming the message, which
// FieldErrors renders with the id <field>-error), the first refused field
// focused so the browser scrolls to it, and the form's section open. It is
// the one way a page keeps a refused form: a handler fills it with
// KeepForm, adds the errors (FieldErrs of the service's validation error)
// and renders the page again with 422; a nil *Form is an empty, folded
// form.
type Form struct {
	// Which names the refused form when a page has several.
	Which  string
	Values map[string]string
	// Errs holds messages by field; General a refusal of no one field.
	Errs    map[string]string
	General string
	// fields is the form's field order, for the first refused one.
	fields []string
}

// KeepForm keeps the values of fields (in form order) from a posted form,
// trimmed of surrounding spaces.
func KeepForm(which string, posted url.Values, fields ...string) *Form {
	f := &Form{Which: which, Values: map[string]string{}, Errs: map[string]string{}, fields: fields}
	for _, n := range fields {
		f.Values[n] = strings.TrimSpace(posted.Get(n))
	}
	return f
}

// Is reports whether f is the refused form named which.
func (f *Form) Is(which string) bool { return f != nil && f.Which == which }

// Value is what was typed into a field ("" for an empty form).
func (f *Form) Value(field string) string {
	if f == nil {
		return ""
	}
	return f.Values[field]
}

// Refuse sets a field's message unless it already has one.
func (f *Form) Refuse(field, msg string) {
	if f.Errs[field] == "" {
		f.Errs[field] = msg
	}
}

// Invalid reports whether a field was refused.
func (f *Form) Invalid(field string) bool { return f != nil && f.Errs[field] != "" }

// Refused reports whether any field was refused.
func (f *Form) Refused() bool { return f != nil && (len(f.Errs) > 0 || f.General != "") }

// Errors is the messages by field, for FieldErrors.
func (f *Form) Errors() map[string]string {
	if f == nil {
		return nil
	}
	return f.Errs
}

// first is the first refused field in form order.
func (f *Form) first() string {
	for _, n := range f.fields {
		if f.Invalid(n) {
			return n
		}
	}
	return ""
}

// Attrs are a field's accessibility attributes (ErrAttrs), and autofocus
// on the first refused field.
func (f *Form) Attrs(field string) templ.Attributes {
	a := ErrAttrs(f.Errors(), field)
	if len(a) > 0 && f.first() == field {
		a["autofocus"] = true
	}
	return a
}

// ErrAttrs are the attributes of a refused field of a form whose errors
// are a map by field (FieldErrors renders the message): aria-invalid, and
// aria-describedby naming the message. None for a field not refused.
func ErrAttrs(errs map[string]string, field string) templ.Attributes {
	a := templ.Attributes{}
	if errs[field] != "" {
		a["aria-invalid"] = "true"
		a["aria-describedby"] = field + "-error"
	}
	return a
}
