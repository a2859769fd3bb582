package portal

import (
	"net/http"
	"strings"

	"emi/internal/emi"
)

// flashError answers a failed action: 403/404/500 pages for those kinds, a
// flash on the page the action came from for rule errors. It is for forms
// with nothing typed (a button, a choice among the page's own options): a
// refused form with typed input answers its page again (422) with the input
// kept instead (components.Form), so nothing typed is lost.
func (p *Portal) flashError(w http.ResponseWriter, r *http.Request, err error, back string) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden, emi.KindNotFound, emi.KindInternal:
		p.renderError(w, r, err)
		return
	}
	msg := Message(e)
	if _, banner := fieldErrors(err); len(e.Fields) > 0 {
		parts := []string{banner}
		for _, f := range e.Fields {
			parts = append(parts, f.Field+": "+f.Message)
		}
		msg = strings.Join(parts, " ")
	}
	p.flash(r.Context(), "bad", msg)
	redirect(w, r, back)
}

// errorIs reports whether err is the catalogue error target (same code and
// key), whatever detail or fields it carries.
func errorIs(err error, target *emi.Error) bool {
	if err == nil {
		return false
	}
	e := emi.AsError(err)
	return e.Code == target.Code && e.Key == target.Key
}
