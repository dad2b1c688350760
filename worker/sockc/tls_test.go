package sockc

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cicada-load/cicada/protocol"
	"github.com/cicada-load/cicada/worker/httpc"
)

// tlsEcho serves a TLS echo with httptest's self-signed certificate.
func tlsEcho(t *testing.T) string {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	cert := hs.TLS.Certificates[0]
	hs.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				b := make([]byte, 512)
				for {
					n, err := c.Read(b)
					if n > 0 {
						_, _ = c.Write(b[:n])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return "tls://" + ln.Addr().String()
}

func TestTLSEcho(t *testing.T) {
	u := tlsEcho(t)
	tests := []struct {
		name     string
		insecure bool
		kind     httpc.Kind // of the dial error; Other: none
	}{
		{"unverified certificate refused", false, httpc.TLSCertificate},
		{"insecure", true, httpc.Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs Counters
			c, err := DialTCP(context.Background(), u, &Options{InsecureSkipVerify: tt.insecure, Counters: &cs, Timeout: 5 * time.Second})
			if tt.kind != httpc.Other {
				if httpc.Classify(err) != tt.kind || cs.Snapshot().ConnectErrors[tt.kind] != 1 {
					t.Fatalf("err %v (%v), counters %+v", err, httpc.Classify(err), cs.Snapshot())
				}
				var pc protocol.ConnCounters
				cs.AddTo(&pc)
				if pc.TLSHandshakes != 0 || pc.TLSHandshakeMicros != 0 {
					t.Errorf("a failed handshake counted as completed: %+v", pc)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var pc protocol.ConnCounters
			cs.AddTo(&pc)
			if pc.TLSHandshakes != 1 || pc.TLSResumed != 0 || pc.TLSHandshakeMicros <= 0 || pc.Connects != 1 {
				t.Errorf("heartbeat counters after one handshake: %+v", pc)
			}
			if err := c.Send(context.Background(), []byte("secure\n")); err != nil {
				t.Fatal(err)
			}
			got, err := c.Read(context.Background(), Until{Delimiter: []byte("\n")}, nil)
			if err != nil || string(got) != "secure\n" {
				t.Fatalf("%q %v", got, err)
			}
		})
	}
}

func TestTCPServerClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = c.Write([]byte("partial"))
			c.Close()
		}
	}()
	var cs Counters
	c, err := DialTCP(context.Background(), "tcp://"+ln.Addr().String(), &Options{Counters: &cs, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Read(context.Background(), Until{Delimiter: []byte("\n")}, nil)
	if !errors.Is(err, ErrServerClosed) || httpc.Classify(err) != httpc.Incomplete {
		t.Fatalf("err %v", err)
	}
	if s := cs.Snapshot(); s.Closes["tcp close (server)"] != 1 || s.Errors[httpc.Incomplete] != 1 || s.Open != 0 {
		t.Fatalf("counters %+v", s)
	}
}
