# Assay: `make run` starts the host with every family; `make test` runs the
# whole suite. Nothing here needs more than Go and node.
GO      ?= go
BIN     := bin
# every plugins/<name>/main.go builds bin/assay-<name>; engine packages without
# a main (work in progress) are tested but not built
PLUGINS := $(patsubst plugins/%/main.go,%,$(wildcard plugins/*/main.go))

.PHONY: build run test test-go corpus-test corpus proto bench fmt vet clean

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/assay ./host/cmd/assay
	@for p in $(PLUGINS); do echo "$(GO) build -o $(BIN)/assay-$$p ./plugins/$$p"; $(GO) build -o $(BIN)/assay-$$p ./plugins/$$p || exit 1; done
	$(BIN)/assay plugins pin --dir $(BIN) > $(BIN)/assay.hcl

run: build
	$(BIN)/assay serve --data-dir ./var

test: build vet test-go corpus-test

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'); exit 1; }
	$(GO) vet ./...

test-go: build
	ASSAY_BIN=$(CURDIR)/$(BIN) $(GO) test -race -count=1 ./...

corpus-test: build
	node corpus/gen-corpus.mjs --check
	node corpus/harness.mjs --spawn $(BIN)/assay

# Regenerate every corpus.json and re-pin the served criteria documents.
corpus:
	node corpus/gen-corpus.mjs

proto:
	protoc -I sdk/proto --go_out=sdk/proto/pluginv1 --go_opt=paths=source_relative \
		--go-grpc_out=sdk/proto/pluginv1 --go-grpc_opt=paths=source_relative sdk/proto/plugin.proto

bench: build
	ASSAY_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt
	$(GO) run golang.org/x/perf/cmd/benchstat@latest bench.txt

clean:
	rm -rf $(BIN)
