package httpc

// Lookup returns the first value of the header named key
// (case-insensitive) and whether the response has it: a header present
// with an empty value is ("", true). It allocates only the value.
func (r *Response) Lookup(key string) (string, bool) {
	v, ok := r.lookup(key)
	return string(v), ok
}
