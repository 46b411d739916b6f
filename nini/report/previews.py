"""Static previews of Plotly and Vega/Vega-Lite charts: rendered offline, cached by content.

A notebook's Plotly figure or Altair chart is JSON that a browser draws with scripts; a report
shows an image instead: Vega and Vega-Lite as SVG by vl-convert (Vega bundled in Rust, no
browser), Plotly as PNG by kaleido (one headless Chromium for the whole report, its plotly.js the
one plotly ships, no MathJax). Where a renderer is missing, or a render fails, times out or is
too large, the chart stays its JSON file and the report says "interactive chart, open the file"
(``charts.preview_kind``): never a page that loads a CDN script.

The JSON is untrusted (whoever wrote the notebook wrote it), so nothing it names is fetched:
the renderer runs in a child process inside bubblewrap without the host's network (where bwrap
works here; ``renderer_command``), and besides, vl-convert allows no base URL for data, the SVG it
writes keeps no external reference (an image mark's URL is dropped), Plotly's figure loses every
URL before the browser sees it, and that browser sends every request to a proxy that does not
exist. The child (``python -m nini.report.previews``) renders with a time limit per chart: vl-convert holds the
GIL and cannot be interrupted, so a chart past its time is ended by killing the child, and the
next one starts in a new child. Previews are cached under ``<NINI_HOME>/cache/previews`` by the
hash of the renderer and the JSON, so the second report of a notebook renders nothing.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path, PurePosixPath
from typing import Any

from nini.errors import NiniError
from nini.fsutil import atomic_write_bytes
from nini.report.charts import group_charts, preview_kind, spec_kind, split_name
from nini.report.model import ChartFile, ReportInput
from nini.report.notebook_charts import write_chart

MAX_SPEC_BYTES = 10 * 1024 * 1024  # a chart's JSON larger than this is not rendered
MAX_PREVIEW_BYTES = 10 * 1024 * 1024
RENDER_TIMEOUT_S = 60.0  # one chart; the first Plotly chart also waits for the browser to start
FORMATS = {"vegalite": "svg", "vega": "svg", "plotly": "png"}
RENDERER_MODULES = {"vegalite": "vl_convert", "vega": "vl_convert", "plotly": "kaleido"}
# Why a chart has no preview (PreviewStats.missing): stable codes a caller may print.
NO_RENDERER, FAILED, TIMEOUT, TOO_LARGE, UNREADABLE = (
    "no_renderer",
    "render_failed",
    "timeout",
    "too_large",
    "unreadable",
)
# Chromium sends every request to a proxy nobody listens on (loopback included), resolves no name.
OFFLINE_FLAGS = (
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-background-networking",
    "--no-pings",
    "--dns-prefetch-disable",
)
_URL = re.compile(r"^\s*(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
_SVG_HREF = re.compile(r"""\s(?:xlink:)?href\s*=\s*("[^"]*"|'[^']*')""")
_SVG_URL = re.compile(r"""url\(\s*(?!['"]?#)[^)]*\)""")


@dataclass
class PreviewStats:
    """What ``add_previews`` did: charts rendered now, taken from the cache, and left without one (by base name)."""

    rendered: int = 0
    cached: int = 0
    missing: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Job:
    key: str  # the cache key: hash of the renderer and the JSON
    kind: str  # "plotly" | "vegalite" | "vega"
    spec: bytes


def preview_cache(home: Path) -> Path:
    """Where previews are cached: ``<NINI_HOME>/cache/previews``."""
    return Path(home) / "cache" / "previews"


