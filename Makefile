# trainlab: two commands for a newcomer -- `make lab` and `make test`.
# The virtual environment lives outside the clone, in a cache keyed by the hash of
# requirements.txt, so a fresh clone reuses it and a pin change builds a new one.

SHELL        := /bin/bash
PYTHON       ?= python3
PIN_HASH     := $(shell $(PYTHON) -c "import hashlib,sys;print(hashlib.sha256(open('requirements.txt','rb').read()).hexdigest()[:12])")
CACHE        ?= $(HOME)/.cache/trainlab
VENV         ?= $(CACHE)/venv-$(PIN_HASH)
VPY          := $(VENV)/bin/python
READY        := $(VENV)/.trainlab-ready
# Test-only: Lightning and transformers, for the doctor's tests on wrapped training loops. A second
# environment that sees the first one's packages (a .pth file), so the learners' stays as it is.
WRAP_HASH    := $(shell $(PYTHON) -c "import hashlib;print(hashlib.sha256(open('requirements.txt','rb').read()+open('requirements-wrappers.txt','rb').read()).hexdigest()[:12])")
WVENV        ?= $(CACHE)/wrappers-$(WRAP_HASH)
WREADY       := $(WVENV)/.trainlab-ready
export TRAINLAB_WRAPPERS_PYTHON := $(WVENV)/bin/python
# The room's server (make hub): JupyterHub in a third environment that sees the main one's packages (a .pth
# file), and configurable-http-proxy installed by `npm ci` from package-lock.json beside it; one hash keys all.
HUB_HASH     := $(shell $(PYTHON) -c "import hashlib;print(hashlib.sha256(b''.join(open(f,'rb').read() for f in ('requirements.txt','requirements-hub.txt','package-lock.json'))).hexdigest()[:12])")
HVENV        ?= $(CACHE)/hub-$(HUB_HASH)
HREADY       := $(HVENV)/.trainlab-ready
export TRAINLAB_HUB_PYTHON := $(HVENV)/bin/python
export TRAINLAB_HUB_PROXY  := $(HVENV)/proxy/node_modules/.bin/configurable-http-proxy
HUB_FOR_TESTS := $(if $(shell command -v npm),hub-setup)  # without node the hub tests skip and say why (fail under CI=true)

# make test's time counts from here, the environment's creation included (tests/conftest.py gates it under CI=true)
export TRAINLAB_MAKE_STARTED := $(shell date +%s.%N)
# The suite runs one pytest-xdist worker per core (at most 4: each test may start two ranks of its own); a test
# file's tests stay on one worker. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os;print(min(4,len(os.sched_getaffinity(0)) if hasattr(os,'sched_getaffinity') else os.cpu_count() or 1))")
XDIST        := $(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)

# Everything below runs the package from this clone and keeps compile caches between runs.
export PYTHONPATH            := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))
export TORCHINDUCTOR_CACHE_DIR ?= $(CACHE)/inductor
export TORCH_EXTENSIONS_DIR  ?= $(CACHE)/torch_extensions
export TRITON_CACHE_DIR      ?= $(CACHE)/triton

.PHONY: help setup wrappers hub hub-setup hub-warm lab test test-full test-rest test-browser test-cifar test-gpu gpu-check bench notebooks data clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/'

setup: $(READY)  ## create the environment (once per pin-file version)

# No prerequisite on requirements.txt: its hash is in the path, so a fresh clone (newer
# mtimes) reuses a matching environment and a changed pin file gets a new one. --no-compile: pip would
# byte-compile every module of every package on one core (33 s of a 78 s install); Python compiles the
# ones a run imports, once, when it first imports them.
$(READY):
	@echo "trainlab: creating the environment in $(VENV)"
	@rm -rf "$(VENV)"
	$(PYTHON) -m venv "$(VENV)"
	"$(VPY)" -m pip install --quiet --upgrade pip
	"$(VPY)" -m pip install --quiet --no-compile -r requirements.txt || { rm -rf "$(VENV)"; exit 1; }
	@touch "$(READY)"

wrappers: $(WREADY)  ## the test-only environment for Lightning and Hugging Face scripts (make test-full/test-rest build it)

$(WREADY): $(READY)
	@echo "trainlab: creating the test-only wrappers environment in $(WVENV)"
	@rm -rf "$(WVENV)"
	$(PYTHON) -m venv "$(WVENV)"
	"$(VPY)" -c "import site; print(site.getsitepackages()[0])" > "$$("$(WVENV)/bin/python" -c "import site; print(site.getsitepackages()[0])")/trainlab-main.pth"
	"$(WVENV)/bin/python" -m pip install --quiet --no-compile -r requirements-wrappers.txt || { rm -rf "$(WVENV)"; exit 1; }
	@touch "$(WREADY)"

hub-setup: $(HREADY)  ## the room's server environment: JupyterHub (requirements-hub.txt) and its proxy (npm ci)

