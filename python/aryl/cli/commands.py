"""The commands: ``aryl simulate``, ``aryl compare`` (replicated: ``replicated``),
``aryl demo``, ``aryl traces export``; ``aryl sweep`` is in ``sweep_command``."""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Tuple,
)

from .. import reclaiming
from ..defaults import RECLAIM_POLICIES
from ..policy import load_policy, policy_name

if TYPE_CHECKING:  # imported where used, so `aryl --help` stays fast
    from ..typing import SimulationPolicy
from .._display import Table
from .console import Console, Progress
from .files import output_directory, write_atomically
from .inputs import trace_frames
from .options import (
    cluster,
    config_of,
    console_of,
    elastic_options,
    own_rows,
    trace_files,
)
from .output import (
    LEDGER_NOTE,
    QUESTION_FEATURES,
    check_groups,
    compare_table,
    elastic_ceiling,
    groups_table,
    integer_columns,
    ledger_table,
    png_metadata,
    pollux_table,
    print_note,
    provenance_columns,
    report,
    run_record,
    save_runs,
    say_reference,
    say_verdict,
    show_groups,
    write_provenance,
)


def simulate(args: argparse.Namespace) -> int:
    from .. import sim
    from ..engine.runs import run_arguments, trace_jobs
    from ..studies.sizing import warn_if_too_small

    if args.windows is not None:
        from .windowed import simulate_windowed

        return simulate_windowed(args)
    console = console_of(args)
    out = output_directory(args.out)
    if args.pollux_workload is not None:
        return _simulate_pollux(args, out, console)
    if args.policy == "pollux":
        raise ValueError(
            f"--policy {args.policy} runs a Pollux workload: add --pollux-workload FILE|N"
        )
    own = load_policy(args.policy) if args.policy and ":" in args.policy else None
    frame, load, where = trace_frames(trace_files(args), console)
    check_groups(frame, args.by)
    jobs = trace_jobs(frame, any_type_share=args.any_type_share, seed=args.seed)
    on = cluster(args, jobs)
    config = config_of(args)
    if args.policy == "tiresias":  # least attained service on the training servers
        config["loaning"] = False
        console.say("Tiresias runs on the training servers: nothing is lent.")
    run = run_arguments(
        jobs,
        load,
        scenario_name=args.scenario,
        seed=args.seed,
        policy=own if own is not None else args.policy,
        reclaim=args.reclaim,
        config=config,
        **elastic_options(args, on),
    )
    policy = run["policy"] if own is None else policy_name(own)
    console.say(
        f"Simulating {len(jobs):,} jobs from {where}: scenario {args.scenario}, "
        f"policy {policy}, reclaim {args.reclaim}.",
    )
    last_submit = _last(jobs.column("submit_time"))
    with Progress(1, console.progress_wanted()) as progress:
        result = sim.simulate(
            cluster=on,
            progress=progress.run(f"{args.scenario}/{policy}", last_submit),
            label=f"{args.scenario}-{policy}",
            **run,
        )
    warn_if_too_small(result)
    report(
        result,
        console,
        run_record(vars(args), where),
        out,
        args.plot_format,
        args.plot_window,
    )
    if args.by:
        console.say(f"\nPer {args.by} (means over the group's finished jobs; s):")
        console.show(groups_table(result.groups(args.by), args.by))
    return 0


def _last(submit_times: Any) -> float:
    """The last submission time (s) of a run's jobs; 0 without jobs."""
    import numpy as np

    times = np.asarray(submit_times, dtype=float)
    return float(times.max()) if times.size else 0.0


def _simulate_pollux(args: argparse.Namespace, out: Path, console: Console) -> int:
    """A Pollux artifact workload (goodput-driven jobs) on a node cluster."""
    from .. import sim, traces

    source = args.pollux_workload
    workload = (
        traces.pollux_workload(int(source))
        if source.isdigit()
        else traces.read_pollux_workload(source)
    )
    nodes, gpus = args.pollux_cluster
    policy: SimulationPolicy = args.policy or "tiresias"
    where = f"Pollux workload {source}" if source.isdigit() else str(source)
    console.say(
        f"Simulating {len(workload)} goodput-driven jobs from {where}\n"
        f"on {nodes} nodes x {gpus} GPUs, policy {policy}.",
    )
    with Progress(1, console.progress_wanted()) as progress:
        result = sim.simulate(
            workload,
            sim.Cluster(nodes, 0, gpus_per_server=gpus),
            policy=policy,
            progress=progress.run(f"pollux/{policy}", _last(workload["time"])),
            label=f"pollux-{policy}",
        )
    report(result, console, run_record(vars(args), where), out, None)
    return 0


