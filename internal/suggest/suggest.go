// Package suggest finds the word a user probably meant: the nearest of a
// list by edit distance, for "did you mean" in error messages (a flag, a
// configuration key, a command).
package suggest

// Nearest returns the candidate closest to word, if one is close enough to
// be a typo: at most 2 edits away, and fewer than a third of word's
// length (so that "a" does not suggest "b"). Ties go to the first.
func Nearest(word string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == word {
			continue
		}
		d := Distance(word, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > 2 || bestD*3 >= len([]rune(word)) {
		return "", false
	}
	return best, true
}

// Distance is the Damerau-Levenshtein distance of a and b (optimal string
// alignment): insertions, deletions, substitutions and transpositions of
// two neighbours each count one.
func Distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// d[i][j] is the distance of x[:i] and y[:j]; three rows suffice.
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
