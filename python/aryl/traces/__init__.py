"""Job and inference-load traces: reading, converting, extending, and a calibrated generator.

Two CSV schemas (times in seconds; extra columns are kept):

* **jobs** — ``job_id, submit_time_s, num_gpus, duration_s, gpu_type``, one row per training
  job, sorted by ``submit_time_s``; ``gpu_type`` is ``unknown`` (or empty) when the trace
  does not record it.
* **load** — ``time_s, load``: the fraction of the inference cluster's servers needed from
  that time on (``load`` in ``[0, 1]``, ``time_s`` >= 0 and strictly increasing), the
  ``inference_load`` of ``aryl.sim.simulate``.

``read_jobs`` / ``read_load`` read them from a path or a file object, gzip-compressed or not
(detected by the magic bytes, not the name), and raise ``TraceError`` naming the file, the
row and the column of the first problem; nothing is dropped silently. ``read(path,
format=...)`` also imports the public GPU cluster traces as released (``TRACE_FORMATS``:
Microsoft Philly, Alibaba PAI 2020, Alibaba GPU 2023, SenseTime Helios) into the job
schema. ``to_jobs`` turns a job frame into inelastic ``aryl.Job`` records
(``aryl.sim.scenario`` adds elasticity); ``loanable_servers``, ``rescale_load`` and
``extend_load`` work on load frames. ``load_default`` returns the two embedded real
traces (``aryl/data/README.md``: Microsoft ITP cluster04, MIT; Alibaba
cluster-trace-v2018 CPU load, CC-BY-4.0), ``embedded_load`` the load alone (to pair
with any trace) and ``synthetic`` a seeded pair calibrated to
the paper's §2 and §7.1 statistics.

The Pollux artifact's workloads (``name, time, application, num_replicas, batch_size``)
are read by ``read_pollux_workload``, which attaches each application's measured
profiles; ``pollux_workload(n)`` and ``pollux_application(name)`` return the embedded
eight workloads and six applications (Apache-2.0, ``aryl/data/README.md``).
``pollux_profiles`` maps any aryl trace onto them (seeded, by GPU-time, as the
artifact's generator does) for goodput-driven runs such as Aryl+TunedJobs, and
``pollux_elastic`` gives a Pollux workload's jobs an elastic range for policy ``aryl``.

``read_servers`` reads a cluster: aryl's server CSV (``id, pool, gpus, gpu_type``) or,
as ``read_nodes``, the Alibaba GPU 2023 release's node list (T4 servers the inference
pool by default), as ``aryl.Server`` records for ``aryl.sim.simulate``.

Examples
--------
>>> import aryl.traces as traces
>>> jobs, load = traces.load_default()
>>> len(jobs), len(load)
(15802, 2304)
>>> records = traces.to_jobs(jobs)                       # inelastic aryl.Job list
>>> load = traces.extend_load(traces.rescale_load(load), jobs["submit_time_s"].max())
"""

from .conversion import (
    UNKNOWN_GPU_TYPES,
    extend_load,
    loanable_servers,
    rescale_load,
    to_jobs,
    worker_split,
)
from .csv_stream import (
    CutShortWarning,
    TraceError,
)
from .formats import (
    TRACE_FORMATS,
    read,
    read_alibaba_2023,
    read_alibaba_pai,
    read_helios,
    read_philly,
)
from .generator import GPU_SECONDS_PER_JOB, synthetic
from .pollux import (
    POLLUX_APPLICATIONS,
    POLLUX_EPOCHS,
    POLLUX_WORKLOADS,
    WORKLOAD_COLUMNS,
    PolluxApplication,
    pollux_application,
    pollux_applications,
    pollux_workload,
    read_pollux_application,
    read_pollux_workload,
)
from .pollux_mapping import (
    MAPPING_COLUMNS,
    POLLUX_GPU_TIME_BUCKETS,
    pollux_app_choice,
    pollux_elastic,
    pollux_profiles,
)
from .reading import (
    JOB_COLUMNS,
    LOAD_COLUMNS,
    embedded_load,
    load_default,
    read_jobs,
    read_load,
)
from .servers import (
    INFERENCE_TYPES,
    NODE_GPU_TYPES,
    SERVER_COLUMNS,
    read_nodes,
    read_servers,
)

__all__ = [
    "CutShortWarning",
    "GPU_SECONDS_PER_JOB",
    "INFERENCE_TYPES",
    "JOB_COLUMNS",
    "LOAD_COLUMNS",
    "MAPPING_COLUMNS",
    "NODE_GPU_TYPES",
    "POLLUX_APPLICATIONS",
    "POLLUX_EPOCHS",
    "POLLUX_GPU_TIME_BUCKETS",
    "POLLUX_WORKLOADS",
    "PolluxApplication",
    "SERVER_COLUMNS",
    "TRACE_FORMATS",
    "TraceError",
    "UNKNOWN_GPU_TYPES",
    "WORKLOAD_COLUMNS",
    "embedded_load",
    "extend_load",
    "load_default",
    "loanable_servers",
    "pollux_app_choice",
    "pollux_application",
    "pollux_elastic",
    "pollux_profiles",
    "pollux_applications",
    "pollux_workload",
    "read",
    "read_alibaba_2023",
    "read_alibaba_pai",
    "read_helios",
    "read_jobs",
    "read_load",
    "read_nodes",
    "read_philly",
    "read_pollux_application",
    "read_pollux_workload",
    "read_servers",
    "rescale_load",
    "synthetic",
    "to_jobs",
    "worker_split",
]
