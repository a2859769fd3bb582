package screening

// JaroWinkler returns the Jaro-Winkler similarity of a and b in [0, 1],
// comparing bytes (names are compared after Normalize, which yields ASCII for
// Latin, Cyrillic and Greek input). It uses the standard parameters: matching
// window max(len)/2-1, prefix scale 0.1 over at most 4 common leading bytes.
// It does not allocate for strings up to 64 bytes.
//
// Known values: MARTHA/MARHTA 0.961, DWAYNE/DUANE 0.840, DIXON/DICKSONX 0.813.
func JaroWinkler(a, b string) float64 {
	j := jaro(a, b)
	if j == 0 {
		return 0
	}
	l := 0
	for l < 4 && l < len(a) && l < len(b) && a[l] == b[l] {
		l++
	}
	return j + float64(l)*0.1*(1-j)
}

func jaro(a, b string) float64 {
	la, lb := len(a), len(b)
	if la == 0 || lb == 0 {
		if la == lb {
			return 1
		}
		return 0
	}
	if a == b {
		return 1
	}
	if la > lb {
		a, b = b, a
		la, lb = lb, la
	}
	window := lb/2 - 1
	if window < 0 {
		window = 0
	}
	var bufA, bufB [64]bool
	var ma, mb []bool
	if la <= 64 && lb <= 64 {
		ma, mb = bufA[:la], bufB[:lb]
	} else {
		ma, mb = make([]bool, la), make([]bool, lb)
	}
	m := 0
	for i := 0; i < la; i++ {
		lo := i - window
		if lo < 0 {
			lo = 0
		}
		hi := i + window + 1
		if hi > lb {
			hi = lb
		}
		for k := lo; k < hi; k++ {
			if !mb[k] && a[i] == b[k] {
				ma[i], mb[k] = true, true
				m++
				break
			}
		}
	}
	if m == 0 {
		return 0
	}
	t := 0
	k := 0
	for i := 0; i < la; i++ {
		if !ma[i] {
			continue
		}
		for !mb[k] {
			k++
		}
		if a[i] != b[k] {
			t++
		}
		k++
	}
	fm := float64(m)
	return (fm/float64(la) + fm/float64(lb) + (fm-float64(t)/2)/fm) / 3
}
