# pvisor: one static binary. `make demo` builds it and runs the main job on a
# bundled sample; `make test` runs every test with the race detector.

GO        ?= go
BIN       := bin/pvisor
PKGS      := ./...
FUZZTIME  ?= 4s
DEMO_DIR  ?= $(CURDIR)/.demo

.PHONY: build demo test race vet fuzz-smoke fuzz-long bench bench-continuation e2e clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN) ./cmd/pvisor

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

bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

# Continuation of each agent by pvisor against the same CLI resuming the same
# staged session alone (real CLIs from install-clis.sh, loopback-only
# namespaces, root; not in CI). BENCHTIME=5x for steadier ratios.
BENCHTIME ?= 2x
bench-continuation:
	$(GO) test -tags e2e -count=1 -timeout 30m -run='^$$' -bench=Continuation -benchtime=$(BENCHTIME) ./replay/e2e/

clean:
	rm -rf bin .demo
