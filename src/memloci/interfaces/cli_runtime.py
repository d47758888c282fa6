"""``memloci init`` (layer: interfaces): scaffold a role file for an agent with memory.

Registered by :mod:`memloci.interfaces.cli`; the templates live in
:mod:`memloci.runtime.templates`.
"""

from __future__ import annotations

import shlex
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from memloci.errors import ConflictError, ValidationError
from memloci.interfaces.cli_common import examples, note, say
from memloci.runtime.templates import memory_template

INIT_EXAMPLES = examples(
    "memloci init --template memory",
    "memloci init --template memory --name support agents/support.yaml",
    "memloci init --template memory --force",
)


class Template(StrEnum):
    """Role file templates ``memloci init`` can write."""

    MEMORY = "memory"


def init(
    path: Annotated[
        Path, typer.Argument(metavar="PATH", help="Where to write the role file.")
    ] = Path("role.yaml"),
    template: Annotated[
        Template,
        typer.Option("--template", "-t", help="What to scaffold.", case_sensitive=False),
    ] = Template.MEMORY,
    name: Annotated[
        str,
        typer.Option(
            "--name", help="Agent name: its id and namespace (lower-case letters, digits, '-')."
        ),
    ] = "assistant",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented role file (role.yaml) for an agent with memory."""
    text = {Template.MEMORY: memory_template}[template](name)
    if path.is_dir():
        raise ValidationError(f"{path} is a folder", hint="give a file name, e.g. role.yaml")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w" if force else "x", encoding="utf-8") as fh:
            fh.write(text)
    except FileExistsError:
        raise ConflictError(
            f"{path} already exists", hint="pass --force to overwrite it, or give another PATH"
        ) from None
    except OSError as exc:
        raise ValidationError(f"cannot write {path}: {exc.strerror or exc}") from None
    say(f"Wrote {path} (agent {name!r}, template {template.value}).")
    note(f"Edit it, then start the agent with: memloci chat {shlex.quote(str(path))}")
