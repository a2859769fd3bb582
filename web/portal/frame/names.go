package frame

import (
	"net/http"

	"emi/internal/service/partners"
	"emi/internal/service/staff"
	"emi/views/components"
)

// Naming who did something or whose it is, as every area's pages show it:
// the signed-in user as "(you)", staff by name, partners by name, an
// unknown actor by a short id.

// Who names the staff user behind an id: by name (the store joins it),
// "(you)" for the signed-in user, the id when the name is unknown.
func Who(r *http.Request, staffID, name string) string {
	if u := Me(r); staffID != "" && u.ID == staffID {
		return u.Name + " (you)"
	}
	if name != "" {
		return name
	}
	return staffID
}

// StaffName names a staff member: the signed-in user as "(you)", else
// the name the store joined (no list of the staff is read).
func StaffName(r *http.Request, id, name string) string {
	if u := Me(r); id != "" && u.ID == id {
		return u.Name + " (you)"
	}
	return FirstNonEmpty(name, "staff "+ShortID(id))
}

// ActorOf names who made a status change: a staff user (linked for roles
// that see staff), the partner's API (for roles that see partners' keys),
// or the actor's id.
func ActorOf(r *http.Request, id string, staffNames, keys map[string]string) (string, string) {
	if u := Me(r); id != "" && u.ID == id {
		return u.Name + " (you)", ""
	}
	if n, ok := staffNames[id]; ok {
		if !CanDo(r, staff.ViewStaff) {
			return n, ""
		}
		return n, "/backoffice/staff/" + id
	}
	if k, ok := keys[id]; ok {
		return "partner API (key " + k + ")", ""
	}
	if id == "" {
		return "—", ""
	}
	return "staff or API key " + ShortID(id), ""
}

func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

// PartnerNameMap names partners. Every staff member sees partner names
// (customer service used to see a bare id); only roles that may open a
// partner's page get a link to it (partnerKV).
type PartnerNameMap map[string]string

// Name returns the partner's Name; an id that names no partner (never
// expected: partners are never deleted) is shown shortened.
func (m PartnerNameMap) Name(id string) string {
	if n, ok := m[id]; ok {
		return n
	}
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

// KV is a labelled partner: its name, the id on hover, and a link to the
// partner's page for roles that may see it.
func (m PartnerNameMap) KV(r *http.Request, label, id string) components.KV {
	kv := components.KV{Label: label, Value: m.Name(id), Title: id}
	if id != "" && CanDo(r, partners.View) {
		kv.Href = "/backoffice/partners/" + id
	}
	return kv
}

func (f *Frame) PartnerNames(r *http.Request) PartnerNameMap {
	names, err := f.partners.Names(r.Context())
	if err != nil {
		return PartnerNameMap{} // names are a convenience; the page works without them
	}
	return names
}

// StaffNames names staff members by id for any signed-in role (an empty
// map when the lookup fails: who() then shows the id).
func (f *Frame) StaffNames(r *http.Request) map[string]string {
	names, err := f.staff.Names(r.Context())
	if err != nil {
		return map[string]string{}
	}
	return names
}
