package screening

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ofacEmpty is OFAC's marker for an empty field in the legacy CSV files.
const ofacEmpty = "-0-"

func ofacField(s string) string {
	s = strings.TrimSpace(s)
	if s == ofacEmpty {
		return ""
	}
	return s
}

// ofacCSV returns a CSV reader over data with the DOS end-of-file mark
// (0x1A) removed. OFAC's files are CRLF, no header, fields quoted only when
// needed.
func ofacCSV(data []byte, fields int) *csv.Reader {
	data = bytes.TrimRight(data, "\x1a\r\n \t")
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = fields
	r.ReuseRecord = true
	return r
}

// parseOFAC parses sdn.csv and (optionally, alt may be nil) alt.csv.
// Aliases whose ent_num is not in sdn.csv are skipped (alt.csv may be newer
// than sdn.csv); their number is returned as skipped.
func parseOFAC(sdn, alt []byte) (entries []Entry, skipped, unmapped int, err error) {
	r := ofacCSV(sdn, 12)
	index := make(map[string]int)
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("sdn.csv: %w", err)
		}
		id := ofacField(rec[0])
		if _, err := strconv.Atoi(id); err != nil {
			return nil, 0, 0, fmt.Errorf("sdn.csv line %d: ent_num %q is not a number", line, rec[0])
		}
		name := cleanSpace(ofacField(rec[1]))
		if name == "" {
			return nil, 0, 0, fmt.Errorf("sdn.csv line %d: empty name", line)
		}
		if _, dup := index[id]; dup {
			return nil, 0, 0, fmt.Errorf("sdn.csv line %d: duplicate ent_num %s", line, id)
		}
		e := Entry{List: ListOFAC, ID: id, Name: name}
		switch t := ofacField(rec[2]); t {
		case "":
			e.Type = TypeEntity
		case "individual", "vessel", "aircraft":
			e.Type = t
		default:
			return nil, 0, 0, fmt.Errorf("sdn.csv line %d: unknown SDN_Type %q", line, t)
		}
		e.Programs = ofacPrograms(ofacField(rec[3]))
		unmapped += parseOFACRemarks(&e, ofacField(rec[11]))
		index[id] = len(entries)
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, 0, 0, errors.New("sdn.csv: no records")
	}
	if alt != nil {
		r := ofacCSV(alt, 5)
		for line := 1; ; line++ {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, 0, 0, fmt.Errorf("alt.csv: %w", err)
			}
			i, ok := index[ofacField(rec[0])]
			if !ok {
				skipped++
				continue
			}
			if a := cleanSpace(ofacField(rec[3])); a != "" {
				entries[i].Aliases = append(entries[i].Aliases, a)
			}
		}
	}
	for i := range entries {
		e := &entries[i]
		e.Aliases = uniqueStrings(e.Aliases)
		e.Fingerprint = fingerprint(e)
	}
	return entries, skipped, unmapped, nil
}

