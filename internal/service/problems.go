package service

import (
	"emi/internal/emi"
	"slices"
)

// problems collects field errors under a path prefix.
type problems []emi.FieldError

func (p *problems) add(field, msg string) {
	*p = append(*p, emi.FieldError{Field: field, Message: msg})
}

func (p *problems) addErr(prefix string, err error) error {
	if err == nil {
		return nil
	}
	e := emi.AsError(err)
	if e.Kind != emi.KindInvalid {
		return err
	}
	for _, f := range e.Fields {
		field := f.Field
		if prefix != "" {
			field = prefix + "." + field
			if f.Field == "" {
				field = prefix
			}
		}
		*p = append(*p, emi.FieldError{Field: field, Message: f.Message})
	}
	return nil
}

func (p problems) has(field string) bool {
	return slices.ContainsFunc(p, func(f emi.FieldError) bool { return f.Field == field })
}
