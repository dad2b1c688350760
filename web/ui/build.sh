#!/bin/sh
# Builds the dashboard and report assets into web/ui/dist (committed, so
# `go build` works from a clean checkout without Node). Needs node + npm:
#   cd web/ui && npm ci && sh build.sh
set -eu
cd "$(dirname "$0")"
[ -x node_modules/.bin/esbuild ] || npm ci --no-audit --no-fund
ESBUILD=node_modules/.bin/esbuild
COMMON="--bundle --minify --target=es2020 --legal-comments=none --log-level=warning"
rm -rf dist.tmp && mkdir -p dist.tmp
$ESBUILD src/app.js $COMMON --format=iife --outfile=dist.tmp/app.js
$ESBUILD src/report.js $COMMON --format=iife --outfile=dist.tmp/report.js
cp src/index.html dist.tmp/index.html
cp node_modules/uplot/LICENSE dist.tmp/uPlot.LICENSE 2>/dev/null || true
rm -rf dist && mv dist.tmp dist
ls -l dist
