"""runtime-class: the RuntimeClass admission plugin, overhead and scheduling (spec §5).

Why it exists: a sandboxed runtime (gVisor, Kata) costs CPU and memory beyond what the
containers request, and exists only on some nodes. A RuntimeClass states both, and this
plugin writes them into every new pod that names it: ``spec.overhead`` so the scheduler,
quota and the kubelet count the runtime's cost, and the RuntimeClass's nodeSelector and
tolerations so the pod lands where the handler is installed. Managed clusters that cannot
enable the in-tree plugin get the same rules, denial messages included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhooks.core.patch import Editor
from webhooks.core.plugin import PODS, Context, Mutator, Plugin, Validator
from webhooks.core.result import UNCHANGED, Result, Violation
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.fielderr import cut, go_quote, invalid
from webhooks.k8s.quantity import QuantityError, parse_resource_list
from webhooks.k8s.tolerations import TolerationList, merge, tolerations_of

NOT_FOUND = "pod rejected: RuntimeClass {name} not found"
OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
OVERHEAD_WITHOUT_RUNTIME_CLASS = (
    "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
)
SELECTOR_CONFLICT = (
    "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {rc}; "
    "pod.spec.nodeSelector[{key}] = {pod}"
)
WRONG_KIND = "Resource was marked with kind Pod but was unable to be converted"


@dataclass(frozen=True, slots=True)
class Settings:
    """No settings: the in-tree plugin has none, and its behaviour is the contract."""


def forbidden(
    request: AdmissionRequest, pod: Mapping[str, Any], reason: str, field: str = ""
) -> Violation:
    """A Forbidden violation worded as ``admission.NewForbidden`` words it (spec §0).

    Why this naming order: upstream takes the name from the request, then the object's
    name, then its generateName (a CREATE with generateName has no name yet), else
    ``Unknown``, and users recognise the resulting ``pods "web" is forbidden: …`` text.
    """
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = request.name or _text(meta.get("name")) or _text(meta.get("generateName")) or "Unknown"
    message = f"pods {go_quote(name)} is forbidden: {reason}"
    return Violation(message, field=field, code=403, reason="Forbidden")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _go_text(value: Any) -> str:
    # Go's %s on a string is the string itself; anything else here came from a malformed
    # object and is shown as Python prints it.
    return value if isinstance(value, str) else str(value)


def runtime_class_name(pod: Mapping[str, Any]) -> Any:
    """``spec.runtimeClassName`` as written (``None`` when unset).

    Why not coerced to a string: a non-string name is malformed input and is reported.
    """
    spec = pod.get("spec")
    return spec.get("runtimeClassName") if isinstance(spec, dict) else None


def lookup(
    request: AdmissionRequest, pod: Mapping[str, Any], ctx: Context
) -> tuple[dict[str, Any] | None, Violation | None]:
    """The pod's RuntimeClass (``None`` when it names none), or the denial (§5a).

    Why through ``ctx.cluster``: the server's source asks its cache and then the API, as
    upstream does, and the CLI reads ``--objects``; a :class:`LookupFailure` propagates so
    the chain answers with an internal error instead of guessing.
    """
    name = runtime_class_name(pod)
    if name is None:
        return None, None
    if not isinstance(name, str):
        path = "spec.runtimeClassName"
        return None, Violation(invalid(path, name, "must be a string"), path, 400, "BadRequest")
    runtime_class = ctx.cluster.runtime_class(name)
    if runtime_class is None:
        reason = NOT_FOUND.format(name=go_quote(name))
        return None, forbidden(request, pod, reason, "spec.runtimeClassName")
    return runtime_class, None


def pod_fixed(runtime_class: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``overhead.podFixed`` (empty when the overhead has none), ``None`` without overhead.

    Why the distinction: a RuntimeClass with ``overhead: {}`` still *defines* an overhead
    (of nothing), which a pod-set overhead must then match (§5c).
    """
    overhead = runtime_class.get("overhead") if runtime_class is not None else None
    if overhead is None:
        return None
    fixed = overhead.get("podFixed") if isinstance(overhead, dict) else None
    return fixed if isinstance(fixed, dict) else {}


@dataclass(frozen=True, slots=True)
class Reading:
    """What the plugin reads of one RuntimeClass, read once per version of it.

    Why: a RuntimeClass's overhead and scheduling are applied to every pod that names it
    and change only with the object, so their quantities are parsed, and their tolerations'
    facts read, once (:mod:`webhooks.core.derived`). ``fixed`` is ``overhead.podFixed``
    (see :func:`pod_fixed`), ``quantities`` its parsed values, ``unusable`` the denial when
    it holds something that is not a quantity; ``scheduling`` says whether the class has
    any, ``selector`` and ``tolerations`` are its contents.
    """

    fixed: Mapping[str, Any] | None
    quantities: Mapping[str, Decimal]
    unusable: Violation | None
    scheduling: bool
    selector: Mapping[str, Any]
    tolerations: TolerationList


