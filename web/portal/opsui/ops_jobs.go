package opsui

import (
	"net/http"
	"strconv"
	"strings"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/views/components"
	"emi/views/opsview"
)

// jobsPage (GET /jobs) shows the job queue: counts by state, then dead and
// stuck jobs first (a running job past its lease is stuck: its worker
// died). The list (at most 100 jobs) sorts by its columns in Go; its usual
// order, dead and stuck first, is no column's, so no header is marked
// sorted until one is chosen.
func (p *Records) jobsPage(w http.ResponseWriter, r *http.Request) {
	sort := frame.ReadSort(r, "", "", "id", "kind", "state", "attempt", "run_at", "updated")
	state := r.URL.Query().Get("state")
	counts, list, err := p.jobs.Overview(r.Context(), state, 100)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	var tiles []components.Tile
	for _, st := range emi.JobStates() {
		tiles = append(tiles, components.Tile{Label: "Jobs " + string(st), Value: strconv.FormatInt(counts[string(st)], 10),
			Href: "/backoffice/jobs?state=" + string(st)})
	}
	now := p.frame.Now()
	rows := make([]opsview.JobRow, len(list))
	for i, j := range list {
		row := opsview.JobRow{ID: strconv.FormatInt(j.ID, 10), Kind: j.Kind, State: string(j.State),
			Attempt: strconv.Itoa(j.Attempt) + " of " + strconv.Itoa(j.MaxAttempts), RunAt: frame.FmtTime(j.RunAt),
			Updated: frame.FmtTime(j.UpdatedAt), LastError: frame.FirstLine(j.LastError)}
		switch {
		case j.State == emi.JobDead:
			row.StateTone = "bad"
		case j.State == emi.JobRunning && !j.LockedUntil.IsZero() && j.LockedUntil.Before(now):
			row.State, row.StateTone = "stuck", "warn"
		case j.State == emi.JobSucceeded:
			row.StateTone = "ok"
		}
		rows[i] = row
	}
	frame.SortRows(r, rows, sort, map[string]func(opsview.JobRow) string{
		"id":      func(j opsview.JobRow) string { return frame.PadNumber(j.ID) },
		"kind":    func(j opsview.JobRow) string { return j.Kind },
		"state":   func(j opsview.JobRow) string { return j.State },
		"attempt": func(j opsview.JobRow) string { return frame.PadNumber(strings.SplitN(j.Attempt, " ", 2)[0]) },
		"run_at":  func(j opsview.JobRow) string { return j.RunAt },
		"updated": func(j opsview.JobRow) string { return j.Updated },
	}, func(j opsview.JobRow) string { return frame.PadNumber(j.ID) })
	p.frame.Render(w, r, sort.Status(), "Background jobs", opsview.Jobs(tiles, state, rows, sort.View(r)))
}
