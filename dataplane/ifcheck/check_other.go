//go:build !linux

package ifcheck

import "fmt"

func read(name string) (state, error) {
	return state{}, fmt.Errorf("ifcheck: %s: %w", name, ErrUnsupported)
}
