"""The cluster of a trace (issue 45, "the cluster of the trace cannot be given" and
"every GPU type at its speed"): the Alibaba GPU 2023 node list read as servers and
given to the command line as --servers, a GPU type without a speed named in a
warning and in the provenance, and each job's GPU types its own."""

import json
import warnings
from collections import Counter
from pathlib import Path

import pytest

import aryl
from aryl import sim, traces
from aryl.cli import main
from aryl.defaults import PUBLISHED_GPU_SPEED
from aryl.traces import TraceError

DATA = Path(__file__).parent / "data" / "alibaba2023"
NODES = DATA / "openb_node_list_gpu_node.csv"  # the release's first 48 nodes
PODS = DATA / "openb_pod_list_default.csv"
QUIET = ["--quiet", "--plot-format", "png"]
#: speeds for the excerpt's types aryl has none for (made up: the tests' own)
SPEEDS = "P100=0.5,G2=0.5,G3=0.5"


# ---- the node list as servers ----------------------------------------------------------


def test_the_release_node_list_is_read_as_servers():
    servers = traces.read_nodes(NODES)
    assert len(servers) == 48 and sum(s.gpus for s in servers) == 232
    assert all(isinstance(s, aryl.Server) for s in servers)
    assert servers[0] == aryl.Server("openb-node-0000", "training", 2, "P100")
    kinds = Counter((s.pool, s.gpu_type) for s in servers)
    # V100M16 and V100M32 are V100s; the T4 servers are the inference pool
    assert kinds == {
        ("training", "P100"): 22,
        ("training", "G2"): 18,
        ("training", "G3"): 2,
        ("training", "V100"): 3,
        ("inference", "T4"): 3,
    }
    assert traces.read_servers(NODES) == servers  # the same file, told by its header


def test_the_pools_of_a_node_list_are_the_users_choice():
    lend_g3 = traces.read_nodes(NODES, inference=("T4", "G3"))
    assert {s.gpu_type for s in lend_g3 if s.pool == "inference"} == {"T4", "G3"}
    assert {s.pool for s in traces.read_servers(NODES, inference=())} == {"training"}
    with pytest.raises(TypeError, match=r"\('T4',\)"):
        traces.read_nodes(NODES, inference="T4")


def test_aryl_server_csv(tmp_path):
    path = tmp_path / "servers.csv"
    path.write_text("id,pool,gpus,gpu_type\nt0,training,8,A100\ni0,inference,4,\n")
    assert traces.read_servers(path) == [
        aryl.Server("t0", "training", 8, "A100"),
        aryl.Server("i0", "inference", 4, "T4"),
    ]
    with pytest.raises(ValueError, match="names each server's pool"):
        traces.read_servers(path, inference=("T4",))


@pytest.mark.parametrize(
    "text, where",
    [
        ("sn,gpu,model\nn0,2,P100\nn0,8,G2\n", "row 2 (line 3), column 'sn': 'n0'"),
        ("sn,gpu,model\nn0,2,\n", "row 1 (line 2), column 'model'"),
        ("sn,gpu,model\nn0,two,T4\n", "row 1 (line 2), column 'gpu': not a number"),
        ("sn,gpu,model\nn0,0,\n", "no server with GPUs"),
        ("id,pool,gpus\nt0,train,8\n", "column 'pool': expected training or inference"),
        ("host,gpus\nh,8\n", "missing column(s) id, pool"),
    ],
)
def test_a_bad_cluster_file_names_file_row_and_column(tmp_path, text, where):
    path = tmp_path / "cluster.csv"
    path.write_text(text)
    with pytest.raises(TraceError) as info:
        traces.read_servers(path)
    assert str(info.value).startswith(str(path)) and where in str(info.value)


def test_cpu_nodes_are_left_out_and_counted(tmp_path):
    path = tmp_path / "all_nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nc0,32000,1,0,\nn0,1,1,8,G3\n")
    with pytest.warns(UserWarning, match="left out 1 node without GPUs"):
        assert traces.read_nodes(path) == [aryl.Server("n0", "training", 8, "G3")]


def test_a_pod_list_as_the_cluster_and_the_node_list_as_jobs_say_which_is_which():
    with pytest.raises(TraceError, match="a pod list .* as JOBS"):
        traces.read_servers(PODS)
    with pytest.raises(TraceError, match="a node list .* --servers FILE"):
        traces.read(NODES, format="alibaba-2023")


# ---- --servers on the command line ------------------------------------------------------


