package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBinaries means no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries (initdb, postgres) found: " +
	"install the PostgreSQL server package (e.g. Debian's postgresql-15) or set DATABASE_URL")

// serverBinaries are the programs a bin directory must hold.
var serverBinaries = []string{"initdb", "postgres"}

// FindBinDir returns the directory holding initdb and postgres. It looks in
// hint (when set), next to the initdb on PATH, in `pg_config --bindir`, and
// in /usr/lib/postgresql/*/bin (newest version first), where Debian keeps them
// off PATH.
func FindBinDir(hint string) (string, error) {
	if hint != "" {
		if hasServerBinaries(hint) {
			return hint, nil
		}
		return "", fmt.Errorf("PostgreSQL bin directory %q has no initdb and postgres: point it at the server binaries or unset it", hint)
	}
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		// Resolve links (/usr/local/bin/initdb → /usr/lib/postgresql/15/bin)
		// so postgres comes from the same installation as initdb.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	candidates = append(candidates, debianBinDirs()...)
	for _, dir := range candidates {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func hasServerBinaries(dir string) bool {
	for _, name := range serverBinaries {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// debianBinDirs lists /usr/lib/postgresql/<version>/bin, newest first.
func debianBinDirs() []string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(matches, func(i, j int) bool {
		return majorVersion(matches[i]) > majorVersion(matches[j])
	})
	return matches
}

func majorVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}
