# Veil. `make run` serves on the embedded defaults; `make test` is what CI runs.
GO      ?= go
BIN     ?= bin
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

# Packages whose tests run without -race, each with the reason in .ci/run.
NORACE_PKGS := github.com/veilhq/veil/runtime/cluster

# staticcheck, pinned: `go run` fetches this exact version through the module
# proxy (and caches it), so every machine lints with the same checks.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run build release test test-race test-norace lint fmt bench clean

run: build
	$(BIN)/veild serve

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/veild ./cmd/veild

# release: a production binary without the embedded devnets (set
# VEIL_RPC_<CHAIN> for every chain): ~88 MB instead of ~123 MB, of which the
# Kubernetes cluster provider (client-go) is ~35 MB; add -tags nok8s for
# bare machines (automanaged membership only): ~53 MB.
release:
	$(GO) build -tags nodevnet -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/veild ./cmd/veild

# test = lint + every test, with the race detector on every package that has
# concurrency (all of ours but NORACE_PKGS).
test: lint test-race test-norace

test-race:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v -x -F -e dummy $(foreach p,$(NORACE_PKGS),-e $(p)))

test-norace:
	@if [ -n "$(NORACE_PKGS)" ]; then $(GO) test -count=1 -timeout 20m $(NORACE_PKGS); fi

lint:
	$(GO) vet ./...
	$(GO) vet -tags nodevnet ./cmd/veild ./chains/...
	$(GO) vet -tags nodevnet,nok8s ./cmd/veild ./runtime/cluster
	$(GO) run $(STATICCHECK) ./...
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(find . -name '*.go' -not -path './.git/*')

# Benchmarks whose figures are in docs/BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./persistence/ ./chains/stealth/...
	$(GO) test -run '^$$' -bench . -benchtime 3s -count 1 ./persistence/postgres/ ./actors/chain/ ./chains/stellar/ ./chains/solana/ ./actors/scanner/ ./actors/reminder/
	$(GO) test -run '^$$' -bench 'Agent|Chat' -benchtime 3000x -count 1 ./httpapi/

clean:
	rm -rf $(BIN)
