package peopleui

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/people"
	"emi/views/peopleview"
	"emi/web/httpx"
)

// sanctionsUpdateTimeout keeps "Update now" inside the server's write
// timeout (60 s); a slower download is reported as failed, and the loaded
// lists stay in use.
const sanctionsUpdateTimeout = 45 * time.Second

// sanctions (GET /sanctions) shows the loaded sanctions lists, the
// screening threshold and the latest update attempts.
func (p *Pages) sanctions(w http.ResponseWriter, r *http.Request) {
	st, err := p.aml.Status(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := peopleview.SanctionsView{Loaded: st.Loaded, Version: st.Version, AutoUpdate: st.AutoUpdate, Sources: st.Sources,
		CanUpdate: p.updateSanctions != nil && frame.CanDo(r, people.UpdateSanctions)}
	if st.Loaded {
		v.Threshold = strconv.FormatFloat(st.Threshold, 'f', 2, 64)
	}
	for _, l := range st.Lists {
		sum := l.SHA256
		if len(sum) > 12 {
			sum = sum[:12]
		}
		v.Lists = append(v.Lists, peopleview.ListRow{Name: l.Name, Source: l.Source, Published: l.Published,
			Entries: strconv.Itoa(l.Entries), Aliases: strconv.Itoa(l.Aliases), SHA: sum, LoadedAt: frame.FmtTime(l.LoadedAt)})
	}
	for _, u := range st.Updates {
		v.Updates = append(v.Updates, peopleview.UpdateRow{At: frame.FmtTime(u.At), Instance: u.Instance, OK: u.OK, Error: frame.FirstLine(u.Error),
			Version: u.Version, Changed: strconv.Itoa(u.Changed)})
	}
	p.frame.Render(w, r, http.StatusOK, "Sanctions lists", peopleview.Sanctions(v))
}

// sanctionsUpdate (POST /sanctions/update) downloads the official lists now.
// A failure is a message on the page (the attempt and its error are in the
// table), never a 500: the loaded lists stay in use.
func (p *Pages) sanctionsUpdate(w http.ResponseWriter, r *http.Request) {
	if p.updateSanctions == nil {
		p.frame.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), sanctionsUpdateTimeout)
	defer cancel()
	if err := p.updateSanctions(ctx); err != nil {
		e := emi.AsError(err)
		if e.Kind == emi.KindForbidden {
			p.frame.RenderError(w, r, err)
			return
		}
		httpx.Fields(r.Context()).SetError(err)
		p.frame.Flash(r.Context(), "bad", frame.Message(emi.ErrScreeningUpdate))
		frame.Redirect(w, r, "/backoffice/sanctions")
		return
	}
	p.frame.Flash(r.Context(), "ok", "The sanctions lists were updated.")
	frame.Redirect(w, r, "/backoffice/sanctions")
}