def compare(args: argparse.Namespace) -> int:
    from .. import plot, sim
    from ..engine.runs import trace_jobs

    if args.seeds is not None or args.windows is not None:
        from .replicated import compare_replicated

        return compare_replicated(args)
    console = console_of(args)
    out = output_directory(args.out)
    frame, load, where = trace_frames(trace_files(args), console)
    check_groups(frame, args.by)
    jobs = trace_jobs(frame, any_type_share=args.any_type_share, seed=args.seed)
    console.say(f"Comparing on {len(jobs):,} jobs from {where}.")
    on_cluster = cluster(args, jobs)
    console.say()
    config = config_of(args)
    if args.pollux_rows:
        config["pollux_generations"] = args.pollux_generations
    runs = sim.paper_runs(
        jobs,
        load,
        seed=args.seed,
        config=config,
        pollux_rows=args.pollux_rows,
        policies={name: load_policy(spec) for name, spec in own_rows(args).items()},
        rows=args.rows,
        **elastic_options(args, on_cluster),
    )
    reference = _reference_of(args.reference, list(runs))
    results = {}
    last_submit = _last(jobs.column("submit_time"))
    with Progress(len(runs), console.progress_wanted()) as progress:
        for name, kwargs in runs.items():
            on = sim.pollux_nodes(on_cluster) if name in sim.POLLUX_ROWS else on_cluster
            results[name] = sim.simulate(
                cluster=on,
                progress=progress.run(name, last_submit),
                label=name,
                **kwargs,
            ).check()
    problems = sim.reference_problems(results[reference])
    summaries = {name: r.summary() for name, r in results.items()}
    table = _common_speedups(
        integer_columns(sim.speedups(summaries, reference), summaries),
        results,
        reference,
    )
    say_reference(console, reference, problems, list(results))
    from ..studies.verdict import LEFT_OUT, NO_LOAD

    missing = LEFT_OUT if load is not None else NO_LOAD
    answers = sim.verdict_lines(summaries=summaries, missing=missing, results=results)
    say_verdict(console, answers)
    answer = {
        "answers": answers,
        "intervals_over": "one run (no intervals: --seeds 5 gives them)",
        "reference": reference,
        "reference_problems": problems,
        "rows": json.loads(
            table.rename_axis("run").reset_index().to_json(orient="records")
        ),
    }
    if console.format == "json":  # the whole answer, not the main table alone
        print(json.dumps(answer, indent=2))
    else:
        console.show(compare_table(table, reference, problems))
    if console.format == "table":  # csv, markdown, json: the main table alone
        console.say()
        console.show(ledger_table(table))
        console.say(f"\n{LEDGER_NOTE}")
    if args.by and console.format == "table":
        _say_groups(console, results, reference, args)
    if sim.ELASTIC_ROW in runs and console.format == "table":
        basic = sim.elastic_bound(runs[sim.ELASTIC_ROW]["jobs"])
        console.say("\n" + elastic_ceiling(basic, summaries))
    beside = sim.pollux_beside_paper(summaries) if args.pollux_rows else None
    if beside is not None and console.format == "table":  # else compare's table alone
        console.say("\nThe Pollux comparison beside the paper's Table 3 (rows 10-12):")
        console.show(pollux_table(beside))
    record = run_record(vars(args), where)

    def write(folder: Path) -> List[Path]:
        provenance_columns(table, results, record).to_csv(
            folder / "compare.csv", index_label="run"
        )
        (folder / "compare.json").write_text(json.dumps(answer, indent=2) + "\n")
        if beside is not None:
            beside.to_csv(folder / "pollux_paper.csv", index_label="metric")
        write_provenance(folder, record, results)
        return plot.save_all(
            results,
            folder,
            metadata=png_metadata(record),
            headline=table,
            formats=args.plot_format,
            window=args.plot_window,
        )

    written = write_atomically(out, write)
    first = save_runs(results, out)[0]
    print_note(console, next(iter(results.values())))
    console.say(
        f'\nSpeed-ups are over the row {reference!r}. Rows: README "The rows" and '
        f"aryl.sim.paper_runs. Wrote compare.csv, compare.json (the whole answer), "
        f"{'pollux_paper.csv, ' if beside is not None else ''}provenance.json and "
        f"{len(written)} figure files to {out}/, each run's result to "
        f"{first.parent}/ (aryl.sim.load('{first}') reads one back)",
    )
    return 0


