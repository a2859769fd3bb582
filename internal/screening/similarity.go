package screening

// NameSimilarity compares two personal names the way Screen compares a
// query with a listed name, symmetrically and without an index: both are
// normalized (Normalize; "SURNAME, Given" understood), their non-particle
// tokens aligned greedily by decreasing token similarity (Jaro-Winkler with
// the same rules as screening: short tokens must be equal or phonetically
// equal, a name is not a prefix of a longer one), and the result is
//
//	2 · Σ similarity of aligned pairs / (tokens of a + tokens of b)
//
// in [0, 1]: 1 for the same tokens in any order, spelling or script. Use it
// to check that a customer's name matches the person of an AML check.
func NameSimilarity(a, b string) float64 {
	ta := coreTokens(a)
	tb := coreTokens(b)
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	pa := make([]string, len(ta))
	for i, t := range ta {
		pa[i] = phonetic(t)
	}
	pb := make([]string, len(tb))
	for j, t := range tb {
		pb[j] = phonetic(t)
	}
	usedA := make([]bool, len(ta))
	usedB := make([]bool, len(tb))
	sum := 0.0
	for {
		best, bi, bj := 0.0, -1, -1
		for i := range ta {
			if usedA[i] {
				continue
			}
			for j := range tb {
				if usedB[j] {
					continue
				}
				s := tokenSim(ta[i], pa[i], tb[j], pb[j], isASCII(ta[i]) && isASCII(tb[j]))
				if s > best {
					best, bi, bj = s, i, j
				}
			}
		}
		if bi < 0 {
			break
		}
		usedA[bi], usedB[bj] = true, true
		sum += best
	}
	return round3(2 * sum / float64(len(ta)+len(tb)))
}

func coreTokens(s string) []string {
	var out []string
	for _, t := range nameTokens(s, langAuto) {
		if !isParticle(t) {
			out = append(out, t)
		}
	}
	return out
}
