"""Who a decision applies to and what it does: actions, mutation modes and exceptions.

Why this exists: a platform team switches a placement policy on in stages (audit, then
warn, then enforce, namespace by namespace) and grants a few workloads an exception that
expires. All of it lives in the admin's config file, never in an object a tenant can
edit, and none of it changes what a plugin computes: only what its answer does.

* ``action`` (plugins that can deny): ``enforce`` refuses, ``warn`` admits and tells the
  user (``response.warnings``) and the audit log, ``audit`` admits and tells only the
  audit log, the review log and the metrics. ``actionOverrides`` choose another action
  for namespaces whose labels match a selector; the first match wins.
* ``mutation`` (plugins that mutate): ``monitor`` computes the change, records what it would
  have been, and returns no patch; the rest of the chain sees the object unchanged.
* ``exceptions``: a matching, unexpired exception skips the plugin for that object.
  Every matcher given must match; the values inside one matcher are alternatives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from webhooks.core.plugin import PHASES, Phase
from webhooks.core.review import AdmissionRequest
from webhooks.k8s.excerpt import show
from webhooks.k8s.mapping import MAPPING
from webhooks.k8s.podspec import TEMPLATE_RESOURCES, GroupResource, get_path, pod_spec_path
from webhooks.k8s.selectors import Selector, compile_selector

Action = Literal["enforce", "warn", "audit"]
ACTIONS: tuple[Action, ...] = ("enforce", "warn", "audit")
Mutation = Literal["apply", "monitor"]

ENFORCE: Final = "enforce"
WARN: Final = "warn"
AUDIT: Final = "audit"

#: The audit annotation key an exception is recorded under; the API server records it as
#: ``<webhook name>/exception`` (it prefixes every key with the webhook's name).
EXCEPTION_ANNOTATION = "exception"

#: The ServiceAccount a pod runs as when it names none (the API server defaults it).
DEFAULT_SERVICE_ACCOUNT = "default"


@dataclass(frozen=True, slots=True)
class ActionOverride:
    """Another action for namespaces whose labels match ``namespace_selector``.

    The selector is read once, at load (``selector``), not per request.
    """

    namespace_selector: Mapping[str, Any]
    action: Action
    selector: Selector = field(init=False, repr=False, compare=False, default=Selector())

    def __post_init__(self) -> None:
        object.__setattr__(self, "selector", compile_selector(self.namespace_selector))


@dataclass(frozen=True, slots=True)
class PolicyException:
    """An admin-owned exception: plugins it skips, for which objects, until when.

    Empty matchers are not given (they match everything); ``phases`` is which halves it
    skips, both unless it stands for a plugin's ``exemptNamespaces`` (validation only).
    """

    name: str
    plugins: tuple[str, ...]
    namespaces: tuple[str, ...] = ()
    object_selector: Mapping[str, Any] | None = None
    service_accounts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    expires: dt.datetime | None = None
    phases: tuple[Phase, ...] = PHASES
    #: ``object_selector`` read once, at load (not per request).
    selector: Selector | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if self.object_selector is not None:
            object.__setattr__(self, "selector", compile_selector(self.object_selector))

    def covers(self, plugin: str, phase: Phase) -> bool:
        """Whether this exception is about ``plugin``'s ``phase`` half."""
        return phase in self.phases and ("*" in self.plugins or plugin in self.plugins)

    def expired(self, now: dt.datetime) -> bool:
        """Whether ``expires`` has passed; an exception without one never expires."""
        return self.expires is not None and now >= self.expires

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any]) -> bool:
        """Whether every matcher given matches the request and its object."""
        if self.namespaces and request.namespace not in self.namespaces:
            return False
        if self.selector is not None:
            meta = obj.get("metadata")
            labels = meta.get("labels") if isinstance(meta, MAPPING) else None
            if not self.selector.matches(labels if isinstance(labels, MAPPING) else {}):
                return False
        account = f"{request.namespace}:{service_account(request.group_resource, obj)}"
        if self.service_accounts and account not in self.service_accounts:
            return False
        if self.users and request.user.get("username") not in self.users:
            return False
        if self.groups:
            groups = request.user.get("groups")
            # The review is the client's: a group that is no string (a map, say) names no
            # group, and must neither match nor fail the set it would be hashed into.
            if not isinstance(groups, list) or not any(
                isinstance(group, str) and group in self.groups for group in groups
            ):
                return False
        return True


def service_account(resource: GroupResource, obj: Mapping[str, Any]) -> str:
    """The ServiceAccount the pods of ``resource``'s object run as (``default`` when none).

    Why the pod spec of any template kind: an exception for a workload's service account
    must cover the workload's template as well as its pods. Why by resource: the chain
    only runs a half on the resource's own kind, never on one of another group.
    """
    path = pod_spec_path(TEMPLATE_RESOURCES.get(resource))
    spec = get_path(obj, path) if path else None
    name = spec.get("serviceAccountName") if spec is not None else None
    return name if isinstance(name, str) and name else DEFAULT_SERVICE_ACCOUNT


@dataclass(frozen=True, slots=True)
class Matched:
    """The exceptions that concern one plugin half for one object.

    ``applied`` is the one that skips it (the first active match, in config order);
    ``expired`` lists matches that would have applied but have expired.
    """

    applied: str | None = None
    expired: tuple[str, ...] = ()


NOTHING = Matched()


def match_exceptions(
    exceptions: Sequence[PolicyException],
    plugin: str,
    phase: Phase,
    request: AdmissionRequest,
    obj: Mapping[str, Any],
    now: dt.datetime,
) -> Matched:
    """Which exception skips ``plugin``'s ``phase`` for this object, and which expired ones match.

    Why expired matches are reported: an operator must see that an exception stopped
    covering a workload, in the log, the metrics and ``check``, before a pod is refused.
    """
    expired: list[str] = []
    for exception in exceptions:
        if not exception.covers(plugin, phase) or not exception.matches(request, obj):
            continue
        if exception.expired(now):
            expired.append(exception.name)
            continue
        return Matched(exception.name, tuple(expired))
    return Matched(None, tuple(expired)) if expired else NOTHING


def choose_action(
    base: Action,
    overrides: Sequence[ActionOverride],
    namespace_labels: Mapping[str, Any] | None,
) -> Action:
    """The action for a violation: the first override whose selector matches, else ``base``.

    Why labels of the Namespace object and not of the pod: namespace labels are set by
    whoever may edit Namespaces, the same people who own this config in most clusters.
    """
    labels = namespace_labels if namespace_labels is not None else {}
    for override in overrides:
        if override.selector.matches(labels):
            return override.action
    return base


def parse_expiry(value: Any) -> dt.datetime:
    """An RFC 3339 time (a YAML timestamp or a string) as an aware UTC datetime.

    Why a time without an offset counts as UTC: YAML timestamps with ``Z`` come back naive
    from some loaders, and a config must not mean different instants on different hosts.
    ``ValueError`` says what is wrong.
    """
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(
                f"must be an RFC 3339 time such as 2027-01-31T00:00:00Z, got {show(value)}"
            ) from None
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    else:
        raise ValueError(
            f"must be an RFC 3339 time such as 2027-01-31T00:00:00Z, got {show(value)}"
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return moment.astimezone(dt.UTC)
    except OverflowError:  # year 1 east of UTC, or year 9999 west of it
        raise ValueError(f"{show(value)} is out of range once converted to UTC") from None