def add_previews(
    data: ReportInput, cache: Path | None, *, timeout_s: float = RENDER_TIMEOUT_S
) -> tuple[ReportInput, PreviewStats]:
    """``data`` with a static preview added to each Plotly or Vega chart that has no image, written
    next to the chart's JSON (the same base name, so it is one chart); and what was done. A chart
    whose preview cannot be made keeps its JSON alone (``stats.missing`` says why)."""
    stats = PreviewStats()
    wanted: list[tuple[ChartFile, _Job]] = []
    for group in group_charts(data.charts):
        source = next((f for f in group.files if spec_kind(f.name)), None)
        if source is None or any(preview_kind(f) == "image" for f in group.files):
            continue
        kind = spec_kind(source.name) or ""
        try:
            spec = _read(source)
        except (OSError, NiniError):
            stats.missing[group.base] = UNREADABLE
            continue
        if spec is None:
            stats.missing[group.base] = TOO_LARGE
            continue
        wanted.append((source, _Job(_key(kind, spec), kind, spec)))
    images: dict[str, bytes] = {}  # by cache key; b"" for a JSON the renderer refused before
    to_render: dict[str, _Job] = {}
    for _, job in wanted:
        if job.key not in images and job.key not in to_render:
            cached = _cached(cache, job)
            if cached is None:
                to_render[job.key] = job
            else:
                images[job.key] = cached
    outcome = render(list(to_render.values()), timeout_s=timeout_s) if to_render else {}
    for key, job in to_render.items():
        result = outcome.get(key, FAILED)
        if isinstance(result, bytes):
            images[key] = result
            stats.rendered += 1
            _store(cache, job, result)
        elif result == FAILED and job.kind != "plotly":
            _store(cache, job, b"")  # vl-convert refused this JSON: it will again (a browser may not have been ready)
    charts = list(data.charts)
    for source, job in wanted:
        base = split_name(source.name)[0]
        image = images.get(job.key)
        if not image:
            result = outcome.get(job.key, FAILED)
            stats.missing[base] = result if isinstance(result, str) else FAILED
            continue
        stats.cached += job.key not in to_render
        charts.append(_write_beside(source, f"{base}.{FORMATS[job.kind]}", image))
    return dataclasses.replace(data, charts=charts), stats


def _read(source: ChartFile) -> bytes | None:
    """The chart's JSON, None when larger than MAX_SPEC_BYTES; OSError or NiniError when unreadable."""
    if source.fs is not None and source.relative is not None:
        size = source.fs.file_size(source.relative)
        return (
            None
            if size is None or size > MAX_SPEC_BYTES
            else source.fs.read_bytes(source.relative, limit=MAX_SPEC_BYTES)
        )
    with open(source.path, "rb") as handle:
        raw = handle.read(MAX_SPEC_BYTES + 1)
    return raw if len(raw) <= MAX_SPEC_BYTES else None


def _key(kind: str, spec: bytes) -> str:
    digest = hashlib.sha256(f"{kind}\0{_renderer_version(kind)}\0".encode())
    digest.update(spec)
    return digest.hexdigest()


def _renderer_version(kind: str) -> str:
    """The renderer's package version: a new vl-convert or kaleido renders the cache's charts again."""
    from importlib.metadata import PackageNotFoundError, version

    package = {"vl_convert": "vl-convert-python", "kaleido": "kaleido"}[RENDERER_MODULES[kind]]
    try:
        return version(package)
    except PackageNotFoundError:
        return "none"


def _cached(cache: Path | None, job: _Job) -> bytes | None:
    """The cached preview (b"" for a JSON the renderer refused before), None when not cached."""
    if cache is None:
        return None
    try:
        return (cache / f"{job.key}.{FORMATS[job.kind]}").read_bytes()
    except OSError:
        return None


def _store(cache: Path | None, job: _Job, image: bytes) -> None:
    if cache is None:
        return
    try:
        atomic_write_bytes(cache / f"{job.key}.{FORMATS[job.kind]}", image)
    except NiniError:
        pass  # a cache that cannot be written costs a render next time, nothing more


def _write_beside(source: ChartFile, name: str, image: bytes) -> ChartFile:
    """The preview as a chart file next to ``source``, written like the report's own files."""
    if source.fs is not None and source.relative is not None:
        relative = str(PurePosixPath(source.relative).with_name(name))
        source.fs.write_with(relative, lambda file: file.write(image), durable=False)  # the cache holds it durably
        return dataclasses.replace(source, name=name, path=Path(source.path).with_name(name), relative=relative)
    return dataclasses.replace(source, name=name, path=write_chart(Path(source.path).parent, name, image))


# -- the renderer process -----------------------------------------------------------------------------


