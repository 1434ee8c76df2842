"""What every command family shares: the user error, the parser class and the argument types.

Bad input -> ``CLIError`` -> one line ``pezo: error: ...`` (``main`` prints it, exit status 2). The
argument types hand integers over as ints and leave anything else unchanged, so the config that receives
the value names the field and its range (``n_rngs must be an integer in 1..1024, got '2.5'``).
"""

from __future__ import annotations

import argparse
import re


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage dump) pointing at the command's --help."""

    def error(self, message):
        raise CLIError(f"{message} (see pezo {self.prog.split(' ', 1)[1] + ' ' if ' ' in self.prog else ''}--help)")

    def _get_value(self, action, arg_string):
        """An ``--out`` that is empty, the current directory or one of its parents is refused here, named as
        typed (``Path('')`` and ``Path('./')`` print as ``.``)."""
        if action.dest == "out" and action.option_strings:
            from pathlib import Path

            from pezo.cli.output import _check_not_cwd

            option = action.option_strings[0]
            if arg_string == "":
                raise CLIError(
                    f"{option} '' is empty, not a directory name: an empty path is the current directory, "
                    f"and pezo cannot replace what is the current directory or one of its parents; name "
                    f"a new directory (e.g. {option} build/out)"
                )
            _check_not_cwd(Path(arg_string), option, arg_string)
        return super()._get_value(action, arg_string)

    def parse_known_args(self, args=None, namespace=None):
        """A subcommand refuses its own unknown arguments, so the error points at its --help (argparse would
        hand them up to ``pezo``'s parser)."""
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and " " in self.prog:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def raw(text: str):
    """Integers as ints; anything else unchanged, so the config names the field and its range."""
    return int(text) if re.fullmatch(r"[+-]?\d+", text.strip()) else text


def sim_subparsers(sub) -> argparse._SubParsersAction:
    """The subcommands of ``pezo sim`` (registered by ``pezo.cli.engine``), for the modules that add one."""
    sim = sub.choices["sim"]
    return next(a for a in sim._actions if isinstance(a, argparse._SubParsersAction))


