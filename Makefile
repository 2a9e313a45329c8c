# pvisor: one static binary. `make demo` builds it and runs the main job on a
# bundled sample; `make test` runs every test with the race detector.

GO        ?= go
BIN       := bin/pvisor
PKGS      := ./...
FUZZTIME  ?= 4s
DEMO_DIR  ?= $(CURDIR)/.demo

.PHONY: build demo test race vet fuzz-smoke fuzz-long bench bench-continuation e2e releases wheel python-test clean

# The version pvisor prints (pvisor --version) and the wheel carries: VERSION,
# plus, when this is a git checkout, where HEAD stands against the tag
# v$(VERSION) as a PEP 440 local version: 0.1.0 on the tag itself,
# 0.1.0+5.g<commit> five commits later, 0.1.0+g<commit> without the tag, and
# .dirty when tracked files are modified. PVISOR_VERSION=... overrides it.
PVISOR_VERSION ?= $(shell base=$$(cat VERSION); \
	d=$$(git describe --tags --match "v$$base" --abbrev=12 --dirty=-dirty 2>/dev/null || \
	     { c=$$(git describe --always --abbrev=12 --dirty=-dirty 2>/dev/null) && echo "g$$c"; }); \
	case "$$d" in ("") echo "$$base";; ("v$$base") echo "$$base";; \
	(v$$base-*) echo "$$base+$$(echo "$$d" | sed "s/^v$$base-//; s/-/./g")";; \
	(*) echo "$$base+$$(echo "$$d" | tr - .)";; esac)
PVISOR_VERSION := $(PVISOR_VERSION)
LDFLAGS   := -s -w -X main.version=$(PVISOR_VERSION)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/pvisor

# The main job on a bundled sample, no model service needed: a session the
# real Codex CLI recorded is replayed after step 3 in a fresh copy of its
# repository, then the real Codex CLI (its newest tested release, installed from npm into .e2e/)
# continues through the loopback bridge, with the recorded upstream playing
# the session's own next actions.
DEMO_SESSION := testdata/e2e/sessions/codex@0.171.0
demo: build
	rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)/workspace
	tar -xzf $(DEMO_SESSION)/repo.tar.gz -C $(DEMO_DIR)/workspace
	bash testdata/e2e/install-clis.sh codex >/dev/null
	$(BIN) inspect $(DEMO_SESSION)/rollout-*.jsonl
	$(BIN) replay --agent codex --trajectory $$(ls $(DEMO_SESSION)/rollout-*.jsonl) --after-step 3 \
		--upstream recorded --agent-entrypoint .e2e/bin/codex \
		--workspace $(DEMO_DIR)/workspace --run-id demo --state-dir $(DEMO_DIR)/state --output-dir $(DEMO_DIR)/output
	@echo "outputs: $(DEMO_DIR)/output/demo (observation-comparison.json, next-action-comparison.json, native/, ...)"

vet:
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

test: vet
	$(GO) test -race $(PKGS)

race: test

# Every Fuzz target in the tree, briefly: catches decoder panics early.
# Go's fuzzer can end with "context deadline exceeded" when -fuzztime runs
# out while it is minimising a new input (no failing input is reported);
# that case alone is run once more, and if it ends so again it is no
# finding either (as in fuzz-long). Any other failure prints its output.
fuzz-smoke:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '/.e2e/'); do \
		dir=$$(dirname $$f); \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$dir $$name"; \
			for try in 1 2; do \
				if $(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s ./$$dir >$$log 2>&1; then break; fi; \
				if grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input' $$log; then \
					if [ $$try = 1 ]; then echo "  (fuzzer stopped while minimising; running once more)"; continue; fi; \
					echo "  (stopped while minimising again: no failing input)"; break; fi; \
				cat $$log; echo "FAIL: $$dir $$name"; exit 1; \
			done; \
		done; \
	done

# Every Fuzz target for FUZZTIME each (10m unless FUZZTIME is given; not in CI): prints each target's
# executions and whether it found anything, goes on after a finding so one run
# covers every target, and fails at the end if any did. FUZZ_DIRS narrows it
# (a grep -E pattern on the package dir, e.g. FUZZ_DIRS='trajectory|envelope');
# FUZZ_PARALLEL caps the fuzzing workers on a shared machine. FUZZ_MINTIME caps
# the minimisation of each new interesting input: with large seeds (whole
# request bodies) Go's default of 60s can eat the whole run. New crashers are
# written under the package's testdata/fuzz/ by go test itself.
FUZZLONG      := $(if $(filter command line environment,$(origin FUZZTIME)),$(FUZZTIME),10m)
FUZZ_DIRS     ?= .
FUZZ_PARALLEL ?= 0
FUZZ_MINTIME  ?= 5s
fuzz-long:
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; failed=""; \
	par=""; [ "$(FUZZ_PARALLEL)" != 0 ] && par="-parallel=$(FUZZ_PARALLEL)"; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '/.e2e/' | grep -E '$(FUZZ_DIRS)' | sort); do \
		dir=$$(dirname $$f); \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			if $(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZLONG) -fuzzminimizetime=$(FUZZ_MINTIME) $$par ./$$dir >$$log 2>&1; then res=ok; \
			elif grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input' $$log; then res="ok (stopped while minimising)"; \
			else res=FAIL; failed="$$failed $$dir:$$name"; fi; \
			execs=$$(grep -o 'execs: [0-9]*' $$log | tail -1 | cut -d' ' -f2); \
			printf '%-32s %-22s execs %-12s %s\n' "$$dir" "$$name" "$${execs:-?}" "$$res"; \
			[ "$$res" = FAIL ] && grep -E 'Failing input|--- FAIL|panic:|testdata/fuzz' $$log | head -5; true; \
		done; \
	done; \
	[ -z "$$failed" ] || { echo "fuzz findings:$$failed"; exit 1; }

