package i18n

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestTextIn(t *testing.T) {
	x := Text{"watch", "วอตช์"}
	if x.In(English) != "watch" || x.In(Thai) != "วอตช์" || x.In("fr") != "watch" {
		t.Errorf("In: %q %q %q", x.In(English), x.In(Thai), x.In("fr"))
	}
	if got := (Text{EN: "only"}).In(Thai); got != "only" {
		t.Errorf("untranslated Thai: %q, want the English", got)
	}
	if got := Same("a").Plus(Text{"b", "ข"}); got != (Text{"ab", "aข"}) {
		t.Errorf("Plus: %+v", got)
	}
}

// Progress stored before a field became bilingual holds a bare string.
func TestTextJSON(t *testing.T) {
	var x Text
	if err := json.Unmarshal([]byte(`"old"`), &x); err != nil || x != (Text{EN: "old"}) {
		t.Errorf("bare string: %+v, %v", x, err)
	}
	b, _ := json.Marshal(Text{"a", "ก"})
	if string(b) != `{"en":"a","th":"ก"}` {
		t.Errorf("Marshal: %s", b)
	}
	if err := json.Unmarshal(b, &x); err != nil || x != (Text{"a", "ก"}) {
		t.Errorf("round trip: %+v, %v", x, err)
	}
	if err := json.Unmarshal([]byte(`[1]`), &x); err == nil {
		t.Error("an array read as a Text")
	}
}

type words struct {
	Lang   Lang
	Title  string
	Errors map[int]string
	Lines  [][]string
	Note   *string
}

func TestCatalogIn(t *testing.T) {
	c := Catalog[words]{English: {Title: "Labs"}, Thai: {Title: "แล็บ"}}
	if c.In(Thai).Title != "แล็บ" || c.In("fr").Title != "Labs" {
		t.Errorf("In: %q %q", c.In(Thai).Title, c.In("fr").Title)
	}
}

// Missing must find every way a translation can fall short, or the
// catalogues' tests prove nothing.
func TestCatalogMissing(t *testing.T) {
	note := "n"
	whole := words{Title: "t", Errors: map[int]string{404: "x"}, Lines: [][]string{{"a", "b"}}, Note: &note}
	if m := (Catalog[words]{English: whole, Thai: whole}).Missing(); len(m) != 0 {
		t.Errorf("a whole catalogue: %q", m)
	}
	for name, c := range map[string]struct {
		th   func(*words)
		want string
	}{
		"empty string":    {func(w *words) { w.Title = "" }, `th.Title: "t" in English, "" here`},
		"key left out":    {func(w *words) { w.Errors = map[int]string{} }, "th.Errors[404]: missing"},
		"empty value":     {func(w *words) { w.Errors = map[int]string{404: ""} }, `th.Errors[404]: "x" in English, "" here`},
		"extra key":       {func(w *words) { w.Errors = map[int]string{404: "x", 500: "y"} }, "th.Errors[500]: not in English"},
		"short list":      {func(w *words) { w.Lines = [][]string{{"a"}} }, "th.Lines[0]: 2 elements in English, 1 here"},
		"empty element":   {func(w *words) { w.Lines = [][]string{{"a", ""}} }, `th.Lines[0][1]: "b" in English, "" here`},
		"nil pointer":     {func(w *words) { w.Note = nil }, "th.Note: nil in one language only"},
		"nothing changed": {func(w *words) {}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			th := whole
			th.Errors = map[int]string{404: "x"}
			c.th(&th)
			got := (Catalog[words]{English: whole, Thai: th}).Missing()
			if c.want == "" {
				if len(got) != 0 {
					t.Errorf("got %q, want nothing", got)
				}
				return
			}
			if !slices.Equal(got, []string{c.want}) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	if got := (Catalog[words]{English: whole}).Missing(); !slices.Equal(got, []string{"th: not declared"}) {
		t.Errorf("no Thai: %q", got)
	}
	if got := (Catalog[words]{Thai: whole}).Missing(); !slices.Equal(got, []string{"en: not declared"}) {
		t.Errorf("no English: %q", got)
	}
}

type step struct {
	Title Text
	Hint  Text
	Next  *step
	Any   any
	Check func()
}

func TestUntranslated(t *testing.T) {
	a := &step{Title: Text{"a", "ก"}, Check: func() {}}
	a.Next = a // a cycle must end
	bank := map[string][]*step{"lab": {a, {Title: Text{"b", "ข"}, Any: Text{"c", ""}, Hint: Text{"", "ง"}}}}
	got := Untranslated(bank)
	slices.Sort(got)
	want := []string{`[lab][1].Any: English "c", Thai ""`, `[lab][1].Hint: English "", Thai "ง"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Untranslated([]Text{{"x", "ก"}, {}}); len(got) != 0 {
		t.Errorf("whole and empty Texts: %q", got)
	}
}
