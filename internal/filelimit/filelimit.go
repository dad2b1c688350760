// Package filelimit reads the files an operator names on the command line
// (scenario files, locust.conf files) with a bound on their size, so that a
// path like /dev/zero, a FIFO or a huge file is refused with a clear error
// instead of growing the process without limit. It imports only the
// standard library.
package filelimit

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Errors returned by Read, wrapped with the path and the details.
var (
	// ErrNotRegular means the path names a directory, device, FIFO or
	// socket rather than a regular file.
	ErrNotRegular = errors.New("filelimit: not a regular file")
	// ErrTooLarge means the file is larger than the caller's limit.
	ErrTooLarge = errors.New("filelimit: file too large")
)

// Read returns the contents of the regular file at path (symbolic links are
// followed), or an error wrapping ErrNotRegular or ErrTooLarge when it is
// not a regular file or holds more than max bytes. The file is checked
// before it is opened, so opening a FIFO cannot block, and again once
// open; at most max+1 bytes are ever read, so a file that grows while it
// is read is refused too. Errors from the file system are returned as
// os.ReadFile returns them (errors.Is(err, os.ErrNotExist) works).
func Read(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(path, fi, max); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s grew beyond %s while it was read", ErrTooLarge, path, Size(max))
	}
	return data, nil
}

func check(path string, fi os.FileInfo, max int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is %s", ErrNotRegular, path, kind(fi.Mode()))
	}
	if fi.Size() > max {
		return fmt.Errorf("%w: %s has %s, the limit is %s", ErrTooLarge, path, Size(fi.Size()), Size(max))
	}
	return nil
}

// kind names a non-regular file type for error messages.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (mode " + m.String() + ")"
}

// Size formats a byte count for error messages: whole MiB or KiB when
// exact, bytes otherwise.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
