"""The sidebar keeping up with a busy agent, in a real `jupyter lab` and Debian's Chromium.

Turns first, on the freshly started server (issue 33): a question is typed and Enter dispatched in
the page, and the page times, from Enter, the question's echo in the log (goal < 50 ms), the status
line's first words (goal < 200 ms), the server's record of the question, the first step card and
the turn's end. The first turn after the server's start is compared with warm turns of the same
script (a step of run_code, then an answer): goal, the first turn until its end is at most 1.5x a
warm turn in the same session (kernel running) plus one kernel start (the kernel_start event's
duration). Baselines, measured in the same run: the ask request's own round trip (what the echo
waited for before it came at once) and the first event back from the server (the earliest the
server could say anything); a warm turn in a new session (one kernel start) is printed too.

Then two recorded sessions are written to the store: one of 2,000 events (turns of ten code
steps with output, a streamed answer of 20 pieces, ...), and one whose single run made 500 tool
calls. Each is opened in the chat (its whole history comes over the socket with `?since=0` and is
drawn), timed in the page from the click to the last event on screen, with the frames dropped
meanwhile (requestAnimationFrame gaps over 1.5 frames). Goal (issue 16): 2,000 events in under 2 s,
the 500-call session in under 1 s.
Baseline, measured in the same page: a bare WebSocket reading the same events with nothing drawn,
batched as the chat asks for them (``?batch=1``), the transport's own cost. Ratios are printed
against it; the same read with one event per message is printed too, to show what batching saves.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from goals import goal

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

RUNS = 3
WARM_TURNS = 3
STDOUT = "month  revenue\n" + "\n".join(f"{m:>5}  {m * 1.5:>7.1f}" for m in range(1, 13))


def seed(store: Any, session_id: str, turns: list[tuple[int, int]]) -> int:
    """Write a session whose turns have (tool calls, answer pieces) each; the number of events."""
    store.create_session(session_id=session_id, title=session_id)
    count = 0

    def event(kind: str, data: dict, turn: str, call: str | None = None) -> None:
        nonlocal count
        store.append_event(session_id, kind, data, turn_id=turn, tool_call_id=call)
        count += 1

    for number, (calls, pieces) in enumerate(turns):
        turn = f"t{number:04d}"
        event("user_message", {"text": f"Question {number}: how did revenue develop by region?"}, turn)
        for step in range(calls):
            call = f"c{number:04d}{step:04d}"
            code = f"by_region = df.groupby('region')['revenue'].sum()\nprint(by_region)\nresult = {step}"
            event("tool_call", {"name": "run_code", "arguments": {"code": code, "label": f"step {step}"}}, turn, call)
            event(
                "code_execution",
                {
                    "language": "python",
                    "tool_name": "run_code",
                    "status": "succeeded",
                    "label": f"step {step}",
                    "duration_ms": 120,
                    "artifacts": [],
                    "datasets_saved": [],
                    "isolation": "sandbox",
                    "stdout": STDOUT,
                    "stderr": "",
                },
                turn,
                call,
            )
            event("tool_result", {"name": "run_code", "success": True, "error": None, "duration_ms": 125}, turn, call)
        answer = "".join(f"Piece {p} of the answer, with **bold** numbers like {p * 3.5}. " for p in range(pieces))
        for p in range(pieces):
            event("assistant_delta", {"text": f"Piece {p} of the answer, with **bold** numbers like {p * 3.5}. "}, turn)
        event("assistant_message", {"text": answer, "tool_calls": []}, turn)
        event(
            "done",
            {"answer": answer, "completed_normally": True, "ended_by": "finished", "iterations": calls + 1},
            turn,
        )
    return count


OPEN_AND_TIME = """async ([session, last]) => {
  const log = document.querySelector('.nini-log');
  const item = document.querySelector(`.nini-session-item[data-id="${session}"] .nini-session-open`);
  let frames = 0, dropped = 0, previous = performance.now(), done = false;
  const tick = now => { frames++; const gap = now - previous; if (gap > 25) dropped += Math.floor(gap / 16.7) - 1;
                        previous = now; if (!done) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const started = performance.now();
  item.click();
  await new Promise(resolve => {
    const check = () => { if (log.dataset.lastSeq === String(last)) { resolve(); } else { requestAnimationFrame(check); } };
    check();
  });
  await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));  // painted
  done = true;
  return {ms: performance.now() - started, frames, dropped, nodes: log.querySelectorAll('*').length};
}"""

BARE_SOCKET = """async ([url, last]) => {
  const started = performance.now();
  await new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.onmessage = message => {
      const events = [].concat(JSON.parse(message.data));  // one event, or a batch with ?batch=1
      if (events[events.length - 1].seq >= last) { socket.close(); resolve(); }
    };
    socket.onerror = reject;
  });
  return performance.now() - started;
}"""


# One turn, timed in the page from Enter: ms to the echo (in the DOM, then painted), the status line's
# first words, the server's record of the question, the first new step card, and the end of the turn.
ASK_AND_TIME = """async ([question, timeoutMs]) => {
  const chat = document.querySelector('.nini-chat');
  const log = chat.querySelector('.nini-log');
  const status = chat.querySelector('.nini-status-text');
  const input = chat.querySelector('.nini-input');
  const users = log.querySelectorAll('.nini-user:not(.nini-mod-pending)').length;
  const steps = log.querySelectorAll('.nini-step').length;
  const t = {};
  let started = 0;
  const look = () => {
    const now = performance.now() - started;
    if (t.echo === undefined && log.querySelector('.nini-user.nini-mod-pending')) {
      t.echo = now;
      requestAnimationFrame(() => { t.echoPainted = performance.now() - started; });
    }
    if (t.status === undefined && status.textContent) t.status = now;
    if (t.recorded === undefined && log.querySelectorAll('.nini-user:not(.nini-mod-pending)').length > users) t.recorded = now;
    if (t.step === undefined && log.querySelectorAll('.nini-step').length > steps) t.step = now;
  };
  const observer = new MutationObserver(look);
  observer.observe(chat, { subtree: true, childList: true, characterData: true });
  input.value = question;
  started = performance.now();
  input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
  look();
  await new Promise((resolve, reject) => {
    const check = () => {
      if (t.step !== undefined && chat.dataset.running === 'false') { t.done = performance.now() - started; resolve(); }
      else if (performance.now() - started > timeoutMs) { reject(new Error('the turn did not end')); }
      else { requestAnimationFrame(check); }
    };
    check();
  });
  observer.disconnect();
  return t;
}"""

# The ask request alone, from the page with the chat's own client settings: the round trip the echo
# used to wait for (baseline).
ASK_ROUND_TRIP = """async ([session, question]) => {
  const xsrf = document.cookie.match(/_xsrf=([^;]+)/)?.[1] ?? '';
  const started = performance.now();
  const response = await fetch(`/nini/api/sessions/${session}/ask`, { method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-XSRFToken': xsrf }, body: JSON.stringify({ message: question }) });
  await response.json();
  return performance.now() - started;
}"""


def kernel_starts(home: Path) -> list[float]:
    """The duration_ms of every kernel start the store recorded (kernel_start events, ready)."""
    with sqlite3.connect(home / "nini.db") as conn:
        rows = conn.execute("SELECT data FROM events WHERE type = 'kernel_start'").fetchall()
    events = [json.loads(data) for (data,) in rows]
    return [event["duration_ms"] for event in events if event.get("state") == "ready"]


def warmed_up(lab: Any, started: float, timeout_s: float = 120) -> tuple[float, str]:
    """Once the server's warm-up has finished (jupyter_ext.warmup): the seconds since the server was
    started, and the warm-up's log line. A person opening JupyterLab and typing a first question takes
    longer than the warm-up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = next(
            (
                line
                for line in (lab.root / "lab.log").read_text().splitlines()
                if "warmed up for the first turn" in line
            ),
            None,
        )
        if line is not None:
            return time.monotonic() - started, line.split("nini: ", 1)[-1]
        time.sleep(0.1)
    return float("nan"), "no warm-up finished"


def time_turns(page: Any, lab: Any, llm: Any) -> dict[str, Any]:
    """The first turn after the server's start, warm turns in its session, one in a new session."""
    from tests.llm_server import text, tool_call
    from tests.ui.conftest import current_session, wait_idle

    def turn(question: str) -> dict[str, float]:
        llm.reply(tool_call("run_code", code="x = 6 * 7", label="multiply"), text("It is 42."))
        timed = page.evaluate(ASK_AND_TIME, [question, 120_000])
        wait_idle(page)
        return timed

    first = turn("What is six times seven?")
    warm = [turn(f"And again ({n})?") for n in range(WARM_TURNS)]
    session = current_session(page)
    llm.reply(text("(the baseline's answer)"))
    post = page.evaluate(ASK_ROUND_TRIP, [session, "A baseline ask"])
    wait_idle(page)
    page.click(".nini-new-chat")
    new_session = turn("Six times seven, in a new session?")
    return {
        "first": first,
        "warm": warm,
        "new_session": new_session,
        "post_ms": post,
        "kernel_ms": kernel_starts(lab.home),
    }


def report_turns(timed: dict[str, Any], warm_up: tuple[float, str]) -> None:
    first, warm, new = timed["first"], timed["warm"], timed["new_session"]
    med = {
        key: statistics.median(t[key] for t in warm)
        for key in ("echo", "echoPainted", "status", "recorded", "step", "done")
    }
    kernel = statistics.median(timed["kernel_ms"]) if timed["kernel_ms"] else float("nan")
    first_kernel = timed["kernel_ms"][0] if timed["kernel_ms"] else float("nan")
    every = [first, *warm, new]
    echo, status = max(t["echo"] for t in every), max(t["status"] for t in every)
    print(
        f"question echoed: {echo:.1f} ms after Enter at most over {len(every)} turns (painted "
        f"{max(t['echoPainted'] for t in every):.0f} ms); baseline, the ask request's round trip: "
        f"{timed['post_ms']:.0f} ms "
        f"-> {echo / timed['post_ms']:.2f}x; goal < 50 ms: {'met' if echo < 50 else 'NOT met'}"
    )
    goal("bench_ui", "question echoed < 50 ms after Enter", f"{echo:.1f} ms", echo < 50)
    print(
        f"first status update: {status:.1f} ms after Enter at most; baseline, the server's first event back "
        f"(its record of the question): {med['recorded']:.0f} ms warm, {first['recorded']:.0f} ms first turn "
        f"-> {status / med['recorded']:.2f}x; goal < 200 ms: {'met' if status < 200 else 'NOT met'}"
    )
    goal("bench_ui", "first status update < 200 ms after Enter", f"{status:.1f} ms", status < 200)
    limit_done, limit_step = 1.5 * med["done"] + first_kernel, 1.5 * med["step"] + first_kernel
    print(
        f"first turn after the server's start (asked {warm_up[0]:.1f} s after the server was started, once its "
        f"warm-up had finished: {warm_up[1]}): first step card {first['step']:.0f} ms, done {first['done']:.0f} ms "
        f"(its kernel start {first_kernel:.0f} ms); baseline, a warm turn in the same session (median of "
        f"{len(warm)}): step card {med['step']:.0f} ms, done {med['done']:.0f} ms; a warm turn in a new session: step "
        f"card {new['step']:.0f} ms, done {new['done']:.0f} ms (kernel start median {kernel:.0f} ms)"
    )
    print(
        "  to the first step card (the issue's measure: 9-11 s against 0.15-0.35 s warm): "
        f"{first['step'] / med['step']:.1f}x "
        f"the warm turn; goal <= 1.5x warm + one kernel start ({limit_step:.0f} ms): "
        f"{'met' if first['step'] <= limit_step else 'NOT met'}"
    )
    print(
        f"  to the turn's end: first / (warm + its kernel start) {first['done'] / (med['done'] + first_kernel):.2f}x, "
        f"first / warm new session {first['done'] / new['done']:.2f}x; goal <= 1.5x warm + one kernel start "
        f"({limit_done:.0f} ms): {'met' if first['done'] <= limit_done else 'NOT met'}"
    )
    limit = "<= 1.5x warm + one kernel start"
    goal(
        "bench_ui",
        f"first turn's step card {limit}",
        f"{first['step']:.0f} / {limit_step:.0f} ms",
        first["step"] <= limit_step,
    )
    goal(
        "bench_ui",
        f"first turn's end {limit}",
        f"{first['done']:.0f} / {limit_done:.0f} ms",
        first["done"] <= limit_done,
    )


def show_sessions(page: Any, session: str) -> None:
    """The chat's session list open, with ``session`` in it (the click on it is what is timed)."""
    if page.get_attribute(".nini-sessions", "aria-expanded") != "true":
        page.click(".nini-sessions")
    page.wait_for_selector(f'.nini-session-item[data-id="{session}"] .nini-session-open')


def main() -> int:
    from nini.history.store import HistoryStore
    from tests.llm_server import ScriptedLLM
    from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, Lab, missing_for_browser_tests, new_page, open_sidebar

    reason = missing_for_browser_tests()
    if reason:
        print(f"skipped: {reason}")
        return 0
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM() as llm, sync_playwright() as driver:
        home = Path(tmp) / "lab" / "nini-home"
        home.mkdir(parents=True)
        store = HistoryStore(f"sqlite:///{home / 'nini.db'}")
        busy = seed(store, "busy-2000", [(10, 20)] * 38)  # 53 events a turn: 2,014
        many = seed(store, "calls-500", [(500, 20)])
        store.close()
        seqs = {"busy-2000": busy, "calls-500": many}
        started = time.monotonic()
        lab = Lab(Path(tmp) / "lab", llm)
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = new_page(browser, lab)
            open_sidebar(page)
            warm_up = warmed_up(lab, started)
            turns = time_turns(page, lab, llm)
            results: dict[str, dict[str, list[float]]] = {}
            for _ in range(RUNS):
                for session, last in seqs.items():
                    page.click(".nini-new-chat")
                    show_sessions(page, session)
                    timed = page.evaluate(OPEN_AND_TIME, [session, last])
                    url = f"ws://127.0.0.1:{lab.port}/nini/api/sessions/{session}/events?since=0&token={lab.token}"
                    bare = page.evaluate(BARE_SOCKET, [url + "&batch=1", last])  # as the chat reads them
                    single = page.evaluate(BARE_SOCKET, [url, last])  # one event per message
                    entry = results.setdefault(
                        session, {"ms": [], "dropped": [], "bare": [], "single": [], "nodes": []}
                    )
                    entry["ms"].append(timed["ms"])
                    entry["dropped"].append(timed["dropped"])
                    entry["bare"].append(bare)
                    entry["single"].append(single)
                    entry["nodes"].append(timed["nodes"])
        finally:
            browser.close()
            lab.stop()
    report_turns(turns, warm_up)
    goals = {"busy-2000": 2000.0, "calls-500": 1000.0}
    for session, entry in results.items():
        ms, bare = statistics.median(entry["ms"]), statistics.median(entry["bare"])
        print(
            f"{session}: {seqs[session]} events, opened and drawn in {ms:.0f} ms (median of {RUNS}; "
            f"runs {', '.join(f'{m:.0f}' for m in entry['ms'])}), frames dropped "
            f"{statistics.median(entry['dropped']):.0f}, "
            f"{entry['nodes'][-1]} DOM nodes; bare socket read {bare:.0f} ms -> {ms / bare:.1f}x the transport "
            f"(one event per message: {statistics.median(entry['single']):.0f} ms); "
            f"goal < {goals[session]:.0f} ms: {'met' if ms < goals[session] else 'NOT met'}"
        )
        goal("bench_ui", f"{session} opened and drawn < {goals[session]:.0f} ms", f"{ms:.0f} ms", ms < goals[session])
    return 0


if __name__ == "__main__":
    sys.exit(main())