# End to end with the real agent CLIs from npm (installed into .e2e/, ignored)
# in loopback-only network namespaces; needs root. pVisor's own binary (PyPI
# pvisor-sandbox) is installed beside them for the conformance test.
e2e:
	bash testdata/e2e/install-clis.sh >/dev/null
	bash testdata/e2e/install-pvisor-sandbox.sh >/dev/null
	$(GO) test -tags e2e -count=1 -timeout 40m ./replay/e2e/

# The release watch: the newest release on npm/PyPI of every tested package
# (replay/tested/versions.txt) and of the packages its agents moved to, and
# how far the tested releases are behind. Informational: never fails.
releases: build
	-$(BIN) doctor --releases

# Every benchmark, with pVisor 0.3.1 (PyPI pvisor-sandbox, installed into
# .e2e/ first) beside pvisor where it accepts the input: the "-vs-pvisor-sandbox"
# and "/pvisor-sandbox" metrics are pvisor's cost over pVisor's in the same
# loop (BenchmarkPrepareOnly, BenchmarkReplayedCallCLI), next to the
# physical baselines (sha256sum, bash -lc). Without python3/pip the install
# fails and so does this target; the benchmarks alone skip the comparison.
bench:
	bash testdata/e2e/install-pvisor-sandbox.sh >/dev/null
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

# Continuation of each agent by pvisor against the same CLI resuming the same
# staged session alone (real CLIs from install-clis.sh, loopback-only
# namespaces, root; not in CI). BENCHTIME=5x for steadier ratios.
BENCHTIME ?= 2x
bench-continuation:
	$(GO) test -tags e2e -count=1 -timeout 30m -run='^$$' -bench=Continuation -benchtime=$(BENCHTIME) ./replay/e2e/

# The wheel a sandbox installs with pip (no Go there): the static binary as
# the script `pvisor` plus the Python package python/src/pvisor, built by
# hatchling (pinned, from PyPI, in a throwaway venv under build/) for each
# GOARCH listed (default: this machine's; GOARCH=arm64 cross-builds the
# aarch64 wheel, GOARCH="amd64 arm64" both). dist/ is emptied of older wheels
# first, so dist/pvisor-*.whl is what this call built; dist/SHA256SUMS lists them.
HATCHLING_VERSION ?= 1.33.0
PYTHON            ?= python3
WHEEL_GOARCH      := $(or $(GOARCH),$(shell $(GO) env GOARCH))
BUILD_VENV        := build/hatchling-$(HATCHLING_VERSION)
wheel:
	@test -x $(BUILD_VENV)/bin/hatchling || { rm -rf $(BUILD_VENV) && $(PYTHON) -m venv $(BUILD_VENV) && \
		$(BUILD_VENV)/bin/pip install -q --disable-pip-version-check "hatchling==$(HATCHLING_VERSION)"; }
	mkdir -p dist && rm -f dist/pvisor-*.whl dist/SHA256SUMS
	@set -e; for arch in $(WHEEL_GOARCH); do \
		bin=build/wheel/linux-$$arch/pvisor; \
		echo "pvisor $(PVISOR_VERSION) linux/$$arch"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $$bin ./cmd/pvisor; \
		if [ "$$arch" = "$$(GOARCH= $(GO) env GOARCH)" ]; then \
			got=$$($$bin --version); [ "$$got" = "pvisor $(PVISOR_VERSION)" ] || { echo "$$bin --version: $$got"; exit 1; }; fi; \
		case $$arch in (amd64) plat=manylinux_2_17_x86_64;; (arm64) plat=manylinux_2_17_aarch64;; \
			(*) echo "no wheel platform for GOARCH=$$arch"; exit 1;; esac; \
		(cd python && PVISOR_WHEEL_VERSION=$(PVISOR_VERSION) PVISOR_WHEEL_BINARY=$(CURDIR)/$$bin \
			PVISOR_WHEEL_PLATFORM=$$plat $(CURDIR)/$(BUILD_VENV)/bin/hatchling build -t wheel -d $(CURDIR)/dist); \
	done
	cd dist && sha256sum pvisor-*.whl > SHA256SUMS && cat SHA256SUMS

# The Python API's tests through the installed wheel: a fresh venv made by
# this machine's python3, pytest from PyPI, the suite in python/tests/ on the
# bundled sessions (the continuation test uses .e2e/bin/codex when present,
# e.g. after make e2e or make demo, and skips otherwise). No tests is a failure.
PYTEST_VERSION ?= 8.3.4
PYTEST_VENV    := build/python-test
python-test: wheel
	rm -rf $(PYTEST_VENV) && $(PYTHON) -m venv $(PYTEST_VENV)
	$(PYTEST_VENV)/bin/pip install -q --disable-pip-version-check "pytest==$(PYTEST_VERSION)" dist/pvisor-*.whl
	# An empty HOME: the replayed tools' login shells read no developer files
	# (root's pyenv rehash on the CI image races between shells).
	rm -rf build/pytest-home && mkdir -p build/pytest-home
	cd python/tests && env -u PVISOR_BIN HOME=$(CURDIR)/build/pytest-home PVISOR_REPO=$(CURDIR) $(CURDIR)/$(PYTEST_VENV)/bin/python -m pytest -p no:cacheprovider -ra .

clean:
	rm -rf bin .demo build dist
