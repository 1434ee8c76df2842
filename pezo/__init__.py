"""pezo: hardware/software co-design for zeroth-order (ZO) on-device training on FPGAs.

One namespace, one room per job (the folders sit at the repository's top level; pyproject maps them):

* ``pezo.golden`` -- NumPy, bit-exact: the math every circuit must equal, and the software training stack.
* ``pezo.hw``     -- Amaranth 0.5 components, one per golden twin.
* ``pezo.sim``    -- the one place that builds and runs simulators (cocotb on Icarus / Verilator, Amaranth).
* ``pezo.boards`` -- board targets (ZCU102), synthesis, resource / power reports.
* ``pezo.cli``    -- the ``pezo`` command line, one module per command family.

Dependencies point one way, cli -> boards -> sim -> hw -> golden (checked by import-linter, see pyproject).
"""

__version__ = "0.1.0"
