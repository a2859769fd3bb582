package peopleui

import (
	"net/http"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/people"
	"emi/views/peopleview"
)

// watchCategories are the categories of the watch list
// (emi.WatchlistEntry's rule).
var watchCategories = []string{"fraud", "corruption", "money-laundering", "terrorism", "organised-crime",
	"sanctions-evasion", "tax-crime", "other"}

// watchlistPage (GET /watchlist) lists the adverse-media watch list, with the
// add form for compliance.
func (p *Pages) watchlistPage(w http.ResponseWriter, r *http.Request) {
	p.renderWatchlist(w, r, http.StatusOK, peopleview.WatchlistForm{}, nil, nil)
}

func (p *Pages) renderWatchlist(w http.ResponseWriter, r *http.Request, status int, form peopleview.WatchlistForm, errs map[string]string, general []string) {
	list, err := p.watchlist.List(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := peopleview.WatchlistView{Categories: watchCategories, CanEdit: frame.CanDo(r, people.ReviewAML), Form: form, Errors: errs, General: general}
	staff := p.frame.StaffNames(r)
	for _, e := range list {
		v.Rows = append(v.Rows, peopleview.WatchlistRow{ID: e.ID, Name: e.Name, Category: e.Category, Note: e.Note,
			Source: e.Source, SourceHref: frame.WebURL(e.Source), AddedBy: frame.Who(r, e.CreatedBy, staff[e.CreatedBy]), Added: frame.FmtTime(e.CreatedAt)})
	}
	p.frame.RenderPrivate(w, r, status, "Adverse-media watch list", peopleview.Watchlist(v))
}

// watchlistAdd (POST /watchlist) records a name; the service validates and
// audits it.
func (p *Pages) watchlistAdd(w http.ResponseWriter, r *http.Request) {
	form := peopleview.WatchlistForm{Name: strings.TrimSpace(r.PostFormValue("name")), Category: r.PostFormValue("category"),
		Note: strings.TrimSpace(r.PostFormValue("note")), Source: strings.TrimSpace(r.PostFormValue("source"))}
	e, err := p.watchlist.Add(r.Context(), emi.WatchlistEntry{Name: form.Name, Category: form.Category, Note: form.Note, Source: form.Source})
	if err != nil {
		if emi.AsError(err).Kind != emi.KindInvalid {
			p.frame.RenderError(w, r, err)
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
			general = append(general, frame.Message(emi.AsError(err)))
		}
		p.frame.Flash(r.Context(), "bad", "The name was not added: please correct the entry.")
		p.renderWatchlist(w, r, http.StatusUnprocessableEntity, form, errs, general)
		return
	}
	p.frame.Flash(r.Context(), "ok", "“"+e.Name+"” is on the watch list. Applications checked from now on are compared with it.")
	frame.Redirect(w, r, "/backoffice/watchlist")
}

// watchlistRemove (POST /watchlist/{entry}/remove) takes a name off the
// list.
func (p *Pages) watchlistRemove(w http.ResponseWriter, r *http.Request) {
	if err := p.watchlist.Remove(r.Context(), frame.Param(r, "entry")); err != nil {
		if emi.AsError(err).Kind == emi.KindInvalid {
			p.frame.Flash(r.Context(), "bad", "That name is not on the watch list (it may have been removed already).")
			frame.Redirect(w, r, "/backoffice/watchlist")
			return
		}
		p.frame.RenderError(w, r, err)
		return
	}
	p.frame.Flash(r.Context(), "ok", "The name was removed from the watch list.")
	frame.Redirect(w, r, "/backoffice/watchlist")
}
