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

.PHONY: run build release test test-deps test-race test-norace test-upgrade test-ts lint fmt bench bench-heal clean console-shots

run: build
	$(BIN)/veild serve

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/veild ./cmd/veild
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/veil ./cmd/veil

# release: veild and veil for every platform in PLATFORMS, into DIST, with
# SHA256SUMS (docs/operations.md, "Release builds"). veild is built without
# the embedded devnets (-tags nodevnet: set VEIL_RPC_<CHAIN> for every
# chain); add RELEASE_TAGS=nodevnet,nok8s for bare machines (no Kubernetes
# cluster provider: ~35 MB less). The host's own linux platform is built
# with cgo, so the EVM stealth scanner uses libsecp256k1 (2.5x faster);
# every other target is CGO_ENABLED=0 and uses the pure-Go backend
# (chains/stealth/secp256k1, chosen by the cgo build constraint). veil is
# always pure Go (static).
DIST         ?= dist
PLATFORMS    ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
RELEASE_TAGS ?= nodevnet
HOST_PLATFORM := $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
release:
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; cgo=0; \
		if [ "$$p" = "$(HOST_PLATFORM)" ] && [ "$$os" = linux ]; then cgo=1; fi; \
		echo "veild $$os/$$arch (cgo=$$cgo)"; \
		CGO_ENABLED=$$cgo GOOS=$$os GOARCH=$$arch $(GO) build -buildvcs=auto -tags $(RELEASE_TAGS) -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(DIST)/veild-$$os-$$arch ./cmd/veild; \
		echo "veil  $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -buildvcs=auto -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(DIST)/veil-$$os-$$arch ./cmd/veil; \
	done
	cd $(DIST) && sha256sum veild-* veil-* > SHA256SUMS
	@cat $(DIST)/SHA256SUMS

# test = lint + every test, with the race detector on every package that has
# concurrency (all of ours but NORACE_PKGS), + the TypeScript client's tests.
test: test-deps lint test-race test-norace test-ts

# test-deps installs what the tests need beside Go (Chromium, Node.js and
# npm, systemd-analyze) from Debian's packages when it is missing.
test-deps:
	@bash scripts/test-deps.sh

test-race:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v -x -F -e dummy $(foreach p,$(NORACE_PKGS),-e $(p)))

# The allocation tests also run without -race: the race detector's
# sync.Pool drops pooled objects at random, so they skip what depends on it.
test-norace:
	@if [ -n "$(NORACE_PKGS)" ]; then $(GO) test -count=1 -timeout 20m $(NORACE_PKGS); fi
	$(GO) test -count=1 -run 'NoAlloc' ./chains/stealth/...
	$(MAKE) test-upgrade

# test-upgrade: the rolling upgrade test (cmd/veild upgrade_test.go) on its
# own and without -race, so its members are not starved by the other
# packages' tests; the -race run skips it.
test-upgrade:
	$(GO) test -count=1 -timeout 20m -run '^TestRollingUpgradeUnderLoad$$' ./cmd/veild

# The TypeScript client (clients/typescript, docs/typescript.md): its
# node:test suites build veild and run against it. npm is required
# (test-deps installs it).
test-ts:
	@command -v npm >/dev/null 2>&1 || { echo "test-ts: npm is not installed (the TypeScript client's tests need node and npm)"; exit 1; }
	cd clients/typescript && npm ci --ignore-scripts --no-audit --no-fund && npm test

# lint also runs the repository's guards (scripts/repo-guard.sh): no
# merge-conflict markers, every relative link in README.md and docs/*.md
# resolves, and httpapi/openapi.json lints with Redocly (pinned in
# scripts/openapi-lint) with no errors.
lint:
	@bash scripts/repo-guard.sh
	$(GO) vet ./...
	$(GO) vet -tags nodevnet ./...
	$(GO) vet -tags nodevnet,nok8s ./cmd/veild ./runtime/cluster
	$(GO) run $(STATICCHECK) ./...
	$(GO) run ./cmd/docscheck .
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(find . -name '*.go' -not -path './.git/*')

# The screenshots of docs/console.md, taken by the console's browser test
# (needs chromium).
console-shots:
	VEIL_CONSOLE_SHOTS=$(CURDIR)/docs/console $(GO) test -count 1 -run '^TestConsoleInChromium$$' ./httpapi/

# Benchmarks whose figures are in docs/BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./persistence/ ./chains/stealth/...
	$(GO) test -run '^$$' -bench . -benchtime 3s -count 1 ./persistence/postgres/ ./actors/chain/ ./chains/stellar/ ./chains/solana/ ./actors/reminder/
	$(GO) test -run '^$$' -bench Scanner -benchtime 2x -count 1 -timeout 30m ./actors/scanner/
	$(GO) test -run '^$$' -bench 'Agent|Chat' -benchtime 3000x -count 1 ./httpapi/

# bench-heal measures the cluster's heal after pauses and partitions
# (docs/cluster.md, "Healing: the bound and its parts"): HEAL_RUNS rounds of
# a 3 s SIGSTOP, a 10 s SIGSTOP and a 10 s partition; p50/p99/max per fault.
HEAL_RUNS ?= 20
bench-heal:
	VEIL_HEAL_RUNS=$(HEAL_RUNS) $(GO) test -count=1 -timeout 120m -v -run '^TestHealTimes$$' ./cmd/veild

clean:
	rm -rf $(BIN) $(DIST)
