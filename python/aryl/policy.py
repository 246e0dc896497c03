"""``aryl.Policy``: the hooks of a scheduling policy of your own, simulated or live.

One object answers the same questions in ``aryl.sim.simulate(..., policy=obj)`` and
in a live loop over an ``aryl.ClusterState``: ``allocate(state, epoch)`` (required),
and optionally ``reclaim(state, n, epoch)`` and ``admit(job, epoch)``. ``Epoch``
says where the run stands. ``check_policy`` names the usual mistakes (a class
passed instead of an instance, a misspelt or missing hook, a hook with the wrong
parameters) before anything runs.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import (
    Any,
    Dict,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
    runtime_checkable,
)

from .decisions import Decision, ReclaimPlan
from .state import ClusterState
from .state.reclaim import ReclaimResult
from .state.schedule_result import ScheduleResult

#: What ``allocate`` may answer: the result of ``state.schedule(...)`` on the view it
#: was given (fast: rows, no ids), or an ``aryl.Decision`` (workers by id).
Allocation = Union[ScheduleResult, Decision]
#: What ``reclaim`` may answer: the servers' ids in the order returned, or the result
#: of ``state.reclaim(n, ...)`` on the view, or an ``aryl.ReclaimPlan``.
Reclaim = Union[Sequence[Any], ReclaimResult, ReclaimPlan]

#: How far back ``Epoch.recent_load`` reaches (s): one hour.
RECENT_LOAD_S = 3600.0

#: Each hook and the parameters it is called with (positionally).
HOOKS: Mapping[str, Sequence[str]] = {
    "allocate": ("state", "epoch"),
    "reclaim": ("state", "n", "epoch"),
    "admit": ("job", "epoch"),
}


@dataclasses.dataclass(frozen=True)
class Epoch:
    """Where the run stands when a policy is asked.

    ``index``: scheduling epochs planned so far; ``now``: seconds (simulated, or
    the live loop's clock). ``schedule_options``: the run's kernel settings as
    ``ClusterState.schedule`` takes them (``placement``, ``backfill``,
    ``gpu_speed`` of every server type, ``hetero_efficiency`` and, when a job's
    throughput is not linear, ``throughput``), so that
    ``state.schedule(policy, **epoch.schedule_options)`` decides exactly as the
    built-in ``policy`` would in this run; a live loop passes ``{}`` for the
    defaults. ``inference_load``: the fraction of the inference cluster's capacity
    the load needs now (``None`` without a load series: nothing is lent);
    ``recent_load``: the series' ``(time, load)`` points of the last
    ``RECENT_LOAD_S`` seconds, the one in force at their start first (a live loop
    gives what it measured, or leaves both out).
    """

    index: int
    now: float
    schedule_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    inference_load: Optional[float] = None
    recent_load: Tuple[Tuple[float, float], ...] = ()

    def where(self) -> str:
        """``"epoch 3 (t = 180 s)"``: how errors name this moment."""
        return f"epoch {self.index} (t = {self.now:g} s)"


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy of your own: what ``simulate(..., policy=obj)`` and a live
    loop ask. Only ``allocate`` is required.

    ``allocate(state, epoch)``
        At each scheduling epoch at which something changed (an arrival, a
        completion, a loan or a reclaim; quiet epochs are skipped, as for the
        built-in policies): ``state`` (an ``aryl.ClusterState``, read-only in a
        simulation) holds every server (inference ones with their loans), the
        running jobs in trace order with their workers, then every queued job in
        arrival order, and ``state.remaining`` each partly done job's work left.
        Answer what to start and stop: ``state.schedule(...)``'s result, or an
        ``aryl.Decision`` (its ``start`` and ``stop``). A running job left without
        workers goes back to the queue (preempted).
    ``reclaim(state, n, epoch)`` (optional)
        When the inference load needs ``n`` lent servers back: which (ids,
        ``state.reclaim(n, ...)``'s result or an ``aryl.ReclaimPlan``). Without it,
        the run's ``reclaim`` policy chooses.
    ``admit(job, epoch)`` (optional)
        An arriving ``aryl.Job``: ``False`` rejects it for good.

    A ``name`` attribute, if any, labels the run (else the class name; a built-in
    policy's name is marked as the policy's own, ``policy_name``); a ``version``
    attribute, if any, stands for the policy's code in a sweep's cache key (else the
    source of its class and of its whole module, ``policy_identity``).
    """

    def allocate(self, state: ClusterState, epoch: Epoch) -> Allocation:
        """The decision at this epoch (see the class)."""


def policy_name(policy: Any) -> str:
    """The run's label for a policy object: its ``name``, else its class name.

    A name a built-in policy has (``aryl``, ``fifo``, in any case) is marked as the
    policy's own with where its class comes from, ``aryl (own: mine.py:Rev)``, so a
    result, a sweep's table or a provenance never passes it off as the built-in.
    """
    name = getattr(policy, "name", None)
    name = name if isinstance(name, str) and name else type(policy).__name__
    if name.strip().lower() in _builtin_names():
        return f"{name} (own: {policy_origin(policy)})"
    return name


def _builtin_names() -> frozenset[str]:
    """The names of the built-in allocation and reclaim policies, in lower case."""
    from typing import get_args

    from .defaults import RECLAIM_POLICIES, SCHEDULE_POLICIES
    from .typing import GoodputPolicy

    names = (*SCHEDULE_POLICIES, *get_args(GoodputPolicy), *RECLAIM_POLICIES)
    return frozenset(str(n).lower() for n in names)


def has_hook(policy: Any, name: str) -> bool:
    """Whether ``policy`` has the hook ``name`` (a callable attribute)."""
    return callable(getattr(policy, name, None))


def check_policy(policy: Any) -> None:
    """A ``TypeError`` naming the mistake unless ``policy`` is a policy object.

    Refused: a class instead of an instance, no ``allocate`` (with the closest
    name it has, for a misspelling), a hook that is not a method or cannot be
    called with its parameters (``HOOKS``). A method named like an optional hook
    but misspelt (``reclaimm``) would never be called: a warning names it.
    """
    if isinstance(policy, type):
        raise TypeError(
            f"policy is the class {policy.__name__}; pass an instance: "
            f"policy={policy.__name__}()"
        )
    methods = [n for n in dir(policy) if not n.startswith("_") and has_hook(policy, n)]
    for hook, params in HOOKS.items():
        if has_hook(policy, hook):
            _check_signature(policy, hook, params)
            continue
        if getattr(policy, hook, None) is not None:
            raise TypeError(
                f"policy.{hook} must be a method {hook}({', '.join(params)}), got "
                f"{getattr(policy, hook)!r}"
            )
        close = [
            n for n in difflib.get_close_matches(hook, methods, 3, 0.75) if n != hook
        ]
        if close and hook == "allocate":
            raise TypeError(
                f"{type(policy).__name__} has no allocate(state, epoch) method but "
                f"has {close[0]}(): a misspelling? (hooks: {', '.join(HOOKS)})"
            )
        if close:  # an optional hook: the policy may mean another method
            warnings.warn(
                f"{type(policy).__name__} has no {hook}({', '.join(params)}) method "
                f"but has {close[0]}(), which is not a hook and is never called: "
                f"a misspelling? (hooks: {', '.join(HOOKS)})",
                stacklevel=3,
            )
        elif hook == "allocate":
            raise TypeError(
                f"policy must be a policy name or an object with an allocate(state, "
                f"epoch) method; {type(policy).__name__} has none (its methods: "
                f"{', '.join(methods) or 'none'})"
            )


def _check_signature(policy: Any, hook: str, params: Sequence[str]) -> None:
    """A ``TypeError`` unless ``policy.hook`` takes ``params`` positionally."""
    method = getattr(policy, hook)
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):  # a builtin or C callable: cannot tell
        return
    try:
        signature.bind(*params)
    except TypeError:
        raise TypeError(
            f"{type(policy).__name__}.{hook} must take ({', '.join(params)}), but "
            f"its parameters are {signature}; define it as "
            f"def {hook}(self, {', '.join(params)})"
        ) from None


