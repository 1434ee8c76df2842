"""One nextpnr seed of a network engine in pezo's ECP5 timing flow (``boards.flow.timing``: the register wrapper,
synth_ecp5, nextpnr-ecp5 --85k), for a quick before/after when three seeds (``pezo report --timing-path``) do not
fit the time at hand.

    .venv/bin/python benchmarks/fmax_one_seed.py NET BACKPROP(0|1) SEED     # prints one JSON line
"""

import json
import sys
import time

from pezo.boards.flow.synth import run_yosys
from pezo.boards.flow.timing import ECP5_SCRIPT, WRAP_TOP, _nextpnr, parse_nextpnr_log, register_wrapper, unit_verilog
from pezo.golden.engine.nets import net_config

net, backprop, seed = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
text, top, _ = unit_verilog(net_config(net, batch=16, backprop=backprop), "engine")
started = time.time()
netlist = run_yosys(
    register_wrapper(text, top), ECP5_SCRIPT.format(top=WRAP_TOP), "top.json", prefix="ecp5-", design=top
)
run = parse_nextpnr_log(_nextpnr(netlist, seed, top))
out = {
    "net": net,
    "backprop": backprop,
    "seed": seed,
    "fmax_mhz": run["fmax_mhz"],
    "critical_path": run["critical_path"],
}
print(json.dumps({**out, "seconds": round(time.time() - started)}))
