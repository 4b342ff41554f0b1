"""Credentials of one API server: serving certificate, service-account key, tokens, kubeconfigs.

Every API server gets its own set, generated fresh into its temp dir, so two servers on one
etcd can never trust each other's clients by accident and nothing outlives the run. The
serving chain comes from the product's own :func:`webhooks.certs.pki.generate` (a CA
plus a leaf for ``127.0.0.1`` and ``localhost``): the same code that makes the webhook's
certificates.

Identities are static tokens (``--token-auth-file``) rather than client certificates: one
line per user, no CA key to keep, and the kubeconfig a person gets from ``make cluster``
works with any client. The controller-manager's user is in ``system:masters`` because it
runs every controller under its own identity (``--use-service-account-credentials=false``,
which keeps start-up fast); the scheduler keeps upstream's least-privilege role.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from webhooks.certs.pki import CertPaths, generate

HOSTS = ("127.0.0.1", "localhost")

#: user name, groups: who each token stands for (RBAC's bootstrap policy knows these users).
IDENTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("admin", ("system:masters",)),
    "scheduler": ("system:kube-scheduler", ()),
    "controller-manager": ("system:kube-controller-manager", ("system:masters",)),
    # A kubelet's identity (the Node authorizer lets it write its own Node and mirror pods).
    "node": ("system:node:node-a", ("system:nodes",)),
}


@dataclass(frozen=True, slots=True)
class Credentials:
    """The files an API server is started with, and the tokens of its clients."""

    serving: CertPaths
    service_account_key: Path
    service_account_public_key: Path
    token_file: Path
    tokens: dict[str, str]


def create(directory: Path) -> Credentials:
    """Generate a serving chain, a service-account signing key and the token file.

    Why an EC key for service accounts: it is generated in microseconds where RSA takes
    tens of milliseconds, and the API server signs ES256 tokens as readily as RS256.
    """
    directory.mkdir(parents=True, exist_ok=True)
    serving = generate(directory / "serving", hosts=HOSTS, common_name="kube-apiserver")
    key = ec.generate_private_key(ec.SECP256R1())
    sa_key = directory / "service-account.key"
    sa_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,  # "EC PRIVATE KEY", as kubeadm's
            serialization.NoEncryption(),
        )
    )
    sa_key.chmod(0o600)
    # --service-account-key-file wants the public half; it does not read it from the key.
    sa_public = directory / "service-account.pub"
    sa_public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    tokens = {who: secrets.token_urlsafe(24) for who in IDENTITIES}
    lines = []
    for who, (user, groups) in IDENTITIES.items():
        group_field = f',"{",".join(groups)}"' if groups else ""
        lines.append(f"{tokens[who]},{user},{user}{group_field}\n")
    token_file = directory / "tokens.csv"
    token_file.write_text("".join(lines))
    token_file.chmod(0o600)
    return Credentials(serving, sa_key, sa_public, token_file, tokens)


def write_kubeconfig(path: Path, *, server: str, ca: Path, token: str, name: str) -> Path:
    """A kubeconfig for ``server`` with a bearer token; returns ``path``.

    The CA is referenced by path, not embedded, so the file stays readable, and it lives
    beside the CA in the run's temp dir, which goes away with the run.
    """
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