def int_option(option: str, value, low: int, high: int) -> int:
    """``value`` of ``--option`` if it is an integer in ``low..high``, else one ``CLIError`` naming both."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CLIError(f"--{option} must be an integer in {low}..{high}, got {value!r}")
    return value


def num(text: str):
    """Integers as ints, decimals as floats, anything else unchanged (the config names the field)."""
    text = text.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def int_list(text: str) -> list:
    """A comma-separated list, each part as ``raw`` gives it (the caller checks that parts are integers)."""
    return [raw(part) for part in text.split(",") if part.strip()]


def check_no_repeats(option: str, values) -> None:
    """One error for a list option that names a value twice (the run would be made twice)."""
    seen = set()
    for value in values:
        if value in seen:
            raise CLIError(f"{option} names {value!r} twice: give each value once")
        seen.add(value)


def seed_list(text: str, check) -> list:
    """``--seeds``: ``int_list(text)`` with every part passed to ``check(seed)`` (the run config's own
    validation, a ValueError starting with ``seed``); a CLIError naming --seeds and the range otherwise."""
    seeds = int_list(text)
    check_no_repeats("--seeds", seeds)
    for seed in seeds:
        try:
            check(seed)
        except ValueError as exc:
            message = str(exc)
            raise CLIError(
                f"--seeds {text.strip()}: {'every ' if message.startswith('seed') else ''}{message}"
            ) from None
    return seeds


def add_family_options(p: argparse.ArgumentParser) -> None:
    """The perturbation families' own options (``golden.zo.families.FAMILY_OPTIONS``), one flag each, for
    every command that draws perturbations from a family (``pezo train``, ``pezo quality``)."""
    p.add_argument("--pool-size", type=raw, help="pezo-pregen: pool values N (default 4095 = 2^12 - 1)")
    p.add_argument("--pool-bits", type=raw, help="pezo-pregen: bits per pool value (default 12)")
    p.add_argument("--n-rngs", type=raw, help="pezo-otf, naive-int: LFSR URNGs n (default 31 = 2^5 - 1)")
    p.add_argument("--rng-bits", type=raw, help="pezo-otf, naive-int: LFSR width b (default 14)")
    p.add_argument(
        "--scaling",
        type=str,
        help="pezo-otf modulus scaling: lut (power of two, the hardware's), exact (PeZO Eq. 3) or none (default lut)",
    )
    p.add_argument(
        "--leap",
        type=raw,
        help="pezo-otf, naive-int: LFSR steps per clock k (leap-forward), 1..b, "
        "coprime to 2^b - 1 (default 1; b decorrelates the lanes)",
    )
    p.add_argument(
        "--bit-order",
        type=str,
        help="pezo-otf, naive-int: how a lane reads its LFSR state: spread (a "
        "fixed bit permutation, wiring only; moves the lane correlation to the largest shift) or natural "
        "(PeZO's array as published) (default spread for pezo-otf, natural for naive-int)",
    )


def option_error(exc: Exception, fields, given=(), defaults=None) -> CLIError:
    """A config's ValueError in the user's words: Python field names (``n_rngs``) become the options the user
    types (``--n-rngs``), and a blamed option the user did not give is said to be a default. ``fields`` is a
    list of field names (option = ``--`` + the name with dashes) or a dict field -> option where they differ
    (``{"seed": "--split-seed"}``)."""
    options = dict(fields) if isinstance(fields, dict) else {f: "--" + f.replace("_", "-") for f in fields}
    message = str(exc)
    for field in sorted(options, key=len, reverse=True):
        option = options[field]
        if "_" in field:
            message = re.sub(rf"(?<![\w-]){field}(?![\w])", option, message)
        elif re.match(rf"{field}\b", message):
            message = option + message[len(field) :]
    message = _bare_fields(message, {f: o for f, o in options.items() if "_" not in f})
    blamed = re.match(r"--[\w-]+", message)
    field = {option: f for f, option in options.items()}.get(blamed.group()) if blamed else None
    if field is not None and field not in given:
        default = defaults.get(field) if isinstance(defaults, dict) else getattr(defaults, field, None)
        message += (
            f" ({blamed.group()} was not given: {default!r} is its default; give it explicitly)"
            if default is not None
            else f" ({blamed.group()} was not given: its default does not fit)"
        )
    return CLIError(message)


def _bare_fields(message: str, options: dict) -> str:
    """Field names without an underscore inside a message as options: a value (``lanes=8`` -> ``--lanes=8``)
    and a list with options (``takes only --n-rngs, scaling`` -> ``--scaling``); prose words stay words."""

    def one(name: str) -> str:
        return options.get(name, name)

    message = re.sub(r"(?<![\w-])(\w+)(?==)", lambda m: one(m.group(1)), message)
    return re.sub(
        r"(?<![\w-])[\w-]+(?:, [\w-]+)+",
        lambda m: ", ".join(one(i) for i in m.group().split(", ")) if "--" in m.group() else m.group(),
        message,
    )


def pezo_command() -> str:
    """How the user can run pezo again, for hints: ``pezo`` if it is on PATH, else the path that was run
    (e.g. ``.venv/bin/pezo``), quoted for a shell."""
    import os
    import shlex
    import shutil
    import sys

    if shutil.which("pezo"):
        return "pezo"
    argv0 = sys.argv[0] if sys.argv and os.path.basename(sys.argv[0]) == "pezo" else ".venv/bin/pezo"
    rel = os.path.relpath(argv0) if os.path.isabs(argv0) else argv0
    if rel.startswith(".."):
        rel = os.path.abspath(argv0)
    return shlex.quote(rel if rel.startswith(("/", ".")) else "./" + rel)
