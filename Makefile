# pezo: two commands do everything on a fresh machine.
#   make run   - set up .venv, write the ZCU102 design (build/zcu102-otf), print the resource comparison
#   make test  - set up .venv (+ Icarus when possible) and run the whole test suite
.PHONY: run test quick setup clean

run:
	@bash scripts/setup.sh
	@if [ -e build/zcu102-engine ]; then \
	  echo "build/zcu102-engine exists: kept (it may hold your Vivado run); regenerate with .venv/bin/pezo build --design engine --force"; \
	else .venv/bin/pezo build --design engine --out build/zcu102-engine; fi
	@.venv/bin/pezo report --out build/report --brief --no-timing
	@echo "ZCU102 design (the on-device trainer): build/zcu102-engine/ (with Vivado: cd build/zcu102-engine && bash build_top.sh); the stream-only top: .venv/bin/pezo build --design stream"

test:
	@bash scripts/setup.sh --test
	.venv/bin/python -m pytest -n 2 --dist loadfile

quick:
	@bash scripts/setup.sh --test
	.venv/bin/python -m pytest -n 2 --dist loadfile -m "not slow and not synth"

clean:
	rm -rf build .pytest_cache
