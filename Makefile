# pezo: two commands do everything on a fresh machine.
#   make run   - set up .venv, write the generators' Verilog, print the resource comparison
#   make test  - set up .venv (+ Icarus when possible) and run the whole test suite
.PHONY: run test quick setup clean

run:
	@bash scripts/setup.sh
	.venv/bin/pezo build

test:
	@bash scripts/setup.sh --test
	.venv/bin/python -m pytest -n 2 --dist loadfile

quick:
	@bash scripts/setup.sh --test
	.venv/bin/python -m pytest -n 2 --dist loadfile -m "not slow and not synth"

clean:
	rm -rf build .pytest_cache
