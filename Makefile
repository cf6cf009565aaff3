# memoryapp: `make run` serves the dashboard and API with a demo; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export PORT

.PHONY: run test lint bench clean-data

$(BIN)/.installed: requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

run: $(BIN)/.installed
	exec $(BIN)/python manage.py runstack

# Browser tests drive Debian's Chromium (never a downloaded browser build).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

test: $(BIN)/.installed $(CHROMIUM)
	$(BIN)/python -m pytest

lint: $(BIN)/.installed
	$(BIN)/python -m ruff check memoryapp tests bench

bench: $(BIN)/.installed
	$(BIN)/python bench/retrieval.py

clean-data:
	rm -rf var
