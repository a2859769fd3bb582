// Package screening screens natural persons and companies against the OFAC SDN list
// (sdn.csv + alt.csv, legacy CSV layout), the UN Security Council
// Consolidated List (XML), and, when given, the EU consolidated list (FSF
// XML export, parse_eu.go) and the UK consolidated list (OFSI CSV,
// parse_uk.go), and explains every hit.
//
// # Data
//
// LoadDir or Parse read the three official files into an immutable Index.
// OFAC individuals are published "SURNAME, Given Names"; their aliases come
// from alt.csv joined on ent_num (aliases of entries missing from sdn.csv are
// skipped); DOBs, nationalities/citizenships and weak a.k.a.s are parsed
// from the remarks. UN individuals and entities keep their REFERENCE_NUMBER
// as ID; their aliases of every quality are screened. Country names map to
// ISO alpha-2 codes (CountryCode); values that do not map are dropped and
// counted (Index.UnmappedNationalities). Each Entry has a Fingerprint so that
// Changed can list the entries to re-screen after an update.
//
// A Screener holds the current Index behind an atomic pointer; an Updater
// downloads the official files, validates them (they parse; each list has at
// least MinEntries and keeps at least 80% of its current size) and swaps.
//
// # Matching
//
// Names are normalized (Normalize): case folded, Cyrillic and Greek
// transliterated (BGN/PCGN Cyrillic with Ukrainian, Belarusian, Bulgarian and
// Serbian variants, ELOT 743 Greek; see translit.go), diacritics removed,
// punctuation and hyphens split, apostrophes dropped. Token order never
// matters. Two tokens are similar when they are equal, phonetically equal
// (a folding of transliteration variants: kh/h, dzh/j, w/v, y/i, x/ks, c/k,
// doubled letters), or close by Jaro-Winkler (≥ 0.85, ≥ 0.88 for 4-letter
// tokens; tokens of 3 letters or fewer must be equal or phonetically equal;
// a name that is a prefix of a longer one, like ivan/ivanov, is different;
// one typo in a word of 5+ letters always passes).
//
// Candidates come from an inverted index built at load: every token is
// reachable through its phonetic form, its one-deletion variants (so one
// substitution, insertion, deletion or transposition still shares a key) and
// its consonant skeleton. Only names sharing at least two similar
// non-particle tokens with the query are scored (one token only for a
// single-token query, and then only against single-token names), which keeps
// a check well under a millisecond over ~36,000 names.
//
// Beyond single tokens the alignment knows name-part roles (later words of
// the given-name field are possible middle names), one-letter initials,
// joined and split forms (Binladen / BIN LADEN, Al Tikriti / ALTIKRITI),
// digraph readings of č, š, ž (ch, sh, zh), a given-name equivalence table
// (givennames.go) and scores every pair of a candidate, proposed by the
// index or not; each pair's kind, weight and a sentence are in
// Breakdown.Tokens (see align and explain in screen.go).
//
// The score of a name is explained in Hit.Breakdown (see Index.Screen):
// weighted coverage of the query tokens by their best one-to-one alignment
// with the listed name, minus 4% per listed name part the query lacks (a
// patronymic or third given name does not kill a match), capped when the
// listed surname is not matched at all, reduced by 10% when no part agrees
// exactly or phonetically; then corroborating or excluding evidence: the
// birthday (same date +0.10, same year +0.03, one year from a listing
// without a full date 0, one or two years apart −0.05, three to five −0.10
// for a close full-name match and −0.35 otherwise, six or more −0.35: a
// namesake born decades apart is not the person) and
// the nationality (+0.03 / −0.05). Entities, vessels and aircraft stay
// searchable but lose 0.05, and 0.20 when the query has a birthday, so that
// a person's check is not flooded with companies. Hits need Score ≥ 0.85
// and NameScore ≥ 0.80, are sorted best first, at most 10.
//
// # Companies
//
// ScreenCompany (company.go) screens a company, a trade name or a
// corporate member as a company, against the listed entities only, with
// the company's countries (CompanyQuery). Words are classified
// (legalforms.go): core words, descriptors (Trading, Group, Holding...,
// weight 0.15), legal forms (one table of equivalents across languages and
// scripts, written for emi from public knowledge of company-law forms;
// weight 0.1, compared only when both names have one) and stop words;
// dotted letters are one word; nothing is a title or an initial. Entity
// names are indexed with their aliases, OFAC weak a.k.a.s, the acronyms UN
// names carry in brackets, and the initials of every name of two words or
// more (a three-letter one hits at the review threshold when no country
// decides, is vetoed by another country; an entity without a listed
// country is tied to its programmes' or names' countries). The score is the weighted share of the listed name found in the
// query, less 0.25 per query word the listed name lacks and 0.03 per
// descriptor; a listed name inside a longer name of descriptors and legal
// forms is found. Entity countries (Entry.Countries: the countries of
// OFAC identification numbers and registration, UN addresses) weigh as
// birthdays do for people: +0.05 when one agrees, −0.10 for the exact name
// in another country, a veto (−0.35) for anything weaker (acronyms, short,
// partial or approximate names). Every hit explains each word (legal form
// ООО ↔ LLC, weight 0.1). TestCompanyRecallByVariation measures it on a
// seeded set of entity variations and 3,265 invented merchant names
// (testdata/clean_companies.txt, 455 of them short acronym-style names); BenchmarkScreenCompany its speed.
//
// # Accuracy and speed
//
// TestAccuracy measures recall on 400 positive queries generated
// deterministically from the lists (exact, reordered, lower case,
// diacritics, one typo, alias, Cyrillic, with birthday) and the
// false-positive rate on testdata/clean_names.txt (318 invented names from
// 84 countries); it fails below 98% recall or above 2% false positives.
// TestRecallByVariation (variations_test.go) draws, with a fixed seed,
// listed people written with eleven kinds of variation (extra given name,
// initials, joined and split forms, transliteration, given-name
// equivalents, birthday edges, two typos...) and reports recall per class,
// the birthday veto on namesakes, and the false-positive rate on the clean
// names (with a section of hard namesakes). BenchmarkLoad and
// BenchmarkScreen (p50/p99 per call) measure speed.
//
// The tests read the lists from ../../../shared/data/sanctions (or
// EMI_SANCTIONS_DIR) and fail when it is missing.
package screening
