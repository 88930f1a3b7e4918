# The two commands of the README: `make run` (the main job, on the real local servers) and
# `make test` (every test, the end-to-end ones on the real local servers included). Both do the
# set-up first; slow builds (Ollama, the model) are cached in $LAB_CACHE (default ~/.cache/lab).
GO ?= go
BIN := bin/lab

.PHONY: run test setup build server vet fuzz stress clean agents families bench

# The main job: midnight with the spec and date-in-system-prompt arms on each real local server
# (Ollama, then llama-server), then one report with the two servers side by side. RUN_ID names
# the runs (results/run_id=$(RUN_ID)-ollama, -llamacpp) and the report (results/servers-$(RUN_ID)).
RUN_ID ?= $(shell date -u +%Y%m%d-%H%M%S)
run: setup build
	./$(BIN) run --backend ollama --run-id $(RUN_ID)-ollama
	./$(BIN) run --backend llamacpp --run-id $(RUN_ID)-llamacpp
	./$(BIN) report --out results/servers-$(RUN_ID) results/run_id=$(RUN_ID)-ollama results/run_id=$(RUN_ID)-llamacpp

# What the chat template does, per model family and server: reasoning-tool-loops (three turns,
# one tool call per step: Llama 3.2's template refuses two) and compaction-in-loop (two of its
# turns, compacted in the second: the compaction column) with the spec and reasoning-never arms
# for each family's synthetic model (lab server prepare --family) on each real local server,
# then one report whose "What the template does" sets them side by side
# (results/families-$(RUN_ID)). The lists are the families each server measures (lab run
# --family says why the others are refused), and Ollama's other built-in renderers (lab run
# --renderer, each on its family's model or the Qwen3 model as a stand-in; the families' own,
# qwen3.5 and deepseek3.1, are their families' runs; functiongemma's Gemma 3 is too slow on
# Ollama, and olmo3-think and olmo3-32b-think refuse tools).
FAMILIES_OLLAMA ?= qwen3 deepseek-v3 llama3.1 llama3.2
FAMILIES_OLLAMA_RENDERERS ?= qwen3-coder qwen3-vl-instruct qwen3-vl-thinking cogito olmo3 olmo3.1 nemotron-3-nano glm-4.7 glm-ocr lfm2 lfm2-thinking
FAMILIES_LLAMACPP ?= qwen3 deepseek-v3 llama3.1 llama3.2
FAMILY_SCENARIOS ?= reasoning-tool-loops compaction-in-loop
families: setup build
	./$(BIN) server prepare --family all --renderer all
	set -e; for s in $(FAMILY_SCENARIOS); do for f in $(FAMILIES_OLLAMA); do \
		./$(BIN) run --backend ollama --family $$f --scenario $$s --arm spec,reasoning-never --run-id $(RUN_ID)-ollama-$$f-$$s; done; done
	set -e; for s in $(FAMILY_SCENARIOS); do for r in $(FAMILIES_OLLAMA_RENDERERS); do \
		./$(BIN) run --backend ollama --renderer $$r --scenario $$s --arm spec,reasoning-never --run-id $(RUN_ID)-ollama-renderer-$$r-$$s; done; done
	set -e; for s in $(FAMILY_SCENARIOS); do for f in $(FAMILIES_LLAMACPP); do \
		./$(BIN) run --backend llamacpp --family $$f --scenario $$s --arm spec,reasoning-never --run-id $(RUN_ID)-llamacpp-$$f-$$s; done; done
	./$(BIN) report --out results/families-$(RUN_ID) $(foreach s,$(FAMILY_SCENARIOS),$(foreach f,$(FAMILIES_OLLAMA),results/run_id=$(RUN_ID)-ollama-$(f)-$(s)) \
		$(foreach r,$(FAMILIES_OLLAMA_RENDERERS),results/run_id=$(RUN_ID)-ollama-renderer-$(r)-$(s)) $(foreach f,$(FAMILIES_LLAMACPP),results/run_id=$(RUN_ID)-llamacpp-$(f)-$(s)))

test: setup server
	$(GO) mod tidy -diff || { echo "go mod tidy: go.mod or go.sum is not tidy (run go mod tidy)"; exit 1; }
	$(GO) vet ./...
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: the files above are not formatted"; exit 1; }
	$(GO) test -timeout 60m ./...
	./$(BIN) check checks/ci.yaml
	$(MAKE) fuzz

