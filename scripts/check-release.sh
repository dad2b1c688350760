#!/usr/bin/env bash
# Checks what make release built: check-release.sh DIR VERSION OS/ARCH...
# Every binary is listed in DIR/SHA256SUMS and matches it; `go version -m`
# shows its GOOS, GOARCH, CGO_ENABLED=0 (static) and -trimpath; the
# version stamped by -X main.version is in it; the binary for this machine runs and
# prints "cicada VERSION". Exits non-zero at the first mismatch.
set -euo pipefail
dir=$1 version=$2
shift 2
GO=${GO:-go}
fail() { echo "check-release: $*" >&2; exit 1; }
[ -n "$version" ] || fail "empty version"
(cd "$dir" && sha256sum --quiet -c SHA256SUMS) || fail "checksums do not match $dir/SHA256SUMS"
[ "$(wc -l < "$dir/SHA256SUMS")" -eq $# ] || fail "$dir/SHA256SUMS lists $(wc -l < "$dir/SHA256SUMS") files, want $#"
native="$($GO env GOOS)/$($GO env GOARCH)"
for t in "$@"; do
	os=${t%/*} arch=${t#*/}
	bin="$dir/cicada-$version-$os-$arch"
	[ -f "$bin" ] || fail "$bin missing"
	grep -q " cicada-$version-$os-$arch\$" "$dir/SHA256SUMS" || fail "$bin not in SHA256SUMS"
	info=$($GO version -m "$bin")
	for want in "GOOS=$os" "GOARCH=$arch" "CGO_ENABLED=0" "-trimpath=true"; do
		grep -q -- "$want" <<<"$info" || fail "$bin: no $want in go version -m"
	done
	# -trimpath leaves -ldflags out of the build info: look for the stamped string itself.
	grep -qaF -- "$version" "$bin" || fail "$bin: version $version not stamped in"
	if [ "$t" = "$native" ]; then
		got=$("$bin" --version)
		[ "$got" = "cicada $version" ] || fail "$bin --version: $got, want cicada $version"
	fi
	echo "ok $bin $(stat -c %s "$bin") bytes"
done
