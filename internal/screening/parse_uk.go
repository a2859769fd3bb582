package screening

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// The UK consolidated list of financial sanctions targets (OFSI,
// ConList.csv, "2022 format"): a first line "Last Updated,DD/MM/YYYY", a
// header row, then one row per name of a target: "Name 6" is the surname,
// "Name 1" to "Name 5" the other names; rows of one target share a
// "Group ID"; "Alias Type" is "Primary name", "AKA", "Primary name
// variation"...; "Group Type" is Individual, Entity or Ship; DOB is
// DD/MM/YYYY with 00 for an unknown day or month.
//
// parseUK returns the entries (ID: the Group ID), the Last Updated date
// (YYYY-MM-DD) and the number of nationality values that did not map to a
// country code. Columns are found by their header names.
func parseUK(data []byte) (entries []Entry, published string, unmapped int, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	first, err := r.Read()
	if err != nil {
		return nil, "", 0, fmt.Errorf("uk csv: %w", err)
	}
	header := first
	if len(first) >= 2 && strings.EqualFold(strings.TrimSpace(first[0]), "Last Updated") {
		published = ukDate(first[1], false)
		if header, err = r.Read(); err != nil {
			return nil, "", 0, fmt.Errorf("uk csv header: %w", err)
		}
	}
	col := make(map[string]int, len(header))
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, need := range []string{"name 6", "group id", "group type"} {
		if _, ok := col[need]; !ok {
			return nil, "", 0, fmt.Errorf("uk csv: no %q column", need)
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	index := make(map[string]int)
	for line := 3; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", 0, fmt.Errorf("uk csv: %w", err)
		}
		id := get(rec, "group id")
		if id == "" {
			return nil, "", 0, fmt.Errorf("uk csv line %d: no Group ID", line)
		}
		var given []string
		for k := 1; k <= 5; k++ {
			if n := get(rec, "name "+strconv.Itoa(k)); n != "" {
				given = append(given, n)
			}
		}
		sur := cleanSpace(get(rec, "name 6"))
		name := sur
		if g := cleanSpace(strings.Join(given, " ")); g != "" {
			if name == "" {
				name = g
			} else {
				name += ", " + g
			}
		}
		i, ok := index[id]
		if !ok {
			e := Entry{List: ListUK, ID: id}
			switch strings.ToLower(get(rec, "group type")) {
			case "individual":
				e.Type = TypeIndividual
			case "ship":
				e.Type = TypeVessel
			default:
				e.Type = TypeEntity
			}
			i = len(entries)
			index[id] = i
			entries = append(entries, e)
		}
		e := &entries[i]
		if e.Type != TypeIndividual {
			name = cleanSpace(strings.Join(append(given, sur), " "))
		}
		if name != "" {
			primary := strings.EqualFold(get(rec, "alias type"), "Primary name")
			switch {
			case e.Name == "":
				e.Name = name
			case primary && e.Name != name:
				e.Aliases = append(e.Aliases, e.Name)
				e.Name = name
			case name != e.Name:
				e.Aliases = append(e.Aliases, name)
			}
		}
		if d := ukDate(get(rec, "dob"), true); d != "" {
			e.Birthdates = append(e.Birthdates, d)
		}
		for _, n := range ukNationalities(get(rec, "nationality")) {
			if cc, ok := CountryCode(n); ok {
				e.Nationalities = append(e.Nationalities, cc)
			} else {
				unmapped++
			}
		}
		if p := get(rec, "regime"); p != "" {
			e.Programs = append(e.Programs, p)
		}
	}
	if len(entries) == 0 {
		return nil, "", 0, errors.New("uk csv: no records")
	}
	for i := range entries {
		e := &entries[i]
		if e.Name == "" {
			return nil, "", 0, fmt.Errorf("uk csv: group %s has no name", e.ID)
		}
		e.Aliases = uniqueStrings(e.Aliases)
		e.Birthdates = uniqueStrings(e.Birthdates)
		e.Nationalities = uniqueStrings(e.Nationalities)
		e.Programs = uniqueStrings(e.Programs)
		e.Fingerprint = fingerprint(e)
	}
	return entries, published, unmapped, nil
}

// ukDate converts DD/MM/YYYY (00 for an unknown day or month) to the
// Entry.Birthdates form; partial allows the 00 parts.
func ukDate(s string, partial bool) string {
	p := strings.Split(strings.TrimSpace(s), "/")
	if len(p) != 3 {
		return ""
	}
	y, ok := year(p[2])
	if !ok {
		return ""
	}
	m, err1 := strconv.Atoi(p[1])
	d, err2 := strconv.Atoi(p[0])
	if err1 != nil || err2 != nil || m < 0 || m > 12 || d < 0 || d > 31 {
		return ""
	}
	if !partial && (m == 0 || d == 0) {
		return ""
	}
	if m == 0 {
		d = 0
	}
	return formatDOB(y, m, d, false)
}

var ukEnum = regexp.MustCompile(`\(\d+\)`)

// ukNationalities splits "(1) Iraq (2) Syria" or "Iraq".
func ukNationalities(s string) []string {
	var out []string
	for _, p := range ukEnum.Split(s, -1) {
		if p = strings.Trim(strings.TrimSpace(p), ",;."); p != "" {
			out = append(out, p)
		}
	}
	return out
}
