package onboardingui

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"emi/web/portal/frame"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
	"emi/views/components"
	"emi/views/onboardingview"
)

// The review dashboard: tiles and three charts drawn on the server as SVG
// (no chart library, no script), each with a table of its figures as the
// text alternative.

// reviewMetrics (GET /review/metrics).
func (p *Pages) reviewMetrics(w http.ResponseWriter, r *http.Request) {
	m, err := p.review.Metrics(r.Context())
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	v := onboardingview.MetricsView{QueueHref: "/backoffice/review", DecisionsCSV: "/backoffice/review/decisions.csv"}
	for _, t := range queueTabs {
		href := "/backoffice/review"
		if t.status != emi.AppInReview {
			href += "?tab=" + string(t.status)
		}
		v.Tiles = append(v.Tiles, components.Tile{Label: t.label, Value: strconv.FormatInt(m.Counts[t.status], 10), Href: href})
	}
	v.Tiles = append(v.Tiles,
		components.Tile{Label: "SLA breaches", Value: strconv.FormatInt(m.SLABreaches, 10), Href: "/backoffice/review?near_sla=1"},
		components.Tile{Label: "Median time to decision (30 days)", Value: fmtDuration(m.MedianToDecision)})
	v.Ageing = ageingChart(m.Ageing)
	v.PerDay = decisionsChart(m.DecisionsPerDay)
	v.PerUnderwriter = underwriterChart(m.PerUnderwriter)
	r = frame.WithNavCount(r, "/backoffice/review", m.Counts[emi.AppInReview])
	p.frame.Render(w, r, http.StatusOK, "Review metrics", onboardingview.Metrics(v))
}

// fmtDuration writes a duration for people: "—" for none, minutes, hours
// and minutes, or days and hours.
func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Minute:
		return "under 1 min"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d d %d h", int(d.Hours())/24, int(d.Hours())%24)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceScale returns the top of a value axis with four equal integer steps
// of 1, 2 or 5 times a power of ten, at least n.
func niceScale(n int64) (top, step int64) {
	for mag := int64(1); ; mag *= 10 {
		for _, s := range []int64{1, 2, 5} {
			if 4*s*mag >= n {
				return 4 * s * mag, s * mag
			}
		}
	}
}

// yAxis adds the grid lines and labels of a vertical value axis.
func yAxis(c *onboardingview.Chart, left, right, top, plotH float64, maxV, step int64) {
	for v := int64(0); v <= maxV; v += step {
		y := top + plotH - plotH*float64(v)/float64(maxV)
		c.Lines = append(c.Lines, onboardingview.ChartLine{X1: f1(left), Y1: f1(y), X2: f1(float64(c.Width) - right), Y2: f1(y)})
		c.Texts = append(c.Texts, onboardingview.ChartText{X: f1(left - 6), Y: f1(y + 4), Text: strconv.FormatInt(v, 10), Anchor: "end", Class: "axis"})
	}
}

// ageingChart is the histogram of how long the applications in review
// have waited.
func ageingChart(buckets []onboarding.Bucket) *onboardingview.Chart {
	c := &onboardingview.Chart{ID: "chart-ageing", Title: "Ageing of the applications in review",
		Width: 640, Height: 250, Head: []string{"Waiting", "Applications"}}
	const left, right, top, bottom = 48.0, 12.0, 14.0, 40.0
	plotW, plotH := float64(c.Width)-left-right, float64(c.Height)-top-bottom
	var most, total int64
	for _, b := range buckets {
		most, total = max(most, b.Count), total+b.Count
		c.Rows = append(c.Rows, []string{b.Label, strconv.FormatInt(b.Count, 10)})
	}
	c.Desc = fmt.Sprintf("Bar chart: %d applications in review by time waited, in %d bands.", total, len(buckets))
	top4, step := niceScale(most)
	yAxis(c, left, right, top, plotH, top4, step)
	slot := plotW / float64(max(len(buckets), 1))
	for i, b := range buckets {
		h := plotH * float64(b.Count) / float64(top4)
		x := left + float64(i)*slot + slot*0.2
		c.Bars = append(c.Bars, onboardingview.ChartBar{X: f1(x), Y: f1(top + plotH - h), W: f1(slot * 0.6), H: f1(h), Class: "bar-age",
			Label: fmt.Sprintf("%s: %d", b.Label, b.Count)})
		c.Texts = append(c.Texts,
			onboardingview.ChartText{X: f1(x + slot*0.3), Y: f1(top + plotH - h - 4), Text: strconv.FormatInt(b.Count, 10), Anchor: "middle", Class: "value"},
			onboardingview.ChartText{X: f1(x + slot*0.3), Y: f1(float64(c.Height) - bottom + 18), Text: b.Label, Anchor: "middle", Class: "axis"})
	}
	return c
}