def render(jobs: list[_Job], *, timeout_s: float = RENDER_TIMEOUT_S) -> dict[str, bytes | str]:
    """Each job's image, or the reason it has none, rendered in child processes: one for all (one
    browser for every Plotly chart), a new one after a chart that ran out of time or killed it."""
    results: dict[str, bytes | str] = {}
    for job in jobs:
        if find_spec(RENDERER_MODULES[job.kind]) is None:
            results[job.key] = NO_RENDERER
    pending = [job for job in jobs if job.key not in results]
    # Vega first: the browser starts only once they are done
    pending.sort(key=lambda job: job.kind == "plotly")
    with tempfile.TemporaryDirectory(prefix="nini-previews-") as tmp:
        while pending:
            done = _run_child(pending, Path(tmp), timeout_s)
            results.update(done)
            if len(done) < len(pending):  # the next chart ran out of time, or the child died on it
                stuck = pending[len(done)]
                results.setdefault(stuck.key, TIMEOUT)
                done[stuck.key] = results[stuck.key]
            pending = [job for job in pending if job.key not in done]
    return results


def _run_child(jobs: list[_Job], folder: Path, timeout_s: float) -> dict[str, bytes | str]:
    """Run one child on ``jobs`` in order; the results it gave before it ended or ran out of time.
    A child that ends early marks the chart it was on as failed; one that runs out of time is killed."""
    listing = folder / "jobs.jsonl"
    with listing.open("w", encoding="utf-8") as file:
        for job in jobs:
            file.write(
                json.dumps({"key": job.key, "kind": job.kind, "spec": job.spec.decode("utf-8", "replace")}) + "\n"
            )
    process = subprocess.Popen(
        renderer_command([sys.executable, "-m", "nini.report.previews", str(listing), str(timeout_s)], folder),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the browser it starts is killed with it
    )
    results: dict[str, bytes | str] = {}
    buffer = b""
    selector = selectors.DefaultSelector()
    assert process.stdout is not None
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    try:
        while len(results) < len(jobs):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                break  # out of time: the chart now rendering is the one left
            chunk = os.read(process.stdout.fileno(), 1 << 20)
            if not chunk:
                if len(results) < len(jobs):
                    results[jobs[len(results)].key] = FAILED  # the child died on this chart
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                key, result = _result(line)
                if key is not None:
                    results[key] = result
                    deadline = time.monotonic() + timeout_s
    finally:
        selector.close()
        _end(process)
    return results


PRIVATE_FOLDERS = (Path("/tmp"), Path("/dev/shm"))  # fresh and empty in the renderer's sandbox


def renderer_command(cmd: list[str], folder: Path) -> list[str]:
    """``cmd`` inside bubblewrap where it works here: no network namespace of the host's (nothing a
    chart names can be fetched, whatever the renderer does), the file system read-only, a private
    ``/tmp`` with only ``folder`` (the job listing) from the host. Where bwrap cannot run, the
    renderer's own guards remain (URLs emptied, Chromium's requests sent to a proxy nobody runs)."""
    from nini.execution.sandbox import interpreter_paths, probe_bwrap

    if not probe_bwrap()[0]:
        return cmd
    where = str(folder)
    # the interpreter and nini where they live under a folder the sandbox makes private (a venv
    # in /tmp): bound back read-only, or ``sys.executable`` would not be there to run
    hidden = [p for p in interpreter_paths() if any(p.is_relative_to(h) for h in PRIVATE_FOLDERS)]
    back = [arg for path in hidden for arg in ("--ro-bind", str(path), str(path))]
    return [
        shutil.which("bwrap") or "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/dev/shm",
        *back,
        "--ro-bind",
        where,
        where,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--",
        *cmd,
    ]


def _result(line: bytes) -> tuple[str | None, bytes | str]:
    try:
        message = json.loads(line)
        if "image" in message:
            image = base64.b64decode(message["image"])
            return message["key"], image if 0 < len(image) <= MAX_PREVIEW_BYTES else TOO_LARGE
        return message["key"], str(message.get("error") or FAILED)
    except (ValueError, KeyError, TypeError):
        return None, FAILED


