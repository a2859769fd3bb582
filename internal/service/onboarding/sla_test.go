package onboarding_test

import (
	"emi/internal/service/onboarding"
	"testing"
	"time"
)

func TestBusinessCalendar(t *testing.T) {
	c := onboarding.BusinessCalendar{Location: time.UTC, StartHour: 9, EndHour: 17, Weekend: []time.Weekday{time.Saturday, time.Sunday}}
	at := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// 2026-11-20 is a Friday.
	for _, tc := range []struct {
		start string
		d     time.Duration
		want  string
	}{
		{"2026-11-16 10:00", 2 * time.Hour, "2026-11-16 12:00"},
		{"2026-11-16 16:00", 2 * time.Hour, "2026-11-17 10:00"},
		{"2026-11-16 07:00", time.Hour, "2026-11-16 10:00"},
		{"2026-11-16 20:00", time.Hour, "2026-11-17 10:00"},
		{"2026-11-20 15:00", 24 * time.Hour, "2026-11-25 15:00"},
		{"2026-11-21 12:00", 8 * time.Hour, "2026-11-23 17:00"},
		{"2026-11-16 09:00", 0, "2026-11-16 09:00"},
	} {
		got := c.Add(at(tc.start), tc.d)
		if !got.Equal(at(tc.want)) {
			t.Errorf("Add(%s, %s) = %s, want %s", tc.start, tc.d, got.Format("2006-01-02 15:04 Mon"), tc.want)
		}
		if b := c.Between(at(tc.start), got); tc.d > 0 && b != tc.d {
			t.Errorf("Between(%s, %s) = %s, want %s", tc.start, got, b, tc.d)
		}
	}
	if b := c.Between(at("2026-11-20 16:00"), at("2026-11-23 10:00")); b != 2*time.Hour {
		t.Errorf("over a weekend: %s", b)
	}
	if b := c.Between(at("2026-11-23 10:00"), at("2026-11-20 16:00")); b != 0 {
		t.Errorf("backwards: %s", b)
	}
}
