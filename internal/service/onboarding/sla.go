package onboarding

import "time"

// BusinessCalendar says when the review clock runs: working days from
// StartHour to EndHour in Location. The SLA of an application counts only
// those hours.
type BusinessCalendar struct {
	Location           *time.Location
	StartHour, EndHour int
	// Weekend days do not count.
	Weekend []time.Weekday
}

// DefaultCalendar is Monday to Friday, 09:00 to 17:00, Europe/Sofia (the
// institution's home), falling back to UTC when the zone database is
// missing. Public holidays are not modelled: a known gap.
func DefaultCalendar() BusinessCalendar {
	loc, err := time.LoadLocation("Europe/Sofia")
	if err != nil {
		loc = time.UTC
	}
	return BusinessCalendar{Location: loc, StartHour: 9, EndHour: 17, Weekend: []time.Weekday{time.Saturday, time.Sunday}}
}

func (c BusinessCalendar) working(d time.Time) bool {
	for _, w := range c.Weekend {
		if d.Weekday() == w {
			return false
		}
	}
	return true
}

// dayBounds returns the working window of t's day.
func (c BusinessCalendar) dayBounds(t time.Time) (time.Time, time.Time) {
	y, m, d := t.Date()
	return time.Date(y, m, d, c.StartHour, 0, 0, 0, c.Location), time.Date(y, m, d, c.EndHour, 0, 0, 0, c.Location)
}

// Add returns the moment d of business time after start.
func (c BusinessCalendar) Add(start time.Time, d time.Duration) time.Time {
	t := start.In(c.Location)
	for i := 0; i < 3660; i++ { // ten years of days at most
		open, close := c.dayBounds(t)
		if c.working(t) && t.Before(close) {
			if t.Before(open) {
				t = open
			}
			if left := close.Sub(t); d <= left {
				return t.Add(d)
			} else {
				d -= left
			}
		}
		y, m, dd := t.Date()
		t = time.Date(y, m, dd+1, 0, 0, 0, 0, c.Location)
	}
	return t
}

// Between returns the business time from a to b (0 when b is before a).
func (c BusinessCalendar) Between(a, b time.Time) time.Duration {
	if !b.After(a) {
		return 0
	}
	var total time.Duration
	t := a.In(c.Location)
	b = b.In(c.Location)
	for i := 0; i < 3660 && t.Before(b); i++ {
		open, close := c.dayBounds(t)
		if c.working(t) {
			from, to := maxTime(t, open), minTime(close, b)
			if to.After(from) {
				total += to.Sub(from)
			}
		}
		y, m, dd := t.Date()
		t = time.Date(y, m, dd+1, 0, 0, 0, 0, c.Location)
	}
	return total
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
