package classroom

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/kubelab/kubelab/pipeline/authn"
	"github.com/kubelab/kubelab/storage/storagetest"
)

func TestCleanDisplayName(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"OK", "  Alice Smith ", "Alice Smith", true},
		{"OKThai", "สมชาย ใจดี", "สมชาย ใจดี", true},
		{"OKMarkupKeptForEscaping", `<script>alert(1)</script>`, `<script>alert(1)</script>`, true},
		{"ErrEmpty", "   ", "", false},
		{"ErrTooLong", strings.Repeat("a", MaxDisplayNameRunes+1), "", false},
		{"ErrControl", "bob\x00", "", false},
		{"ErrNewline", "bob\nalice", "", false},
		{"ErrRightToLeftOverride", "bob\u202Eecila", "", false},
		{"ErrZeroWidth", "bo\u200bb", "", false},
		{"ErrInvalidUTF8", "bob\xff", "", false},
		{"ErrHangulFiller", "\u3164", "", false},
		{"ErrHalfwidthHangulFiller", "bob\uffa0", "", false},
		{"ErrNoLetterOrDigit", "...", "", false},
		{"ErrBrailleBlankAfterAName", "bob\u2800", "", false},
		{"ErrBrailleBlanksOnly", "\u2800\u2800", "", false},
		{"ErrBraillePatterns", "\u281b\u2815", "", false},
		{"ErrIdeographicSpaceOnly", "\u3000\u3000", "", false},
		{"OKDigitsOnly", "42", "42", true},
		{"OKThaiCombiningMarks", "ณัฐพงษ์", "ณัฐพงษ์", true},
		{"ErrLatinWithACyrillicO", "bоb", "", false},
		{"ErrLatinWithAGreekOmicron", "BΟB", "", false},
		{"ErrThaiWithCyrillic", "สมชาย в", "", false},
		{"OKCyrillicOnly", "Иван Петров", "Иван Петров", true},
		{"OKThaiWithLatin", "สมชาย Smith", "สมชาย Smith", true},
		{"OKJapanese", "山田 はなこ カタカナ", "山田 はなこ カタカナ", true},
		{"OKKoreanWithLatin", "김민준 Kim", "김민준 Kim", true},
		{"OKAccentsAreLatin", "José Müller-Łukasz", "José Müller-Łukasz", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CleanDisplayName(tc.in)
			if tc.ok != (err == nil) || got != tc.want {
				t.Fatalf("CleanDisplayName(%q) = %q, %v", tc.in, got, err)
			}
			if err != nil && !errors.Is(err, ErrInvalidDisplayName) {
				t.Fatalf("error %v is not ErrInvalidDisplayName", err)
			}
		})
	}
}

func TestNamesAreDNSLabelsAndNeverReserved(t *testing.T) {
	for in, want := range map[string]string{
		"Alice":                     "alice",
		"Bob O'Neil":                "bob-o-neil",
		"สมชาย":                     "student",
		"42 is the answer":          "student-42-is-the-answer",
		"kube-system":               "student-kube-system",
		"default":                   "student-default",
		"internals-demo":            "student-internals-demo",
		"System:Masters":            "student-system-masters",
		strings.Repeat("ab", 60):    strings.Repeat("ab", 20),
		"---x---":                   "x",
		"<script>alert(1)</script>": "script-alert-1-script",
	} {
		got := candidates(in)
		if len(got) == 0 || got[0] != want {
			t.Errorf("first name for %q: %v, want %q", in, got[:min(1, len(got))], want)
		}
		for _, n := range got {
			if reserved(n) {
				t.Errorf("candidate %q for %q is reserved or not a DNS label", n, in)
			}
		}
	}
}

func newClass(t *testing.T, code string, provision func(context.Context, Student) error) *Class {
	t.Helper()
	m := storagetest.StartEtcd(t)
	if provision == nil {
		provision = func(context.Context, Student) error { return nil }
	}
	tokens := authn.New(authn.Config{Static: authn.NewStaticTokens(), Store: authn.NewEtcdTokens(m.Client())})
	return New(Config{Client: m.Client(), JoinCode: code, Tokens: tokens, Provision: provision})
}

