package main

import (
	"fmt"
	"io"

	"github.com/cicada-load/cicada/config"
)

func runMode(cfg *config.Config, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "cicada: master, worker and standalone modes are being wired in")
	return 1
}

func runTarget(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "cicada: target is being wired in")
	return 1
}
