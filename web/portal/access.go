package portal

import (
	"net/http"

	"emi/internal/emi"
)

// canDo reports whether the signed-in staff user holds perm (to show or
// hide a control; the service checks again).
func canDo(r *http.Request, perm emi.Permission) bool {
	pr, _ := emi.PrincipalFrom(r.Context())
	return pr.Can(perm)
}
