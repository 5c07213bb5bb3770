# Assay: `make run` starts the host with every family; `make test` runs the
# whole suite. Nothing here needs more than Go and node.
GO      ?= go
BIN     := bin
# every plugins/<name>/main.go builds bin/assay-<name>; engine packages without
# a main (work in progress) are tested but not built
PLUGINS := $(patsubst plugins/%/main.go,%,$(wildcard plugins/*/main.go))
# the host's version, stamped at link time: GOFLAGS here carries
# -buildvcs=false and the image's build context leaves .git out, so the
# build info alone names no revision. ASSAY_VERSION first (the image's build
# arg), else git describe in a checkout; neither leaves it unstamped
VERSION := $(or $(ASSAY_VERSION),$(if $(wildcard .git),$(shell git describe --tags --always --dirty 2>/dev/null)))
LDFLAGS := $(if $(VERSION),-X github.com/assay-audit/assay/host/version.stamped=$(VERSION))
# plugins build without the checkout's path or VCS state in them: the same
# commit and Go toolchain give the same binaries, so a report's build
# digests can be rebuilt by whoever verifies it (assay verify --submission)
PLUGIN_FLAGS := -trimpath -buildvcs=false

.PHONY: build run test test-go corpus-test corpus proto bench bench-compare screenshots fmt vet clean

build:
	@mkdir -p $(BIN)
	$(GO) build $(if $(LDFLAGS),-ldflags '$(LDFLAGS)') -o $(BIN)/assay ./host/cmd/assay
	@for p in $(PLUGINS); do echo "$(GO) build $(PLUGIN_FLAGS) -o $(BIN)/assay-$$p ./plugins/$$p"; $(GO) build $(PLUGIN_FLAGS) -o $(BIN)/assay-$$p ./plugins/$$p || exit 1; done
	$(BIN)/assay plugins pin --dir $(BIN) > $(BIN)/assay.hcl

run: build
	$(BIN)/assay serve --data-dir ./var --payments house

test: build vet test-go corpus-test

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'); exit 1; }
	$(GO) vet ./...
	cd sdk && $(GO) vet ./...

# sdk/ is a module of its own (what plugin authors require): ./... from
# the root does not reach it
test-go: build
	ASSAY_BIN=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout 30m ./...
	cd sdk && ASSAY_BIN=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout 30m ./...

corpus-test: build
	node corpus/gen-corpus.mjs --check
	node corpus/harness.mjs --spawn $(BIN)/assay

# Regenerate every corpus.json and re-pin the served criteria documents.
corpus:
	node corpus/gen-corpus.mjs

# protoc-free: buf compiles the .proto, the plugins run via go run; keep
# protoc-gen-go at go.mod's google.golang.org/protobuf version
BUF           := github.com/bufbuild/buf/cmd/buf@v1.75.0
GEN_GO        := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GEN_GO_GRPC   := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
PROTO_PLUGIN   = {"local":["$(GO)","run","$(1)"],"out":"sdk/proto/pluginv1","opt":"paths=source_relative"}
proto:
	$(GO) run $(BUF) generate sdk/proto --template \
		'{"version":"v2","plugins":[$(call PROTO_PLUGIN,$(GEN_GO)),$(call PROTO_PLUGIN,$(GEN_GO_GRPC))]}'

# Redraw the README's screenshots of the report viewer (docs/img), from
# reports a test host signs; needs chromium (apt-get install chromium).
screenshots: build
	ASSAY_BIN=$(CURDIR)/$(BIN) ASSAY_REQUIRE_BROWSER=1 ASSAY_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^TestViewerInBrowser$$' ./host/server

bench: build
	ASSAY_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt
	$(GO) run golang.org/x/perf/cmd/benchstat@latest bench.txt

# The hot-path benchmarks at REF and at this checkout, in interleaved
# rounds (the machine's speed drifts: each round runs both sides back to
# back), compared with benchstat. For whoever touches the request path:
#   make bench-compare REF=<commit> [BENCH=<regexp>] [BENCH_PKGS=<packages>] [ROUNDS=3]
#   (make expands a $ in BENCH: write $$ for a regexp anchor, BENCH='MaxRecord$$')
BENCH      ?= ContextAuditMaxRecord|PaidCall|PrecheckRoundTrip|AdapterCall|ProcessHop
BENCH_PKGS ?= ./host/server ./host/pluginhost
ROUNDS     ?= 3
BENCH_RUN   = $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count 2 $(BENCH_PKGS)
bench-compare: build
	@test -n "$(REF)" || { echo "usage: make bench-compare REF=<commit> [BENCH=<regexp>] [BENCH_PKGS=<packages>] [ROUNDS=3]"; exit 2; }
	@rm -rf .bench && mkdir -p .bench && git worktree prune && git worktree add -q --detach .bench/ref $(REF)
	cd .bench/ref && $(MAKE) -s build >/dev/null
	@set -e; for i in $$(seq $(ROUNDS)); do \
	  echo "round $$i of $(ROUNDS): $(REF)"; (cd .bench/ref && ASSAY_BIN=$(CURDIR)/.bench/ref/$(BIN) $(BENCH_RUN)) >> .bench/ref.txt; \
	  echo "round $$i of $(ROUNDS): this checkout"; ASSAY_BIN=$(CURDIR)/$(BIN) $(BENCH_RUN) >> .bench/head.txt; \
	done
	@git worktree remove --force .bench/ref
	$(GO) run golang.org/x/perf/cmd/benchstat@latest .bench/ref.txt .bench/head.txt

clean:
	rm -rf $(BIN)