def run_copy(policy: Any) -> Any:
    """A policy object deep-copied for one run (a name as it is): runs side by side
    (threads, a comparison's rows) never share a policy's state, as runs in worker
    processes, which unpickle their own copy, do not."""
    return policy if isinstance(policy, str) else copy.deepcopy(policy)


def policy_identity(policy: Any) -> Dict[str, Any]:
    """What a sweep's cache key holds of a policy object: a changed policy is a miss.

    Its class (module and name), its code (the ``version`` attribute if the policy
    has one, else a hash of the source of its class and of the classes it inherits
    from outside the standard library, and of the whole source of each of their
    modules, aryl's own aside: module-level constants and helpers are code too) and
    a digest of its attributes' full content (``aryl._digest``: arrays by their
    bytes, containers element by element, never by their printed form). A policy
    whose source cannot be read (a class typed into an interactive session) and
    that has no ``version``, or an attribute whose content cannot be read
    faithfully, is a ``ValueError`` naming it.
    """
    from ._digest import Unfingerprintable, digest

    cls = type(policy)
    version = getattr(policy, "version", None)
    if version is not None:
        code = f"version {version!r}"
    else:
        classes = [c for c in cls.__mro__ if _hashed(c)]
        try:
            source = "".join(inspect.getsource(c) for c in classes)
        except (OSError, TypeError):
            raise ValueError(
                f"the sweep cache needs to know policy {policy_name(policy)!r}'s "
                f"code, but the source of {cls.__qualname__} cannot be read (defined "
                "interactively?): give it a `version` attribute (a string you change "
                "when its code changes), or define it in a file"
            ) from None
        h = hashlib.sha256(source.encode())
        for module in dict.fromkeys(c.__module__ for c in classes):
            h.update(f"\0{module}\0{module_digest(module) or ''}".encode())
        code = h.hexdigest()[:16]
    attributes = dict(getattr(policy, "__dict__", {}))
    try:
        attributes_digest = digest(
            {name: digest(value, name) for name, value in attributes.items()}
        )
    except Unfingerprintable as error:
        raise ValueError(
            f"policy {policy_name(policy)!r}: the sweep cache cannot fingerprint its "
            f"attribute {error}, and two different policies must not share a cache "
            "entry: keep a policy's settings as plain data (numbers, strings, "
            "arrays, lists, dicts, sets) or objects of classes written in Python, "
            "and make anything else (a lock, a connection, a model) in a hook"
        ) from None
    return {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "code": code,
        "attributes": attributes_digest[:32],
    }


