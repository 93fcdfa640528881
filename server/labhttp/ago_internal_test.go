package labhttp

import (
	"reflect"
	"testing"
	"time"

	"github.com/kubelab/kubelab/web/i18n"
)

func TestAgo(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		before time.Duration
		en, th string
	}{
		{"OKJustNow", 10 * time.Second, "just now", "เมื่อสักครู่"},
		{"OKFutureFromAnotherClock", -5 * time.Second, "just now", "เมื่อสักครู่"},
		{"OKOneMinute", 50 * time.Second, "1 min ago", "1 นาทีที่แล้ว"},
		{"OKMinutes", 3*time.Minute + 20*time.Second, "3 min ago", "3 นาทีที่แล้ว"},
		{"OKHours", 2*time.Hour + 59*time.Minute, "2 h ago", "2 ชั่วโมงที่แล้ว"},
		{"OKDays", 50 * time.Hour, "2 d ago", "2 วันที่แล้ว"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := now.Add(-tc.before)
			if got := ago(now, at, ui(i18n.English)); got != tc.en {
				t.Errorf("English: %q, want %q", got, tc.en)
			}
			if got := ago(now, at, ui(i18n.Thai)); got != tc.th {
				t.Errorf("Thai: %q, want %q", got, tc.th)
			}
		})
	}
}

// Every word of the pages has a Thai translation: a key added in English
// only would show an empty string in Thai.
func TestEveryStringInBothLanguages(t *testing.T) {
	for _, l := range []i18n.Lang{i18n.English, i18n.Thai} {
		v := reflect.ValueOf(texts[l])
		for i := range v.NumField() {
			if v.Field(i).String() == "" {
				t.Errorf("%s: %s is empty", l, v.Type().Field(i).Name)
			}
		}
	}
}
