# cicada: a Go load tester that joins Locust clusters.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
GO      ?= go
PKGS    := ./...
# The pinned linter of the gate (make tools installs it; .ci/run does).
GOLANGCI_LINT_VERSION := v2.15.0
export GOLANGCI_LINT_VERSION GO

.PHONY: build-dpdk build-dpdk-static test-dpdk
.PHONY: image release check-deploy peers
.PHONY: web all build run test test-short lint tidy check check-web check-commits tools fuzz generate goldens bench check-generated examples clean

all: build

## build: static binary in bin/cicada
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cicada ./cmd/cicada

## image: the FROM scratch container image (Containerfile) with podman, or buildah; pulls nothing
IMAGE ?= localhost/cicada
IMAGE_TOOL ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || (command -v buildah >/dev/null 2>&1 && echo buildah))
image: build
	@if [ -z "$(IMAGE_TOOL)" ]; then echo "make image: needs podman or buildah (apt-get install podman runc)"; exit 1; fi
	$(IMAGE_TOOL) build --pull=never --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) -t $(IMAGE):latest -f Containerfile .

## check-deploy: deploy/check (its own module): every manifest of deploy/k8s, deploy/podman and the
## rendered Helm chart decoded strictly into the Kubernetes API types, helm lint, its fuzz target
## (scripts/fuzz-all.sh); builds the pinned helm from the Go module proxy into GOPATH/bin when it is missing (first build: minutes; cached after)
HELM_VERSION := v3.17.3
check-deploy:
	@h=$$(command -v helm || echo "$$($(GO) env GOPATH)/bin/helm"); \
	if [ ! -x "$$h" ] || ! $(GO) version -m "$$h" 2>/dev/null | grep -Eq "helm.sh/helm/v3[[:space:]]+$(HELM_VERSION)[[:space:]]"; then \
		echo "check-deploy: building helm $(HELM_VERSION) (go install)"; \
		$(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) || exit 1; h="$$($(GO) env GOPATH)/bin/helm"; fi; \
	cd deploy/check && $(GO) mod tidy -diff && $(GO) vet ./... && \
		if command -v golangci-lint >/dev/null; then golangci-lint run ./...; fi && \
		HELM="$$h" $(GO) test -count=1 -timeout 5m ./...
	FUZZ_MODULE=deploy/check ./scripts/fuzz-all.sh $(FUZZTIME)

## release: static binaries in dist/ (CGO_ENABLED=0, -trimpath, version stamped) for linux/amd64,
## linux/arm64 and the CLI on darwin/amd64 and darwin/arm64, and dist/SHA256SUMS; then checks them
## (scripts/check-release.sh: checksums, GOOS/GOARCH/CGO_ENABLED and version of each, the native one run)
RELEASE_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	rm -rf dist && mkdir -p dist
	@set -e; for t in $(RELEASE_TARGETS); do os=$${t%/*}; arch=$${t#*/}; \
		out=dist/cicada-$(VERSION)-$$os-$$arch; echo "build $$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$out ./cmd/cicada; done
	cd dist && sha256sum cicada-* > SHA256SUMS
	./scripts/check-release.sh dist $(VERSION) $(RELEASE_TARGETS)

## run: the main job on the embedded default target (built-in server + short local test)
run: build
	./scripts/run-demo.sh

## peers: install the tests' peers that are missing (scripts/peers.sh): Debian packages with apt-get
## as root (otherwise it stops, naming `sudo make peers`), npm ci in web/ui, Go modules, golangci-lint
peers:
	@./scripts/peers.sh

## test: everything CI runs (the gate, unit, interop with real Locust/pyzmq/nginx, race, short fuzz);
## first installs missing peers (make peers)
test: peers build check
	$(GO) vet $(PKGS)
	GO=$(GO) ./scripts/test-race.sh $(PKGS)
	GOARCH=386 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/cicada
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/cicada
	$(MAKE) examples
	$(MAKE) check-deploy
	$(MAKE) fuzz
	$(MAKE) test-dpdk

## build-dpdk: bin/cicada-dpdk with the DPDK link (cgo, tag dpdk; needs libdpdk-dev and
## pkg-config; links DPDK's shared libraries, whose drivers the EAL loads as plugins)
build-dpdk:
	CGO_ENABLED=1 $(GO) build -trimpath -tags dpdk -ldflags '$(LDFLAGS)' -o bin/cicada-dpdk ./cmd/cicada

# DPDK linked statically: every library and driver from `pkg-config --static`, given to the
# final link only (in CGO_LDFLAGS each cgo package of the standard library would repeat the
# whole-archive list, and the link would fail on duplicate symbols). glibc and the drivers'
# system libraries (libibverbs, libbpf, libxdp, libnuma...) stay shared.
DPDK_STATIC_BUILD = CGO_ENABLED=1 CGO_CFLAGS="$$(pkg-config --cflags libdpdk)" $(GO)
DPDK_STATIC_FLAGS = -tags dpdk,dpdk_static -ldflags "$(LDFLAGS) -linkmode external -extldflags '$$(pkg-config --static --libs libdpdk)'"

## build-dpdk-static: bin/cicada-dpdk-static, DPDK and its drivers linked in
build-dpdk-static:
	$(DPDK_STATIC_BUILD) build -trimpath $(DPDK_STATIC_FLAGS) -o bin/cicada-dpdk-static ./cmd/cicada

## test-dpdk: the dpdk-tagged code: both builds, vet, lint, tests with shared (-race) and static
## linking (root: the EAL and the lab), the users runtime and `cicada --dataplane dpdk` over DPDK
## in the lab. Without libdpdk: fails under CI=true, skipped otherwise.
DPDK_PKGS := ./dataplane/link/dpdk/
test-dpdk:
	@if ! pkg-config --exists libdpdk; then \
		if [ "$$CI" = true ]; then echo "test-dpdk: libdpdk-dev missing (pkg-config libdpdk)"; exit 1; fi; \
		echo "test-dpdk: skipped: libdpdk-dev missing (apt-get install libdpdk-dev dpdk pkg-config libsystemd-dev)"; exit 0; fi; \
	set -e; \
	CGO_ENABLED=0 $(GO) build -o /dev/null ./...; \
	$(MAKE) build-dpdk build-dpdk-static; \
	$(GO) vet -tags dpdk $(DPDK_PKGS) ./dataplane/users/ ./cmd/cicada/; \
	if command -v golangci-lint >/dev/null; then golangci-lint run --build-tags dpdk $(DPDK_PKGS)... ./dataplane/users/... ./cmd/cicada/...; fi; \
	CGO_ENABLED=1 $(GO) test -tags dpdk -race -count=1 -timeout 5m $(DPDK_PKGS); \
	CGO_ENABLED=1 $(GO) test -tags dpdk -race -count=1 -timeout 5m -run DPDK ./dataplane/users/; \
	CGO_ENABLED=1 $(GO) test -tags dpdk -count=1 -timeout 5m -run DPDK ./cmd/cicada/; \
	$(DPDK_STATIC_BUILD) test $(DPDK_STATIC_FLAGS) -count=1 -timeout 5m $(DPDK_PKGS)

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
