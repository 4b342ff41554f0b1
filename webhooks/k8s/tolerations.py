"""The three unrelated upstream notions of "the same toleration" (spec §1), kept apart.

Mixing them up is the most common reimplementation bug, so each has its own function named
after the upstream helper it mirrors, and each plugin imports exactly the one it needs.
Tolerations are plain dicts as on the wire; an absent field equals its zero value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.names import QUALIFIED_KEY_MAX_LENGTH, shown_name

Toleration = Mapping[str, Any]
T = TypeVar("T")

NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
EXISTS = "Exists"
EQUAL = "Equal"
LESS_THAN = "Lt"
GREATER_THAN = "Gt"
FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")


def _s(t: Toleration, key: str) -> str:
    value = t.get(key)
    return value if isinstance(value, str) else ""


def covers_no_execute(toleration: Toleration, key: str) -> bool:
    """DefaultTolerationSeconds' "already tolerates" test for taint ``key``:NoExecute (§1a).

    Why so loose: upstream ignores operator, value and seconds and treats an empty key or
    effect as a wildcard, so ``Equal "true"`` on not-ready counts as covering it.
    """
    return _s(toleration, "key") in ("", key) and _s(toleration, "effect") in ("", NO_EXECUTE)


def identity(toleration: Toleration) -> tuple[str, str, str, str]:
    """(key, operator, value, effect): AddOrUpdateTolerationInPodSpec's notion of identity (§1b)."""
    get = toleration.get
    key, operator = get("key", ""), get("operator", "")
    value, effect = get("value", ""), get("effect", "")
    # The exact-class tests first: nearly every field is a str already.
    if key.__class__ is not str:
        key = key if isinstance(key, str) else ""
    if operator.__class__ is not str:
        operator = operator if isinstance(operator, str) else ""
    if value.__class__ is not str:
        value = value if isinstance(value, str) else ""
    if effect.__class__ is not str:
        effect = effect if isinstance(effect, str) else ""
    return (key, operator, value, effect)


#: (key, operator, value, effect, tolerationSeconds): everything the §1c tests compare.
Facts = tuple[str, str, str, str, int | None]


def facts(toleration: Toleration) -> Facts:
    """The toleration's :data:`Facts`, read once.

    Why: a merge or a whitelist check compares every toleration with every other; reading
    five fields per comparison was most of the cost of a merge, reading them once per
    toleration is not.
    """
    get = toleration.get
    key, operator, value, effect = (
        get("key", ""),
        get("operator", ""),
        get("value", ""),
        get("effect", ""),
    )
    seconds = get("tolerationSeconds")
    if (
        key.__class__ is str
        and operator.__class__ is str
        and value.__class__ is str
        and effect.__class__ is str
        and (seconds is None or seconds.__class__ is int)
    ):
        # Nearly every toleration: read here rather than through identity(), one call
        # fewer on the path every merge and whitelist check takes per toleration.
        return (key, operator, value, effect, seconds)
    if seconds is not None and seconds.__class__ is not int:
        seconds = seconds if isinstance(seconds, int) and not isinstance(seconds, bool) else None
    return (*identity(toleration), seconds)


def add_or_update(
    tolerations: Sequence[dict[str, Any]], new: dict[str, Any]
) -> list[dict[str, Any]]:
    """Upstream AddOrUpdateTolerationInPodSpec (§1b) on a copy of ``tolerations``.

    Every entry with the same identity is overwritten in place by ``new`` (so its
    tolerationSeconds is replaced, which is how DaemonSet pods get infinite not-ready
    tolerations); when none matches, ``new`` is appended. Nothing is removed or reordered.
    """
    return add_or_update_all(tolerations, (new,))


