package partnersui

import (
	"emi/web/portal/frame"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/a-h/templ"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/internal/service/partners"
	"emi/views/partnersview"
)

// validatorState is the edit form of a refused save: what was typed and
// the service's field messages.
type validatorState struct {
	cfg     *emi.ValidatorConfig
	notes   string
	errs    map[string]string
	general []string
}

// clientTypes are the member client types of a validator configuration,
// with their labels.
var clientTypes = []struct{ key, label string }{
	{emi.ClientIndividual, "Individual members"},
	{emi.ClientLegalEntity, "Legal-entity members"},
}

// validatorSection renders the onboarding section of a partner's page: a
// link to its applications and its validator configuration, with the edit
// form for roles that may change it (nil when the role may not see it).
func (p *Pages) validatorSection(r *http.Request, partnerID string, st *validatorState) (templ.Component, error) {
	if p.validators == nil || !frame.CanDo(r, partners.View) {
		return nil, nil
	}
	cfg, err := p.validators.ValidatorConfig(r.Context(), partnerID)
	if err != nil {
		return nil, err
	}
	v := partnersview.ValidatorView{PartnerID: partnerID, Configured: cfg != nil, CanManage: frame.CanDo(r, partners.Manage)}
	if frame.CanDo(r, onboarding.View) {
		v.AppsHref = "/backoffice/applications?status=all&partner=" + partnerID
	}
	if cfg != nil {
		v.Notes = cfg.Notes
		v.Rows = []partnersview.ValidatorRow{
			{Section: "Application", Always: strings.Join(cfg.Application.Always, ", "), ByProduct: byProduct(cfg.Application.ByProduct)},
			{Section: "Company", Always: strings.Join(cfg.Company.Always, ", "), ByProduct: byProduct(cfg.Company.ByProduct)},
		}
		for _, ct := range clientTypes {
			v.Rows = append(v.Rows, partnersview.ValidatorRow{Section: ct.label, Always: strings.Join(cfg.Members[ct.key], ", ")})
		}
		for ct, fs := range cfg.Members { // client types this screen does not know
			if ct != emi.ClientIndividual && ct != emi.ClientLegalEntity {
				v.Rows = append(v.Rows, partnersview.ValidatorRow{Section: "Members " + ct, Always: strings.Join(fs, ", ")})
			}
		}
	}
	if v.CanManage {
		form := cfg
		if st != nil {
			form, v.Errors, v.General, v.FormNotes = st.cfg, st.errs, st.general, st.notes
		} else if cfg != nil {
			v.FormNotes = cfg.Notes
		}
		v.Groups = validatorGroups(form)
		v.Known = []partnersview.KnownFields{
			{Section: "Application", Fields: strings.Join(jsonFields(emi.ApplicationCreate{}), ", ")},
			{Section: "Company", Fields: strings.Join(jsonFields(emi.CompanyFields{}), ", ")},
			{Section: "Members", Fields: strings.Join(jsonFields(emi.MemberAdd{}), ", ")},
		}
	}
	return partnersview.ValidatorConfig(v), nil
}

// byProduct writes "e-commerce: website; pos: …" in the products' order.
func byProduct(m map[string][]string) string {
	var parts []string
	for _, prod := range productsOf(m) {
		parts = append(parts, prod+": "+strings.Join(m[prod], ", "))
	}
	return strings.Join(parts, "; ")
}