# Each fuzz test for a fixed number of inputs: the parsers and the caps must never panic and never
# break their limits on any input. A count, not a duration: with a duration, Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" when the machine is busy
# (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 5000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCapText$$' -fuzztime $(FUZZTIME) ./hygiene
	$(GO) test -run '^$$' -fuzz '^FuzzReadBracket$$' -fuzztime $(FUZZTIME) ./hygiene
	$(GO) test -run '^$$' -fuzz '^FuzzPaths$$' -fuzztime $(FUZZTIME) ./hygiene
	$(GO) test -run '^$$' -fuzz '^FuzzParsePatch$$' -fuzztime $(FUZZTIME) ./tools
	$(GO) test -run '^$$' -fuzz '^FuzzParseScenario$$' -fuzztime $(FUZZTIME) ./scenario
	$(GO) test -run '^$$' -fuzz '^FuzzStream$$' -fuzztime $(FUZZTIME) ./backend/anthropic
	$(GO) test -run '^$$' -fuzz '^FuzzStream$$' -fuzztime $(FUZZTIME) ./backend/openai
	$(GO) test -run '^$$' -fuzz '^FuzzReadStream$$' -fuzztime $(FUZZTIME) ./backend/llamacpp
	$(GO) test -run '^$$' -fuzz '^FuzzReaders$$' -fuzztime $(FUZZTIME) ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzChatStream$$' -fuzztime $(FUZZTIME) ./backend/ollama
	$(GO) test -run '^$$' -fuzz '^FuzzParseCacheLine$$' -fuzztime $(FUZZTIME) ./backend/ollama
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./capture
	$(GO) test -run '^$$' -fuzz '^FuzzRedactBody$$' -fuzztime $(FUZZTIME) ./capture
	$(GO) test -run '^$$' -fuzz '^FuzzReadTranscript$$' -fuzztime $(FUZZTIME) ./transcript

# The speed and memory figures, each printed with the ratio it is judged by: Go benchmarks
# (b.ReportMetric) and scripts that compare two figures measured in the same run, never timed
# tests. Run it on a quiet machine; the figures of one run are compared with each other only.
# BENCH_BASE is the revision the sim matrix's CPU time is compared with (make bench BENCH_BASE=REV).
BENCH_BASE ?= HEAD~1
bench: build
# The sim matrix's CPU and wall time against a build of BENCH_BASE, both binaries alternated,
# five runs each, medians and the ratio (≤ 0.25), every run's rows compared.
	scripts/bench-sim-matrix.sh $(BENCH_BASE) HEAD
# The client's critical path (a step decided to its request's bytes ready), for a 3.8k- and a
# 95k-token session on each backend: the 100k/1k ratio (≤ 1.5) and the share of the lab's
# llama-server's cold prefill of the smallest step, measured in the same run (< 1 %).
	$(GO) test -run '^$$' -bench '^BenchmarkCriticalPath$$' -benchtime 3000x -count 1 ./harness
# lab proxy against a fake upstream streaming at a fixed pace, 50 clients, direct, proxied and
# through a bare reverse proxy alternated: time to first token added at the 99th percentile
# (≤ 1 ms) and total time added (< 1 %), for a short request and a 256 KiB conversation. The
# judged figures: the real bin/lab proxy, the upstream and the bare proxy each a process of its
# own (BenchmarkProxyProcesses; LAB_BIN_BASE=FILE adds another lab binary to the rotation),
# with each proxy's CPU per request. Then the same with every party in one process
# (BenchmarkProxyStreaming), and the live heap after 1k, 10k and 20k proxied requests (flat:
# ratios ≤ 1.05).
	LAB_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench '^BenchmarkProxyProcesses$$' -benchtime 20x -count 1 ./cmd/lab/
	$(GO) test -run '^$$' -bench '^BenchmarkProxyStreaming$$' -benchtime 20x -count 1 ./capture
	$(GO) test -run '^$$' -bench '^BenchmarkProxyMemory$$' -benchtime 1x -count 1 ./capture
# lab report as a child process over a generated run of 100,000 rows and a glob of 100 runs:
# wall seconds (wall/5s), CPU seconds and peak RSS (RSS/500MB); for the glob, the most opens of
# any manifest or part and the bytes read per byte (both 1: each read once).
	LAB_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench '^BenchmarkReportSpeed$$' -benchtime 3x -timeout 30m ./cmd/lab/

# The load and size scenarios (stress/): the real bin/lab as a child process against loopback fake
# servers, each bounded in time; prints a table of figures and writes it as JSON under
# results/stress/ (LAB_STRESS_OUT names another file). About 2 minutes on 2 cores; -timeout bounds the
# whole, and each child has its own bound.
stress: build
	$(GO) test -tags stress -count=1 -timeout 30m -v ./stress/

# The five real coding agents of agents/agents.json, one at a time, each through a lab proxy of
# its own in front of lab server start's Ollama (started if need be, and left running): first
# answered by the served model (results/run_id=agents-$(RUN_ID)/agents.md compares them), then by
# the lab's scripted model, with the lab's own harness as the scorecard's reference
# (results/run_id=agents-$(RUN_ID)-scripted/agents.md). make test runs one agent both ways.
agents: setup server
	./$(BIN) server start
	./$(BIN) agents --run-id agents-$(RUN_ID)
	./$(BIN) agents --scripted --run-id agents-$(RUN_ID)-scripted

setup:
	./scripts/setup.sh

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/lab

# Builds (once) and checks the local server before the tests, so no test waits for the build.
server: build
	./$(BIN) server prepare

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
