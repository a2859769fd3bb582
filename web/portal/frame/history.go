package frame

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"

	"emi/internal/emi"
	"emi/internal/service/staff"
	"emi/views/fragments"
)

// An entity's audit history as the pages show it (the audit log, and the
// history section of an account's, card's, person's, application's and
// transfer's page): actors and the ids in the changes named.

// AuditRow is one audit line as people read it, not as ids: the actor by
// name (a staff member's, or "API key of" the partner's) with the id on
// hover, a partner's or staff user's row by their name, the system as
// "system (test)". Staff actors link to their page for roles that see
// staff.
func AuditRow(r *http.Request, e emi.AuditEntry) fragments.AuditRow {
	row := fragments.AuditRow{
		ID: strconv.FormatInt(e.ID, 10), At: FmtTime(e.At), Actor: auditActor(e), ActorTitle: e.ActorID,
		Action: e.Action, Resource: e.ResourceType + " " + e.ResourceToken, Outcome: string(e.Outcome),
		RequestID: e.RequestID,
	}
	if e.ResourceName != "" {
		row.Resource, row.ResourceTitle = e.ResourceType+" "+e.ResourceName, e.ResourceToken
	}
	if e.IP.IsValid() {
		row.IP = e.IP.String()
	}
	row.OutcomeTone = outcomeTone(e.Outcome)
	if e.ActorType == emi.ActorStaff && CanDo(r, staff.ViewStaff) {
		row.ActorHref = "/backoffice/staff/" + e.ActorID
	}
	switch e.ResourceType {
	case "partner":
		row.ResourceHref = "/backoffice/partners/" + e.ResourceToken
	case "staff_user":
		row.ResourceHref = "/backoffice/staff/" + e.ResourceToken
	case "user":
		row.ResourceHref = "/backoffice/users/" + e.ResourceToken
	case "aml_check":
		row.ResourceHref = "/backoffice/aml/" + e.ResourceToken
	case "kyc_session":
		row.ResourceHref = "/backoffice/kyc/" + e.ResourceToken
	case "application":
		row.ResourceHref = "/backoffice/applications/" + e.ResourceToken
	case "account":
		row.ResourceHref = "/backoffice/accounts/" + e.ResourceToken
	case "card":
		if e.ResourceToken != "" {
			row.ResourceHref = CardHref(e.ResourceToken)
		}
	case "program":
		row.ResourceHref = ProgramHref(e.ResourceToken)
	case "transfer":
		row.ResourceHref = TransferHref(e.ResourceToken)
	case "watchlist_entry":
		row.ResourceHref = "/backoffice/watchlist"
	case "partner_key":
		if e.PartnerID != "" {
			row.ResourceHref = "/backoffice/partners/" + e.PartnerID
		}
	}
	if len(e.Changes) > 0 {
		b, _ := json.Marshal(e.Changes)
		row.Changes = string(b)
	}
	return row
}

// uuidInJSON is a whole id inside an audit entry's changes.
var uuidInJSON = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// NameAuditIDs writes the names of staff members and partners in place of
// their ids in the rows' changes ({"mentions":["Sandbox Compliance"]}), and
// keeps the changes as recorded, ids and all, on hover (no partner or staff
// id where a name exists). Ids of other things stay: they have no name. The
// names are looked up only when a row has an id.
func (f *Frame) NameAuditIDs(r *http.Request, rows []fragments.AuditRow) {
	var staff, partners map[string]string
	for i := range rows {
		if !uuidInJSON.MatchString(rows[i].Changes) {
			continue
		}
		if staff == nil {
			staff, partners = f.StaffNames(r), f.PartnerNames(r)
		}
		named := nameIDsIn(rows[i].Changes, staff, partners)
		if named != rows[i].Changes {
			rows[i].ChangesTitle, rows[i].Changes = rows[i].Changes, named
		}
	}
}

// nameIDsIn replaces the whole ids in changes (JSON) that names has, the
// first map first, by the names, escaped for a JSON string. Other ids stay.
func nameIDsIn(changes string, names ...map[string]string) string {
	return uuidInJSON.ReplaceAllStringFunc(changes, func(id string) string {
		for _, m := range names {
			if n, ok := m[id]; ok {
				return jsonStringContent(n)
			}
		}
		return id
	})
}

// jsonStringContent is s as it reads inside a JSON string, without the
// quotes.
func jsonStringContent(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// auditActor names an audit row's actor.
func auditActor(e emi.AuditEntry) string {
	switch {
	case e.ActorType == emi.ActorSystem:
		return "system (" + e.ActorID + ")"
	case e.ActorName == "":
		return string(e.ActorType) + " " + e.ActorID // a deleted actor: the id is all there is
	case e.ActorType == emi.ActorPartnerKey:
		return "API key of " + e.ActorName
	}
	return e.ActorName
}