func TestJoin(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		c := newClass(t, "k8s-101", nil)
		s, token, err := c.Join(ctx, " Alice ", " k8s-101 ", "")
		if err != nil || s.Name != "alice" || s.DisplayName != "Alice" {
			t.Fatalf("Join: %+v %v", s, err)
		}
		if u, ok, err := c.cfg.Tokens.(*authn.Authenticator).AuthenticateToken(ctx, token); !ok || err != nil || u.Name != "alice" || !IsStudent(u) {
			t.Fatalf("the session token authenticates as %+v %v %v", u, ok, err)
		}
		if !IsStudent(s.User()) || NamespaceOf(s.User()) != "alice" {
			t.Fatalf("user %+v", s.User())
		}
		got, ok, err := c.Get(ctx, "alice")
		if err != nil || !ok || got.DisplayName != "Alice" {
			t.Fatalf("Get: %+v %v %v", got, ok, err)
		}
	})
	t.Run("ErrWrongJoinCode", func(t *testing.T) {
		c := newClass(t, "k8s-101", nil)
		if _, _, err := c.Join(ctx, "Alice", "guess", ""); !errors.Is(err, ErrWrongJoinCode) {
			t.Fatalf("Join: %v", err)
		}
		if list, _ := c.Students(ctx); len(list) != 0 {
			t.Fatalf("a refused join stored %v", list)
		}
	})
	t.Run("ErrWrongJoinCodeOfAnyLength", func(t *testing.T) {
		// The code is compared as SHA-256 digests, which all have one
		// length; what must hold is that no code but the class's passes,
		// whatever its length.
		c := newClass(t, "k8s-101", nil)
		for _, code := range []string{"", "k", "k8s-10", "k8s-1011", "k8s-101\x00", strings.Repeat("k8s-101", 100)} {
			if _, _, err := c.Join(ctx, "Alice", code, ""); !errors.Is(err, ErrWrongJoinCode) {
				t.Fatalf("Join with code %q: %v", code, err)
			}
		}
		if _, _, err := c.Join(ctx, "Alice", "k8s-101", ""); err != nil {
			t.Fatalf("Join with the class's code: %v", err)
		}
	})
	t.Run("ErrInvalidDisplayName", func(t *testing.T) {
		c := newClass(t, "", nil)
		if _, _, err := c.Join(ctx, "\u202E", "", ""); !errors.Is(err, ErrInvalidDisplayName) {
			t.Fatalf("Join: %v", err)
		}
	})
	t.Run("ErrProvisionGivesTheNameBack", func(t *testing.T) {
		fail := true
		c := newClass(t, "", func(context.Context, Student) error {
			if fail {
				return errors.New("etcd is down")
			}
			return nil
		})
		if _, _, err := c.Join(ctx, "Alice", "", ""); err == nil || !strings.Contains(err.Error(), "etcd is down") {
			t.Fatalf("Join: %v", err)
		}
		fail = false
		if s, _, err := c.Join(ctx, "Alice", "", ""); err != nil || s.Name != "alice" {
			t.Fatalf("retry: %+v %v", s, err)
		}
	})
	t.Run("ErrNameTakenTriesTheNextName", func(t *testing.T) {
		// Provision finds "alice" and "alice-2" are someone else's (a
		// namespace or a user kubelab did not make for this student).
		var tried []string
		c := newClass(t, "", func(_ context.Context, s Student) error {
			tried = append(tried, s.Name)
			if s.Name == "alice" || s.Name == "alice-2" {
				return fmt.Errorf("%w: namespace %s exists", ErrNameTaken, s.Name)
			}
			return nil
		})
		s, _, err := c.Join(ctx, "Alice", "", "")
		if err != nil || s.Name != "alice-3" || strings.Join(tried, ",") != "alice,alice-2,alice-3" {
			t.Fatalf("Join: %+v %v, tried %v", s, err, tried)
		}
		// The names that were someone else's are not held by anyone.
		if list, _ := c.Students(ctx); len(list) != 1 || list[0].Name != "alice-3" {
			t.Fatalf("students %+v", list)
		}
	})
	t.Run("OKConcurrentSameNameGetDistinctNames", func(t *testing.T) {
		c := newClass(t, "", nil)
		var wg sync.WaitGroup
		names := make(chan string, 10)
		for range 10 {
			wg.Go(func() {
				s, _, err := c.Join(ctx, "Alice", "", "")
				if err != nil {
					t.Error(err)
					return
				}
				names <- s.Name
			})
		}
		wg.Wait()
		close(names)
		seen := map[string]bool{}
		for n := range names {
			if seen[n] {
				t.Fatalf("name %s given twice", n)
			}
			seen[n] = true
		}
		if len(seen) != 10 || !seen["alice"] || !seen["alice-10"] {
			t.Fatalf("names %v", seen)
		}
		list, err := c.Students(ctx)
		if err != nil || len(list) != 10 {
			t.Fatalf("Students: %d %v", len(list), err)
		}
	})
}

