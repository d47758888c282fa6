"""The command line's click groups (layer: interfaces): quick ``--help``, and every error
turned into ``error:`` / ``hint:`` lines and an exit code."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from memloci.errors import MemlociError, driver_error, storage_error
from memloci.interfaces.cli_common import report_error


class QuickHelpGroup(TyperGroup):
    """A group whose ``--help`` flag defaults to False rather than None. Typer coerces a
    parameter whose value is not already a bool through a pydantic ``TypeAdapter``; for a
    parent group's unused ``--help`` (``memloci memory --help``) that alone imported
    pydantic and typer's adapters (~0.2 s). (``Any`` for typer's vendored click types.)"""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None and option.default is None:
            option.default = False
        return option

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)
        for param in params:  # the root's unused --install/--show-completion flags too
            if param.name in COMPLETION_PARAMS and param.default is None:
                param.default = False
        return params


COMPLETION_PARAMS = ("install_completion", "show_completion")
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def completion(ctx: Any, option: str, shell: str) -> None:
    """``--show-completion SHELL`` prints ``SHELL``'s completion script, and
    ``--install-completion SHELL`` installs it (typer's flags alone detect the shell
    the command runs in); then the command exits."""
    from typer._completion_shared import get_completion_script, install

    prog = ctx.find_root().info_name or "memloci"
    var = "_{}_COMPLETE".format(prog.replace("-", "_").upper())
    if option == "--show-completion":
        typer.echo(get_completion_script(prog_name=prog, complete_var=var, shell=shell))
    else:
        shell, path = install(shell=shell, prog_name=prog, complete_var=var)
        typer.echo(f"{shell} completion installed in {path}; it works in a new shell")
    raise typer.Exit(0)


class GuardedGroup(QuickHelpGroup):
    """Root command group: turns every error into ``error:`` / ``hint:`` lines and an exit code.

    A :class:`MemlociError` exits with its ``exit_code`` and never shows a traceback; so
    does the database driver's own error (a damaged file: exit 8, as a ``StorageError``);
    anything unexpected exits 1 with a short message (traceback when ``MEMLOCI_DEBUG=1``).
    A closed stdout (EPIPE, e.g. ``memloci memory consolidate --help | head -1``) is left
    to click's main, which exits 1 without a message.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        flags = ("--show-completion", "--install-completion")
        if len(args) >= 2 and args[0] in flags and args[1] in SHELLS:
            completion(ctx, args[0], args[1])
        result: list[str] = super().parse_args(ctx, args)
        return result

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, TyperException):
            raise
        except BrokenPipeError:  # `memloci … | head`: the reader left; click exits quietly
            raise
        except MemlociError as exc:
            report_error(exc.message, exc.hint)
            raise typer.Exit(exc.exit_code) from None
        except Exception as exc:
            if os.environ.get("MEMLOCI_DEBUG", "") not in ("", "0"):
                traceback.print_exc(file=sys.stderr)
            first = (str(exc).splitlines() or [""])[0]
            if driver_error(exc):  # a database failure the storage layer let through
                error = storage_error(exc)
                report_error(error.message.splitlines()[0], error.hint)
                raise typer.Exit(error.exit_code) from None
            report_error(
                f"unexpected {type(exc).__name__}: {first}".rstrip(": "),
                "set MEMLOCI_DEBUG=1 to see the traceback, and report it if it is a bug",
            )
            raise typer.Exit(1) from None


__all__ = ["GuardedGroup", "QuickHelpGroup"]
