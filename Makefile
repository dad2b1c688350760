# cicada: a Go load tester that joins Locust clusters.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
GO      ?= go
PKGS    := ./...
# The pinned linter of the gate (make tools installs it; .ci/run does).
GOLANGCI_LINT_VERSION := v2.15.0
export GOLANGCI_LINT_VERSION GO

.PHONY: web all build run test test-short lint tidy check check-web check-commits tools fuzz generate goldens bench check-generated examples clean

all: build

## build: static binary in bin/cicada
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cicada ./cmd/cicada

## run: the main job on the embedded default target (built-in server + short local test)
run: build
	./scripts/run-demo.sh

## test: everything CI runs (the gate, unit, interop with real Locust/pyzmq/nginx, race, short fuzz)
test: build check
	$(GO) vet $(PKGS)
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 15m $(PKGS)
	GOARCH=386 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/cicada
	$(MAKE) examples
	$(MAKE) fuzz

test-short:
	$(GO) test -short -count=1 $(PKGS)

examples:
	@for d in $$(find examples -name '*.go' -exec dirname {} \; | sort -u); do \
		echo "build $$d"; CGO_ENABLED=0 $(GO) build -o /dev/null ./$$d || exit 1; done

## fuzz: each fuzz target briefly
FUZZTIME ?= 5s
fuzz:
	@./scripts/fuzz-all.sh $(FUZZTIME)

## check: the code-health gate (scripts/gate.sh): tidy go.mod, lint, fresh dashboard build, commit subjects
check:
	@./scripts/gate.sh all

## lint: gofmt and golangci-lint with .golangci.yml (missing linter: fails under CI=true, skipped otherwise)
lint:
	@./scripts/gate.sh lint

tidy:
	@./scripts/gate.sh tidy

## check-web: rebuild web/ui/dist with npm and require git diff to stay clean
check-web:
	@./scripts/gate.sh web

check-commits:
	@./scripts/gate.sh commits

## tools: install the pinned golangci-lint into $(GO) env GOPATH/bin
tools:
	$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

## goldens: regenerate golden files from the real Locust (Debian python3-locust)
goldens:
	$(GO) test ./stats/ -run Golden -update

generate:
	$(GO) generate $(PKGS)

check-generated: generate
	git diff --exit-code

bench:
	./bench/run-all.sh

clean:
	rm -rf bin

## web: rebuild the dashboard assets (needs npm; the built files are committed)
web:
	cd web/ui && npm ci --no-audit --no-fund && sh ./build.sh
