package classroom

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxDisplayNameRunes bounds a display name: long enough for a full name
// in any script, short enough to draw in a class list.
const MaxDisplayNameRunes = 64

// maxSlugLen leaves room for a "-NN" suffix within a DNS label.
const maxSlugLen = 40

// ErrInvalidDisplayName is returned, wrapped with the reason, for a display
// name kubelab will not show.
var ErrInvalidDisplayName = errors.New("invalid display name")

// CleanDisplayName trims a display name and refuses what cannot be shown
// safely: empty or too long names, invalid UTF-8, control characters and
// invisible formatting characters (such as right-to-left overrides that
// would make one name pass for another).
func CleanDisplayName(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch n := utf8.RuneCountInString(s); {
	case !utf8.ValidString(s):
		return "", fmt.Errorf("%w: it is not valid UTF-8", ErrInvalidDisplayName)
	case n == 0:
		return "", fmt.Errorf("%w: it is empty", ErrInvalidDisplayName)
	case n > MaxDisplayNameRunes:
		return "", fmt.Errorf("%w: it has %d characters, at most %d are allowed", ErrInvalidDisplayName, n, MaxDisplayNameRunes)
	}
	seen := false // a letter or a digit, which an instructor can read
	for _, r := range s {
		// Format characters (bidi overrides, zero widths) and the other
		// default-ignorable ones (the Hangul fillers) draw nothing: a name
		// of them looks blank, or like another student's.
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) {
			return "", fmt.Errorf("%w: it contains the invisible character %U", ErrInvalidDisplayName, r)
		}
		// Braille's blank pattern (U+2800) is a symbol, not a space, so
		// it is neither trimmed nor ignorable, and draws nothing: "bob"
		// and a blank cell passed for Bob. The other patterns are dots,
		// which no one reads as a name on a screen.
		if unicode.Is(unicode.Braille, r) {
			return "", fmt.Errorf("%w: it contains the Braille pattern %U, which reads as blank or as dots", ErrInvalidDisplayName, r)
		}
		seen = seen || unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	if !seen {
		return "", fmt.Errorf("%w: it has no letter or digit", ErrInvalidDisplayName)
	}
	if a, b, mixed := mixedScripts(s); mixed {
		return "", fmt.Errorf("%w: it mixes %s and %s letters, as a name made to look like another's does; write it in one script", ErrInvalidDisplayName, a, b)
	}
	return s, nil
}

// mixedScripts reports two scripts that s mixes as Unicode's
// "moderately restrictive" identifier profile (UTS #39, 5.2) refuses
// them: Latin "bob" and "bоb" with a Cyrillic "о" look the same, so Latin
// goes with Cyrillic or Greek in no name. Allowed are one script (with
// the characters all scripts share: spaces, digits, punctuation, marks),
// Latin with one other, and the scripts Japanese, Chinese and Korean
// write together, with Latin or not.
func mixedScripts(s string) (a, b string, mixed bool) {
	var found []string
	for _, r := range s {
		if unicode.In(r, unicode.Common, unicode.Inherited) {
			continue
		}
		for name, table := range unicode.Scripts {
			if name != "Common" && name != "Inherited" && unicode.Is(table, r) {
				if !slices.Contains(found, name) {
					found = append(found, name)
				}
				break
			}
		}
	}
	others := slices.DeleteFunc(slices.Clone(found), func(n string) bool { return n == "Latin" })
	switch {
	case len(found) <= 1:
		return "", "", false
	case len(others) == 1 && len(found) == 2 && others[0] != "Cyrillic" && others[0] != "Greek":
		return "", "", false
	case eastAsian(others):
		return "", "", false
	}
	if len(others) == len(found) {
		return found[0], found[1], true
	}
	return "Latin", others[0], true
}

// eastAsian reports whether scripts are all of one of the sets UTS #39
// lets mix: Han with Hiragana and Katakana (Japanese), with Bopomofo
// (Chinese), or with Hangul (Korean).
func eastAsian(scripts []string) bool {
	for _, set := range [][]string{{"Han", "Hiragana", "Katakana"}, {"Han", "Bopomofo"}, {"Han", "Hangul"}} {
		if !slices.ContainsFunc(scripts, func(s string) bool { return !slices.Contains(set, s) }) {
			return true
		}
	}
	return false
}

// slug turns a display name into the start of a user and namespace name:
// lower-case ASCII letters and digits, other runs as one dash. A name with
// no such letters (in Thai script, say) becomes "student".
func slug(display string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(display) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= maxSlugLen {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > maxSlugLen {
		s = strings.Trim(s[:maxSlugLen], "-")
	}
	if s == "" || s[0] < 'a' {
		s = "student-" + s
		s = strings.TrimSuffix(s, "-")
	}
	return s
}

// reserved names are never given to a student: namespaces kube and kubelab
// use, and names that would read as a system identity.
func reserved(name string) bool {
	switch {
	case name == "default", name == DemoNamespace,
		strings.HasPrefix(name, "kube-"), strings.HasPrefix(name, "kubelab"),
		strings.HasPrefix(name, "system"):
		return true
	}
	return len(validation.IsDNS1123Label(name)) > 0
}

// candidates are the names to try for a display name, in order.
func candidates(display string) []string {
	base := slug(display)
	if reserved(base) {
		base = "student-" + base
	}
	out := make([]string, 0, 100)
	if !reserved(base) {
		out = append(out, base)
	}
	for i := 2; i < 100; i++ {
		if n := fmt.Sprintf("%s-%d", base, i); !reserved(n) {
			out = append(out, n)
		}
	}
	return out
}

// SameNameKey is a display name as a reader tells names apart: in
// compatibility form (a full-width "Ｂｏｂ" is "Bob"), as its UTS #39
// skeleton (a digit "0" is an "O", a Cyrillic "В" a Latin "B", "rn" an
// "m"), case folded, with its runs of spaces as one. Two students whose
// names have the same key look alike on a list ("Bob", "B0b" and a
// Cyrillic "ВОВ"), so the instructor's pages show them apart. The
// skeleton is taken again after folding, for a letter that looks like
// another only in lower case.
func SameNameKey(display string) string {
	skeleton := confusables.Skeleton(cases.Fold().String(confusables.Skeleton(norm.NFKC.String(display))))
	return strings.Join(strings.FieldsFunc(skeleton, unicode.IsSpace), " ")
}
