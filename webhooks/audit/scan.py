"""The scan: every object the cluster holds, admitted as ``check`` admits manifests.

Why through the dry-run library: the audit must say exactly what admission would say today,
under the same config (actions, overrides, exceptions, monitor mode), so it calls the same
engine and turns its findings into results:

* a **violation** is ``fail`` when its action is ``enforce`` and ``warn`` under ``warn`` or
  ``audit``;
* **drift** is what the mutating chain would change today on a Pod, or on a DaemonSet's
  template, described as ``check`` describes mutations; always ``warn``. Other workloads
  have no drift: what admission adds to their pods is audited on the pods themselves;
* a **skip** is a plugin an exception covers for the object (a plugin's own
  ``exemptNamespaces`` is its policy, not an exception, and skips silently); mirror pods and
  finished pods are not admitted at all and are counted with the reason.

Pods are reported on their controller, a ReplicaSet's or a Job's on the Deployment or
CronJob that owns it, with the number of pods; ReplicaSets and Jobs that such an owner
controls are reported through it rather than admitted again.

Order and memory: Namespaces and RuntimeClasses first (the context plugins look up), with
the DeviceClasses, ResourceClaimTemplates and ResourceClaims when a setting resolves claims
(:func:`read_devices`), then per namespace (or once for all) the ReplicaSets and Jobs (kept
only as a map of name to owner), the other workloads, the Pods, and last the Nodes. Each
object is admitted as its page arrives and only its results are kept.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from webhooks.audit.recreate import ObjectLister, as_created, controller, skip_reason, subject_of
from webhooks.audit.results import Audit, Outcome, Ref, Rule
from webhooks.cluster.files import StaticCluster
from webhooks.cluster.informer import OPTIONAL, Resource, key_of, shown, stored
from webhooks.cluster.listing import DRA_KINDS, KINDS, ApiError
from webhooks.core.chain import utcnow
from webhooks.core.config import Config
from webhooks.core.plugin import PHASES, Plugin
from webhooks.dryrun.engine import Engine
from webhooks.dryrun.expand import controller_user
from webhooks.dryrun.report import Checked, Report
from webhooks.dryrun.run import admit, engine_for
from webhooks.k8s.podspec import DAEMON_SET, POD
from webhooks.manifests.reader import api_document
from webhooks.plugins import REGISTRY

#: Workloads admitted as objects, after the ReplicaSets and Jobs (whose owners they may be).
WORKLOADS: Final = (
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "CronJob",
    "ReplicationController",
    "PodTemplate",
)
#: Kinds reported through the controller that owns them: (kind, owner's group and kind);
#: an owner of another group that takes the name is no built-in controller.
COVERED: Final = (("ReplicaSet", ("apps", "Deployment")), ("Job", ("batch", "CronJob")))
#: Kinds whose own mutations are drift (the stored object itself would change).
DRIFTING: Final = frozenset({POD, DAEMON_SET})
#: The policy name of results that are no plugin's (an object the engine could not admit).
SUITE: Final = "placement-webhooks"


class ScopeError(ValueError):
    """The scan was asked for something the cluster does not have (a namespace)."""


def scan(
    source: ObjectLister,
    config: Config,
    namespaces: Sequence[str] = (),
    *,
    exclude: Sequence[str] = (),
    now: Callable[[], dt.datetime] | None = None,
) -> Audit:
    """Audit the objects ``source`` holds under ``config``; ``namespaces`` limits the scope.

    With no ``namespaces`` everything is scanned, Nodes included, but for the objects of
    the ``exclude`` namespaces (the webhooks never see them, so admission would change or
    refuse nothing there); with some, exactly their namespaced objects. Raises
    :class:`ScopeError` for a namespace that does not exist, and lets the source's errors
    through: a scan that could not read everything has no result.
    """
    clock = now or utcnow
    excluded = () if namespaces else tuple(dict.fromkeys(exclude))
    audit = Audit(clock(), tuple(namespaces) if namespaces else None, excluded)
    context = StaticCluster()
    for obj in source.items(KINDS["Namespace"]):
        context.add(as_created(obj))
    for obj in source.items(KINDS["RuntimeClass"]):
        context.add(as_created(obj))
    unknown = [name for name in namespaces if context.namespace(name) is None]
    if unknown:
        raise ScopeError(f"--namespace {unknown[0]}: no such namespace")
    read_devices(source, config, context, namespaces)
    scanner = Scanner(engine_for([], config, context, now=now), config, audit)
    for namespace in namespaces or (None,):
        scanner.namespace(source, namespace)
    if audit.cluster_scoped:
        for obj in source.items(KINDS["Node"]):
            scanner.object(obj)
    return audit


def read_devices(
    source: ObjectLister, config: Config, context: StaticCluster, namespaces: Sequence[str] = ()
) -> None:
    """Add the DRA objects the enabled settings read to ``context``; nothing if none do.

    Why only then: a cluster has one ResourceClaim per pod that uses DRA, and listing
    them costs time, memory and RBAC that the defaults never need (``Config.lookups``, as
    the server's cache decides). Each is kept in the compact form the server's cache keeps
    (a claim as the device classes it names), so the audit and the webhooks resolve a claim
    alike. Claims and templates come from the scanned namespaces only: a pod names objects
    of its own namespace. A cluster that does not serve ``resource.k8s.io/v1`` (404) has
    none to read.
    """
    needed = config.lookups(REGISTRY)
    for kind in DRA_KINDS:
        resource = OPTIONAL.get(kind.plural)
        if resource is None or resource.plural not in needed:
            continue
        scopes: Sequence[str | None] = namespaces if kind.namespaced and namespaces else (None,)
        try:
            for scope in scopes:
                _add_compact(context, source.items(kind, scope), resource)
        except ApiError as exc:
            if exc.status == 404:
                return
            raise


def _add_compact(
    context: StaticCluster, objects: Iterable[dict[str, Any]], resource: Resource
) -> None:
    """Add ``objects`` to ``context`` in the compact form the server's cache keeps."""
    for obj in objects:
        compact = stored(obj, resource)
        key = key_of(obj, resource)
        if key is not None:
            context.add(shown(key, compact, resource))


class Scanner:
    """Admits objects one at a time and records their results in an :class:`Audit`.

    Why a class: it carries the engine, the small map of ReplicaSets and Jobs to their
    owners, and the exception phases between pages.
    """

    def __init__(self, engine: Engine, config: Config, audit: Audit) -> None:
        self.engine = engine
        self.audit = audit
        self.owners: dict[tuple[str, str, str], Ref] = {}
        self._phases = {e.name: e.phases for e in config.exceptions}
        # A plugin's own exemptNamespaces is its policy (as a policy's ``exclude`` is), not an
        # admin's exception: namespaces it covers get no skip result, or every workload in
        # them would carry one wherever enforcement is on.
        self._implicit = {
            e.name
            for e in config.exceptions
            if e.name in {f"{p}.exemptNamespaces" for p in e.plugins}
        }
        self._scratch = Report()

    def items(
        self, source: ObjectLister, kind: str, namespace: str | None
    ) -> Iterator[dict[str, Any]]:
        """The objects of ``kind`` in ``namespace``, less those of excluded namespaces."""
        excluded = self.audit.excluded
        for obj in source.items(KINDS[kind], namespace):
            if not excluded or (obj.get("metadata") or {}).get("namespace") not in excluded:
                yield obj

    def namespace(self, source: ObjectLister, namespace: str | None) -> None:
        """Scan one namespace (``None``: all of them): covered kinds, workloads, pods."""
        for kind, parent in COVERED:
            for obj in self.items(source, kind, namespace):
                owner = controller(obj)
                if owner is not None and owner.key == parent:
                    meta = obj.get("metadata") or {}
                    self.owners[kind, owner.namespace, str(meta.get("name") or "")] = owner
                    self.audit.covered[kind] += 1
                else:
                    self.object(obj)
        for kind in WORKLOADS:
            for obj in self.items(source, kind, namespace):
                self.object(obj)
        for obj in self.items(source, "Pod", namespace):
            self.pod(obj)

    def object(self, obj: dict[str, Any]) -> None:
        """Admit a workload or a Node and record its results on itself."""
        ref = Ref.of(obj)
        checked = self._admit(obj, ref)
        if checked is not None:
            self.audit.objects[ref.kind] += 1
            self.record(ref, checked, drift=ref.key in DRIFTING, pod=False)

    def pod(self, obj: dict[str, Any]) -> None:
        """Admit a Pod as created and record its results on its controller (or itself)."""
        ref = Ref.of(obj)
        owner = controller(obj)
        subject = subject_of(obj)
        if subject != ref:  # reported on a ReplicaSet's Deployment or a Job's CronJob
            subject = self.owners.get((subject.kind, subject.namespace, subject.name), subject)
        reason = skip_reason(obj)
        if reason is not None:
            self.audit.skip(subject, reason)
            return
        user = controller_user(owner.key) if owner is not None else None
        checked = self._admit(obj, ref, user)
        if checked is not None:
            self.audit.objects["Pod"] += 1
            self.record(subject, checked, drift=True, pod=subject != ref)

    def _admit(
        self, obj: dict[str, Any], ref: Ref, user: dict[str, Any] | None = None
    ) -> Checked | None:
        known = KINDS.get(ref.kind)
        plural = known.plural if known is not None else ref.kind.lower()
        where = "/".join(part for part in (f"api:{plural}", ref.namespace, ref.name) if part)
        checked = admit(self.engine, api_document(as_created(obj), where), self._scratch, user)
        if self._scratch.problems:
            problem = self._scratch.problems.pop()
            self.audit.add(ref, SUITE, "admission", "error", problem.reason)
            return None
        return checked

    def record(self, subject: Ref, checked: Checked, *, drift: bool, pod: bool) -> None:
        """Turn one admitted object's findings into results about ``subject``.

        ``pod``: the object is a Pod counted on its controller (``subject``).
        Findings of one object with the same policy, rule and outcome are joined into one
        message, so an object counts once per result however many fields it got wrong.
        """
        found: dict[tuple[str, Rule, Outcome], tuple[list[str], dict[str, str]]] = {}

        def note(policy: str, rule: Rule, outcome: Outcome, message: str, **props: str) -> None:
            messages = found.setdefault((policy, rule, outcome), ([], props))[0]
            if message not in messages:
                messages.append(message)

        for f in checked.findings:
            own = drift and f.target == "object"
            if f.type == "violation":
                outcome: Outcome = "fail" if f.level == "error" else "warn"
                note(f.rule, "violation", outcome, f.message, action=f.action)
            elif f.type == "mutation" and own:
                for plugin, summary in zip(f.plugins, f.summaries, strict=True):
                    note(plugin, "drift", "warn", summary)
            elif f.type == "convergence":
                note(f.plugins[0] if f.plugins else SUITE, "convergence", "error", f.message)
            elif f.type == "excepted" and f.rule not in self._implicit:
                for rule in self._excepted(f.rule, f.plugins[0], own):
                    covered = f"exception {f.rule} covers this object"
                    note(f.plugins[0], rule, "skip", covered, exception=f.rule)
            elif f.type == "expired":
                note(f.plugins[0], "exception", "note", f.message, exception=f.rule)
            elif f.type == "monitored" and own:
                note(f.rule, "monitor", "note", f.message)
        for (policy, rule, outcome), (messages, props) in found.items():
            self.audit.add(
                subject, policy, rule, outcome, "; ".join(messages), pod=pod, properties=props
            )

    def _excepted(self, exception: str, plugin: str, own: bool) -> list[Rule]:
        """The rules an exception skipped: ``violation`` for a validating half, and ``drift``
        for a mutating half where drift is reported at all.

        Why the halves in the chain, not the plugin's: a validating half its settings switch
        off (``enforce: false``) checks nothing, so an exception skips no violation there.
        """
        phases = self._phases.get(exception, PHASES)
        admission = self.engine.admission
        rules: list[Rule] = []
        if own and "mutate" in phases and _runs(admission.plugins("mutate"), plugin):
            rules.append("drift")
        if "validate" in phases and _runs(admission.plugins("validate"), plugin):
            rules.append("violation")
        return rules


def _runs(plugins: Sequence[Plugin], name: str) -> bool:
    return any(p.name == name for p in plugins)
