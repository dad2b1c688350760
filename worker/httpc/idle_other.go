//go:build !(linux && (amd64 || arm64))

package httpc

// idleAlive cannot peek on this platform: a connection the server closed
// is detected when the request on it fails, and the request is retried
// once on a new connection.
func (c *Client) idleAlive() bool { return true }