// productsOf returns the keys of m, known products first in their order.
func productsOf(m map[string][]string) []string {
	var out []string
	for _, prod := range emi.Products {
		if _, ok := m[prod]; ok {
			out = append(out, prod)
		}
	}
	var rest []string
	for prod := range m {
		if !slices.Contains(emi.Products, prod) {
			rest = append(rest, prod)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// validatorGroups are the form's inputs, filled from c (nil: empty).
func validatorGroups(c *emi.ValidatorConfig) []partnersview.ValidatorGroup {
	if c == nil {
		c = &emi.ValidatorConfig{}
	}
	rule := func(section, legend string, fr emi.FieldRule) partnersview.ValidatorGroup {
		g := partnersview.ValidatorGroup{Legend: legend, Hint: "Required for every application, and in addition for those that ask for a product.",
			Inputs: []partnersview.ValidatorInput{{Name: section + ".always", Label: "Always", Value: strings.Join(fr.Always, ", ")}}}
		for _, prod := range emi.Products {
			g.Inputs = append(g.Inputs, partnersview.ValidatorInput{Name: section + ".by_product." + prod, Label: "With " + prod,
				Value: strings.Join(fr.ByProduct[prod], ", ")})
		}
		return g
	}
	members := partnersview.ValidatorGroup{Legend: "Members", Hint: "Required of each member, by client type."}
	for _, ct := range clientTypes {
		members.Inputs = append(members.Inputs, partnersview.ValidatorInput{Name: "members." + ct.key, Label: ct.label,
			Value: strings.Join(c.Members[ct.key], ", ")})
	}
	return []partnersview.ValidatorGroup{rule("application", "Application", c.Application), rule("company", "Company", c.Company), members}
}

// validatorFromForm reads the edit form.
func validatorFromForm(r *http.Request) *emi.ValidatorConfig {
	rule := func(section string) emi.FieldRule {
		fr := emi.FieldRule{Always: frame.FieldList(r.PostFormValue(section + ".always"))}
		for _, prod := range emi.Products {
			if fs := frame.FieldList(r.PostFormValue(section + ".by_product." + prod)); len(fs) > 0 {
				if fr.ByProduct == nil {
					fr.ByProduct = map[string][]string{}
				}
				fr.ByProduct[prod] = fs
			}
		}
		return fr
	}
	c := &emi.ValidatorConfig{Application: rule("application"), Company: rule("company"), Members: map[string][]string{},
		Notes: strings.TrimSpace(r.PostFormValue("notes"))}
	for _, ct := range clientTypes {
		c.Members[ct.key] = frame.FieldList(r.PostFormValue("members." + ct.key))
	}
	return c
}

// validatorSave (POST /partners/{id}/validator-config) replaces the
// partner's configuration; a refused one comes back with the service's
// field messages beside the inputs.
func (p *Pages) validatorSave(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	c := validatorFromForm(r)
	if err := p.validators.SetValidatorConfig(r.Context(), id, c); err != nil {
		e := emi.AsError(err)
		if e.Kind != emi.KindInvalid {
			p.frame.RenderError(w, r, err)
			return
		}
		st := &validatorState{cfg: c, notes: c.Notes, errs: map[string]string{}}
		inputs := map[string]bool{}
		for _, g := range validatorGroups(nil) {
			for _, in := range g.Inputs {
				inputs[in.Name] = true
			}
		}
		for _, f := range e.Fields {
			if inputs[f.Field] {
				if prev, ok := st.errs[f.Field]; ok {
					st.errs[f.Field] = prev + "; " + f.Message
				} else {
					st.errs[f.Field] = f.Message
				}
				continue
			}
			st.general = append(st.general, f.Field+": "+f.Message)
		}
		p.frame.Flash(r.Context(), "bad", "The validator configuration was not saved: "+frame.Message(e))
		p.renderPartnerPage(w, r, http.StatusUnprocessableEntity, id, "", nil, st)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Validator configuration saved. It applies to the partner's next requests.")
	frame.Redirect(w, r, "/backoffice/partners/"+id+"#validator-config")
}

// validatorRemove (POST /partners/{id}/validator-config/remove) removes the
// configuration: the partner's application_create answers 11008 until one
// is saved again. A confirmed button, nothing typed: a refusal is a flash
// (a refused save keeps what was typed: validatorSave).
func (p *Pages) validatorRemove(w http.ResponseWriter, r *http.Request) {
	id := frame.Param(r, "id")
	if err := p.validators.SetValidatorConfig(r.Context(), id, nil); err != nil {
		if emi.AsError(err).Kind == emi.KindNotFound {
			p.frame.RenderError(w, r, err) // the service says the partner is unknown
			return
		}
		p.frame.FlashError(w, r, err, "/backoffice/partners/"+id)
		return
	}
	p.frame.Flash(r.Context(), "ok", "Validator configuration removed: the partner's application_create answers 11008 until one is saved.")
	frame.Redirect(w, r, "/backoffice/partners/"+id+"#validator-config")
}

// jsonFields lists the JSON names of a struct's fields, embedded structs
// followed, in declaration order: the names a configuration may use (the
// rule the service applies).
func jsonFields(v any) []string {
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	walk(reflect.TypeOf(v))
	return out
}
