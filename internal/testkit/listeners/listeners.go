// Package listeners is for tests: the TCP listeners a process holds
// (read from Linux's /proc), and what each answers a browser's request
// for a foreign Host, so a test can check every listener a component
// opens, including those it does not announce.
package listeners

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Of returns the TCP addresses process pid listens on.
func Of(pid int) ([]netip.AddrPort, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	sockets := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			sockets[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return nil, fmt.Errorf("listeners: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(f))
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !sockets[fields[9]] {
				continue
			}
			ap, err := parseAddr(fields[1])
			if err != nil {
				return nil, fmt.Errorf("listeners: %s: %w", table, err)
			}
			out = append(out, ap)
		}
	}
	return out, nil
}

// parseAddr reads /proc/net/tcp's ADDR:PORT: the address in hex, each
// 32-bit word in the machine's (little-endian) order, the port in hex.
func parseAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(a)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}

// Answer is what a listener answered a plain HTTP/1.1 GET.
type Answer struct {
	// Status of the HTTP answer; 0 when what answered is not HTTP/1 (it
	// closed the connection, answered in another protocol, or said
	// nothing in time): nothing a browser would read.
	Status int
	// Header and the start of the body of an HTTP answer.
	Header http.Header
	Body   string
}

// Probe sends GET path to addr (a listener on any address is reached on
// loopback) with host as its Host, as a browser at a page of that name
// would, and returns what came back within timeout.
func Probe(addr netip.AddrPort, host, path string, timeout time.Duration) Answer {
	target := addr
	if addr.Addr().IsUnspecified() {
		target = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), addr.Port())
		if addr.Addr().Is6() {
			target = netip.AddrPortFrom(netip.IPv6Loopback(), addr.Port())
		}
	}
	conn, err := net.DialTimeout("tcp", target.String(), timeout)
	if err != nil {
		return Answer{}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: */*\r\nConnection: close\r\n\r\n", path, host); err != nil {
		return Answer{}
	}
	r := bufio.NewReader(conn)
	if start, err := r.Peek(5); err != nil || string(start) != "HTTP/" {
		return Answer{}
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return Answer{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}
}
