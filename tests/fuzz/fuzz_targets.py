"""Fuzz targets: the trace reader, the raw ``aryl._core`` entry points, saved results.

Each target takes bytes and may only return or raise ValueError/TypeError (TraceError
is a ValueError); anything else — another exception, a crash, a sanitizer report — is a
bug. ``scripts/sanitize`` runs them under ASan+UBSan with a seeded generator that
mutates a small corpus of valid inputs:

    python tests/fuzz/fuzz_targets.py --iterations 3000 --seed 0

With atheris installed (a libFuzzer front end; needs clang, so not part of CI) the
same targets run coverage-guided: ``python tests/fuzz/fuzz_targets.py --atheris``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import math
import random
import sys
import tempfile
import warnings
from pathlib import Path

import aryl
from aryl import _core, sim, traces
from aryl.model import job_columns, server_columns

CORPUS = [
    b"job_id,submit_time_s,num_gpus,duration_s,gpu_type\na,0,1,100,unknown\nb,10,8,3600,V100\n",
    b'job_id,submit_time_s,num_gpus,duration_s,gpu_type,extra\na,0,12,50.5,,x\n"b",1,2,"5",T4,y\n',
    b"\xef\xbb\xbfjob_id,submit_time_s,num_gpus,duration_s,gpu_type\r\na,0,1,1e3,unknown\r\n",
    b"time_s,load\n0,0.5\n300,1\n600,0\n",
]
TOKENS = [
    b",",
    b"\n",
    b"\r\n",
    b'"',
    b"0",
    b"-1",
    b"1e308",
    b"nan",
    b"inf",
    b"\x00",
    b"\xff",
    b"\x1f\x8b",
    b"2147483648",
    b"18446744073709551616",
    b"unknown",
    b"job_id",
    b"time_s,load\n",
]


def mutate(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(4)
        at = rng.randint(0, len(data))
        if op == 0 and data:
            del data[at : at + rng.randint(1, 8)]
        elif op == 1:
            data[at:at] = rng.choice(TOKENS)
        elif op == 2 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            data[at:at] = data[rng.randint(0, len(data)) :][: rng.randint(0, 40)]
    return bytes(data)


def trace_reader(data: bytes) -> None:
    """read_jobs and read_load on the bytes, as a binary stream."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for read in (traces.read_jobs, traces.read_load):
            for kwargs in (
                ({}, {"drop_invalid": True}) if read is traces.read_jobs else ({},)
            ):
                try:
                    read(io.BytesIO(data), **kwargs)
                except ValueError:
                    pass


VALUES = [
    0,
    1,
    -1,
    2,
    8,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**64,
    0.5,
    math.nan,
    math.inf,
    -0.0,
    1e308,
    True,
    False,
    None,
    "",
    "a",
    "\ud800",
    [],
    [0],
    [0, 1, 2],
    "xyz",
    b"ab",
    object(),
]


