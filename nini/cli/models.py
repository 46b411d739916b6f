"""``nini models ...``: list the providers and what each purpose would call, add or remove a
provider (the name of its key's variable, never the key), and test them with one tiny real call.
The rules are ``nini.agent.model_admin``'s, shared with REST and the sidebar."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

import typer

from nini.cli._common import handles_errors, print_json, state
from nini.cli.terminal import working

app = typer.Typer(help="The models nini may call: list, add, remove, test.", no_args_is_help=True)


def _router(ctx: typer.Context) -> Any:
    from nini.agent.llm import ModelRouter

    return ModelRouter(state(ctx).settings.llm)


@app.command("list")
@handles_errors
def list_models(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Each provider (usable, or why not) and the model each purpose would call first."""
    from nini.agent.model_admin import describe_models

    facts = describe_models(_router(ctx), state(ctx).settings.home)
    if as_json:
        print_json(facts)
        return
    if not facts["providers"]:
        typer.echo("no providers: add one with nini models add NAME")
    for p in facts["providers"]:
        usable = "usable" if p["usable"] else f"not usable: {p['reason']}"
        typer.echo(f"{p['name']:<16} {p['kind']:<9} {p['model'] or '-':<24} {p['base_url'] or '-':<36} {usable}")
    for purpose, route in facts["purposes"].items():
        first = route["chain"][0] if route["chain"] else None
        typer.echo(f"  {purpose:<18} -> " + (f"{first['provider']}/{first['model']} ({first['source']})" if first else f"none: {route['error']}"))


@app.command("add")
@handles_errors
def add_model(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="How purposes refer to it, e.g. ollama.")],
    kind: Annotated[Literal["openai", "anthropic", "replay"], typer.Option("--kind", prompt="Kind (openai, anthropic, replay)",
                                                                         help="openai: any OpenAI-compatible endpoint.")] = "openai",
    base_url: Annotated[str, typer.Option("--base-url", prompt="Base URL (empty for the kind's default)", help="e.g. http://127.0.0.1:11434/v1")] = "",
    model: Annotated[str, typer.Option("--model", prompt="Model", help="The model used when a purpose names none.")] = "",
    api_key_env: Annotated[str, typer.Option("--api-key-env", prompt="Name of the API key's environment variable (empty: none)",
                                             help="The variable's NAME (e.g. DEEPSEEK_API_KEY), never the key.")] = "",
    vision_model: Annotated[list[str] | None, typer.Option("--vision-model", help="A model of it that reads images (repeatable).")] = None,
) -> None:
    """Save a provider into settings.json (replacing one of that name)."""
    from nini.agent.model_admin import provider_from_body, save_provider

    body = {"kind": kind, "base_url": base_url or None, "model": model or None, "api_key_env": api_key_env or None,
            "vision_models": vision_model or []}  # fmt: skip
    provider = provider_from_body(name, {k: v for k, v in body.items() if v is not None}, state(ctx).settings.server)
    save_provider(state(ctx).settings.home, provider)
    typer.echo(f"saved {provider.name} ({provider.kind}, {provider.model}); nini models test {provider.name} tries it")


@app.command("remove")
@handles_errors
def remove_model(ctx: typer.Context, name: str) -> None:
    """Remove a provider from settings.json."""
    from nini.agent.model_admin import delete_provider

    delete_provider(state(ctx).settings.home, name)
    typer.echo(f"removed {name}")


@app.command("test")
@handles_errors
def test_models(ctx: typer.Context, name: Annotated[str | None, typer.Argument(help="One provider; default: every purpose's first choice.")] = None) -> None:
    """One tiny real call per provider and model to try: OK with its latency, or why not; exit 1 on a failure."""
    from nini.agent.model_admin import test_routes

    with working("calling each model once"):
        results = asyncio.run(test_routes(state(ctx).settings, name))
    for target, ok, detail in results:
        typer.echo(f"{'OK' if ok else 'FAIL':<5} {target}  {detail}")
    if not results:
        typer.echo("no model to test: nini models add NAME")
    if not results or not all(ok for _target, ok, _detail in results):
        raise typer.Exit(1)
