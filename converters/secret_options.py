"""Secret fields of a kind's options (e.g. the DICOM salt): kept out of the fingerprint and the manifest, and
carried across a resume only as much as the resume needs (a random secret itself, a given one as a check value)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import asdict, fields, is_dataclass, replace
from typing import Any

from fastdata.errors import ConvertError


def secret_fields(options: Any) -> list[str]:
    """Fields of a kind's options marked `metadata={"secret": True}` (e.g. the DICOM salt)."""
    return [f.name for f in fields(options) if f.metadata.get("secret")] if is_dataclass(options) else []


def public_options(options: Any) -> Any:
    """The options as they enter the fingerprint and the plan: secret fields left out (a public
    fingerprint over a secret is an offline oracle for guessing it)."""
    if not is_dataclass(options):
        return options
    hidden = set(secret_fields(options))
    return {k: v for k, v in asdict(options).items() if k not in hidden}


def _verifier(value: str) -> str:
    return hashlib.sha256(f"fastdata-secret-check\0{value}".encode()).hexdigest()


def resolve_secrets(options: Any, kept: dict[str, Any], *, label: str) -> tuple[Any, dict[str, Any]]:
    """Options with every secret field set, and what the plan keeps of them for a resume: an empty secret
    becomes a random one drawn for this conversion (kept in the plan, which is deleted when the conversion
    ends), a given one is kept only as a check value, so a resume with another one is refused."""
    chosen, records = {}, {}
    for name in secret_fields(options):
        given, old = getattr(options, name), kept.get(name)
        if old is None:
            value = given or secrets.token_hex(16)
        elif "random" in old:
            if given:
                raise ConvertError(f"{label} was started without --{name}, with a random one; rerun without "
                                   f"--{name} to resume it, or convert into a new destination")
            value = old["random"]
        else:
            if _verifier(given) != old["check"]:
                raise ConvertError(f"{label} was started with another --{name}; rerun with the same one to "
                                   "resume it, or convert into a new destination")
            value = given
        chosen[name] = value
        records[name] = {"check": _verifier(value)} if given else {"random": value}
    return (replace(options, **chosen) if chosen else options), records