// ofacPrograms splits "SDGT] [IRGC" (several programs joined by "] [").
func ofacPrograms(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, "] [") {
		p = strings.Trim(p, "[] ")
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseOFACRemarks extracts DOBs, nationalities/citizenships, weak
// a.k.a.s and (for entities, vessels and aircraft) countries from the free-text remarks ("DOB 30 Aug 1954; alt. DOB 31 Aug
// 1954; POB Kopys, Vitebsk oblast, Belarus; nationality Belarus; ...").
// It returns the number of nationality/citizenship values that did not map
// to a country code.
func parseOFACRemarks(e *Entry, remarks string) (unmapped int) {
	if remarks == "" {
		return 0
	}
	for _, item := range strings.Split(remarks, ";") {
		item = strings.TrimSpace(item)
		item = strings.TrimPrefix(item, "alt. ")
		item = strings.TrimPrefix(item, "lt. ") // one row has "lt. DOB"
		switch {
		case strings.HasPrefix(item, "DOB "):
			if d := parseOFACDOB(strings.TrimSuffix(item[4:], ".")); d != "" {
				e.Birthdates = append(e.Birthdates, d)
			}
		case strings.HasPrefix(item, "nationality "), strings.HasPrefix(item, "citizen "):
			c := item[strings.IndexByte(item, ' ')+1:]
			c = strings.TrimSuffix(strings.TrimSpace(c), ".")
			if cc, ok := CountryCode(c); ok {
				e.Nationalities = append(e.Nationalities, cc)
			} else {
				unmapped++
			}
		case strings.HasPrefix(item, "Registration Country "), strings.HasPrefix(item, "Nationality of Registration "):
			c := strings.TrimPrefix(strings.TrimPrefix(item, "Registration Country "), "Nationality of Registration ")
			if cc, ok := CountryCode(strings.TrimSuffix(strings.TrimSpace(c), ".")); ok {
				e.Countries = append(e.Countries, cc)
			}
		case strings.HasSuffix(strings.TrimSuffix(item, "."), ")") && !strings.HasPrefix(item, "Linked To") &&
			!strings.Contains(item, "Executive Order"):
			// "Tax ID No. 7708129854 (Russia)": the country of an
			// identification number.
			s := strings.TrimSuffix(strings.TrimSuffix(item, "."), ")")
			if k := strings.LastIndexByte(s, '('); k >= 0 {
				if cc, ok := CountryCode(s[k+1:]); ok {
					e.Countries = append(e.Countries, cc)
				}
			}
		case strings.HasPrefix(item, "a.k.a. "), strings.HasPrefix(item, "f.k.a. "), strings.HasPrefix(item, "n.k.a. "):
			a := strings.TrimSpace(item[7:])
			a = strings.TrimSuffix(a, ".")
			a = strings.TrimSuffix(strings.TrimPrefix(a, "'"), "'")
			if a != "" {
				e.WeakAliases = append(e.WeakAliases, a)
			}
		}
	}
	e.Birthdates = uniqueStrings(e.Birthdates)
	e.Nationalities = uniqueStrings(e.Nationalities)
	e.WeakAliases = uniqueStrings(e.WeakAliases)
	if e.Type == TypeIndividual {
		e.Countries = nil // persons are screened on nationality
	}
	e.Countries = uniqueStrings(e.Countries)
	return unmapped
}

var months = map[string]int{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}

// ofacDate parses "08 Jan 1984", "Jan 1984" or "1984".
func ofacDate(s string) (y, m, d int, ok bool) {
	f := strings.Fields(s)
	switch len(f) {
	case 1:
		y, ok = year(f[0])
		return y, 0, 0, ok
	case 2:
		m = months[strings.ToLower(f[0])[:min(3, len(f[0]))]]
		y, ok = year(f[1])
		return y, m, 0, ok && m > 0
	case 3:
		d, err := strconv.Atoi(f[0])
		m = months[strings.ToLower(f[1])[:min(3, len(f[1]))]]
		y, ok = year(f[2])
		return y, m, d, ok && err == nil && m > 0 && d >= 1 && d <= 31
	}
	return 0, 0, 0, false
}

func year(s string) (int, bool) {
	y, err := strconv.Atoi(s)
	return y, err == nil && y >= 1800 && y <= 2200
}

// parseOFACDOB normalizes the text after "DOB " (see Entry.Birthdates).
func parseOFACDOB(s string) string {
	s = strings.TrimSpace(s)
	approx := false
	if rest, ok := strings.CutPrefix(s, "circa "); ok {
		approx, s = true, rest
	}
	if a, b, ok := strings.Cut(s, " to "); ok && strings.TrimSpace(a) != strings.TrimSpace(b) {
		y1, _, _, ok1 := ofacDate(a)
		y2, _, _, ok2 := ofacDate(b)
		if !ok1 || !ok2 {
			return ""
		}
		return yearRange(y1, y2)
	} else if ok {
		s = a
	}
	y, m, d, ok := ofacDate(s)
	if !ok {
		return ""
	}
	return formatDOB(y, m, d, approx)
}

func yearRange(y1, y2 int) string {
	if y1 > y2 {
		y1, y2 = y2, y1
	}
	if y1 == y2 {
		return strconv.Itoa(y1)
	}
	return fmt.Sprintf("%d..%d", y1, y2)
}

func formatDOB(y, m, d int, approx bool) string {
	switch {
	case approx:
		return fmt.Sprintf("~%d", y)
	case d > 0:
		return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
	case m > 0:
		return fmt.Sprintf("%04d-%02d", y, m)
	}
	return strconv.Itoa(y)
}