def _end(process: subprocess.Popen[bytes]) -> None:
    """Stop the child and everything it started (the browser's own group ends when its pipe closes)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _child(listing: Path, timeout_s: float) -> None:
    """Render every job of ``listing`` in order, one JSON line each on stdout: the image, or the reason."""
    jobs = [json.loads(line) for line in listing.read_text(encoding="utf-8").splitlines() if line]
    vega = [job for job in jobs if job["kind"] != "plotly"]
    plotly = [job for job in jobs if job["kind"] == "plotly"]
    for job in vega:
        _say(job["key"], _vega_svg(job))
    if plotly:
        asyncio.run(_plotly_pngs(plotly, timeout_s))


def _say(key: str, result: bytes | str) -> None:
    message = (
        {"key": key, "image": base64.b64encode(result).decode()}
        if isinstance(result, bytes)
        else {"key": key, "error": result}
    )
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _vega_svg(job: dict[str, Any]) -> bytes | str:
    """SVG of a Vega or Vega-Lite spec with no data fetched, and no external reference left in it."""
    import vl_convert

    try:
        spec = json.loads(job["spec"])
        if job["kind"] == "vega":
            svg = vl_convert.vega_to_svg(spec, allowed_base_urls=[])
        else:
            svg = vl_convert.vegalite_to_svg(spec, allowed_base_urls=[])
    except Exception:  # noqa: BLE001 - an invalid spec, data it may not fetch, an old Vega-Lite version: no preview
        return FAILED
    return safe_svg(svg).encode("utf-8")


def safe_svg(svg: str) -> str:
    """``svg`` without a reference to anything outside it: an image mark's or a link's URL (``href``
    not to ``#``/``data:``), a ``url(...)`` paint that is not ``#id``."""

    def keep_local(match: re.Match[str]) -> str:
        target = match.group(1)[1:-1].strip()
        return match.group(0) if target.startswith(("#", "data:image/")) else ""

    return _SVG_URL.sub("none", _SVG_HREF.sub(keep_local, svg))


def offline_figure(value: Any) -> Any:
    """A Plotly figure with every URL string (an image's ``source``, a map style, a tile server,
    ``file:``) emptied, a ``data:`` image kept: what the browser is given names nothing to fetch."""
    if isinstance(value, dict):
        return {key: offline_figure(item) for key, item in value.items()}
    if isinstance(value, list):
        return [offline_figure(item) for item in value]
    if isinstance(value, str) and _URL.match(value) and not value.lstrip().startswith("data:image/"):
        return ""
    return value


async def _plotly_pngs(jobs: list[dict[str, Any]], timeout_s: float) -> None:
    """PNGs of Plotly figures, all in one browser, each within ``timeout_s``."""
    try:
        import kaleido
        import plotly
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        for job in jobs:
            _say(job["key"], NO_RENDERER)
        return
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not plotly_js.is_file():  # kaleido would take plotly.js from a CDN
        for job in jobs:
            _say(job["key"], NO_RENDERER)
        return

    class OfflineChromium(Chromium):
        """Chromium that sends nothing anywhere: kaleido's flags, less web security off, plus OFFLINE_FLAGS."""

        def get_cli(self) -> list[str]:
            return [arg for arg in super().get_cli() if arg != "--disable-web-security"] + list(OFFLINE_FLAGS)

    try:
        browser = kaleido.Kaleido(
            n=1, timeout=timeout_s, plotlyjs=plotly_js, mathjax=False, browser_cls=OfflineChromium
        )
        await browser.open()
    except Exception:  # noqa: BLE001 - no Chromium, or one that does not start: no Plotly previews
        for job in jobs:
            _say(job["key"], NO_RENDERER)
        return
    try:
        for job in jobs:
            try:
                figure = offline_figure(json.loads(job["spec"]))
                if not isinstance(figure, dict):
                    raise ValueError("not a figure")
                figure.pop("config", None)
                image = await browser.calc_fig(figure, opts={"format": "png"})
                _say(job["key"], bytes(image))
            except TimeoutError:
                _say(job["key"], TIMEOUT)
            except Exception:  # noqa: BLE001 - a figure plotly.js cannot draw: no preview
                _say(job["key"], FAILED)
    finally:
        await browser.close()


if __name__ == "__main__":
    _child(Path(sys.argv[1]), float(sys.argv[2]))