// decisionsChart stacks each day's approvals, rejections and information
// requests.
func decisionsChart(days []onboarding.DayCount) *onboardingview.Chart {
	c := &onboardingview.Chart{ID: "chart-decisions", Title: "Decisions per day, last 30 days",
		Width: 760, Height: 270, Head: []string{"Day", "Approved", "Rejected", "Information requested"},
		Legend: []onboardingview.LegendItem{{Class: "bar-approved", Label: "approved"}, {Class: "bar-rejected", Label: "rejected"},
			{Class: "bar-info", Label: "information requested"}}}
	const left, right, top, bottom = 40.0, 10.0, 12.0, 40.0
	plotW, plotH := float64(c.Width)-left-right, float64(c.Height)-top-bottom
	var most, a, rj, info int64
	for _, d := range days {
		most = max(most, d.Approved+d.Rejected+d.InfoRequested)
		a, rj, info = a+d.Approved, rj+d.Rejected, info+d.InfoRequested
		c.Rows = append(c.Rows, []string{d.Day.UTC().Format("2006-01-02"), strconv.FormatInt(d.Approved, 10),
			strconv.FormatInt(d.Rejected, 10), strconv.FormatInt(d.InfoRequested, 10)})
	}
	c.Desc = fmt.Sprintf("Stacked bar chart over %d days: %d approved, %d rejected, %d information requests.", len(days), a, rj, info)
	top4, step := niceScale(most)
	yAxis(c, left, right, top, plotH, top4, step)
	slot := plotW / float64(max(len(days), 1))
	for i, d := range days {
		x := left + float64(i)*slot + slot*0.15
		y := top + plotH
		day := d.Day.UTC().Format("2 Jan")
		for _, seg := range []struct {
			n            int64
			class, label string
		}{{d.Approved, "bar-approved", "approved"}, {d.Rejected, "bar-rejected", "rejected"}, {d.InfoRequested, "bar-info", "information requested"}} {
			if seg.n == 0 {
				continue
			}
			h := plotH * float64(seg.n) / float64(top4)
			y -= h
			c.Bars = append(c.Bars, onboardingview.ChartBar{X: f1(x), Y: f1(y), W: f1(slot * 0.7), H: f1(h), Class: seg.class,
				Label: fmt.Sprintf("%s: %d %s", day, seg.n, seg.label)})
		}
		if i%5 == 0 || i == len(days)-1 {
			c.Texts = append(c.Texts, onboardingview.ChartText{X: f1(x + slot*0.35), Y: f1(float64(c.Height) - bottom + 18), Text: day,
				Anchor: "middle", Class: "axis"})
		}
	}
	return c
}

// underwriterChart is a horizontal bar per staff user: their decisions of
// the last 30 days.
func underwriterChart(per []onboarding.NamedCount) *onboardingview.Chart {
	c := &onboardingview.Chart{ID: "chart-underwriters", Title: "Decisions per underwriter, last 30 days",
		Width: 640, Head: []string{"Underwriter", "Decisions"}}
	const left, right, top, rowH = 190.0, 50.0, 8.0, 28.0
	c.Height = int(top*2 + rowH*float64(max(len(per), 1)))
	plotW := float64(c.Width) - left - right
	var most, total int64
	for _, n := range per {
		most, total = max(most, n.Count), total+n.Count
		c.Rows = append(c.Rows, []string{n.Name, strconv.FormatInt(n.Count, 10)})
	}
	c.Desc = fmt.Sprintf("Horizontal bar chart: %d decisions by %d staff users.", total, len(per))
	most = max(most, 1)
	for i, n := range per {
		y := top + float64(i)*rowH
		wdt := plotW * float64(n.Count) / float64(most)
		name := n.Name
		if utf8.RuneCountInString(name) > 26 {
			name = string([]rune(name)[:25]) + "…"
		}
		c.Bars = append(c.Bars, onboardingview.ChartBar{X: f1(left), Y: f1(y + 5), W: f1(wdt), H: f1(rowH - 10), Class: "bar-staff",
			Label: fmt.Sprintf("%s: %d", n.Name, n.Count)})
		c.Texts = append(c.Texts,
			onboardingview.ChartText{X: f1(left - 8), Y: f1(y + rowH/2 + 4), Text: name, Anchor: "end", Class: "axis"},
			onboardingview.ChartText{X: f1(left + wdt + 6), Y: f1(y + rowH/2 + 4), Text: strconv.FormatInt(n.Count, 10), Anchor: "start", Class: "value"})
	}
	if len(per) == 0 {
		c.Empty = "No decisions in the last 30 days."
	}
	return c
}

// reviewDecisionsCSV (GET /review/decisions.csv) exports the underwriters'
// decisions of the last 365 days (or ?days=N, 1..3650), newest first.
func (p *Pages) reviewDecisionsCSV(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	days := 365
	if n, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil && n >= 1 && n <= 3650 {
		days = n
	}
	now := p.frame.Now().UTC()
	ds, err := p.review.Decisions(ctx, now.AddDate(0, 0, -days), now.Add(time.Minute), 0)
	if err != nil {
		p.frame.RenderError(w, r, err)
		return
	}
	slices.Reverse(ds)
	out := [][]string{{"decided_at_utc", "application", "action", "reason_code", "text", "staff_id", "staff"}}
	for _, d := range ds {
		out = append(out, []string{frame.FmtTime(d.At), d.Application, d.Action, d.ReasonCode, d.Text, d.StaffID, d.StaffName})
	}
	frame.WriteCSV(w, "review-decisions-"+p.frame.Now().UTC().Format("20060102-1504")+".csv", out)
}
