package portal

import (
	"net/http"
	"strings"

	"emi/internal/emi"
	"emi/internal/service/people"
	"emi/views/pages"
)

// watchCategories are the categories of the watch list
// (emi.WatchlistEntry's rule).
var watchCategories = []string{"fraud", "corruption", "money-laundering", "terrorism", "organised-crime",
	"sanctions-evasion", "tax-crime", "other"}

// watchlist (GET /watchlist) lists the adverse-media watch list, with the
// add form for compliance.
func (p *Portal) watchlist(w http.ResponseWriter, r *http.Request) {
	p.renderWatchlist(w, r, http.StatusOK, pages.WatchlistForm{}, nil, nil)
}

func (p *Portal) renderWatchlist(w http.ResponseWriter, r *http.Request, status int, form pages.WatchlistForm, errs map[string]string, general []string) {
	list, err := p.d.Watchlist.List(r.Context())
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := pages.WatchlistView{Categories: watchCategories, CanEdit: CanDo(r, people.ReviewAML), Form: form, Errors: errs, General: general}
	staff := p.StaffNames(r)
	for _, e := range list {
		v.Rows = append(v.Rows, pages.WatchlistRow{ID: e.ID, Name: e.Name, Category: e.Category, Note: e.Note,
			Source: e.Source, SourceHref: WebURL(e.Source), AddedBy: Who(r, e.CreatedBy, staff[e.CreatedBy]), Added: FmtTime(e.CreatedAt)})
	}
	p.RenderPrivate(w, r, status, "Adverse-media watch list", pages.Watchlist(v))
}

// watchlistAdd (POST /watchlist) records a name; the service validates and
// audits it.
func (p *Portal) watchlistAdd(w http.ResponseWriter, r *http.Request) {
	form := pages.WatchlistForm{Name: strings.TrimSpace(r.PostFormValue("name")), Category: r.PostFormValue("category"),
		Note: strings.TrimSpace(r.PostFormValue("note")), Source: strings.TrimSpace(r.PostFormValue("source"))}
	e, err := p.d.Watchlist.Add(r.Context(), emi.WatchlistEntry{Name: form.Name, Category: form.Category, Note: form.Note, Source: form.Source})
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			p.RenderError(w, r, err)
			return
		}
		// The messages go beside their input when the service names the
		// field; emi.WatchlistEntry has no json tags, so today it names
		// none and the messages are listed above the form.
		errs, general := map[string]string{}, []string{}
		for _, f := range emi.AsError(err).Fields {
			name := strings.ToLower(f.Field)
			switch {
			case name == "name" || name == "category" || name == "note" || name == "source":
				if _, dup := errs[name]; !dup {
					errs[name] = f.Message
				}
			case f.Field == "":
				general = append(general, f.Message)
			default:
				general = append(general, f.Field+": "+f.Message)
			}
		}
		if len(errs) == 0 && len(general) == 0 {
			general = append(general, Message(emi.AsError(err)))
		}
		p.Flash(r.Context(), "bad", "The name was not added: please correct the entry.")
		p.renderWatchlist(w, r, http.StatusUnprocessableEntity, form, errs, general)
		return
	}
	p.Flash(r.Context(), "ok", "“"+e.Name+"” is on the watch list. Applications checked from now on are compared with it.")
	Redirect(w, r, "/backoffice/watchlist")
}

// watchlistRemove (POST /watchlist/{entry}/remove) takes a name off the
// list.
func (p *Portal) watchlistRemove(w http.ResponseWriter, r *http.Request) {
	if err := p.d.Watchlist.Remove(r.Context(), Param(r, "entry")); err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			p.Flash(r.Context(), "bad", "That name is not on the watch list (it may have been removed already).")
			Redirect(w, r, "/backoffice/watchlist")
			return
		}
		p.RenderError(w, r, err)
		return
	}
	p.Flash(r.Context(), "ok", "The name was removed from the watch list.")
	Redirect(w, r, "/backoffice/watchlist")
}