def read(runtime_class: Mapping[str, Any]) -> Reading:
    """Read ``runtime_class`` for :class:`Reading`; never raises (a bad podFixed is data)."""
    fixed = pod_fixed(runtime_class)
    quantities: Mapping[str, Decimal] = {}
    unusable = None
    try:
        quantities = parse_resource_list(fixed)
    except ValueError as exc:
        meta = runtime_class.get("metadata")
        name = _text(meta.get("name")) if isinstance(meta, dict) else ""
        message = f"RuntimeClass {go_quote(name)} has an unusable overhead.podFixed: {exc}"
        unusable = Violation(message, code=500, reason="InternalError")
    scheduling = runtime_class.get("scheduling")
    found = scheduling if isinstance(scheduling, dict) else {}
    selector = found.get("nodeSelector")
    extra = found.get("tolerations")
    return Reading(
        fixed,
        quantities,
        unusable,
        scheduling is not None,
        selector if isinstance(selector, dict) else {},
        TolerationList.of(extra if isinstance(extra, list) else []),
    )


def _reading(ctx: Context, runtime_class: Mapping[str, Any]) -> Reading:
    return ctx.derived.of("RuntimeClass", runtime_class, "runtime-class/reading", read)


def _pod_overhead(pod: Mapping[str, Any]) -> Violation | None:
    """A violation when the pod's overhead holds something that is not a quantity."""
    spec = pod.get("spec")
    overhead = spec.get("overhead") if isinstance(spec, dict) else None
    try:
        parse_resource_list(overhead or None)
    except QuantityError as exc:
        path = f"spec.overhead[{exc.resource}]"
        shown = f"spec.overhead[{cut(exc.resource)}]"  # a message quotes both cut short
        return Violation(invalid(shown, cut(exc.value), exc.reason), path, 400, "BadRequest")
    except ValueError as exc:
        return Violation(f"spec.overhead: {exc}", "spec.overhead", 400, "BadRequest")
    return None


def unreadable_quantities(
    pod: Mapping[str, Any], runtime_class: Mapping[str, Any] | Reading | None
) -> Violation | None:
    """A violation when either overhead holds something that is not a quantity.

    Why checked up front: the API server never hands over such values, but offline input
    can, and the comparisons below must not turn a typo into a misleading mismatch. A bad
    pod value is the request's fault (400); a bad RuntimeClass is the cluster's (500).
    """
    found = _pod_overhead(pod)
    if found is not None or runtime_class is None:
        return found
    reading = runtime_class if isinstance(runtime_class, Reading) else read(runtime_class)
    return reading.unusable


def _matches(overhead: Any, reading: Reading) -> bool:
    # Semantic equality (spec §5b): the same keys, equal as numbers. The same spelling is
    # equal without parsing (the mutated pod carries the RuntimeClass's own values).
    return bool(overhead == reading.fixed) or parse_resource_list(overhead) == reading.quantities


def set_overhead(editor: Editor, runtime_class: Mapping[str, Any] | Reading) -> str | None:
    """Set ``spec.overhead`` to the RuntimeClass's podFixed; the denial reason if it differs.

    Why overwrite an equal value: the stored pod then carries the RuntimeClass's spelling
    (upstream assigns podFixed unconditionally once the check passes). An empty map counts
    as unset. An empty podFixed leaves the pod alone: upstream's nil assignment and an
    absent field serialise identically.
    """
    reading = runtime_class if isinstance(runtime_class, Reading) else read(runtime_class)
    fixed = reading.fixed
    if fixed is None:
        return None
    current = editor.get(("spec", "overhead"))
    if current and not _matches(current, reading):
        return OVERHEAD_MISMATCH
    if fixed:
        editor.set(("spec", "overhead"), dict(fixed))
    return None