$(HREADY): $(READY)
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "make hub: JupyterHub's proxy (configurable-http-proxy) runs on node: install node and npm (apt-get install nodejs npm, or https://nodejs.org) and run make again" >&2; exit 1; }
	@echo "trainlab: creating the hub environment in $(HVENV)"
	@rm -rf "$(HVENV)"
	$(PYTHON) -m venv "$(HVENV)"
	"$(VPY)" -c "import site; print(site.getsitepackages()[0])" > "$$("$(HVENV)/bin/python" -c "import site; print(site.getsitepackages()[0])")/trainlab-main.pth"
	"$(HVENV)/bin/python" -m pip install --quiet --no-compile -r requirements-hub.txt || { rm -rf "$(HVENV)"; exit 1; }
	mkdir -p "$(HVENV)/proxy" && cp package.json package-lock.json "$(HVENV)/proxy/"
	cd "$(HVENV)/proxy" && npm ci --no-audit --no-fund --loglevel=error || { rm -rf "$(HVENV)"; exit 1; }
	@touch "$(HREADY)"

# make hub ROSTER=room.toml [IP=10.0.0.5 SSL_CERT=cert.pem SSL_KEY=key.pem | INSECURE=1] [PORT=8000] [HUB_STATE=dir]
#          [REISSUE="ana ben"]  (new claim codes: a lost code, or a forgotten password reset)
hub: hub-setup  ## a workshop room: JupyterHub for the learners ROSTER names, a live room view for the instructor
	"$(TRAINLAB_HUB_PYTHON)" -m trainlab.hub $(if $(ROSTER),--roster "$(ROSTER)") $(if $(IP),--ip $(IP)) \
		$(if $(PORT),--port $(PORT)) $(if $(HUB_STATE),--state "$(HUB_STATE)") $(if $(SSL_CERT),--ssl-cert "$(SSL_CERT)") \
		$(if $(SSL_KEY),--ssl-key "$(SSL_KEY)") $(if $(INSECURE),--insecure) $(if $(SPAWNER),--spawner $(SPAWNER)) \
		$(if $(REISSUE),--reissue $(REISSUE)) $(HUB_ARGS)

hub-warm: setup  ## before a room's learners arrive: every solution's reference run and the data set, cached for all
	"$(VPY)" -m trainlab.checks --warm

lab: setup  ## open JupyterLab on your working copy of the first notebook, work/ (127.0.0.1, token auth)
	"$(VPY)" -m trainlab.workbook.workspace --open

test: setup $(HUB_FOR_TESTS)  ## run the CPU suite: unit tests, every notebook, a covering sample of the big matrices
	CUDA_VISIBLE_DEVICES= "$(VPY)" -m pytest tests $(XDIST) $(PYTEST_ARGS)

test-full: setup wrappers $(HUB_FOR_TESTS)  ## the CPU suite with the full matrices (every corpus entry, whole learner notebooks)
	CUDA_VISIBLE_DEVICES= "$(VPY)" -m pytest tests --matrix full $(XDIST) $(PYTEST_ARGS)

test-rest: setup wrappers $(HUB_FOR_TESTS)  ## only what `make test` samples out of the full matrices (CI runs it after `make test`)
	CUDA_VISIBLE_DEVICES= "$(VPY)" -m pytest tests --matrix rest $(XDIST) $(PYTEST_ARGS)

test-browser: setup  ## only the browser tests: JupyterLab in Chromium, widgets operated, screenshots in build/browser/
	CUDA_VISIBLE_DEVICES= "$(VPY)" -m pytest tests/browser $(PYTEST_ARGS)

test-cifar: setup  ## the convergence-sensitive tests and every lab's check on real CIFAR-10 (make data first)
	CUDA_VISIBLE_DEVICES= "$(VPY)" -m pytest tests --data cifar10 --matrix full $(XDIST) $(PYTEST_ARGS)

test-gpu:  ## run the notebooks and GPU tests on CUDA with the current interpreter
	$(PYTHON) tests/gpu_suite.py

gpu-check:  ## the GPU work that fits in ~8 min on one GPU: notebooks (smoke), kernel ladder, MFU; results JSON
	$(PYTHON) -m benchmarks.tools.gpu_check

bench: setup wrappers  ## run the benchmarks (ONLY="kernels sparse" for some); tables to stdout, JSON to benchmarks/results/
	"$(VPY)" -m benchmarks.tools.run_all $(if $(DEVICE),--device $(DEVICE)) $(if $(ONLY),--only $(ONLY))

notebooks: setup  ## regenerate learner notebooks (and lab cells) from solutions/ and labs/
	"$(VPY)" -m trainlab.workbook.notebooks

data: setup  ## download and verify real CIFAR-10 into data/ (needs internet)
	"$(VPY)" -m trainlab.data --download

clean:  ## remove build outputs and caches inside the clone (not data/ or the venv)
	rm -rf build .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
