package httpc_test

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/cicada-load/cicada/worker/httpc"
)

// Users of a TLS gateway with their own CA and client certificate, TLS 1.3
// only, a full handshake per new connection, speaking HTTP/2 with up to 10
// streams each.
func ExampleTLSOptions() {
	cfg, err := httpc.NewConfig("https://gw.example:8443", httpc.Options{
		HTTP2:        true,
		HTTP2Streams: 10,
		TLS: httpc.TLSOptions{
			CAFile:     "ca.pem",
			CertFile:   "client.pem",
			KeyFile:    "client.key",
			ServerName: "gw.example",
			MinVersion: tls.VersionTLS13,
		},
	})
	if err != nil {
		fmt.Println(err) // the files are read here: a missing one is named
		return
	}
	user := cfg.NewClient()
	defer user.Close()
	resp, err := user.Do(context.Background(), &httpc.Request{Path: "/"})
	if err != nil {
		fmt.Println(httpc.Classify(err), err) // e.g. TLS certificate SSLCertVerificationError(...)
		return
	}
	fmt.Println(resp.StatusCode, user.Counters().TLSHandshakes)
}
