# pezo: two commands do everything on a fresh machine.
#   make run   - set up .venv, write the ZCU102 design (build/zcu102-engine), print the resource comparison
#   make test  - set up .venv (+ Icarus when possible, + the docs extra) and run the whole test suite (the docs build too)
#   make docs  - the documentation site (Sphinx, warnings are errors) into build/docs
# Maintenance: make quick (no synthesis), make test-latest (the suite on the newest releases pyproject.toml admits,
# in .venv-latest, with the docs extra so make lock pins it too), make lock (scripts/constraints.txt from
# .venv-latest, after test-latest passed).
.PHONY: run test docs quick test-latest lock setup clean

run:
	@bash scripts/setup.sh
	@if [ -e build/zcu102-engine ]; then \
	  echo "build/zcu102-engine exists: kept (it may hold your Vivado run); regenerate with .venv/bin/pezo build --design engine --out build/zcu102-engine --force"; \
	else .venv/bin/pezo build --design engine --out build/zcu102-engine; fi
	@.venv/bin/pezo report --out build/report --brief --no-timing
	@echo "ZCU102 design (the on-device trainer): build/zcu102-engine/ (with Vivado: cd build/zcu102-engine && bash build_top.sh); the stream-only top: .venv/bin/pezo build --design stream"

test:
	@bash scripts/setup.sh --test --docs
	.venv/bin/python -m pytest -n 2 --dist loadfile

docs:
	@bash scripts/setup.sh --docs
	.venv/bin/python -m sphinx -W --keep-going -q -b html docs build/docs
	@echo "docs: build/docs/index.html"

quick:
	@bash scripts/setup.sh --test --docs
	.venv/bin/python -m pytest -n 2 --dist loadfile -m "not slow and not synth"

test-latest:
	@PEZO_UNPINNED=1 VENV=.venv-latest bash scripts/setup.sh --test --docs
	.venv-latest/bin/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

lock:
	@bash scripts/lock.sh .venv-latest

clean:
	rm -rf build .pytest_cache docs/api