def test_simulate_and_compare_take_the_node_list(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["simulate", str(PODS), "--trace-format", "alibaba-2023"]
    assert (
        main([*argv, "--servers", str(NODES), "--gpu-speed", SPEEDS, "--out", str(out)])
        == 0
    )
    said = capsys.readouterr().out
    assert "45 training servers (144 G2, 16 G3, 44 P100, 20 V100 GPUs)" in said, said
    assert "3 inference servers (8 T4 GPUs)" in said
    cluster = json.loads((out / "summary.json").read_text())["provenance"]["run"][
        "cluster"
    ]
    assert cluster["training_servers"] == 45 and cluster["inference_gpus"] == 8
    assert "unlisted_gpu_types" not in cluster  # every type has its speed
    out = tmp_path / "c"
    argv = ["compare", str(PODS), "--trace-format", "alibaba-2023", *QUIET]
    lend = ["--inference-types", "T4,G3", "--gpu-speed", SPEEDS]
    lend += ["--elastic-range", "cluster"]  # up to the file's training GPUs
    assert main([*argv, "--servers", str(NODES), *lend, "--out", str(out)]) == 0
    runs = sim.load(out / "runs" / "baseline-fifo").provenance.cluster
    assert (runs["inference_servers"], runs["inference_gpu"]) == (5, "G3+T4")


@pytest.mark.parametrize(
    "options",
    [
        ["--servers", str(NODES), "--training-servers", "4"],
        ["--inference-servers", "auto", "--servers", str(NODES)],
    ],
)
def test_servers_and_server_counts_are_refused_together(options, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["simulate", str(PODS), "--trace-format", "alibaba-2023", *options])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--servers and --" in err, err
    assert "gives the whole cluster" in err


def test_sweep_refuses_servers_with_server_counts(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--servers", str(NODES), "--training-servers", "4"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "gives the whole cluster" in err, err


@pytest.mark.parametrize(
    "options, message",
    [
        (["--inference-types", "T4"], "--inference-types chooses the pools"),
        (["--servers", str(NODES), "--pollux-rows"], "--pollux-rows runs the Pollux"),
    ],
)
def test_what_servers_does_not_go_with(options, message, tmp_path, capsys):
    argv = ["compare", str(PODS), "--trace-format", "alibaba-2023", *QUIET]
    assert main([*argv, *options, "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


# ---- every GPU type at its speed --------------------------------------------------------


def _two_types(second="P100"):
    servers = [
        aryl.Server("p0", "training", 2, second),
        aryl.Server("v0", "training", 2, "V100"),
    ]
    jobs = [aryl.Job(f"j{i}", 1, 2, 2, 100.0) for i in range(2)]
    return jobs, servers


def test_a_gpu_type_without_a_speed_is_named_with_how_to_give_it():
    jobs, servers = _two_types("G2")  # Alibaba's undisclosed type: no published speed
    with pytest.warns(UserWarning) as caught:
        result = sim.simulate(jobs, servers)
    (said,) = [str(w.message) for w in caught]
    assert "G2 (1 server, 2 GPUs) has no speed in gpu_speed" in said, said
    assert "--gpu-speed G2=" in said and "V100 (" not in said  # V100 is 1.0
    assert result.provenance.cluster["unlisted_gpu_types"] == {"G2": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        given = sim.simulate(jobs, servers, config={"gpu_speed": {"G2": 0.5}})
    assert "unlisted_gpu_types" not in given.provenance.cluster


@pytest.mark.parametrize("gpu", sorted(PUBLISHED_GPU_SPEED))
def test_a_type_with_a_published_speed_runs_at_it_and_says_so(gpu):
    speed = PUBLISHED_GPU_SPEED[gpu]
    servers = [aryl.Server("g0", "training", 2, gpu)]
    jobs = [aryl.Job("j", 1, 2, 2, 100.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing unlisted: no warning
        result = sim.simulate(jobs, servers)
    assert result.jobs["jct"].iloc[0] == pytest.approx(100.0 / speed)
    assert result.provenance.config["gpu_speed"][gpu] == speed
    assert "unlisted_gpu_types" not in result.provenance.cluster
    given = sim.simulate(jobs, servers, config={"gpu_speed": {gpu: 1.0}})
    assert given.jobs["jct"].iloc[0] == pytest.approx(100.0)  # a given speed wins
    # aryl.schedule reads the same table: the job's speed sets its running time
    assert aryl.schedule(jobs, servers).start  # placed, at the published speed


def test_the_command_line_warns_once_for_every_run(tmp_path, capsys):
    argv = ["compare", str(PODS), "--trace-format", "alibaba-2023"]
    assert (
        main(
            [
                *argv,
                "--servers",
                str(NODES),
                "--plot-format",
                "png",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert err.count("no speed in gpu_speed") == 1, err
    assert "G2 (18 servers, 144 GPUs), G3 (2 servers, 16 GPUs) have no speed" in err


# ---- each job's GPU types ---------------------------------------------------------------


def test_each_job_s_gpu_types_are_where_its_workers_ran():
    jobs, servers = _two_types()
    config = {"gpu_speed": {"P100": 0.5}}
    result = sim.simulate(jobs, servers, config=config, history=True)
    ran = result.history().groupby("job")["gpu_type"].agg(lambda t: "+".join(set(t)))
    assert sorted(result.jobs["gpu_types"]) == ["P100", "V100"]
    assert result.jobs.set_index("id")["gpu_types"].to_dict() == ran.to_dict()
    alone = sim.simulate(jobs, servers, config=config)  # no history asked for
    assert alone.allocations is None and alone.jobs.equals(result.jobs)