def add_or_update_all(
    tolerations: Sequence[dict[str, Any]], wanted: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """:func:`add_or_update` of each of ``wanted`` in turn, in one pass over the list.

    Why not a loop of :func:`add_or_update`: each call copies the list and reads every
    entry's identity again, so adding n tolerations to a pod cost n² identity reads (8,000
    extended resources took seconds). The fold has a closed form, computed here with one
    identity read per entry and per wanted toleration: an entry whose identity some wanted
    toleration has ends up as (a copy of) the *last* wanted one with that identity, since
    each later one overwrites it again; a wanted identity no entry has is appended once,
    where its first wanted toleration came, holding the last one with that identity.
    """
    last: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for new in wanted:
        last[identity(new)] = new  # a dict keeps the first insertion's place: append order
    result: list[dict[str, Any]] = []
    present: set[tuple[str, str, str, str]] = set()
    for existing in tolerations:
        if isinstance(existing, dict):
            read = identity(existing)
            replacement = last.get(read)
            if replacement is not None:
                present.add(read)
                result.append(dict(replacement))
                continue
        result.append(existing)
    result.extend(dict(new) for read, new in last.items() if read not in present)
    return result


def superset_facts(a: Facts, b: Facts) -> bool:
    """:func:`is_superset` on tolerations' :data:`Facts` (read once each, see :func:`facts`)."""
    if a == b:
        return True
    a_key, a_op, a_value, a_effect, a_seconds = a
    if a_key != b[0] and not (a_key == "" and a_op == EXISTS):
        return False
    if a_effect not in (b[3], ""):
        return False
    if a_effect == NO_EXECUTE and a_seconds is not None:
        b_seconds = b[4]
        if b_seconds is None or b_seconds > a_seconds:
            return False
    if a_op in (EQUAL, ""):
        return b[1] == EQUAL and a_value == b[2]
    return a_op == EXISTS


def is_superset(a: Toleration, b: Toleration) -> bool:
    """Whether toleration ``a`` tolerates everything ``b`` does (pkg/util/tolerations, §1c).

    Why mirrored exactly, asymmetries included: RuntimeClass scheduling and
    PodTolerationRestriction drop entries by this test, so any deviation changes which of a
    user's tolerations survive.
    """
    return superset_facts(facts(a), facts(b))


# --- the §1c test over many tolerations at once ---------------------------------------------
#
# A toleration ``a`` other than ``b`` is a superset of ``b`` only in one of a few shapes,
# each fixed by fields of ``a`` that ``b`` determines: ``a`` Equal (or no operator) with
# b's key and value, b's effect or none, when ``b`` is Equal; ``a`` Exists with b's key or
# none, b's effect or none. So the candidates for ``b`` sit in at most six buckets, and
# inside a bucket only tolerationSeconds still decides: an ``a`` with NoExecute and
# seconds covers ``b`` when ``b`` has seconds and no more of them. Keeping, per bucket, the
# greatest such bound (or "forever") answers "is some entry a superset of ``b``" in
# constant time, where comparing ``b`` with each entry of its key made a list of n
# tolerations of one key cost n² comparisons.

Bucket = tuple[str, ...]
_FOREVER = float("inf")


def _bucket(a: Facts) -> Bucket | None:
    """The bucket of ``a`` as a superset, or ``None``: its operator makes it a superset of
    nothing but itself."""
    key, operator, value, effect, _ = a
    if operator == EXISTS:
        return ("Exists", key, effect)
    if operator in (EQUAL, ""):
        return (EQUAL, key, effect, value)
    return None


def _reach(a: Facts) -> float:
    """How many seconds a toleration ``b`` may have for ``a`` to cover it (§1c rule 3):
    forever, unless ``a`` is NoExecute with tolerationSeconds."""
    seconds = a[4]
    return seconds if a[3] == NO_EXECUTE and seconds is not None else _FOREVER


def _need(b: Facts) -> float:
    """The reach ``a`` needs to cover ``b``: ``b``'s seconds, forever when it has none."""
    return _FOREVER if b[4] is None else b[4]


def _candidates(b: Facts) -> list[Bucket]:
    """The buckets that may hold a superset of ``b`` other than ``b`` itself."""
    key, operator, value, effect, _ = b
    effects = (effect, "") if effect else ("",)
    keys = (key, "") if key else ("",)
    found: list[Bucket] = [("Exists", k, e) for k in keys for e in effects]
    if operator == EQUAL:
        found.extend((EQUAL, key, e, value) for e in effects)
    return found


@dataclass(frozen=True, slots=True)
class _Reach:
    """Tolerations indexed for "is one of them a §1c superset of ``b``": per bucket the
    greatest reach, and the set of them (an identical one always counts)."""

    reach: dict[Bucket, float] = field(default_factory=dict)
    present: set[Facts] = field(default_factory=set)

    def add(self, a: Facts) -> None:
        """Index ``a`` as a possible superset."""
        self.present.add(a)
        bucket = _bucket(a)
        if bucket is not None:
            reach = _reach(a)
            if reach > self.reach.get(bucket, -_FOREVER):
                self.reach[bucket] = reach

    def covers(self, b: Facts) -> bool:
        """Whether some indexed toleration is a superset of ``b``."""
        if b in self.present:
            return True
        need, reach = _need(b), self.reach
        return any(reach.get(bucket, -_FOREVER) >= need for bucket in _candidates(b))


def subsumed(tolerations: Sequence[Any], wanted: Sequence[Toleration]) -> list[Toleration]:
    """Those of ``wanted`` that no entry of ``tolerations`` has the identity of (§1b), but
    that one of them tolerates at least as broadly (a §1c superset).

    Why: AddOrUpdateTolerationInPodSpec appends such a toleration, and a later superset
    merge (PodTolerationRestriction, RuntimeClass) drops it again; whoever writes it into a
    template must know its pods will not keep it. Only entries with a wanted key, or none,
    can be either, so only those are read further: one lookup per toleration otherwise.
    """
    keys = {identity(t)[0] for t in wanted} | {""}
    index = _Reach()
    present: set[tuple[str, str, str, str]] = set()
    for toleration in tolerations:
        if not isinstance(toleration, dict):
            continue
        key = toleration.get("key")
        if key.__class__ is str and key not in keys:
            continue  # neither the same toleration as one wanted nor a superset of one
        index.add(facts(toleration))
        present.add(identity(toleration))
    return [t for t in wanted if identity(t) not in present and index.covers(facts(t))]


class _Later:
    """Tolerations indexed for "is one of them, not identical to ``b``, a superset of
    ``b``": per bucket the two distinct tolerations of greatest reach (if ``b`` is the
    first, the second is the best of the others)."""

    __slots__ = ("best",)

    def __init__(self) -> None:
        self.best: dict[Bucket, list[tuple[float, Facts]]] = {}

    def add(self, a: Facts) -> None:
        """Index ``a`` as a possible superset."""
        bucket = _bucket(a)
        if bucket is None:
            return
        top = self.best.setdefault(bucket, [])
        if any(found == a for _, found in top):
            return
        top.append((_reach(a), a))
        if len(top) > 2:
            top.sort(key=lambda entry: entry[0], reverse=True)
            del top[2:]

    def covers(self, b: Facts) -> bool:
        """Whether some indexed toleration other than ``b`` is a superset of ``b``."""
        need = _need(b)
        for bucket in _candidates(b):
            top = self.best.get(bucket)
            if top:
                reach = max((r for r, found in top if found != b), default=-_FOREVER)
                if reach >= need:
                    return True
        return False


#: How many answers one :class:`TolerationList` keeps (then it starts again): more than the
#: distinct tolerations a namespace's pods usually carry, and a bound of tens of KiB per
#: list whatever pods send.
_COVERED_LIMIT = 128


def _keep(memo: dict[Any, T], key: Any, value: T) -> T:
    """Remember ``value`` under ``key`` in one of a :class:`TolerationList`'s memos, starting
    the memo again once it holds :data:`_COVERED_LIMIT` answers."""
    if len(memo) >= _COVERED_LIMIT:
        memo.clear()
    memo[key] = value
    return value


#: The most tolerations a pod may carry for a merge's answer to be kept (:meth:`survivors`).
_MERGED_LENGTH = 16


@dataclass(frozen=True, slots=True)
class TolerationList:
    """Tolerations as stored (normalised dicts) beside their :data:`Facts`, read once.

    Why: a Namespace's default tolerations and whitelist, and a RuntimeClass's
    tolerations, are merged with or checked against every pod of theirs; kept in this form
    (per object version, see :mod:`webhooks.core.derived`) nothing of them is read twice.
    The dicts are shared: :func:`merge` copies those it puts into a pod.
    """

    items: tuple[dict[str, Any], ...] = ()
    facts: tuple[Facts, ...] = ()
    #: The facts indexed for :meth:`covers` (see :class:`_Reach`).
    index: _Reach = field(default_factory=_Reach, compare=False, repr=False)
    #: :meth:`covers`' answers by toleration: a whitelist meets the same few tolerations
    #: (the namespace's defaults, the failover ones) in pod after pod. Bounded.
    _covered: dict[Facts, bool] = field(default_factory=dict, compare=False, repr=False)
    #: :meth:`survivors` by the facts of the tolerations merged with this list: a
    #: Namespace's or RuntimeClass's list meets the same pod tolerations pod after pod and
    #: pass after pass. Bounded like ``_covered``, and only for short lists.
    _merged: dict[tuple[Facts, ...], tuple[int, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def of(cls, items: Sequence[Any]) -> TolerationList:
        """The dict entries of ``items`` with their facts."""
        kept = tuple(t for t in items if isinstance(t, dict))
        read = tuple(facts(t) for t in kept)
        index = _Reach()
        for found in read:
            index.add(found)
        return cls(kept, read, index)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def survivors(self, before: tuple[Facts, ...], read: Sequence[Facts]) -> tuple[int, ...]:
        """Which of ``read`` (``before``, then this list's facts) a merge keeps.

        A merge's answer depends on the facts alone, so it is kept per value of ``before``.
        """
        if len(before) > _MERGED_LENGTH:
            return _survivors(read)
        known = self._merged.get(before)
        return known if known is not None else _keep(self._merged, before, _survivors(read))

    def covers(self, toleration: Facts) -> bool:
        """Whether some entry is a §1c superset of ``toleration`` (a whitelist check)."""
        known = self._covered.get(toleration)
        if known is not None:
            return known
        return _keep(self._covered, toleration, self.index.covers(toleration))


def merge(
    first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]] | TolerationList
) -> list[dict[str, Any]]:
    """Upstream MergeTolerations (§1c): superset elimination over ``first`` then ``second``.

    An element is dropped when an element already kept is a superset of it, or when a
    later element that is not identical to it is; survivors keep their relative order.
    Why not a union: the pod's own redundant entries collapse even when ``second`` is empty.
    Each toleration's facts are read once (from ``second`` already read, when it is a
    :class:`TolerationList`), each is judged in constant time against indexes of those
    before and after it (:func:`_survivors`), and survivors of a shared ``second`` are
    copied.
    """
    return merge_read(first, second)[0]


def merge_read(
    first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]] | TolerationList
) -> tuple[list[dict[str, Any]], list[Facts]]:
    """:func:`merge`, and the survivors' facts beside them (position by position).

    Why: a plugin that checks the merged list against a whitelist then reads no toleration
    a second time.
    """
    combined = [t for t in first if isinstance(t, dict)]
    read = [facts(t) for t in combined]
    owned = len(combined)
    if isinstance(second, TolerationList):
        mine = tuple(read)
        combined.extend(second.items)
        read.extend(second.facts)
        kept = second.survivors(mine, read)
    else:
        extra = [t for t in second if isinstance(t, dict)]
        combined.extend(extra)
        read.extend(facts(t) for t in extra)
        owned = len(combined)
        kept = _survivors(read)
    items = [combined[i] if i < owned else dict(combined[i]) for i in kept]
    return items, [read[i] for i in kept]


