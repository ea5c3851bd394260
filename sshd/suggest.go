package sshd

import "strings"

// gatewayVerbs are the first words of the gateway's own commands, for the
// "did you mean" of a mistyped one.
var gatewayVerbs = []string{"reset", "list", "instances", "size", "keep", "who", "hand", "grant", "log", "whoami", "logout", "keys", "help"}

// shortUsage follows a mistyped command: the full text is in help.
const shortUsage = "usage: ssh HOST COMMAND [ARGS]; the commands: " +
	"reset list instances size keep who hand grant log whoami logout keys help (ssh termgate@HOST help explains them)"

// closestVerb is the gateway command word fewest edits away from word when
// that is close enough to be a typo (at most a third of the word, at least
// 1 and at most 2 edits), else "". Case is ignored (RESET is reset).
func closestVerb(word string) string {
	if len(word) > 32 { // no command is near; the distance costs len(word) rows
		return ""
	}
	w := strings.ToLower(word)
	best, bestDist := "", min(2, max(1, len(w)/3))+1
	for _, v := range gatewayVerbs {
		if d := editDistance(w, v); d < bestDist {
			best, bestDist = v, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance of a and b:
// Levenshtein's, with two swapped neighbours one edit (lsit is list).
// Command words are short and ASCII.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
