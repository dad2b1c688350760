package worker

// httpOptions is replaced by httpc.Options once worker/httpc lands.
type httpOptions struct{}

// httpState is a user's lazily created HTTP client.
type httpState struct{}

func (h *httpState) close() {}