def _say_groups(
    console: Any, results: Dict[str, Any], reference: str, args: argparse.Namespace
) -> None:
    """One run per row: what the answers' features buy each group, as one-run ratios
    (``studies.groups.group_gains`` on the runs as one replication; no interval)."""
    import warnings

    from ..studies.groups import group_gains
    from ..studies.replications import CONTRIBUTIONS, assemble

    runs = {(name, args.seed, 0): r for name, r in results.items()}
    with warnings.catch_warnings():  # one replication: no interval, said below
        warnings.simplefilter("ignore", UserWarning)
        table = assemble(runs, list(results), reference)
    gains = group_gains(table, args.by, CONTRIBUTIONS)
    show_groups(console, gains, args.by, QUESTION_FEATURES)
    console.say("(One run per row: no intervals; --seeds 5 gives them.)")


def _reference_of(given: Optional[str], rows: List[str]) -> str:
    """The row speed-ups are over: ``--reference``, else the Baseline, else the first
    row; a name that is not a row is a ``ValueError`` before anything runs."""
    from ..sim import BASELINE

    if given is None:
        return BASELINE if BASELINE in rows else rows[0]
    if given not in rows:
        raise ValueError(
            f"--reference {given!r} is not a row of this comparison: {rows}"
        )
    return given


def _common_speedups(table: Any, results: Dict[str, Any], reference: str) -> Any:
    """``table`` with each speed-up over ``reference`` taken on the jobs both rows
    finished where they finished different jobs (``replications.common_ratio``), and
    ``speed-up jobs``: how many jobs that is (NaN: the same jobs, every one)."""
    import pandas as pd

    from ..studies.replications import SPEEDUPS, common_ratio

    runs = {(name, 0, 0): r for name, r in results.items()}
    samples = pd.DataFrame(
        [{"run": n, "seed": 0, "window": 0, **r.summary()} for n, r in results.items()]
    )
    table = table.copy()
    table["speed-up jobs"] = math.nan
    for name in results:
        for column, key in SPEEDUPS:
            e, basis = common_ratio(runs, samples, reference, name, key)
            if basis.jobs is not None:
                table.loc[name, column] = e.value
                table.loc[name, "speed-up jobs"] = float(basis.jobs)
    return table


def demo(args: argparse.Namespace) -> int:
    from .demo import loaned_cluster

    console = console_of(args)
    servers, jobs, workers = loaned_cluster(
        args.training_servers, args.loaned_servers, args.seed
    )
    on_loan = sum(s.on_loan for s in servers)
    elastic = sum(j.elastic for j in jobs)
    console.say(
        f"Cluster: {len(servers) - on_loan} training + {on_loan} on-loan 8-GPU "
        "servers, "
        f"{len(jobs)} running jobs ({elastic} elastic), {len(workers)} workers.",
    )
    console.say(
        "The inference cluster asks for servers back; each policy picks which to "
        "return.\n",
    )
    reclaiming.reclaim(
        servers, jobs, workers, 0
    )  # warm-up, so the timings below are steady
    rows: List[Tuple[Any, ...]] = []
    for n in args.reclaim:
        for policy in RECLAIM_POLICIES:
            start = time.perf_counter()
            try:
                plan = reclaiming.reclaim(
                    servers, jobs, workers, n, policy, seed=args.seed
                )
            except ValueError:
                if not policy.startswith("exact"):
                    raise
                rows.append((n, policy, "—", "—", "—", "too large for exact search"))
                continue
            ms = (time.perf_counter() - start) * 1e3
            rows.append(
                (
                    n,
                    policy,
                    len(plan.preempted),
                    sum(plan.scaled_in.values()),
                    f"{plan.collateral_gpus} ({plan.collateral_damage:.0%})",
                    f"{ms:.2f}",
                )
            )
    console.show(
        Table(
            [
                "reclaim",
                "policy",
                "jobs preempted",
                "workers scaled in",
                "collateral GPUs",
                "time (ms)",
            ],
            rows,
        ),
    )
    console.say(
        "\nFewer preempted jobs is better; collateral GPUs are freed on servers that "
        "are kept.",
    )
    return 0


def export_traces(args: argparse.Namespace) -> int:
    """``aryl traces export``: the embedded jobs and load as example CSV files."""
    from .. import traces

    console = console_of(args)
    out = output_directory(args.folder)
    jobs, load = traces.load_default()

    def write(folder: Path) -> None:
        jobs.to_csv(folder / "jobs.csv", index=False)
        load.to_csv(folder / "load.csv", index=False)

    write_atomically(out, write)
    console.say(
        f"Wrote {len(jobs):,} jobs to {out / 'jobs.csv'} and {len(load):,} load rows "
        f"to {out / 'load.csv'}; e.g. aryl compare {out / 'jobs.csv'} --load "
        f"{out / 'load.csv'}",
    )
    return 0
