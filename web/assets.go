//go:build !dev

package web

import (
	"embed"
	"io/fs"
)

// distFS holds the built dashboard and report assets (web/ui/dist, built by
// web/ui/build.sh and committed so that `go build` needs no Node).
//
//go:embed ui/dist
var distFS embed.FS

// assets returns the asset file system rooted at ui/dist.
func assets() fs.FS {
	sub, err := fs.Sub(distFS, "ui/dist")
	if err != nil {
		panic(err) // cannot happen: the directory is embedded
	}
	return sub
}
