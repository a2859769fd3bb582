package screening

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

type unList struct {
	XMLName       xml.Name       `xml:"CONSOLIDATED_LIST"`
	DateGenerated string         `xml:"dateGenerated,attr"`
	Individuals   []unIndividual `xml:"INDIVIDUALS>INDIVIDUAL"`
	Entities      []unEntity     `xml:"ENTITIES>ENTITY"`
}

type unIndividual struct {
	DataID       string    `xml:"DATAID"`
	First        string    `xml:"FIRST_NAME"`
	Second       string    `xml:"SECOND_NAME"`
	Third        string    `xml:"THIRD_NAME"`
	Fourth       string    `xml:"FOURTH_NAME"`
	ListType     string    `xml:"UN_LIST_TYPE"`
	Ref          string    `xml:"REFERENCE_NUMBER"`
	Nationality  []string  `xml:"NATIONALITY>VALUE"`
	Aliases      []unAlias `xml:"INDIVIDUAL_ALIAS"`
	DatesOfBirth []unDOB   `xml:"INDIVIDUAL_DATE_OF_BIRTH"`
}

type unEntity struct {
	DataID   string    `xml:"DATAID"`
	First    string    `xml:"FIRST_NAME"`
	ListType string    `xml:"UN_LIST_TYPE"`
	Ref      string    `xml:"REFERENCE_NUMBER"`
	Aliases  []unAlias `xml:"ENTITY_ALIAS"`
	Address  []struct {
		Country string `xml:"COUNTRY"`
	} `xml:"ENTITY_ADDRESS"`
}

type unAlias struct {
	Quality string `xml:"QUALITY"`
	Name    string `xml:"ALIAS_NAME"`
}

type unDOB struct {
	Type     string `xml:"TYPE_OF_DATE"`
	Date     string `xml:"DATE"`
	Year     string `xml:"YEAR"`
	FromYear string `xml:"FROM_YEAR"`
	ToYear   string `xml:"TO_YEAR"`
}

// unClean trims a UN name and removes the typographic quotes some aliases
// carry (“Chief Kahwa”).
func unClean(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "\u201c\u201d\"")
	return cleanSpace(s)
}

var (
	unEnumerator = regexp.MustCompile(`\s[a-z]\)\s`)
	unBorn       = regexp.MustCompile(`(?i),?\s+born\b.*$`)
)

// splitUNAlias cleans one ALIAS_NAME. Some hold several names ("Qasim
// Soleimani; Qasem Sulaimani", "... b) M. Javad ..."), remarks in brackets
// ("Encep Nurjaman (birth name)", original script) or a birth note
// ("..., born 1 Jan. 1953 ..."). Each name becomes its own alias; brackets
// and birth notes are removed.
func splitUNAlias(s string) []string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	s = unBorn.ReplaceAllString(b.String(), "")
	s = unEnumerator.ReplaceAllString(s, ";")
	var out []string
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimRight(unClean(part), ",. ")
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// parseUN parses the UN consolidated XML. It returns the entries, the
// dateGenerated attribute and the number of nationality values that did not
// map to a country code.
func parseUN(data []byte) (entries []Entry, published string, unmapped int, err error) {
	var l unList
	d := xml.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&l); err != nil {
		return nil, "", 0, fmt.Errorf("un xml: %w", err)
	}
	if len(l.Individuals)+len(l.Entities) == 0 {
		return nil, "", 0, errors.New("un xml: no individuals or entities")
	}
	seen := make(map[string]bool)
	add := func(e Entry) error {
		if e.ID == "" {
			return fmt.Errorf("un xml: entry %q without REFERENCE_NUMBER", e.Name)
		}
		if seen[e.ID] {
			return fmt.Errorf("un xml: duplicate REFERENCE_NUMBER %s", e.ID)
		}
		if e.Name == "" {
			return fmt.Errorf("un xml: %s has no name", e.ID)
		}
		seen[e.ID] = true
		e.Aliases = uniqueStrings(e.Aliases)
		e.Birthdates = uniqueStrings(e.Birthdates)
		e.Nationalities = uniqueStrings(e.Nationalities)
		e.Fingerprint = fingerprint(&e)
		entries = append(entries, e)
		return nil
	}
	for _, in := range l.Individuals {
		var parts []string
		for _, p := range []string{in.First, in.Second, in.Third, in.Fourth} {
			if p = unClean(p); p != "" {
				parts = append(parts, p)
			}
		}
		e := Entry{
			List: ListUN, ID: strings.TrimSpace(in.Ref), Type: TypeIndividual,
			Name: strings.Join(parts, " "),
		}
		if t := strings.TrimSpace(in.ListType); t != "" {
			e.Programs = []string{t}
		}
		for _, a := range in.Aliases {
			e.Aliases = append(e.Aliases, splitUNAlias(a.Name)...)
		}
		for _, dob := range in.DatesOfBirth {
			if s := unDOBString(dob); s != "" {
				e.Birthdates = append(e.Birthdates, s)
			}
		}
		for _, n := range in.Nationality {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			if cc, ok := CountryCode(n); ok {
				e.Nationalities = append(e.Nationalities, cc)
			} else {
				unmapped++
			}
		}
		if err := add(e); err != nil {
			return nil, "", 0, err
		}
	}
	for _, en := range l.Entities {
		e := Entry{
			List: ListUN, ID: strings.TrimSpace(en.Ref), Type: TypeEntity,
			Name: unClean(en.First),
		}
		if t := strings.TrimSpace(en.ListType); t != "" {
			e.Programs = []string{t}
		}
		for _, a := range en.Aliases {
			e.Aliases = append(e.Aliases, splitUNAlias(a.Name)...)
		}
		for _, a := range en.Address {
			if cc, ok := CountryCode(strings.TrimSpace(a.Country)); ok {
				e.Countries = append(e.Countries, cc)
			}
		}
		e.Countries = uniqueStrings(e.Countries)
		if err := add(e); err != nil {
			return nil, "", 0, err
		}
	}
	return entries, strings.TrimSpace(l.DateGenerated), unmapped, nil
}

// unDOBString converts one INDIVIDUAL_DATE_OF_BIRTH (see Entry.Birthdates).
func unDOBString(d unDOB) string {
	typ := strings.ToUpper(strings.TrimSpace(d.Type))
	if typ == "BETWEEN" {
		y1, ok1 := year(strings.TrimSpace(d.FromYear))
		y2, ok2 := year(strings.TrimSpace(d.ToYear))
		if ok1 && ok2 {
			return yearRange(y1, y2)
		}
		return ""
	}
	approx := typ == "APPROXIMATELY"
	if ds := strings.TrimSpace(d.Date); ds != "" {
		// "1984-01-08" (sometimes with a time zone suffix)
		if len(ds) >= 10 {
			y, ok := year(ds[:4])
			m, err1 := strconv.Atoi(ds[5:7])
			dd, err2 := strconv.Atoi(ds[8:10])
			if ok && err1 == nil && err2 == nil && m >= 1 && m <= 12 && dd >= 1 && dd <= 31 {
				return formatDOB(y, m, dd, approx)
			}
		}
	}
	if y, ok := year(strings.TrimSpace(d.Year)); ok {
		return formatDOB(y, 0, 0, approx)
	}
	return ""
}
