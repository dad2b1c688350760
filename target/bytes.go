package target

import (
	"sync"

	"github.com/valyala/fasthttp"
)

// MaxObjectSize is the largest object /bytes/<n> serves (16 MiB): the
// object sizes of RFC 9411's HTTP throughput test (1 KiB to 512 KiB) with
// room to spare.
const MaxObjectSize = 16 << 20

var prefixBytes = []byte("/bytes/")

// objects is one read-only buffer of MaxObjectSize bytes, made on the first
// /bytes/ request; every response body is a prefix of it.
var objects = sync.OnceValue(func() []byte {
	b := make([]byte, MaxObjectSize)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
})

// serveBytes answers /bytes/<n> with an n-byte body (0..MaxObjectSize) of
// lowercase letters, application/octet-stream; any other n is a 400.
func (s *Server) serveBytes(ctx *fasthttp.RequestCtx, n []byte) {
	s.requests.Add(1)
	size, ok := atoiPath(n)
	if !ok || size > MaxObjectSize {
		badRequest(ctx, "size must be 0-16777216 bytes")
		return
	}
	ctx.SetContentType("application/octet-stream")
	ctx.Response.SetBodyRaw(objects()[:size])
}
