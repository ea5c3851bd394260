# termgate — see README.md. Every target works from a fresh clone.
GO        ?= go
BIN       := bin/termgate
PKGS      := ./...
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME  ?= 30s
IMAGE     ?= termgate:dev
# termgate --version: the release from git (a tag, else the commit).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: demo demo-clean build holder toolbox web man package run test test-short test-times check lint fuzz bench soak image test-image compose-check clean k8s-up k8s-down test-k8s

# The gateway embeds the holder of durable sessions (--durable) and the
# toolbox (a shell for instances with none), built first as static Linux
# binaries (internal/holderbin, internal/toolboxbin, gitignored).
build: web holder toolbox
	CGO_ENABLED=0 $(GO) build -trimpath -tags holderembed -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/termgate

# The manual page termgate(1), generated from the flag definitions
# (termgate --help-man); TestManPageIsCurrent fails when it is stale. Not
# stamped with a version, so that it changes only with the flags.
man:
	$(GO) run ./cmd/termgate --help-man > docs/termgate.1

# The Debian package dist/termgate_VERSION_ARCH.deb (nfpm, pinned; files in
# deploy/debian; docs/INSTALL.md): the stamped binary, the hardened systemd
# unit, /etc/termgate/config.yaml, the man page and shell completions.
package: build
	VERSION=$(VERSION) GO=$(GO) bash deploy/debian/package.sh

holder:
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags=-s -o internal/holderbin/termgate-holder ./cmd/termgate-holder

toolbox:
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags=-s -o internal/toolboxbin/termgate-toolbox ./cmd/termgate-toolbox

# The browser terminal's assets: web/src bundled by esbuild into web/dist,
# which the binary embeds. Without npm the binary builds anyway, and its
# page says how to bundle them. npm ci runs when the lock file changes.
web:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory web/dist/app.js; \
	 else echo "make: npm not found: the browser terminal's assets are not bundled (install Node.js and npm)"; fi

web/node_modules/.package-lock.json: web/package.json web/package-lock.json
	cd web && npm ci --ignore-scripts --no-audit --no-fund

web/dist/app.js: web/node_modules/.package-lock.json web/build.mjs $(wildcard web/src/*)
	cd web && node build.mjs

# Runs the gateway with the state in ./.termgate (host key, tokens,
# authorized_keys seeded from ~/.ssh/*.pub on first start).
run: build
	$(BIN) --state-dir .termgate $(ARGS)

# The README's test command. Docker-, OpenSSH- and Chromium-backed tests
# skip when their dependency is missing unless TERMGATE_REQUIRE_DOCKER=1 /
# TERMGATE_REQUIRE_OPENSSH=1 / TERMGATE_REQUIRE_CHROMIUM=1 (CI sets all
# three; the browser test also needs the bundled assets, hence web). The
# kubernetes backend's tests run when the test cluster (k8s-up) answers,
# and fail without it when TERMGATE_REQUIRE_KUBERNETES=1 (CI). Fuzz seed
# corpora run as tests.
test: test-image web
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# Where `make test`'s time goes: each package's wall time and the slowest
# tests (internal/testtimes), from go test -json kept in bin/test.json.
test-times: test-image web
	@mkdir -p bin
	-$(GO) test -race -count=1 -timeout 20m -json $(PKGS) > bin/test.json
	$(GO) run ./internal/testtimes -n 30 < bin/test.json

# The packages whose tests need a Docker engine, OpenSSH, Chromium, Dex or
# the Kubernetes cluster (some of their tests or all); every other
# package's tests, with -short, need none of them (CHECK_PKGS).
ENGINE_PKGS := backend/docker backend/kubernetes cmd/termgate-holder e2e e2e/matrix internal/replayoracle sshd web
CHECK_PKGS   = $(shell $(GO) list $(PKGS) | grep -v -E '/($(subst $() ,|,$(strip $(ENGINE_PKGS))))$$')

# The quick check before a commit (about a minute on two cores with a warm
# build cache): the build, lint, and the unit tests that need no engine,
# browser or cluster. make test runs everything.
check: lint
	$(GO) build $(PKGS)
	$(GO) test -race -count=1 -short $(CHECK_PKGS)

# Unit tests only: no Docker, no OpenSSH needed (make check's tests).
test-short:
	$(GO) test -race -count=1 -short $(CHECK_PKGS)

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

# Runs every fuzz target for FUZZTIME each; crashers land in testdata/fuzz
# and then run as regression tests in `make test`.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Compares termgate (SSH and WebSocket) against direct `docker exec` in one
# run and prints the ratios. Never part of `make test`.
bench: build test-image
	bash scripts/ensure-sshd.sh
	$(GO) run ./bench/cmd/tgbench -termgate $(BIN)
	bash bench/remote.sh $(BIN)
	bash bench/signin.sh $(BIN)

# The stress run of docs/RELIABILITY.md: attach/detach cycles, a reset
# storm, never-reading clients, container, engine and gateway faults,
# SIGTERM with many sessions, pastes; prints a table and fails on any leak
# or leftover. The full run takes many minutes and is never part of `make
# test` (its -short mode is, as a Go test). ARGS="-short" for the CI counts.
soak: build test-image
	$(GO) run ./soak/cmd/tgsoak -termgate $(BIN) $(ARGS)

# The single-node Kubernetes test cluster (scripts/k8s-cluster.sh; build
# cache and state in /var/cache/termgate-k8s, outside the repository; the
# first build takes 6 minutes of both cores on a quiet machine, over 30 on a
# busy one). Needs root.
k8s-up:
	bash scripts/k8s-cluster.sh up

k8s-down:
	bash scripts/k8s-cluster.sh down

# The kubernetes backend's tests against that cluster (they fail, not skip,
# when it is not up).
test-k8s: k8s-up
	TERMGATE_REQUIRE_KUBERNETES=1 $(GO) test -race -count=1 -timeout 10m ./backend/kubernetes/

test-image:
	@if docker info >/dev/null 2>&1; then bash scripts/test-image.sh; \
	 else echo "make: Docker engine not reachable; Docker-backed tests will skip (or fail with TERMGATE_REQUIRE_DOCKER=1)"; fi

image:
	docker build --network none -t $(IMAGE) .

compose-check:
	docker-compose config -q

clean:
	rm -rf bin web/node_modules web/dist/app.js web/dist/app.css

# From a fresh machine: Docker engine, test image, example instance web1,
# then the gateway in the foreground.
# The demo (scripts/demo.sh): on 127.0.0.1 unless DEMO_ADDR says otherwise
# (make demo DEMO_ADDR=0.0.0.0); it ends with its terminal, and
# demo-clean stops it and undoes what it made.
demo:
	bash scripts/demo.sh $(ARGS)

demo-clean:
	bash scripts/demo-clean.sh
