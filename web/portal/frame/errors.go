package frame

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
func (f *Frame) FlashError(w http.ResponseWriter, r *http.Request, err error, back string) {
	e := emi.AsError(err)
	switch e.Kind {
	case emi.KindForbidden, emi.KindNotFound, emi.KindInternal:
		f.RenderError(w, r, err)
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
	f.Flash(r.Context(), "bad", msg)
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

// FlashMoneyError answers a refused money action: 403, 404 (an unknown item)
// and 500 pages; a flash on the page the action came from otherwise.
func (f *Frame) FlashMoneyError(w http.ResponseWriter, r *http.Request, err error, back string) {
	switch {
	case ErrorIs(err, emi.ErrFourEyes):
		f.Flash(r.Context(), "bad", Message(emi.AsError(err)))
		Redirect(w, r, back)
		return
	case ErrorIs(err, emi.ErrSuspenseNotFound), ErrorIs(err, emi.ErrAdjustmentNotFound):
		f.RenderError(w, r, err)
		return
	}
	switch emi.AsError(err).Kind {
	case emi.KindForbidden, emi.KindInternal:
		f.RenderError(w, r, err)
		return
	}
	e := emi.AsError(err)
	msg := Message(e)
	for _, f := range e.Fields {
		msg += " " + f.Field + ": " + f.Message + "."
	}
	f.Flash(r.Context(), "bad", msg)
	Redirect(w, r, back)
}
