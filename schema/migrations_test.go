package schema_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/schema"
)

// ledgerFile lists every migration in the order it was added, each with
// the sha256 of its text. It is appended to, never edited: a line changed
// or removed is a frozen migration changed or removed.
const ledgerFile = "migrations.txt"

type migration struct {
	name    string
	version int
	sum     string
	pkg     string // which package's directory holds it
}

// migrationFiles reads every package's versioned migrations.
func migrationFiles(t *testing.T) []migration {
	t.Helper()
	var out []migration
	for i, dir := range schema.Schema().Migrations {
		names, err := fs.Glob(dir, "*.sql")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if name == "functions.sql" {
				continue
			}
			v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
			if err != nil {
				t.Fatalf("migration %s: its name does not start with a version (NNNNN_name.sql)", name)
			}
			data, err := fs.ReadFile(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			out = append(out, migration{name: name, version: v, sum: hex.EncodeToString(sum[:]), pkg: fmt.Sprint("package #", i)})
		}
	}
	return out
}

// TestMigrationsLedger: every migration's version is its own, a new
// migration is numbered above every one before it, and none already
// released changes. Adding one: name it one above the last line of
// schema/migrations.txt and append the line this test prints. Two
// branches that each add one meet in a merge conflict on that last line.
func TestMigrationsLedger(t *testing.T) {
	t.Parallel()
	all := migrationFiles(t)
	byVersion := map[int]string{}
	byName := map[string]migration{}
	for _, m := range all {
		if other, ok := byVersion[m.version]; ok {
			t.Errorf("migrations %s and %s share version %d: give the newer one the next free number", other, m.name, m.version)
		}
		byVersion[m.version] = m.name
		byName[m.name] = m
	}
	f, err := os.Open(ledgerFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	last := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, sum, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s:%d: want \"NNNNN_name.sql SHA256\", got %q", ledgerFile, n, line)
		}
		m, found := byName[name]
		switch {
		case !found:
			t.Errorf("%s:%d: %s is gone: a released migration stays (undo it with a new one)", ledgerFile, n, name)
			continue
		case m.sum != sum:
			t.Errorf("%s:%d: %s changed: a released migration is frozen (change the schema with a new one)", ledgerFile, n, name)
		case m.version <= last:
			t.Errorf("%s:%d: %s is not above the migration before it (version %d)", ledgerFile, n, name, last)
		}
		listed[name] = true
		last = max(last, m.version)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b migration) int { return a.version - b.version })
	for _, m := range all {
		if listed[m.name] {
			continue
		}
		if m.version <= last {
			t.Errorf("new migration %s: its version %d is not above the last released one (%d): renumber it %05d", m.name, m.version, last, last+1)
			continue
		}
		t.Errorf("new migration %s: append to schema/%s the line\n%s %s", m.name, ledgerFile, m.name, m.sum)
		last = m.version
	}
}
