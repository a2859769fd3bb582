package screening

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The EU Financial Sanctions Files (FSF) "export" XML
// (xmlFullSanctionsList_1_1, namespace http://eu.europa.ec/fpi/fsd/export):
// one sanctionEntity per listed party, its names, birthdates and
// citizenships as attributes of nameAlias, birthdate and citizenship
// children. Element names are matched in any namespace.
type euExport struct {
	XMLName        xml.Name   `xml:"export"`
	GenerationDate string     `xml:"generationDate,attr"`
	Entities       []euEntity `xml:"sanctionEntity"`
}

type euEntity struct {
	LogicalID string `xml:"logicalId,attr"`
	EURef     string `xml:"euReferenceNumber,attr"`
	Subject   struct {
		Code string `xml:"code,attr"`
	} `xml:"subjectType"`
	Regulations []struct {
		Programme string `xml:"programme,attr"`
	} `xml:"regulation"`
	Names []struct {
		First  string `xml:"firstName,attr"`
		Middle string `xml:"middleName,attr"`
		Last   string `xml:"lastName,attr"`
		Whole  string `xml:"wholeName,attr"`
	} `xml:"nameAlias"`
	Birthdates []struct {
		Date      string `xml:"birthdate,attr"`
		Year      string `xml:"year,attr"`
		Month     string `xml:"monthOfYear,attr"`
		Day       string `xml:"dayOfMonth,attr"`
		Circa     string `xml:"circa,attr"`
		RangeFrom string `xml:"yearRangeFrom,attr"`
		RangeTo   string `xml:"yearRangeTo,attr"`
	} `xml:"birthdate"`
	Citizenships []struct {
		ISO2        string `xml:"countryIso2Code,attr"`
		Description string `xml:"countryDescription,attr"`
	} `xml:"citizenship"`
}

// parseEU parses the EU FSF export XML. Entries keep the EU reference
// number (EU.27.28) as ID, or the logicalId when there is none; persons'
// names are written "LASTNAME, First Middle" when the list splits them (the
// surname is then known to the matcher), the whole name otherwise. It
// returns the entries, the generationDate and the number of citizenships
// that did not map to a country code.
func parseEU(data []byte) (entries []Entry, published string, unmapped int, err error) {
	var x euExport
	if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&x); err != nil {
		return nil, "", 0, fmt.Errorf("eu xml: %w", err)
	}
	if len(x.Entities) == 0 {
		return nil, "", 0, errors.New("eu xml: no sanctionEntity")
	}
	seen := make(map[string]bool, len(x.Entities))
	for _, se := range x.Entities {
		e := Entry{List: ListEU, ID: strings.TrimSpace(se.EURef)}
		if e.ID == "" {
			e.ID = strings.TrimSpace(se.LogicalID)
		}
		if e.ID == "" {
			return nil, "", 0, errors.New("eu xml: sanctionEntity without euReferenceNumber or logicalId")
		}
		if seen[e.ID] {
			return nil, "", 0, fmt.Errorf("eu xml: duplicate entity %s", e.ID)
		}
		seen[e.ID] = true
		switch strings.ToLower(strings.TrimSpace(se.Subject.Code)) {
		case "person":
			e.Type = TypeIndividual
		default: // enterprise
			e.Type = TypeEntity
		}
		for _, n := range se.Names {
			name := cleanSpace(n.Whole)
			if last := cleanSpace(n.Last); e.Type == TypeIndividual && last != "" {
				name = last
				if given := cleanSpace(n.First + " " + n.Middle); given != "" {
					name += ", " + given
				}
			}
			if name == "" {
				continue
			}
			if e.Name == "" {
				e.Name = name
			} else if name != e.Name {
				e.Aliases = append(e.Aliases, name)
			}
		}
		if e.Name == "" {
			return nil, "", 0, fmt.Errorf("eu xml: %s has no name", e.ID)
		}
		for _, b := range se.Birthdates {
			if s := euDOB(b.Date, b.Year, b.Month, b.Day, b.Circa, b.RangeFrom, b.RangeTo); s != "" {
				e.Birthdates = append(e.Birthdates, s)
			}
		}
		for _, c := range se.Citizenships {
			if cc := strings.ToUpper(strings.TrimSpace(c.ISO2)); len(cc) == 2 && isLetters(cc) && cc != "00" {
				e.Nationalities = append(e.Nationalities, cc)
			} else if cc, ok := CountryCode(c.Description); ok {
				e.Nationalities = append(e.Nationalities, cc)
			} else if strings.TrimSpace(c.Description) != "" {
				unmapped++
			}
		}
		for _, r := range se.Regulations {
			if p := strings.TrimSpace(r.Programme); p != "" {
				e.Programs = append(e.Programs, p)
			}
		}
		e.Aliases = uniqueStrings(e.Aliases)
		e.Birthdates = uniqueStrings(e.Birthdates)
		e.Nationalities = uniqueStrings(e.Nationalities)
		e.Programs = uniqueStrings(e.Programs)
		e.Fingerprint = fingerprint(&e)
		entries = append(entries, e)
	}
	return entries, strings.TrimSpace(x.GenerationDate), unmapped, nil
}

// euDOB converts one EU birthdate (see Entry.Birthdates).
func euDOB(date, yr, month, day, circa, from, to string) string {
	approx := strings.EqualFold(strings.TrimSpace(circa), "true")
	if y1, ok1 := year(strings.TrimSpace(from)); ok1 {
		if y2, ok2 := year(strings.TrimSpace(to)); ok2 {
			return yearRange(y1, y2)
		}
	}
	if d := strings.TrimSpace(date); len(d) >= 10 {
		if y, ok := year(d[:4]); ok {
			m, err1 := strconv.Atoi(d[5:7])
			dd, err2 := strconv.Atoi(d[8:10])
			if err1 == nil && err2 == nil && m >= 1 && m <= 12 && dd >= 1 && dd <= 31 {
				return formatDOB(y, m, dd, approx)
			}
		}
	}
	y, ok := year(strings.TrimSpace(yr))
	if !ok {
		return ""
	}
	m, _ := strconv.Atoi(strings.TrimSpace(month))
	d, _ := strconv.Atoi(strings.TrimSpace(day))
	if m < 1 || m > 12 {
		m, d = 0, 0
	}
	if d < 1 || d > 31 {
		d = 0
	}
	return formatDOB(y, m, d, approx)
}
