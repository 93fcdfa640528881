package classroom

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

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
		seen = seen || unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	if !seen {
		return "", fmt.Errorf("%w: it has no letter or digit", ErrInvalidDisplayName)
	}
	return s, nil
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