def _hashed(cls: type) -> bool:
    """Whether a policy's class or base is hashed by its source: not ``object``, the
    ``typing``/``abc`` bases (``Protocol``) nor a compiled builtin. A class written in
    Python counts even when it says it is of ``builtins`` (defined by ``exec`` in a
    namespace without ``__name__``): its source must be readable, or a ``version``
    given, else every such class would share one key."""
    if cls is object or cls.__module__ in ("typing", "abc"):
        return False
    return cls.__module__ != "builtins" or bool(cls.__flags__ & (1 << 9))  # heap type


#: Each module's source digest, taken when first asked (module object, digest).
_MODULE_DIGESTS: Dict[str, Tuple[ModuleType, Optional[str]]] = {}


def module_digest(name: str) -> Optional[str]:
    """SHA-256 of the source file of the module ``name`` as it was loaded, or None
    (aryl's own modules, a module without a source file such as an interactive
    session's ``__main__``).

    A policy file loaded from its path records the digest of the very bytes it
    executed; another module's file is read when first asked for that module object
    (an import runs a module once per process, so an edit after it changes nothing
    that runs).
    """
    module = sys.modules.get(name)
    if module is None or name == "aryl" or name.startswith("aryl."):
        return None
    recorded = getattr(module, "__aryl_source_sha256__", None)
    if isinstance(recorded, str):
        return recorded
    known = _MODULE_DIGESTS.get(name)
    if known is not None and known[0] is module:
        return known[1]
    found: Optional[str] = None
    origin = getattr(module, "__file__", None)
    if isinstance(origin, str) and origin.endswith(".py"):
        try:
            found = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
        except OSError:
            found = None
    _MODULE_DIGESTS[name] = (module, found)
    return found


def policy_origin(policy: Any) -> str:
    """Where a policy object's class comes from, as a spec names it: ``file.py:Class``
    for a class loaded from a policy file (``load_policy``), else ``module:Class``."""
    cls = type(policy)
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__aryl_policy_file__", None)
    where = Path(path).name if isinstance(path, str) else cls.__module__
    return f"{where}:{cls.__qualname__}"


