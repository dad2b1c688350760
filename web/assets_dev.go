//go:build dev

package web

import (
	"io/fs"
	"os"
)

// assets serves web/ui/dist from disk (build with -tags dev and run from the
// repository root, or set CICADA_WEB_DIST), so a rebuilt front end shows up
// without recompiling the binary.
func assets() fs.FS {
	dir := os.Getenv("CICADA_WEB_DIST")
	if dir == "" {
		dir = "web/ui/dist"
	}
	return os.DirFS(dir)
}