def _survivors(read: Sequence[Facts]) -> tuple[int, ...]:
    """Positions of the tolerations (by their facts) that MergeTolerations keeps (§1c).

    Two passes, each linear: from the end, which entries a later, different entry is a
    superset of (:class:`_Later`); then from the start, keeping each entry that neither
    such a later one nor one kept already (:class:`_Reach`) covers.
    """
    later = _Later()
    covered_later = [False] * len(read)
    for i in range(len(read) - 1, -1, -1):
        covered_later[i] = later.covers(read[i])
        later.add(read[i])
    kept: list[int] = []
    earlier = _Reach()
    for i, item in enumerate(read):
        if covered_later[i] or earlier.covers(item):
            continue
        kept.append(i)
        earlier.add(item)
    return tuple(kept)


#: A decimal integer in canonical form (upstream ``IsDecimalInteger``): no ``+``, no leading
#: zeros, no ``-0``.
_CANONICAL_INTEGER = re.compile(r"0|-?[1-9][0-9]{0,18}")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int64(value: str) -> int | None:
    """``value`` as a signed 64-bit integer when it is one in canonical form, else ``None``.

    Why so strict: the scheduler parses both sides with ``IsDecimalInteger`` and
    ``ParseInt``, and a value either refuses (``0700``, ``+5``, a word) matches nothing.
    """
    if _CANONICAL_INTEGER.fullmatch(value) is None:
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def tolerates(
    toleration: Toleration, taint: Mapping[str, Any], *, comparisons: bool = False
) -> bool:
    """Scheduler matching (§1d): does ``toleration`` tolerate ``taint``?

    ``comparisons`` is the TaintTolerationComparisonOperators gate (alpha since v1.35):
    with it, ``Gt`` tolerates a taint whose value is a greater integer than the
    toleration's and ``Lt`` one whose value is smaller; both values must be canonical
    decimal integers, or nothing matches. Without it those operators tolerate nothing.
    Why here: the dedicated-node policy and ``explain`` must agree with the scheduler, not
    with any of the admission identities above.
    """
    t_key, t_op, t_value, t_effect = identity(toleration)
    if t_effect not in ("", _s(taint, "effect")):
        return False
    if t_key not in ("", _s(taint, "key")):
        return False
    if t_op == EXISTS:
        return True
    if t_op in ("", EQUAL):
        return t_value == _s(taint, "value")
    if t_op in (LESS_THAN, GREATER_THAN) and comparisons:
        bound, value = _int64(t_value), _int64(_s(taint, "value"))
        if bound is None or value is None:
            return False
        return value < bound if t_op == LESS_THAN else value > bound
    return False