def policy_record(policy: Any) -> Dict[str, Any]:
    """What a result's provenance records of a policy of your own: its name, where its
    class comes from (``policy_origin``; ``file``: the policy file's path) and its
    code (``policy_identity``'s, None when it cannot be read), so a saved result says
    which code produced it and is never taken for a built-in policy's."""
    cls = type(policy)
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__aryl_policy_file__", None)
    try:
        identity: Dict[str, Any] = policy_identity(policy)
    except ValueError:
        identity = {"code": None, "attributes": None}
    return {
        "name": policy_name(policy),
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "origin": policy_origin(policy),
        "file": path if isinstance(path, str) else getattr(module, "__file__", None),
        "code": identity["code"],
        "attributes": identity["attributes"],
    }


def load_policy(spec: str) -> Any:
    """The policy object ``spec`` names: ``module:Name`` or ``path/to/file.py:Name``.

    ``Name`` is a class (instantiated without arguments) or an object in that module.
    The module is imported by name (it must be importable: installed, or on
    ``sys.path``), the file from its path. A spec that cannot be loaded, or does
    not name a policy object (``check_policy``), is a ``ValueError`` naming it.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(
            f"a policy of your own is given as module:Class or path.py:Class, got "
            f"{spec!r}"
        )
    where, name = spec.rsplit(":", 1)
    try:
        module = _import_policy_module(where)
    except Exception as error:
        raise ValueError(
            f"policy {spec!r}: cannot import {where!r}: {type(error).__name__}: {error}"
        ) from error
    if not hasattr(module, name):
        raise ValueError(
            f"policy {spec!r}: {where!r} has no {name!r}{_others(module, name)}"
        )
    policy = getattr(module, name)
    if isinstance(policy, type):
        try:
            policy = policy()
        except Exception as error:
            raise ValueError(
                f"policy {spec!r}: {name}() failed: {type(error).__name__}: {error} "
                "(a class named here is built without arguments; name an instance "
                "in the module instead)"
            ) from error
    try:
        check_policy(policy)
    except TypeError as error:
        raise ValueError(f"policy {spec!r}: {error}") from None
    return policy


def policies_in(module: ModuleType) -> Sequence[str]:
    """The names of ``module``'s policies, in the order they are defined: classes
    and objects with an ``allocate`` method (``aryl.Policy`` itself aside)."""
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, ModuleType)
        and not getattr(value, "_is_protocol", False)  # aryl.Policy, imported
        and has_hook(value, "allocate")
    ]


def _others(module: ModuleType, name: str) -> str:
    """What a spec naming ``name``, which ``module`` lacks, may have meant: the
    closest of its policies (the same name in another case first), and all of them."""
    from .validation import did_you_mean

    found = policies_in(module)
    if not found:
        return (
            "; it defines no policy (a class or an object with an allocate(state, "
            "epoch) method)"
        )
    return f"{did_you_mean(name, found)} (its policies: {', '.join(found)})"


#: The policy files loaded in this process: path -> (SHA-256 of the bytes run, module).
_LOADED_FILES: Dict[str, Tuple[str, ModuleType]] = {}


def _import_policy_module(where: str) -> ModuleType:
    """The module ``where`` names: a ``.py`` file's path, else a module name.

    A module name is imported as Python imports (once per process). A file is
    executed when this process has not run it yet, or when its bytes changed since
    (it was edited): the same bytes give the module already loaded, so a sweep's
    cache keys and runs do not execute it again and again. The module records the
    file's path and the digest of the bytes it ran (``module_digest``).
    """
    if not where.endswith(".py"):
        return importlib.import_module(where)
    path = Path(where).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no file {path}")
    source = path.read_bytes()
    sha = hashlib.sha256(source).hexdigest()
    # A stable name per file; pickle finds the classes of its latest reading.
    name = "aryl_policy_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    loaded = _LOADED_FILES.get(str(path))
    if loaded is not None and loaded[0] == sha and sys.modules.get(name) is loaded[1]:
        return loaded[1]
    loader = importlib.util.spec_from_file_location(name, path)
    if loader is None or loader.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(loader)
    module.__aryl_policy_file__ = str(path)  # type: ignore[attr-defined]
    module.__aryl_source_sha256__ = sha  # type: ignore[attr-defined]
    before = sys.modules.get(name)
    sys.modules[name] = module  # dataclasses and pickle look classes up here
    try:
        # The bytes read above, so the digest is of exactly the code that ran.
        exec(compile(source, str(path), "exec"), module.__dict__)
    except BaseException:
        if before is None:
            del sys.modules[name]
        else:
            sys.modules[name] = before
        raise
    _LOADED_FILES[str(path)] = (sha, module)
    return module