// TestMaxStudents: a join code is shared, so each of its sign-ins, a
// stranger's or a student's throwaway, used to get a namespace and a
// quota without end. With MaxStudents the class holds that many: joins at
// once never pass it, and the one past it is told so.
func TestMaxStudents(t *testing.T) {
	ctx := context.Background()
	c := newClass(t, "", nil)
	c.cfg.MaxStudents = 5
	joined, refused := joinAtOnce(t, c, 12, "student", "", ErrNoSeatLeft)
	list, err := c.Students(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if joined != 5 || refused != 7 || len(list) != 5 {
		t.Fatalf("12 joins at once into a class of 5: %d joined, %d refused, %d students kept; want 5, 7 and 5", joined, refused, len(list))
	}
	_, _, err = c.Join(ctx, "one more", "", "")
	if !errors.Is(err, ErrNoSeatLeft) || !strings.Contains(err.Error(), "5 students have joined") {
		t.Errorf("a sixth join: %v, want ErrNoSeatLeft saying how many joined", err)
	}
}

// TestMaxJoinsPerAddress: each sign-in with the shared join code is a new
// student with requests in flight of their own, so four throwaways of one
// student filled the class's write slots. With MaxJoinsPerAddress, joins
// at once from one address never pass it, the one past it is told so,
// and other addresses, and joins with no address, are not held back.
func TestMaxJoinsPerAddress(t *testing.T) {
	ctx := context.Background()
	c := newClass(t, "", nil)
	c.cfg.MaxJoinsPerAddress = 2
	joined, refused := joinAtOnce(t, c, 8, "throwaway", "192.0.2.7", ErrAddressFull)
	if joined != 2 || refused != 6 {
		t.Fatalf("8 joins at once from one address, 2 allowed: %d joined, %d refused", joined, refused)
	}
	if _, _, err := c.Join(ctx, "one more", "", "192.0.2.7"); !errors.Is(err, ErrAddressFull) || !strings.Contains(err.Error(), "2 students have joined from 192.0.2.7") {
		t.Errorf("a third join from the address: %v, want ErrAddressFull saying how many", err)
	}
	for _, from := range []string{"192.0.2.8", "2001:db8::/64", ""} {
		if s, _, err := c.Join(ctx, "Bob", "", from); err != nil || s.From != from {
			t.Errorf("a join from %q: %+v %v", from, s, err)
		}
	}
	list, err := c.Students(ctx)
	if err != nil || len(list) != 5 {
		t.Fatalf("students kept: %d %v, want 5", len(list), err)
	}
}

// TestRemoveGivesTheSeatBack: no seat was ever given back, so throwaway
// accounts filled a class for good. A removed student frees their seat
// in the class and their address's, and is gone from the list.
func TestRemoveGivesTheSeatBack(t *testing.T) {
	ctx := context.Background()
	c := newClass(t, "", nil)
	c.cfg.MaxStudents, c.cfg.MaxJoinsPerAddress = 2, 1
	a, _, err := c.Join(ctx, "Alice", "", "192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Join(ctx, "Bob", "", "192.0.2.8"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Join(ctx, "Carol", "", "192.0.2.9"); !errors.Is(err, ErrNoSeatLeft) {
		t.Fatalf("a third join into a class of 2: %v, want ErrNoSeatLeft", err)
	}
	if ok, err := c.Remove(ctx, a.Name); !ok || err != nil {
		t.Fatalf("Remove(%s) = %v, %v", a.Name, ok, err)
	}
	if ok, err := c.Remove(ctx, a.Name); ok || err != nil {
		t.Fatalf("removing %s again = %v, %v; want false, nil", a.Name, ok, err)
	}
	if _, ok, _ := c.Get(ctx, a.Name); ok {
		t.Fatalf("%s is still in the class", a.Name)
	}
	// Alice's address had its one join: it is free again too.
	if _, _, err := c.Join(ctx, "Carol", "", "192.0.2.7"); err != nil {
		t.Fatalf("a join into the freed seat, from the freed address: %v", err)
	}
}

// joinAtOnce signs in n students named "name 0", "name 1", ... from the
// address from, all at once, and counts those who joined and those
// refused with refusal; any other error fails the test.
func joinAtOnce(t *testing.T, c *Class, n int, name, from string, refusal error) (joined, refused int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Go(func() {
			_, _, err := c.Join(context.Background(), fmt.Sprintf("%s %d", name, i), "", from)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				joined++
			case errors.Is(err, refusal):
				refused++
			default:
				t.Errorf("join %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	return joined, refused
}

// Names that read alike get one key: by case, width and spacing, and by
// letters that look like others (UTS #39's skeleton); names that look
// different keep their own.
func TestSameNameKey(t *testing.T) {
	same := [][]string{
		{"Bob Lee", "bob  lee", "Ｂｏｂ Ｌｅｅ", "BOB LEE", "B0b Lee", "\u0412\u041e\u0412 Lee", "b\u043eb lee"},
		{"Tim", "Tirn"},
		{"สมชาย ใจดี", "สมชาย  ใจดี"},
	}
	for _, names := range same {
		for _, n := range names[1:] {
			if SameNameKey(n) != SameNameKey(names[0]) {
				t.Errorf("%q and %q read alike, but their keys are %q and %q", names[0], n, SameNameKey(names[0]), SameNameKey(n))
			}
		}
	}
	apart := []string{"Bob Lee", "Rob Lee", "Alice", "สมชาย ใจดี", "Bob"}
	for i, a := range apart {
		for _, b := range apart[i+1:] {
			if SameNameKey(a) == SameNameKey(b) {
				t.Errorf("%q and %q look different, but share the key %q", a, b, SameNameKey(a))
			}
		}
	}
}