def describe(toleration: Toleration) -> str:
    """One-line human form, e.g. ``nvidia.com/gpu:NoSchedule (Exists)`` or ``a=b:NoExecute 60s``.

    Why: warnings, audit annotations and CLI summaries must name tolerations the same way.
    A field longer than any valid key (:data:`~webhooks.k8s.names.QUALIFIED_KEY_MAX_LENGTH`)
    is cut short (:func:`~webhooks.k8s.names.shown_name`): it can only be invalid, and a
    pod may send megabytes of it.
    """
    read = facts(toleration)
    key, operator, value, effect, seconds = read
    most = QUALIFIED_KEY_MAX_LENGTH
    if max(len(key), len(operator), len(value), len(effect)) > most:
        cut = (shown_name(key), shown_name(operator), shown_name(value))
        read = (*cut, shown_name(effect), seconds)
    return describe_facts(read)


@functools.lru_cache(maxsize=1024)
def describe_facts(read: Facts) -> str:
    """:func:`describe` of a toleration's facts; kept per value, as audit notes name the
    same defaults on every pod (the text was a tenth of a merge's cost). What it keeps is
    bounded: :func:`describe` cuts long fields before asking."""
    key, operator, value, effect, seconds = read
    text = key or "*"
    if value:
        text += f"={value}"
    text += f":{effect or '*'} ({operator or EQUAL})"
    if seconds is not None:
        text += f" for {seconds}s"
    return text


