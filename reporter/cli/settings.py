"""`report auth status` and `report config show`: where the settings come from."""

from __future__ import annotations

from typing import Annotated

import typer

from reporter import console
from reporter.cli.group import echo, subgroup
from reporter.cli.options import BaseUrlOpt, JsonFlag
from reporter.console.upstream import auth_status_text, config_show_text

auth_app = subgroup("auth", "Which GitHub token the upstream commands use.")
config_app = subgroup("config", "The settings file (default repos, index, forms, host).")


@auth_app.command("status", epilog="Example: GH_HOST=ghe.corp.example report auth status")
def auth_status_cmd(
    base_url: BaseUrlOpt = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Do not ask GitHub for the rate limit left.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Say which host is used, where its token comes from and the rate limit left.

    Exit 1 when no token is found for the host, or the host could not be asked (as
    `gh auth status`); --offline only looks for the token.

    Tokens, like gh: GH_TOKEN / GITHUB_TOKEN for github.com, GH_ENTERPRISE_TOKEN /
    GITHUB_ENTERPRISE_TOKEN for other hosts, gh's hosts.yml, then `gh auth token`
    (the system keyring). Each token is only sent to its own host. The token itself
    is never printed.
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context, auth_status

    status = auth_status(Context.resolve(base_url=base_url), check=not offline)
    if as_json:
        from reporter.console.documents_auth import auth_document

        console.emit(auth_document(status))
    else:
        echo(auth_status_text(status))
    if status.token_source is None or status.error:
        # As `gh auth status`: no token found, or a host that could not be asked, is exit 1,
        # so scripts can test for a working setup.
        raise typer.Exit(1)


@config_app.command("show", epilog="Example: REPORTER_CONFIG=./reporter.toml report config show")
def config_show_cmd(as_json: JsonFlag = False) -> None:
    """Print the settings file's path and every setting (REPORTER_CONFIG overrides the path).

    Keys: repos = ["owner/name"], index = "PATH", forms = "DIR", host = "github.com".
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context

    conf = Context.resolve().config
    if as_json:
        from reporter.console import documents_upstream as documents

        console.emit(documents.config_document(conf))
    else:
        echo(config_show_text(conf))
