package server

import (
	"fmt"
	"math"
	"strings"
)

// Rules for the instructor's and grader's tokens: whoever guesses one
// reads every student's work, and a class's network is not a safe place
// to try them from. The estimate is the token's length times the Shannon
// entropy of its own characters' frequencies: simple, and it catches what
// people type instead of a random token (a word repeated, a keyboard run,
// few different characters). `openssl rand -hex 16` gives 88 bits or more
// by this estimate, and fewer than 7 different characters about once in
// five billion tokens.
const (
	minTokenLength   = 16
	minTokenDistinct = 7
	minTokenBits     = 64
)

// goodTokenHint is how every token error ends: how to make a good one.
const goodTokenHint = "make one with `openssl rand -hex 16`"

// checkToken says what is wrong with a static bearer token, naming flag.
func checkToken(flag, token string) error {
	if isPlaceholder(token) {
		return fmt.Errorf("%s is still the placeholder of .env.example: %s", flag, goodTokenHint)
	}
	if len(token) < minTokenLength {
		return fmt.Errorf("%s is too short to be secret: use at least %d characters; %s", flag, minTokenLength, goodTokenHint)
	}
	if n := distinct(token); n < minTokenDistinct {
		return fmt.Errorf("%s uses only %d different characters, too few to be secret (at least %d); %s", flag, n, minTokenDistinct, goodTokenHint)
	}
	if bits := estimatedBits(token); bits < minTokenBits {
		return fmt.Errorf("%s is too easy to guess (about %.0f bits, at least %d wanted); %s", flag, bits, minTokenBits, goodTokenHint)
	}
	return nil
}

// checkJoinCode refuses the join code .env.example ships with: a class run
// from an unedited copy would let anyone who read the example join.
func checkJoinCode(code string) error {
	if isPlaceholder(code) {
		return fmt.Errorf("--join-code %q is the placeholder of .env.example: set KUBELAB_JOIN_CODE to the code you will tell your students (e.g. `openssl rand -hex 3`), or to nothing to let anyone who reaches the page join", code)
	}
	return nil
}

// placeholderPrefixes are how .env.example's values begin (and the usual
// "change me"), so that a copied but unedited file stops kubelab.
var placeholderPrefixes = []string{"replace-with-", "change-me", "changeme"}

func isPlaceholder(value string) bool {
	v := strings.ToLower(strings.TrimSpace(value))
	for _, p := range placeholderPrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

func distinct(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}

// estimatedBits is len(s) times the Shannon entropy of s's characters.
func estimatedBits(s string) float64 {
	counts := map[rune]float64{}
	n := 0.0
	for _, r := range s {
		counts[r]++
		n++
	}
	bits := 0.0
	for _, c := range counts {
		bits -= c * math.Log2(c/n)
	}
	return bits
}
