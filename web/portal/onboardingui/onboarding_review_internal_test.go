package onboardingui

import (
	"net/url"
	"testing"
	"time"

	"emi/internal/emi"
	"emi/internal/service/onboarding"
)

func TestSLAState(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	for _, c := range []struct {
		status     emi.ApplicationStatus
		due        *time.Time
		label, ton string
	}{
		{emi.AppInReview, at(5 * time.Hour), "on time", "ok"},
		{emi.AppInReview, at(4*time.Hour - time.Second), "near breach", "warn"},
		{emi.AppInReview, at(0), "breached", "bad"},
		{emi.AppInReview, at(-time.Hour), "breached", "bad"},
		{emi.AppInfoRequested, nil, "paused", ""},
		{emi.AppChecking, nil, "", ""},
	} {
		if l, tone := slaState(c.status, c.due, now); l != c.label || tone != c.ton {
			t.Errorf("%s %v: %q %q, want %q %q", c.status, c.due, l, tone, c.label, c.ton)
		}
	}
}

func TestNiceScale(t *testing.T) {
	for n, want := range map[int64][2]int64{0: {4, 1}, 3: {4, 1}, 5: {8, 2}, 17: {20, 5}, 40: {40, 10}, 41: {80, 20}, 1234: {2000, 500}} {
		if top, step := niceScale(n); top != want[0] || step != want[1] || top < n {
			t.Errorf("niceScale(%d) = %d, %d, want %v", n, top, step, want)
		}
	}
}

func TestNoteSegmentsMarkMentions(t *testing.T) {
	s := noteSegments("ask @ana@emi.example and @bo@emi.example.")
	if len(s) != 5 || !s[1].Mention || s[1].Text != "@ana@emi.example" || s[2].Text != " and " || !s[3].Mention || s[4].Text != "." {
		t.Fatalf("segments %+v", s)
	}
	if s := noteSegments("no mention, just a@b"); len(s) != 1 || s[0].Mention {
		t.Fatalf("segments %+v", s)
	}
}

func TestReadQueueKeepsKnownValuesOnly(t *testing.T) {
	q, _ := url.ParseQuery("tab=checking&partner=x&risk=High&product=pos&age=24h&assignee=me&sort=risk&hit=1&near_sla=1&after=5|1|x")
	qp := readQueue(q)
	f := qp.filter()
	if f.Tab != emi.AppChecking || f.PartnerID != "" || f.Risk != "High" || f.Product != "pos" || f.AgeOver != 24*time.Hour ||
		f.Assignee != "me" || f.Sort != "risk" || !f.HasSanctionsHit || !f.NearSLA || f.After != "5|1|x" || f.Limit != queuePageSize {
		t.Fatalf("filter %+v", f)
	}
	if got := qp.values().Encode(); got != "age=24h&assignee=me&hit=1&near_sla=1&product=pos&risk=High&sort=risk&tab=checking" {
		t.Fatalf("values %s", got)
	}
	q, _ = url.ParseQuery("tab=approved&risk=Extreme&product=cars&age=1y&assignee=bob&sort=name")
	if got := readQueue(q).values().Encode(); got != "" {
		t.Fatalf("unknown values kept: %s", got)
	}
}

func TestChartsHaveTextAlternatives(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	c := decisionsChart([]onboarding.DayCount{{Day: day, Approved: 3, Rejected: 1}, {Day: day.AddDate(0, 0, 1), InfoRequested: 2}})
	if len(c.Bars) != 3 || len(c.Rows) != 2 || c.Rows[0][1] != "3" || c.Desc == "" || len(c.Legend) != 3 {
		t.Fatalf("decisions chart %+v", c)
	}
	a := ageingChart([]onboarding.Bucket{{Label: "< 4 h", Count: 7}, {Label: "> 7 d", Count: 0}})
	if len(a.Bars) != 2 || a.Bars[1].H != "0.0" || a.Rows[0][1] != "7" {
		t.Fatalf("ageing chart %+v", a)
	}
	if u := underwriterChart(nil); u.Empty == "" {
		t.Fatal("an empty per-underwriter chart has no message")
	}
	if got := fmtDuration(26*time.Hour + 5*time.Minute); got != "26 h 5 min" {
		t.Fatalf("fmtDuration %q", got)
	}
}
