package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverCredential is nil when we are not root; as root it names the
// unprivileged user the server runs as, since PostgreSQL refuses root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, errors.New("pgserver: running as root, and PostgreSQL refuses root: create a 'postgres' user or run as another user")
}

// checkReachable tells whether the server user can walk down to dir; a
// data directory under /root, say, is not.
func checkReachable(dir string, cred *syscall.Credential) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgserver: stat %s: %w", d, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		searchable := mode&0o001 != 0 ||
			(ok && st.Uid == cred.Uid && mode&0o100 != 0) ||
			(ok && st.Gid == cred.Gid && mode&0o010 != 0)
		if !searchable {
			return fmt.Errorf("pgserver: the PostgreSQL server runs as uid %d, which cannot enter %s (mode %v): "+
				"choose a data directory outside it, or chmod o+x it", cred.Uid, d, mode)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
