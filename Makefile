# The two commands of the README: `make run` (the main job, on the real local server) and
# `make test` (every test, the end-to-end one on the real local server included). Both do the
# set-up first; slow builds (Ollama, the model) are cached in $LAB_CACHE (default ~/.cache/lab).
GO ?= go
BIN := bin/lab

.PHONY: run test setup build server vet clean

run: setup build
	./$(BIN) run

test: setup server
	$(GO) vet ./...
	$(GO) test -timeout 60m ./...

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
