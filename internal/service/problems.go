package service

import (
	"emi/internal/emi"
	"slices"
	"strconv"
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

// checkPage adds the problems of a page of a partner API list: page from 1,
// limit from 1 to maxLimit (the same words on every list; the caller
// answers them with its own validation code).
func (p *problems) checkPage(page, limit, maxLimit int) {
	if page < 1 {
		p.add("page", "must be 1 or more")
	}
	if limit < 1 || limit > maxLimit {
		p.add("limit", "must be from 1 to "+strconv.Itoa(maxLimit))
	}
}
