"""API keys of MemoryService (layer: service): create, list, revoke, verify, and whether a
server on the store must demand a key.

``MemoryService.keys``; the interfaces check a caller's key through it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from datetime import timedelta

from memloci import validate as v
from memloci.errors import ConflictError
from memloci.models import ApiKey, short_id, utcnow
from memloci.service.calls import threaded
from memloci.service.core import Service

KEY_RE = re.compile(r"^mlk_([A-Za-z0-9]{8})_([A-Za-z0-9_-]{43})$")
AUTH_MARKER = "auth_required"  # store meta: set when the first API key is created
KEY_TOUCH_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often


def key_hash(secret: str) -> str:
    """What the store keeps of an API key: the sha256 hex of the whole secret."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Keys(Service):
    """API keys: each maps to the namespaces it may read (and maybe write)."""

    @threaded
    def create_key(
        self,
        name: str,
        namespaces: Sequence[str],
        *,
        write: bool = True,
        admin: bool = False,
    ) -> tuple[ApiKey, str]:
        """A new API key and its secret ``mlk_<id>_<43 chars>``; the secret is shown only
        now (the store keeps its sha256). ``["*"]`` (all namespaces) is for admin keys."""
        label = v.name(name, "key name", 100)
        write, admin = v.flag(write, "write"), v.flag(admin, "admin")
        nss = v.key_namespaces(namespaces, admin=admin)

        for _ in range(5):
            kid = short_id()
            secret = f"mlk_{kid}_{secrets.token_urlsafe(32)}"
            key = ApiKey(
                id=kid,
                name=label,
                namespaces=nss,
                can_write=write,
                admin=admin,
                created_at=utcnow(),
            )
            try:
                self.store.people.insert_key(key, key_hash(secret))
            except ConflictError:
                continue
            self.store.set_meta(AUTH_MARKER, "1")  # from now on the server needs a key
            return key, secret
        raise ConflictError("could not allocate a unique API key id")  # pragma: no cover

    @threaded
    def list_keys(self, *, include_revoked: bool = False) -> list[ApiKey]:
        """Keys without secrets or hashes, oldest first."""
        return self.store.people.list_keys(
            include_revoked=v.flag(include_revoked, "include_revoked")
        )

    @threaded
    def revoke_key(self, key_id: str) -> ApiKey:
        kid = v.short_ref(key_id, "API key")
        return self.store.people.revoke_key(kid, now=utcnow())

    @threaded
    def auth_required(self) -> bool:
        """Whether a server on this store must demand an API key: true once any key was
        ever created here, even when every key is revoked since (then an operator creates
        a new one with ``memloci keys create``)."""

        marked = self.store.get_meta(AUTH_MARKER) == "1"
        return marked or bool(self.store.people.list_keys(include_revoked=True))

    @threaded
    def has_keys(self) -> bool:
        """Whether any API key is active."""
        return self.store.people.has_keys()

    @threaded
    def verify_key(self, secret: str) -> ApiKey | None:
        """The active key a secret belongs to, or None (malformed, unknown, wrong or
        revoked). Records ``last_used_at`` at most once a minute."""
        match = KEY_RE.match(secret) if isinstance(secret, str) else None
        if match is None:
            return None
        kid = match[1]

        found = self.store.people.get_key(kid)
        if found is None:
            return None
        key, digest = found
        if not hmac.compare_digest(digest, key_hash(secret)) or key.revoked_at is not None:
            return None
        now = utcnow()
        if key.last_used_at is None or now - key.last_used_at >= KEY_TOUCH_EVERY:
            self.store.people.touch_key(key.id, now=now)
            key = key.model_copy(update={"last_used_at": now})
        return key
