"""The orderings the paper's evaluation implies between the rows of
``paper.paper_runs`` (``ORDERINGS``), and what must have happened in those rows for
each to be tested (``ORDERING_MECHANISMS``); ``replications.ordering_verdicts``
judges them over replications."""

from __future__ import annotations

#: The orderings the paper's evaluation implies between rows of ``paper_runs``, as
#: (claim, metric, chain of rows): each row's metric is below (``<``) or not above (``<=``) the next.
ORDERINGS = (
    (
        "loaning + elastic beats elastic alone (mean JCT)",
        "jct_mean",
        ("Aryl Basic", "<", "Elastic only, aryl"),
    ),
    (
        "loaning + elastic beats loaning alone (mean JCT)",
        "jct_mean",
        ("Aryl Basic", "<", "Loaning only, aryl reclaim"),
    ),
    (
        "Ideal <= Advanced <= Basic (mean JCT)",
        "jct_mean",
        ("Aryl Ideal", "<=", "Aryl Advanced", "<=", "Aryl Basic"),
    ),
    (
        "imperfect scaling raises mean JCT over linear",
        "jct_mean",
        ("Aryl Basic", "<", "Ablation: Basic, imperfect"),
    ),
    (
        "plain BFD placement preempts more than aryl placement",
        "preemption_ratio",
        ("Aryl Basic", "<", "Ablation: Basic, plain BFD"),
    ),
    (
        "aryl reclaim preempts no more than SCF",
        "preemption_ratio",
        ("Loaning only, aryl reclaim", "<=", "Loaning only, SCF reclaim"),
    ),
    (
        "SCF preempts fewer than random reclaim",
        "preemption_ratio",
        ("Loaning only, SCF reclaim", "<", "Loaning only, random reclaim"),
    ),
)


#: What must have happened for an ordering to be tested: claim -> (the row that
#: must show it, or None for every row of the claim's chain; the summary key that
#: counts it; what did not happen, in words). A claim whose rows show none of it in
#: any replication reads "not tested" (a tie of zeros would read "holds").
ORDERING_MECHANISMS = {
    "loaning + elastic beats elastic alone (mean JCT)": (
        "Aryl Basic",
        "lent_used_gpu_hours",
        "no training work ran on a loaned server in Aryl Basic",
    ),
    "loaning + elastic beats loaning alone (mean JCT)": (
        "Aryl Basic",
        "scaling_ops",
        "no elastic job scaled in Aryl Basic",
    ),
    "imperfect scaling raises mean JCT over linear": (
        "Ablation: Basic, imperfect",
        "scaling_ops",
        "no elastic job scaled in the imperfect-scaling row",
    ),
    "plain BFD placement preempts more than aryl placement": (
        None,
        "preemption_ratio",
        "no job was preempted in either row",
    ),
    "aryl reclaim preempts no more than SCF": (
        None,
        "preemption_ratio",
        "no reclaim preempted a job in any of these rows",
    ),
    "SCF preempts fewer than random reclaim": (
        None,
        "preemption_ratio",
        "no reclaim preempted a job in any of these rows",
    ),
}
