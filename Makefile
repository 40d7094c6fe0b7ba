# alprbf: set-up, demo, tests and the papers' tables.
#   make demo            fresh venv + install + run configs/quickstart.yaml + report
#   make test            fresh venv + test extras + the test suite
#   make table-000 SCALE=smoke|full   (likewise table-001 ... table-004)
#   make table-constantinopoulos2008  the same by the paper's key (alprbf/papers.py; 000-004 are
#                        the numbers of the papers' files and name configs and results/table-NNN-full)
#   make table-000 ONLY='*__f0'       run only the matching tasks (shell pattern on task ids)
#   make table-000 RUN_ARGS=--rerun-changed   re-run only the methods the config changed

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
JOBS   ?= 2
SCALE  ?= full
ONLY   ?=
# extra `alprbf run` options for the table targets, e.g. RUN_ARGS=--rerun-changed
RUN_ARGS ?=
# the papers' keys (author-year, alprbf/papers.py), in the order of their numbers 000-004
PAPER_KEYS := constantinopoulos2008 constantinopoulos2006 titsias2001 reitmaier2016 nguyen2004
# Default the data mirror to ../shared/datasets only where it exists (a fresh clone elsewhere
# runs the mirror tests as skipped, not failed).
ifeq ($(origin ALPRBF_DATA_MIRROR),undefined)
  ifneq ($(wildcard ../shared/datasets),)
    export ALPRBF_DATA_MIRROR := $(abspath ../shared/datasets)
  endif
endif

.PHONY: help install demo test test-quick lint bench html tables table-000 table-001 table-002 table-003 table-004 check-record check-health check-switch clean \
  $(addprefix table-,$(PAPER_KEYS))