def set_scheduling(editor: Editor, runtime_class: Mapping[str, Any] | Reading) -> str | None:
    """Merge the RuntimeClass's nodeSelector and tolerations into the pod (§5d).

    Why tolerations are merged even when the RuntimeClass lists none: upstream runs the
    superset merge whenever ``scheduling`` is set, which also collapses the pod's own
    redundant entries. Conflicting selector keys are checked in sorted order where
    upstream's Go map order is random, so the reported key is deterministic. Nothing is
    written when a key conflicts.
    """
    reading = runtime_class if isinstance(runtime_class, Reading) else read(runtime_class)
    if not reading.scheduling:
        return None
    selector = reading.selector
    current = editor.get(("spec", "nodeSelector"))
    if current is None:
        if selector:
            editor.set(("spec", "nodeSelector"), dict(selector))
    elif isinstance(current, dict):
        keys = sorted(selector)
        for key in keys:
            if key in current and current[key] != selector[key]:
                return SELECTOR_CONFLICT.format(
                    key=key, rc=_go_text(selector[key]), pod=_go_text(current[key])
                )
        for key in keys:
            editor.set(("spec", "nodeSelector", key), selector[key])
    spec = editor.get(("spec",), {})
    tolerations = tolerations_of(spec) if isinstance(spec, dict) else None
    if tolerations is not None and all(isinstance(t, dict) for t in tolerations):
        merged = merge(tolerations, reading.tolerations)
        if merged != tolerations:
            editor.set(("spec", "tolerations"), merged)
    return None


def validate_overhead(
    pod_overhead: Any, runtime_class: Mapping[str, Any] | Reading | None
) -> str | None:
    """The denial reason for a pod whose overhead the RuntimeClass does not define (§5c).

    Why after mutation: only this check catches a pod that set an overhead itself without
    naming a RuntimeClass that defines one; an empty or absent overhead is always fine.
    """
    if not pod_overhead:
        return None
    if runtime_class is None:
        return OVERHEAD_WITHOUT_RUNTIME_CLASS
    reading = runtime_class if isinstance(runtime_class, Reading) else read(runtime_class)
    if reading.fixed is None:
        return OVERHEAD_WITHOUT_RUNTIME_CLASS
    return None if _matches(pod_overhead, reading) else OVERHEAD_MISMATCH


def _summary(name: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    changed = [
        field
        for field in ("overhead", "nodeSelector", "tolerations")
        if before.get(field) != after.get(field)
    ]
    return f"RuntimeClass {go_quote(name)} set " + ", ".join(changed)


def mutate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> Result:
    """Set overhead, then merge scheduling, from the pod's RuntimeClass (§5b, §5d).

    Why one result: upstream rejects the whole admission on either denial, so a conflict
    in scheduling must discard an overhead already set.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return UNCHANGED
    if spec.get("runtimeClassName") is None and spec.get("overhead") is None:
        return UNCHANGED  # no class and no overhead to read: the path of most pods
    runtime_class, denied = lookup(request, pod, ctx)
    reading = _reading(ctx, runtime_class) if runtime_class is not None else None
    denied = denied or unreadable_quantities(pod, reading)
    if denied is not None:
        return Result(violations=(denied,))
    if reading is None:
        return UNCHANGED
    editor = Editor(pod)
    field, reason = "spec.overhead", set_overhead(editor, reading)
    if reason is None:
        field, reason = "spec.nodeSelector", set_scheduling(editor, reading)
    if reason is not None:
        return Result(violations=(forbidden(request, pod, reason, field),))
    if not editor.changed:
        return UNCHANGED
    name = str(spec.get("runtimeClassName"))
    summary = _summary(name, spec, editor.get(("spec",), {}))
    return Result(editor.obj, editor.patch, audit={PLUGIN.name: summary})


def validate(request: AdmissionRequest, pod: dict[str, Any], ctx: Context) -> list[Violation]:
    """Refuse a pod whose overhead its RuntimeClass does not define (§5c).

    Why it looks the RuntimeClass up again: the validating webhook is called on its own,
    and upstream's validating half also denies a RuntimeClass that does not exist.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return []
    runtime_class, denied = lookup(request, pod, ctx)
    reading = _reading(ctx, runtime_class) if runtime_class is not None else None
    denied = denied or unreadable_quantities(pod, reading)
    if denied is not None:
        return [denied]
    reason = validate_overhead(spec.get("overhead"), reading)
    return [] if reason is None else [forbidden(request, pod, reason, "spec.overhead")]


PLUGIN = Plugin(
    name="runtime-class",
    summary="Sets pod overhead and merges scheduling constraints from the pod's RuntimeClass.",
    settings=Settings,
    mutate=Mutator(mutate, frozenset({PODS}), frozenset({"CREATE"})),
    validate=Validator(
        validate,
        frozenset({PODS}),
        frozenset({"CREATE"}),
        # Only a named RuntimeClass (missing, or its overhead) or an overhead the pod set
        # itself can be refused; the API server checks neither before us.
        live_pods="has(object.spec.runtimeClassName) || has(object.spec.overhead)",
    ),
    wrong_kind=WRONG_KIND,
    upstream="RuntimeClass",
)
