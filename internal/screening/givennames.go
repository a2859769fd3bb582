package screening

// Given-name equivalences.
//
// Source: written for this project from public knowledge of the official
// romanization systems and national forms of personal names: BGN/PCGN
// Russian (1947), Ukrainian (2019 national system, BGN/PCGN 1965) and
// Belarusian (2007 national system, BGN/PCGN 1979) romanizations, whose
// differing outputs for one Cyrillic name give the Slavic rows (a Belarusian
// passport writes Uladzimir where a Russian one writes Vladimir); the
// standard Arabic name elements and their common transliterations
// (Muhammad, Ahmad, Husayn, Yusuf, ...; "abd al-" forms are handled in
// phonetic, not here); and the McCune-Reischauer and Revised Romanization of
// Korean syllables (North Korea uses the former: Chol, Kyong; South Korea
// the latter: Cheol, Gyeong). No third-party data file was copied. The table
// is part of emi and under the project's licence. The OpenSanctions name
// data (CC BY 4.0) was considered as a source; it was not available offline
// here and is not used.
//
// Each row is one name in the spellings a person may carry in different
// documents; rows hold only forms of the same name (a person named Ivan
// does not write John), never nicknames, so that a match through the table
// is as strong as a transliteration variant. Tokens are compared by their
// phonetic form, so spellings the folding already equates (Mohammed /
// Mohammad) need not all be listed.
var givenNameRows = [][]string{
	// East Slavic (Russian / Ukrainian / Belarusian / Polish forms)
	{"aleksandr", "alexander", "oleksandr", "alyaksandr", "aliaksandr", "aleksander", "aleksandar", "alexandr"},
	{"aleksey", "alexei", "oleksiy", "oleksii", "aliaksei", "alyaksey", "aleksiej", "alexey"},
	{"anatoly", "anatoliy", "anatolii", "anatol", "anatoli"},
	{"andrey", "andrei", "andriy", "andrii", "andrej", "andrzej"},
	{"boris", "barys", "borys"},
	{"dmitry", "dmitriy", "dmitrii", "dzmitry", "dzmitryi", "dmytro", "dymitr", "dimitri", "dimitriy"},
	{"fyodor", "fedor", "fedir", "fiodar", "teodor"},
	{"georgy", "georgiy", "heorhiy", "heorhii", "georgi", "hieorhi"},
	{"grigory", "grigoriy", "hryhoriy", "hryhorii", "ryhor", "grzegorz"},
	{"ilya", "illia", "illya", "ilia"},
	{"kirill", "kiryl", "kyrylo", "kirylo", "cyryl"},
	{"konstantin", "kanstantsin", "kostiantyn", "kostyantyn", "konstanty"},
	{"leonid", "leanid", "leonidas"},
	{"maksim", "maxim", "maksym", "maksimilian"},
	{"mikhail", "mykhailo", "mykhaylo", "mikhal", "michal", "mikhas"},
	{"nikolay", "nikolai", "mykola", "mikalai", "mikalay", "mikola"},
	{"oleg", "oleh", "aleh"},
	{"pavel", "pavlo", "paval", "pawel"},
	{"pyotr", "petr", "petro", "piotr", "piatro"},
	{"sergey", "sergei", "serhiy", "serhii", "siarhei", "siarhey", "sergiy"},
	{"stanislav", "stanislau", "stanislaw"},
	{"valery", "valeriy", "valerii", "valer", "valeri"},
	{"vasily", "vasiliy", "vasyl", "vasil", "vasili", "wasyl"},
	{"viktor", "victor", "viktar", "wiktor"},
	{"vladimir", "volodymyr", "uladzimir", "vladzimir", "wlodzimierz"},
	{"vyacheslav", "viacheslav", "vyachaslau", "wieslaw"},
	{"yevgeny", "evgeny", "yevgeniy", "evgeniy", "yevhen", "yauhen", "jauhen", "eugeniusz"},
	{"yuri", "yury", "yuriy", "yurii", "yuras", "jurij", "jerzy"},
	{"igor", "ihor", "ihar"},
	{"yelena", "elena", "olena", "alena", "alyona"},
	{"natalya", "natalia", "nataliya", "natallia"},
	{"tatyana", "tatiana", "tetiana", "tatsiana", "tetyana"},
	{"olga", "olha", "volha"},
	// Arabic, Persian, Turkish and Caucasian forms
	{"muhammad", "mohammed", "mohamed", "mohammad", "muhammed", "mohamad", "muhamad", "mehmet", "mehmed",
		"magomed", "mukhammad", "muhammet", "mohd", "mamadou", "mahamat", "mamed", "mammad", "muhamed"},
	{"ahmad", "ahmed", "akhmed", "ahmet", "achmed", "akhmad"},
	{"mahmud", "mahmoud", "mahmood", "mehmood", "makhmud"},
	{"husayn", "hussein", "hussain", "husain", "huseyin", "hossein", "hosein", "houssein", "husein"},
	{"hasan", "hassan", "hassane", "khasan"},
	{"yusuf", "yousef", "youssef", "yousif", "yusif", "yousuf", "yossef", "yusup"},
	{"umar", "omar", "omer", "oumar"},
	{"uthman", "othman", "osman", "usman", "ousmane", "usmon"},
	{"ibrahim", "ebrahim", "ibragim", "brahim", "ibrahima"},
	{"mustafa", "mostafa", "moustafa", "mustapha", "mostapha"},
	{"abdullah", "abdallah", "abdulla", "abdalla", "abdellah", "abdoulaye"},
	{"ali", "aly", "alee"},
	{"khalid", "khaled", "halid", "chalid"},
	{"said", "saeed", "sayed", "sayyid", "seyed", "sayyed"},
	{"suleiman", "sulayman", "sulaiman", "soliman", "suleyman", "sleiman"},
	{"yahya", "yehia", "yahia", "yehya"},
	{"ismail", "ismael", "esmail", "ismoil"},
	{"jafar", "jaafar", "dzhafar", "cafer"},
	{"qasim", "qasem", "kasim", "kassem", "ghasem", "gasem", "kacem"},
	{"rashid", "rachid", "rasheed", "reshid"},
	{"mansur", "mansour", "mansoor"},
	{"nasser", "nasir", "naser", "nassir"},
	{"faisal", "faysal", "feisal", "faycal"},
	{"zayd", "zaid", "zeid", "zayed"},
	// Korean syllables (McCune-Reischauer / Revised Romanization / common)
	{"chol", "chul", "cheol"},
	{"kyong", "kyung", "gyeong", "gyong", "kyoung"},
	{"song", "seong", "sung"},
	{"hyon", "hyun", "hyeon"},
	{"yong", "young", "yeong"},
	{"myong", "myung", "myeong"},
	{"jong", "jeong", "chong", "jung"},
	{"hyok", "hyuk", "hyeok"},
	{"pyong", "byung", "byeong", "pyeong"},
	{"kwang", "gwang"},
	{"chon", "jeon", "chun", "jun"},
	{"sok", "seok", "suk"},
	{"kyu", "gyu"},
	{"chang", "jang"},
	{"tong", "dong"},
	{"pak", "park", "bak"},
	{"ri", "rhee", "lee", "yi"},
	{"choe", "choi"},
	{"kang", "gang"},
	{"kim", "gim"},
	{"jo", "cho"},
	{"thae", "tae"},
	{"kwon", "gwon"},
	{"ryu", "yoo", "yu"},
	{"sin", "shin"},
	{"un", "eun"},
	{"chin", "jin"},
	{"tok", "deok", "duk"},
	{"kun", "geun", "gun"},
	{"kil", "gil"},
	{"pom", "beom"},
}

// givenGroup maps the phonetic form of every spelling in givenNameRows to
// its row number.
var givenGroup = func() map[string]int32 {
	m := make(map[string]int32, 400)
	for i, row := range givenNameRows {
		for _, n := range row {
			for _, t := range normTokens(n, langAuto) {
				m[phonetic(t)] = int32(i) // #nosec G115 -- a row of the table, far below 2^31
			}
		}
	}
	return m
}()

// givenGroupOf returns the equivalence row of a token's phonetic form, -1
// when it has none.
func givenGroupOf(phon string) int32 {
	if g, ok := givenGroup[phon]; ok {
		return g
	}
	return -1
}
