package classroom_test

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// openInSpreadsheet opens a CSV export as an instructor's spreadsheet
// does: LibreOffice Calc, headless, imports it (UTF-8, commas), saves it
// in its own format, and that file is read back as CSV. What it returns is
// what the spreadsheet held. .ci/run installs LibreOffice; outside CI a
// machine without it skips.
func openInSpreadsheet(t *testing.T, export string) [][]string {
	t.Helper()
	soffice, err := exec.LookPath("soffice")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("LibreOffice (soffice) is missing: .ci/run installs libreoffice-calc-nogui")
		}
		t.Skip("LibreOffice (soffice) is not installed")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "export.csv")
	if err := os.WriteFile(in, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	// A profile of its own, so that runs at once do not share one.
	profile := "-env:UserInstallation=file://" + filepath.Join(dir, "profile")
	run := func(args ...string) {
		cmd := exec.Command(soffice, append([]string{profile, "--headless", "--norestore"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("soffice %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("--infilter=CSV:44,34,76", "--convert-to", "ods", "--outdir", dir, in)
	ods := filepath.Join(dir, "export.ods")
	if _, err := os.Stat(ods); err != nil {
		t.Fatalf("LibreOffice made no spreadsheet of the export: %v", err)
	}
	back := filepath.Join(dir, "back")
	run("--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76", "--outdir", back, ods)
	b, err := os.ReadFile(filepath.Join(back, "export.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(b), "\ufeff"))).ReadAll()
	if err != nil {
		t.Fatalf("the spreadsheet as CSV: %v\n%s", err, b)
	}
	return rows
}
