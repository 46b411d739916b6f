"""``nini models ...``: list the providers and what each purpose would call, add or remove a
provider (the name of its key's variable, never the key), and test them with one tiny real call.
The rules are ``nini.agent.model_admin``'s, shared with REST and the sidebar."""

from typing import Annotated, Any, Literal

import typer

from nini.cli._common import handles_errors, print_json, state
from nini.cli._help import examples, group
from nini.cli.terminal import working
from nini.cli.words import say

app = group(
    "The models nini may call: list, add, remove, test.",
    [
        "nini models list",
        "nini models add deepseek --base-url https://api.deepseek.com --model deepseek-chat "
        "--api-key-env DEEPSEEK_API_KEY",
        "nini models test deepseek",
    ],
)


def _router(ctx: typer.Context) -> Any:
    from nini.agent.llm import ModelRouter

    return ModelRouter.from_settings(state(ctx).settings)


@app.command("list", epilog=examples("nini models list", "nini models list --json"))
@handles_errors
def list_models(
    ctx: typer.Context,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the providers and each purpose's route as JSON.")
    ] = False,
) -> None:
    """Each provider (usable, or why not) and the model each purpose would call first."""
    from nini.agent.model_admin import describe_models

    facts = describe_models(_router(ctx), state(ctx).settings.home)
    if as_json:
        print_json(facts)
        return
    if not facts["providers"]:
        typer.echo(say(ctx, "no_providers"))
    for p in facts["providers"]:
        usable = "usable" if p["usable"] else f"not usable: {p['reason']}"
        typer.echo(f"{p['name']:<16} {p['kind']:<9} {p['model'] or '-':<24} {p['base_url'] or '-':<36} {usable}")
    for purpose, route in facts["purposes"].items():
        first = route["chain"][0] if route["chain"] else None
        typer.echo(
            f"  {purpose:<18} -> "
            + (f"{first['provider']}/{first['model']} ({first['source']})" if first else f"none: {route['error']}")
        )


@app.command(
    "add",
    epilog=examples(
        "nini models add ollama --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b",
        "nini models add deepseek --base-url https://api.deepseek.com --model deepseek-chat "
        "--api-key-env DEEPSEEK_API_KEY",
    ),
)
@handles_errors
def add_model(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="How purposes refer to it, e.g. ollama.")],
    kind: Annotated[
        Literal["openai", "anthropic", "replay"], typer.Option("--kind", help="openai: any OpenAI-compatible endpoint.")
    ] = "openai",
    base_url: Annotated[
        str,
        typer.Option("--base-url", help="An http(s) URL, e.g. http://127.0.0.1:11434/v1 (default: the kind's own)."),
    ] = "",
    model: Annotated[
        str, typer.Option("--model", help="The model used when a purpose names none (needed but for replay).")
    ] = "",
    api_key_env: Annotated[
        str,
        typer.Option(
            "--api-key-env",
            help="The variable's NAME (e.g. DEEPSEEK_API_KEY), never the key (default: none, a keyless server).",
        ),
    ] = "",
    vision_model: Annotated[
        list[str] | None,
        typer.Option("--vision-model", metavar="MODEL", help="A model of it that reads images (repeatable)."),
    ] = None,
) -> None:
    """Save a provider into settings.json (replacing one of that name); asks nothing: what is not given takes its default."""  # noqa: E501 - typer's help text
    from nini.agent.model_admin import provider_from_body, save_provider

    body = {
        "kind": kind,
        "base_url": base_url or None,
        "model": model or None,
        "api_key_env": api_key_env or None,
        "vision_models": vision_model or [],
    }
    settings = state(ctx).settings
    provider = provider_from_body(
        name, {k: v for k, v in body.items() if v is not None}, settings.server, settings.ui.current_language
    )
    save_provider(state(ctx).settings.home, provider)
    typer.echo(f"saved {provider.name} ({provider.kind}, {provider.model}); nini models test {provider.name} tries it")


@app.command("remove", epilog=examples("nini models remove ollama"))
@handles_errors
def remove_model(
    ctx: typer.Context, name: Annotated[str, typer.Argument(metavar="NAME", help="The provider (nini models list).")]
) -> None:
    """Remove a provider from settings.json."""
    from nini.agent.model_admin import delete_provider

    delete_provider(state(ctx).settings.home, name)
    typer.echo(say(ctx, "removed_provider", name=name))


@app.command("test", epilog=examples("nini models test", "nini models test ollama --json"))
@handles_errors
def test_models(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(metavar="[NAME]", help="One provider; default: every purpose's first choice.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON array: each model tried, ok, and its latency or why not.")
    ] = False,
) -> None:
    """One tiny real call per provider and model to try: OK with its latency, or why not; exit 1 on a failure."""
    import asyncio

    from nini.agent.model_admin import test_routes

    with working("calling each model once"):
        results = asyncio.run(test_routes(state(ctx).settings, name))
    if as_json:
        print_json([{"target": target, "ok": ok, "detail": detail} for target, ok, detail in results])
    else:
        for target, ok, detail in results:
            typer.echo(f"{'OK' if ok else 'FAIL':<5} {target}  {detail}")
        if not results:
            typer.echo(say(ctx, "no_model_to_test"))
    if not results or not all(ok for _target, ok, _detail in results):
        raise typer.Exit(1)