def core_entry_points(data: bytes) -> None:
    """ClusterState, reclaim, schedule, knapsack and simulate on columns of drawn lengths,
    types and values (derived from the bytes)."""
    rng = random.Random(data)

    def column(base: list) -> object:
        r = rng.random()
        if r < 0.6:
            return base
        if r < 0.75:
            return base[: rng.randint(0, len(base))]  # shorter than its siblings
        if r < 0.85:
            return base + base[:1]
        return rng.choice(VALUES)

    servers = [
        aryl.Server(
            f"s{i}",
            rng.choice(["training", "inference"]),
            rng.choice([4, 8]),
            on_loan=False,
        )
        for i in range(rng.randint(0, 4))
    ]
    servers = [
        aryl.Server(s.id, s.pool, s.gpus, on_loan=s.pool == "inference")
        for s in servers
    ]
    jobs = [
        aryl.Job(
            f"j{i}", rng.choice([1, 2, 4]), 1, rng.randint(1, 3), rng.uniform(1, 1e4)
        )
        for i in range(rng.randint(0, 4))
    ]
    sc = {k: column(v) for k, v in server_columns(servers).items()}
    jc = {k: column(v) for k, v in job_columns(jobs).items()}
    n_workers = rng.randint(0, 4)
    wc = {
        "job": column([rng.randint(-1, 4) for _ in range(n_workers)]),
        "server": column([rng.randint(-1, 4) for _ in range(n_workers)]),
        "flexible": column([rng.random() < 0.5 for _ in range(n_workers)]),
    }
    for key in list(sc) + list(jc):
        if rng.random() < 0.03:
            (sc if key in sc else jc).pop(key, None)
    try:
        state = _core.ClusterState(sc, jc, wc)
    except (ValueError, TypeError):
        state = None
    if state is not None:
        for call in (
            lambda: _core.reclaim(
                state,
                rng.choice(VALUES + [0, 1]),
                rng.choice(["aryl", "exact", 5]),
                rng.choice(VALUES + [0]),
            ),
            lambda: _core.schedule(
                state,
                rng.choice(["aryl", "fifo", "afs", None]),
                "aryl",
                rng.choice([False, True, "no"]),
                column([0.5] * len(jobs)),
            ),
            lambda: _core.preemption_costs(state),
        ):
            try:
                call()
            except (ValueError, TypeError):
                pass
    groups = [
        [
            (rng.choice(VALUES + [1, 2, 3]), rng.choice(VALUES + [1.0, 2.5]))
            for _ in range(rng.randint(0, 3))
        ]
        for _ in range(rng.randint(0, 3))
    ]
    try:
        _core.knapsack(column(groups), rng.choice(VALUES + [0, 5, 16]))
    except (ValueError, TypeError):
        pass
    config = {
        "policy": "aryl",
        "reclaim": "aryl",
        "placement": "aryl",
        "backfill": False,
        "scaling": "linear",
        "schedule_interval": 60.0,
        "loan_interval": 300.0,
        "restart_overhead": 63.0,
        "headroom": 0.0,
        "hetero_efficiency": 0.7,
        "gpu_speed": {"V100": 1.0, "T4": 0.25},
        "horizon": 1e5,
        "seed": 0,
        "audit": True,
    }
    if rng.random() < 0.5:
        config[rng.choice(list(config))] = rng.choice(VALUES)
    if config.get("horizon") is not None and not (
        isinstance(config["horizon"], float) and config["horizon"] <= 1e5
    ):
        config["horizon"] = (
            1e5  # the engine's own bounds are its owner's; keep runs short
        )
    try:
        _core.simulate(
            sc,
            jc,
            column([[1.0] * j.max_workers for j in jobs]),
            column([0.0, 100.0]),
            column([0.5, 0.2]),
            config,
            rng.choice([None, lambda f: True, lambda f: "no"]),
        )
    except (ValueError, TypeError):
        pass


_SAVED: dict = {}  # file name -> bytes of one saved result that is a sweep cache entry


def _saved_files() -> dict:
    if not _SAVED:
        sweep = importlib.import_module("aryl.studies.sweep")
        run = sim.simulate(
            [aryl.Job(f"j{i}", 8, 1, 2, 600.0) for i in range(3)],
            sim.Cluster(2, 0),
            label="fuzz",
        )
        with tempfile.TemporaryDirectory() as tmp:
            entry = Path(tmp) / "entry"
            sweep._store(entry, run, {**sweep._row(run, "entry", "t"), "seconds": 0.0})
            _SAVED.update({p.name: p.read_bytes() for p in entry.iterdir()})
    return _SAVED


def saved_result(data: bytes) -> None:
    """A saved result (a sweep cache entry) with one file mutated, truncated or gone:
    ``sim.load`` returns or raises ResultFileError (a ValueError; FileNotFoundError when
    result.json is gone), a sweep's cache read
    returns the row or None (recompute) with a warning, never another exception."""
    rng = random.Random(data)
    files = dict(_saved_files())
    name = rng.choice(sorted(files))
    if rng.random() < 0.1:
        del files[name]
    else:
        files[name] = mutate(rng, files[name])
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(tmp) / "entry"
        entry.mkdir()
        for file, content in files.items():
            (entry / file).write_bytes(content)
        try:
            sim.load(entry)
        except ValueError:
            pass
        except FileNotFoundError:  # result.json gone: no saved result here
            assert "result.json" not in files
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module("aryl.studies.sweep")._cached(Path(tmp), "entry")


TARGETS = {
    "trace_reader": trace_reader,
    "core": core_entry_points,
    "saved_result": saved_result,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", choices=sorted(TARGETS), action="append")
    parser.add_argument(
        "--atheris", action="store_true", help="coverage-guided, with atheris"
    )
    args, rest = parser.parse_known_args()
    names = args.target or sorted(TARGETS)
    if args.atheris:
        import atheris  # noqa: PLC0415

        atheris.Setup([sys.argv[0], *rest], TARGETS[names[0]])
        atheris.Fuzz()
        return 0
    rng = random.Random(args.seed)
    for name in names:
        for _ in range(args.iterations):
            TARGETS[name](
                mutate(rng, rng.choice(CORPUS))
                if name == "trace_reader"
                else rng.randbytes(16)
            )
        print(f"{name}: {args.iterations} inputs, no crash and no unexpected exception")
    return 0


if __name__ == "__main__":
    sys.exit(main())
