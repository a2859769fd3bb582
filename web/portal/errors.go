package portal

import (
	"net/http"
	"strings"

	"emi/internal/emi"
)

// FlashError answers a failed action: 403/404/500 pages for those kinds, a
// flash on the page the action came from for rule errors. It is for forms
// with nothing typed (a button, a choice among the page's own options): a
// refused form with typed input answers its page again (422) with the input
// kept instead (components.Form), so nothing typed is lost.
func (p *Portal) FlashError(w http.ResponseWriter, r *http.Request, err error, back string) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden, emi.KindNotFound, emi.KindInternal:
		p.RenderError(w, r, err)
		return
	}
	msg := Message(e)
	if _, banner := FieldErrors(err); len(e.Fields) > 0 {
		parts := []string{banner}
		for _, f := range e.Fields {
			parts = append(parts, f.Field+": "+f.Message)
		}
		msg = strings.Join(parts, " ")
	}
	p.Flash(r.Context(), "bad", msg)
	Redirect(w, r, back)
}

// ErrorIs reports whether err is the catalogue error target (same code and
// key), whatever detail or fields it carries.
func ErrorIs(err error, target *emi.Error) bool {
	if err == nil {
		return false
	}
	e := emi.AsError(err)
	return e.Code == target.Code && e.Key == target.Key
}