def tolerations_of(spec: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The spec's tolerations as a list (empty when absent), or ``None`` when malformed.

    Why ``None``: a mutator must not "fix" a value it cannot read; validation reports it.
    """
    value = spec.get("tolerations")
    if value is None:
        return []
    if not isinstance(value, list):
        return None
    return value


def previous_identities(operation: str, old_object: Any) -> set[tuple[str, str, str, str]]:
    """On UPDATE, the identities (§1b) of the old pod's tolerations; empty otherwise.

    Why: policy that denies tolerations ratchets on UPDATE, judging only tolerations the pod
    did not already have, so a pod admitted earlier can still be relabelled or finalised.
    """
    if operation != "UPDATE" or not isinstance(old_object, MAPPING):
        return set()
    spec = old_object.get("spec")
    old = tolerations_of(spec) if isinstance(spec, MAPPING) else None
    return {identity(t) for t in old or [] if isinstance(t, MAPPING)}


def normalize(toleration: Toleration) -> dict[str, Any]:
    """The toleration as the API server stores it: empty strings and null seconds omitted.

    Why: v1.Toleration serialises every field with ``omitempty``, so a default written as
    ``{key: a, value: ""}`` comes back as ``{key: a}``; comparing or patching the raw form
    would make a second pass see a difference that is not there.
    """
    return {name: toleration[name] for name in FIELDS if toleration.get(name) not in (None, "")}


def decode_list(data: Any) -> list[dict[str, Any]]:
    """Decoded JSON as ``[]v1.Toleration`` decodes it; ``ValueError`` says what is wrong.

    Why these rules: namespace annotations hold tolerations as JSON, and upstream decodes
    them with Go's ``encoding/json``: ``null`` is an empty list, a ``null`` item is the zero
    toleration, unknown fields are ignored, and a field of the wrong type is an error.
    """
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValueError("must be a JSON list of tolerations")
    result = []
    for index, raw in enumerate(data):
        item = {} if raw is None else raw
        if not isinstance(item, dict):
            raise ValueError(f"item {index} must be an object")
        for name in FIELDS[:4]:
            if not isinstance(item.get(name, ""), str | None):
                raise ValueError(f"item {index}: {name} must be a string")
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            raise ValueError(f"item {index}: tolerationSeconds must be an integer")
        result.append(normalize(item))
    return result
