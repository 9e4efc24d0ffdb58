# Set-up and everyday commands. `make run` and `make test` do all set-up themselves.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: run test setup bench-store bench-locomo bench-ipc bench-recall bench-agents bench-embed bench-dist dist test-dist lint clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -c constraints.txt -e '.[desktop,test]' ruff
	# MiniLM on onnxruntime (same query vectors, int8 documents, a third of torch's memory): export it once, offline,
	# into the venv ($(VENV)/share/ctx/onnx), where every user and HOME running this install finds it.
	$(VENV)/bin/python -m engine.embedding.onnx_export --if-missing
	touch $(STAMP)

setup: $(STAMP)

# run: the tray app where a display exists ($DISPLAY/$WAYLAND_DISPLAY), else headless ctx serve.
run: $(STAMP)
	./scripts/run-main.sh

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check engine ipc desktop bench tests packaging scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --explicit-package-bases scripts  # top-level modules that import each other
	$(VENV)/bin/python scripts/check_doc_types.py

bench-store: $(STAMP)
	$(VENV)/bin/python -m bench.store_bench

bench-locomo: $(STAMP)
	$(VENV)/bin/python -m bench.locomo

bench-ipc: $(STAMP)
	$(VENV)/bin/python -m bench.ipc_load

bench-recall: $(STAMP)
	$(VENV)/bin/python -m bench.recall_bench

bench-agents: $(STAMP)
	$(VENV)/bin/python -m bench.agents_bench

bench-embed: $(STAMP)
	$(VENV)/bin/python -m bench.embed_bench

# The app bundle (PyInstaller, Linux: + .tar.gz, .deb, dist/build-report.md). Slow (minutes):
# not part of `make test`; CI runs it in its own job, then `make test-dist`.
dist: $(STAMP)
	./scripts/system-deps.sh
	$(VENV)/bin/python -m pip install -q -c constraints.txt -e '.[desktop,dist]'
	PYTHON=$(VENV)/bin/python ./scripts/build-dist.sh

# The smoke test of the built bundle (skipped when there is none).
test-dist: $(STAMP)
	$(VENV)/bin/python -m pytest -q -m dist tests/dist

bench-dist: $(STAMP)
	$(VENV)/bin/python -m bench.dist_bench

clean:
	rm -rf $(VENV) build dist *.egg-info
