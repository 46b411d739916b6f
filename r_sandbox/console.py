"""R's console output, captured through rpy2's callbacks into the current run's stdout and stderr.

``install()`` must run before anything imports ``rpy2.robjects`` (DESIGN.md section 6): R talks to
its console through these callbacks from the moment it starts. Output outside a run (start-up,
package loading at import) goes to the worker's log on stderr instead.
"""

from __future__ import annotations

import sys

from r_sandbox import messages
from r_sandbox.protocol import OUTPUT_MAX_BYTES


class Console:
    """Where R's console writes go: the capture of a run in progress, else the worker's log.

    Each stream keeps at most ``max_chars`` characters of a run (nini's ``execution.output_max_mb``),
    as they are written: a print flood never piles up in the worker, and the reply fits its line.
    """

    def __init__(self, max_chars: int = OUTPUT_MAX_BYTES, language: str = "zh") -> None:
        self.max_chars = max_chars
        self.language = language
        self._out: list[str] | None = None
        self._err: list[str] = []
        self._sizes = [0, 0]
        self._dropped = [0, 0]

    def install(self) -> None:
        """Point rpy2's console callbacks here. Imports only ``rpy2.rinterface_lib.callbacks``."""
        from rpy2.rinterface_lib import callbacks

        callbacks.consolewrite_print = lambda text: self._write(0, text)
        callbacks.consolewrite_warnerror = lambda text: self._write(1, text)
        callbacks.showmessage = lambda text: self._write(1, text + "\n")
        # readline(), menu(), browser() and stdin() read the console: they get end of input at once,
        # never a protocol line (the protocol has its own file descriptors anyway).
        callbacks.consoleread = lambda prompt: ""
        callbacks.yesnocancel = lambda question: -1  # "cancel"
        callbacks.choosefile = lambda new: ""
        callbacks.showfiles = self._show_files  # help pages, file.show(): to stdout, not rpy2's print()

    def start(self) -> None:
        self._out, self._err = [], []
        self._sizes, self._dropped = [0, 0], [0, 0]

    def stop(self) -> tuple[str, str]:
        """Everything written since ``start()``: (stdout, stderr)."""
        streams = [self._out or [], self._err]
        self._out, self._err = None, []
        texts = []
        for i, parts in enumerate(streams):
            text = "".join(parts)
            if self._dropped[i]:
                limit = f"{self.max_chars / 2**20:.1f} MiB"
                text += messages.message("output-cut", limit, language=self.language, more=f"{self._dropped[i]:,}")
            texts.append(text)
        return texts[0], texts[1]

    def _show_files(self, filenames: tuple[str, ...], headers: tuple[str, ...], *_: object) -> None:
        for name, header in zip(filenames, headers, strict=False):
            with open(name, encoding="utf-8", errors="replace") as file:
                self._write(0, (header + "\n" if header else "") + file.read())

    def _write(self, stream: int, text: str) -> None:
        if self._out is None:
            sys.stderr.write(text)
            return
        room = self.max_chars - self._sizes[stream]
        if len(text) > room:
            self._dropped[stream] += len(text) - max(room, 0)
            text = text[: max(room, 0)]
        if text:
            self._sizes[stream] += len(text)
            (self._out if stream == 0 else self._err).append(text)
