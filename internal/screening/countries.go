package screening

import (
	"strings"
	"sync"
)

// countryTable maps country names, as written in the OFAC remarks
// ("nationality Korea, North"), the UN list ("Democratic People's Republic
// of Korea") and common English usage, to ISO 3166-1 alpha-2 codes. One
// line per code: the code, then "|"-separated names. Names are compared
// after normString (lower case, punctuation to spaces), and a leading
// "possibly" is ignored. XK is the user-assigned code in general use for
// Kosovo. Names that do not denote a present-day nationality ("former Soviet
// Union", "Region: Gaza", "na") are deliberately absent and are dropped.
const countryTable = `AD|Andorra
AE|United Arab Emirates|UAE|Emirati
AF|Afghanistan|Afghan
AG|Antigua and Barbuda
AI|Anguilla
AL|Albania|Albanian
AM|Armenia|Armenian
AO|Angola|Angolan
AR|Argentina|Argentinian|Argentine
AS|American Samoa
AT|Austria|Austrian
AU|Australia|Australian
AW|Aruba
AZ|Azerbaijan|Azerbaijani
BA|Bosnia and Herzegovina|Bosnia-Herzegovina|Bosnia|Bosnian
BB|Barbados
BD|Bangladesh|Bangladeshi
BE|Belgium|Belgian
BF|Burkina Faso
BG|Bulgaria|Bulgarian
BH|Bahrain|Bahraini
BI|Burundi
BJ|Benin
BM|Bermuda
BN|Brunei|Brunei Darussalam
BO|Bolivia|Bolivia (Plurinational State of)|Plurinational State of Bolivia|Bolivian
BR|Brazil|Brazilian
BS|Bahamas|The Bahamas|Bahamas, The
BT|Bhutan
BW|Botswana
BY|Belarus|Belarusian|Byelorussia
BZ|Belize
CA|Canada|Canadian
CD|Congo, Democratic Republic of the|Democratic Republic of the Congo|Congo (Kinshasa)|DRC|Zaire
CF|Central African Republic
CG|Congo|Congo, Republic of the|Republic of the Congo|Congo (Brazzaville)
CH|Switzerland|Swiss
CI|Cote d'Ivoire|Côte d'Ivoire|Ivory Coast
CL|Chile|Chilean
CM|Cameroon
CN|China|People's Republic of China|Chinese
CO|Colombia|Colombian
CR|Costa Rica
CU|Cuba|Cuban
CV|Cabo Verde|Cape Verde
CY|Cyprus|Cypriot
CZ|Czech Republic|Czechia|Czech
DE|Germany|German
DJ|Djibouti
DK|Denmark|Danish
DM|Dominica
DO|Dominican Republic
DZ|Algeria|Algerian
EC|Ecuador|Ecuadorian
EE|Estonia|Estonian
EG|Egypt|Egyptian
EH|Western Sahara
ER|Eritrea|Eritrean
ES|Spain|Spanish
ET|Ethiopia|Ethiopian
FI|Finland|Finnish
FJ|Fiji
FR|France|French
GA|Gabon
GB|United Kingdom|United Kingdom of Great Britain and Northern Ireland|Great Britain|UK|British
GD|Grenada
GE|Georgia|Georgian
GH|Ghana|Ghanaian
GI|Gibraltar
GM|The Gambia|Gambia|Gambia, The
GN|Guinea
GQ|Equatorial Guinea
GR|Greece|Greek
GT|Guatemala|Guatemalan
GW|Guinea-Bissau
GY|Guyana
HK|Hong Kong|Hong Kong SAR
HN|Honduras|Honduran
HR|Croatia|Croatian
HT|Haiti|Haitian
HU|Hungary|Hungarian
ID|Indonesia|Indonesian
IE|Ireland|Irish
IL|Israel|Israeli
IN|India|Indian
IQ|Iraq|Iraqi
IR|Iran|Iran (Islamic Republic of)|Islamic Republic of Iran|Iranian
IS|Iceland
IT|Italy|Italian
JM|Jamaica
JO|Jordan|Jordanian
JP|Japan|Japanese
KE|Kenya|Kenyan
KG|Kyrgyzstan|Kyrgyz Republic
KH|Cambodia|Cambodian
KM|Comoros
KN|Saint Kitts and Nevis|St. Kitts and Nevis
KP|Korea, North|North Korea|Democratic People's Republic of Korea|DPRK
KR|Korea, South|South Korea|Republic of Korea
KW|Kuwait|Kuwaiti
KY|Cayman Islands
KZ|Kazakhstan|Kazakh
LA|Laos|Lao People's Democratic Republic
LB|Lebanon|Lebanese
LC|Saint Lucia
LI|Liechtenstein
LK|Sri Lanka|Sri Lankan
LR|Liberia|Liberian
LS|Lesotho
LT|Lithuania|Lithuanian
LU|Luxembourg
LV|Latvia|Latvian
LY|Libya|Libyan
MA|Morocco|Moroccan
MC|Monaco
MD|Moldova|Republic of Moldova|Moldovan
ME|Montenegro
MG|Madagascar
MH|Marshall Islands
MK|North Macedonia, The Republic of|North Macedonia|Macedonia|The former Yugoslav Republic of Macedonia
ML|Mali|Malian
MM|Burma|Myanmar|Burmese
MN|Mongolia
MO|Macau|Macao
MR|Mauritania|Mauritanian
MT|Malta|Maltese
MU|Mauritius
MV|Maldives
MW|Malawi
MX|Mexico|Mexican
MY|Malaysia|Malaysian
MZ|Mozambique
NA|Namibia
NE|Niger
NG|Nigeria|Nigerian
NI|Nicaragua|Nicaraguan
NL|Netherlands|The Netherlands|Dutch
NO|Norway|Norwegian
NP|Nepal
NZ|New Zealand
OM|Oman|Omani
PA|Panama|Panamanian
PE|Peru|Peruvian
PG|Papua New Guinea
PH|Philippines|Filipino
PK|Pakistan|Pakistani
PL|Poland|Polish
PS|Palestinian|State of Palestine|Palestine|West Bank|Palestinian Territories
PT|Portugal|Portuguese
PY|Paraguay|Paraguayan
QA|Qatar|Qatari
RO|Romania|Romanian
RS|Serbia|Serbian
RU|Russia|Russian Federation|Russian
RW|Rwanda|Rwandan
SA|Saudi Arabia|Saudi
SB|Solomon Islands
SC|Seychelles
SD|Sudan|Sudanese
SE|Sweden|Swedish
SG|Singapore|Singaporean
SI|Slovenia|Slovenian
SK|Slovakia|Slovak
SL|Sierra Leone
SM|San Marino
SN|Senegal|Senegalese
SO|Somalia|Somali
SR|Suriname
SS|South Sudan
SV|El Salvador|Salvadoran
SY|Syria|Syrian Arab Republic|Syrian
TD|Chad|Chadian
TG|Togo
TH|Thailand|Thai
TJ|Tajikistan|Tajik
TM|Turkmenistan|Turkmen
TN|Tunisia|Tunisian
TR|Turkey|Türkiye|Turkiye|Turkish
TT|Trinidad and Tobago
TW|Taiwan
TZ|Tanzania|United Republic of Tanzania|Tanzanian
UA|Ukraine|Ukrainian
UG|Uganda|Ugandan
US|United States|United States of America|USA|American
UY|Uruguay
UZ|Uzbekistan|Uzbek
VC|Saint Vincent and the Grenadines
VE|Venezuela|Venezuela (Bolivarian Republic of)|Bolivarian Republic of Venezuela|Venezuelan
VN|Vietnam|Viet Nam|Vietnamese
VU|Vanuatu
WS|Samoa
XK|Kosovo
YE|Yemen|Yemeni
ZA|South Africa|South African
ZM|Zambia
ZW|Zimbabwe|Zimbabwean`

var (
	countryOnce sync.Once
	countryMap  map[string]string
)

func loadCountries() {
	countryMap = make(map[string]string)
	for _, line := range strings.Split(countryTable, "\n") {
		parts := strings.Split(line, "|")
		code := parts[0]
		for _, name := range parts[1:] {
			countryMap[normString(name, langAuto)] = code
		}
	}
}

// CountryCode maps a country name as written in the lists (or in common
// English) to its ISO 3166-1 alpha-2 code. ok is false when the name is not
// known.
func CountryCode(name string) (code string, ok bool) {
	countryOnce.Do(loadCountries)
	n := normString(name, langAuto)
	n = strings.TrimPrefix(n, "possibly ")
	code, ok = countryMap[n]
	return code, ok
}