help:  ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# constraints.txt pins every package to the versions the record was made with.  uv installs
# them (the same versions as pip: about 30 s on a fresh machine against pip's 195 s, both
# without a cache); where uv cannot be had, pip does it.  Both compile the bytecode at install
# time, and compileall does it for alprbf's own sources (an editable install): where
# PYTHONDONTWRITEBYTECODE is set (it is on this project's machines) nothing else writes it, every
# process then compiles each module it imports, about 9 CPU-s for a report's imports.
EXTRAS := .[dask,test,bench,dev]
$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	($(BIN)/python -m pip install --quiet --disable-pip-version-check uv && \
	  $(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(BIN)/python \
	    -c constraints.txt -e "$(EXTRAS)") || \
	  $(BIN)/python -m pip install --quiet -c constraints.txt -e "$(EXTRAS)"
	$(BIN)/python -m compileall -q -j 0 alprbf tests benchmarks > /dev/null
	@touch $@

install: $(VENV)/.installed  ## create .venv and install alprbf with all extras (pinned: constraints.txt)

demo: install  ## run the quickstart experiment end to end and write its report
	$(BIN)/alprbf run configs/quickstart.yaml --jobs $(JOBS)
	$(BIN)/alprbf report results/quickstart --baseline "logistic_regression / random"

# one BLAS thread per test worker, set before any process starts BLAS (tests/conftest.py sets it
# too late for BLAS itself): without it the mixture fits of the sanity suite cost up to 10x.
# PYTHONDONTWRITEBYTECODE is emptied for pytest alone, so that it keeps the test modules it
# rewrites for its asserts: otherwise each worker rewrites all of them at every run (about
# 5 CPU-s of a worker's 11 s of collection)
TEST_ENV := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=

test: install  ## run the test suite (on JOBS worker processes, pytest-xdist)
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(JOBS)

test-quick: install  ## the edit loop: the suite without the tests marked slow
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(JOBS) -m "not slow"

lint: install  ## static checks: ruff, and the import layers (pyproject.toml [tool.importlinter])
	$(BIN)/ruff check alprbf tests benchmarks
	$(BIN)/lint-imports

bench: install  ## all benchmarks (slow; not part of the tests)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit $$?; done

define TABLE
table-$(1): install  ## run and report the tables of paper $(1) (SCALE=smoke|full)
	@for cfg in configs/table_$(1)*.yaml; do \
	  echo "== $$$$cfg ($(SCALE))"; \
	  $(BIN)/alprbf run $$$$cfg --scale $(SCALE) --jobs $(JOBS) --quiet $(if $(ONLY),--only '$(ONLY)') $(RUN_ARGS) \
	    --out results/table-$(1)-$(SCALE)/$$$$(basename $$$$cfg .yaml) || exit $$$$?; \
	done
	$(BIN)/alprbf report results/table-$(1)-$(SCALE) $(REPORT_ARGS_$(1))
	$(if $(PAPER_METHODS_$(1)),$(BIN)/alprbf report results/table-$(1)-$(SCALE) \
	  --methods '$(PAPER_METHODS_$(1))' $(PAPER_REPORT_ARGS_$(1)) \
	  --out results/table-$(1)-$(SCALE)/report-paper-methods)
endef
# the two methods of Constantinopoulos & Likas 2008's Table 2 / Fig. 6 (literal reading) get a
# report of their own
PAPER_METHODS_000 := active_prbf_literal / posterior_ratio,incremental_ssl_prbf_literal / qbc_prbf
# AULC / DUR of Constantinopoulos & Likas 2008's table against random queries with the paper's
# learner (two methods of table_000.yaml query at random, so the report cannot pick the baseline by
# itself)
REPORT_ARGS_000 := --baseline 'active_prbf_literal / random'
# Reitmaier et al. 2016: DUR and AULC on the training-pool accuracy (the paper's reading, see the
# config), against its baseline RBF-US
REPORT_ARGS_003 := --baseline 'rbf / uncertainty_svm' --curve-accuracy train --sanity results/sanity-failures.yaml
# ... and the paper's five paradigms alone, so that ranks, wins, chi2 and CD compare with its own
PAPER_METHODS_003 := rwm / four_ds,gmm / four_ds,lap / uncertainty_svm,rbf / four_ds,rbf / uncertainty_svm
PAPER_REPORT_ARGS_003 := $(REPORT_ARGS_003)
# Nguyen & Smeulders 2004: Fig. 6 averages over the ten digits (and the three initial sets) per
# database size
REPORT_ARGS_004 := --merge-datasets 'mnist-(n[0-9]+)-[0-9]' --error-at-fraction 0.01,0.02,0.035
$(foreach t,000 001 002 003 004,$(eval $(call TABLE,$(t))))

# the same targets by the papers' keys (PAPER_KEYS above): make table-reitmaier2016
table-constantinopoulos2008: table-000  ## = table-000 (Constantinopoulos & Likas 2008)
table-constantinopoulos2006: table-001  ## = table-001 (Constantinopoulos & Likas 2006)
table-titsias2001: table-002  ## = table-002 (Titsias & Likas 2001)
table-reitmaier2016: table-003  ## = table-003 (Reitmaier et al. 2016)
table-nguyen2004: table-004  ## = table-004 (Nguyen & Smeulders 2004)

tables: table-000 table-001 table-002 table-003 table-004  ## all the papers' tables

# The drift guard: cheap, representative recorded tasks re-run and compared bit for bit with the
# record (results/table-NNN-full/, tracked).  A table not recorded yet is said, not skipped
# silently.  Entries end with ';', fields are config|record directory|--only patterns (and
# --queries N: only the first N queries of tasks too slow to re-run whole, the QBC folds).
RECORD_CHECKS := \
  configs/table_001.yaml|results/table-001-full/table_001|--only 'iris__incremental_prbf_split__*' \
    --only 'wine__incremental_prbf_split__*' --only 'new-thyroid__incremental_prbf_split__*'; \
  configs/table_002.yaml|results/table-002-full/table_002|--only 'pima__*'; \
  configs/table_002_floor.yaml|results/table-002-full/table_002_floor|--only 'pima__*_floor1e-8__*'; \
  configs/table_004.yaml|results/table-004-full/table_004|--only 'mnist-n1250-3__*'; \
  configs/table_003.yaml|results/table-003-full/table_003|--only 'iris__*' --only 'wine__*'; \
  configs/experiments/reitmaier2016_corrected.yaml|results/table-003-full/table_003_corrected|--only 'iris__*' --only 'wine__*'; \
  configs/table_000.yaml|results/table-000-full/table_000|--only 'segmentation__active_prbf_literal__posterior_ratio__r0__f0'; \
  configs/table_000_gate.yaml|results/table-000-full/table_000_gate|--only 'segmentation__active_prbf_supported__posterior_ratio__r0__f0'; \
  configs/table_000.yaml|results/table-000-full/table_000|--queries 40 \
    --only 'segmentation__incremental_ssl_prbf_literal__qbc_prbf__r0__f0' \
    --only 'waveform__incremental_ssl_prbf_literal__qbc_prbf__r0__f0';

# The switch ALPRBF_FAST (docs/performance.md) on the smoke tables: their PRBF tasks, computed on
# the fast paths (the default) by `make table-NNN SCALE=smoke`, re-run on the reference path and
# compared bit for bit (CI runs it after the smoke tables).  Entries end with ';', fields are
# table|--only patterns; tests/test_prbf_switch_smoke.py runs the same cases from scratch (both
# paths) and checks that these patterns are its own.
SWITCH_CHECKS := \
  000|segmentation__*prbf*__f0 pendigits__*qbc_prbf*__f0; \
  001|waveform__*prbf*__f0 iris__*prbf*__f0; \
  002|pima__*prbf*__f0;

check-switch: install  ## re-run the smoke tables' PRBF tasks on the reference path (ALPRBF_FAST=0); fail if any row changed
	@set -f; echo "$(SWITCH_CHECKS)" | tr ';' '\n' | sed '/^ *$$/d' | \
	while IFS='|' read -r t patterns; do \
	  t=$$(echo $$t); rec=results/table-$$t-smoke/table_$$t; only=""; \
	  for p in $$patterns; do only="$$only --only $$p"; done; \
	  if [ ! -f "$$rec/run.json" ]; then echo "$$rec is missing: run make table-$$t SCALE=smoke first"; exit 2; fi; \
	  echo "== $$rec, ALPRBF_FAST=0"; \
	  ALPRBF_FAST=0 $(BIN)/alprbf check-record configs/table_$$t.yaml $$rec --scale smoke $$only || exit 1; \
	done

check-health: install  ## fail on degenerate cells of the record not in results/health-allowlist.yaml
	$(BIN)/alprbf check-health results/table-*-full --allow results/health-allowlist.yaml

# CHECKS=quick (CI): only the first fold (repetition 0) of those tasks, about a fifth of the work
CHECKS ?= full

check-record: install  ## re-run a cheap subset of the recorded tasks; fail if any row changed (CHECKS=quick: a fifth)
	@echo "$(RECORD_CHECKS)" | tr ';' '\n' | sed '/^ *$$/d' | \
	while IFS='|' read -r cfg rec only; do \
	  cfg=$$(echo $$cfg); \
	  if [ ! -f "$$rec/run.json" ]; then echo "== $$rec: no record yet (nothing to check)"; continue; fi; \
	  echo "== $$rec"; eval $(BIN)/alprbf check-record $$cfg $$rec $$only --jobs $(JOBS) \
	    $(if $(filter quick,$(CHECKS)),--first-fold) || exit 1; \
	done

# HTML pages of the five recorded tables (with each table's report options) and an index over
# them, in results/html/ (not tracked: the pages embed their figures); open
# results/html/index.html.  `alprbf report DIR --format html` does the same for any results.
HTML_DIR ?= results/html
html: install  ## self-contained HTML reports of the recorded tables + results/html/index.html
	$(foreach t,000 001 002 003 004,$(BIN)/alprbf report results/table-$(t)-full $(REPORT_ARGS_$(t)) \
	  --format html --out $(HTML_DIR)/table-$(t)-full > /dev/null && \
	  $(if $(PAPER_METHODS_$(t)),$(BIN)/alprbf report results/table-$(t)-full \
	    --methods '$(PAPER_METHODS_$(t))' $(PAPER_REPORT_ARGS_$(t)) --format html \
	    --out $(HTML_DIR)/table-$(t)-full/paper-methods > /dev/null &&) ) true
	$(BIN)/alprbf report-index $(HTML_DIR)

clean:  ## remove results (keeps the tracked files: results/README.md, the allow-lists, the record results/table-*-full and readings results/reading-*)
	find results -mindepth 1 -maxdepth 1 ! -name README.md ! -name health-allowlist.yaml ! -name sanity-failures.yaml ! -name 'table-*-full' ! -name 'reading-*' -exec rm -rf {} +
