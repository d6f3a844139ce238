package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestShutdownDrain: serve's HTTP server stops within its drain limit
// whatever its requests do: a short one finishes, one that works until
// its context ends is cancelled (and still answers), one that ignores
// its context loses its connection; the cut ones are counted.
func TestShutdownDrain(t *testing.T) {
	t.Parallel()
	const limit = 1500 * time.Millisecond
	tests := []struct {
		name       string
		handler    func(ctx context.Context, release <-chan struct{}) int
		wantStatus int // 0: the connection is closed without an answer
		wantCut    int64
		wantCancel bool
	}{
		{"a short request finishes", func(ctx context.Context, _ <-chan struct{}) int {
			time.Sleep(200 * time.Millisecond)
			return http.StatusOK
		}, http.StatusOK, 0, false},
		{"a long request is cancelled", func(ctx context.Context, _ <-chan struct{}) int {
			for ctx.Err() == nil { // work, checking the context now and then
				time.Sleep(time.Millisecond)
			}
			return http.StatusServiceUnavailable
		}, http.StatusServiceUnavailable, 1, true},
		{"a request that ignores its context is cut off", func(_ context.Context, release <-chan struct{}) int {
			<-release
			return http.StatusOK
		}, 0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			started, release, cancelled := make(chan struct{}), make(chan struct{}), make(chan bool, 1)
			t.Cleanup(func() { close(release) })
			srv := newAPIServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				status := tt.handler(r.Context(), release)
				cancelled <- r.Context().Err() != nil
				w.WriteHeader(status)
			}))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = srv.Serve(ln) }()
			answer := make(chan int, 1)
			go func() {
				resp, err := http.Get("http://" + ln.Addr().String() + "/")
				if err != nil {
					answer <- 0
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answer <- resp.StatusCode
			}()
			<-started
			begun := time.Now()
			cut, err := srv.drain(limit)
			took := time.Since(begun)
			if err != nil || cut != tt.wantCut {
				t.Fatalf("drain: %d cut, %v; want %d cut, no error", cut, err, tt.wantCut)
			}
			if took > limit+500*time.Millisecond {
				t.Fatalf("drain took %v, over its limit of %v", took, limit)
			}
			select {
			case got := <-answer:
				if got != tt.wantStatus {
					t.Fatalf("the client got %d, want %d", got, tt.wantStatus)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the client got nothing, not even a closed connection")
			}
			if tt.wantStatus != 0 {
				if got := <-cancelled; got != tt.wantCancel {
					t.Fatalf("the handler's context cancelled: %t, want %t", got, tt.wantCancel)
				}
			}
			if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
				t.Fatal("the server still takes requests after drain")
			}
		})
	}
}

// TestShutdownClientGone: a request's context ends when its client goes.
func TestShutdownClientGone(t *testing.T) {
	t.Parallel()
	started, done := make(chan struct{}), make(chan error, 1)
	srv := newAPIServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			done <- r.Context().Err()
		case <-time.After(5 * time.Second):
			done <- errors.New("the context outlived its client")
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _, _ = srv.drain(time.Second) })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	conn.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's context: %v, want cancelled", err)
	}
}
