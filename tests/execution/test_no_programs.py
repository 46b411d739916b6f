"""Agent code starts no program, by any route, through the real CLI (issue 32, item 1).

Before, Landlock let the interpreter and its ELF loader execute, and the loader ran anything.
Now seccomp refuses execve and execveat to every sandboxed process once it has started: each
attack below must print and write no marker and get a clear refusal, while process pools, which
fork, still work. The static policy is off for the Python attacks (what is proven here is the
operating system's boundary); a dropped program's output would carry ``uid=``, its files are named
``pwned*``.
"""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nini.config import Settings
from nini.execution.sandbox import probe_bwrap
from nini.skills.builtin.run_r import r_status
from tests.test_containment_cli import nini, run_code

pytestmark = [
    pytest.mark.skipif(not probe_bwrap()[0], reason=f"no working bubblewrap: {probe_bwrap()[1]}"),
    pytest.mark.slow,
]
needs_r = pytest.mark.skipif(not r_status(Settings())[0], reason="R unavailable")
REFUSED = "PermissionError:13"  # EACCES, "Permission denied"
SHELL_NOT_RUN = 127 << 8  # system(): the shell itself could not be executed

# Shared by the attacks: try one route, record how it ended; a fork child reports exec's errno.
HELPERS = """\
import ctypes, glob, os, platform, shutil, subprocess
status = {}
def attempt(name, run):
    try:
        status[name] = repr(run())
    except OSError as exc:
        status[name] = f'{type(exc).__name__}:{exc.errno}'
def in_child(run):
    pid = os.fork()
    if pid == 0:
        try:
            run()
        except OSError as exc:
            os._exit(exc.errno)
        os._exit(99)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
def output(argv):
    return subprocess.run(argv, capture_output=True, text=True).stdout
"""

# A shared object whose constructor runs programs, by a shell and through the ELF loader (the way
# past Landlock's allow-list): dyn.load / ctypes.CDLL run it on loading. It writes what happened:
# system()'s status, posix_spawn's error number, the spawned loader's exit status.
CONSTRUCTOR_C = r"""
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
extern char **environ;
__attribute__((constructor)) static void on_load(void) {
    int status = system("id > pwned-so.txt");
    char *argv[] = {LOADER, "/bin/sh", "-c", LOADER " /usr/bin/id > pwned-so-loader.txt", NULL};
    pid_t pid;
    int spawned = posix_spawn(&pid, LOADER, NULL, NULL, argv, environ), loader_status = -1;
    if (spawned == 0) waitpid(pid, &loader_status, 0);
    FILE *f = fopen("constructor-ran.txt", "w");
    if (f) { fprintf(f, "%d %d %d\n", status, spawned, loader_status); fclose(f); }
}
"""
CONSTRUCTOR_REFUSED = [SHELL_NOT_RUN, 13, -1]  # the constructor ran; neither program did (EACCES)


def workspace_of(nini_home: Path, session: str) -> Path:
    return nini_home / "sessions" / session / "workspace"


def assert_nothing_ran(out: dict, workspace: Path) -> None:
    assert "uid=" not in json.dumps(out)
    assert sorted(p.name for p in workspace.glob("pwned*")) == []


@pytest.fixture(scope="module")
def payload_hex(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The constructor's shared object, compiled on the host, as hex for agent code to drop."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not found: the dropped shared object cannot be built")
    loader = sorted(glob.glob("/lib*/ld-linux*.so*"))[0]
    folder = tmp_path_factory.mktemp("payload")
    (folder / "payload.c").write_text(CONSTRUCTOR_C)
    subprocess.run(
        [gcc, "-shared", "-fPIC", f'-DLOADER="{loader}"', "-o", str(folder / "payload.so"), str(folder / "payload.c")],
        check=True,
    )
    return (folder / "payload.so").read_bytes().hex()


def test_no_python_route_starts_a_program(nini_home: Path) -> None:
    code = HELPERS + (
        "loader = sorted(glob.glob('/lib*/ld-linux*.so*'))[0]\n"
        "attempt('loader', lambda: output([loader, '/usr/bin/id']))\n"
        "attempt('shell-through-loader', lambda: output([loader, '/bin/sh', '-c', "
        "f'{loader} /usr/bin/id > pwned-chain.txt; id > pwned-chain-2.txt; id']))\n"
        "shutil.copy('/usr/bin/id', '/tmp/id')\nos.chmod('/tmp/id', 0o755)\n"
        "attempt('binary-in-tmp', lambda: output(['/tmp/id']))\n"
        "shutil.copy('/usr/bin/id', 'id')\nos.chmod('id', 0o755)\n"
        "attempt('binary-in-workspace', lambda: output(['./id']))\n"
        "memfd = os.memfd_create('program', 0)\nos.write(memfd, open('/usr/bin/id', 'rb').read())\n"
        "status['memfd-proc-path'] = in_child(lambda: os.execve(f'/proc/self/fd/{memfd}', ['id'], {}))\n"
        "status['memfd-fexecve'] = in_child(lambda: os.execve(memfd, ['id'], {}))\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "argv, envp = (ctypes.c_char_p * 2)(b'id', None), (ctypes.c_char_p * 1)(None)\n"
        "number = {'x86_64': 322, 'aarch64': 281}[platform.machine()]\n"
        "def execveat():\n"
        "    libc.syscall(number, memfd, b'', argv, envp, 0x1000)  # AT_EMPTY_PATH: the descriptor itself\n"
        "    raise OSError(ctypes.get_errno(), 'execveat')\n"
        "status['memfd-execveat'] = in_child(execveat)\n"
        "attempt('subprocess', lambda: output(['id']))\n"
        "attempt('posix_spawn', lambda: os.posix_spawn('/usr/bin/id', ['id'], {}))\n"
        "status['os.system'] = os.system('id > pwned-system.txt')\n"
        "status['libc.system'] = libc.system(b'id > pwned-libc.txt')\n"
        "result = status\n"
    )
    out = run_code("routes", code)
    assert out["success"], out
    assert out["result"]["result"] == {
        "loader": REFUSED,
        "shell-through-loader": REFUSED,
        "binary-in-tmp": REFUSED,
        "binary-in-workspace": REFUSED,
        "memfd-proc-path": 13,
        "memfd-fexecve": 13,
        "memfd-execveat": 13,
        "subprocess": REFUSED,
        "posix_spawn": REFUSED,
        "os.system": SHELL_NOT_RUN,
        "libc.system": SHELL_NOT_RUN,
    }
    assert_nothing_ran(out, workspace_of(nini_home, "routes"))


def test_process_pools_fork_and_work(nini_home: Path) -> None:
    code = (
        "import math, multiprocessing, os\nfrom concurrent.futures import ProcessPoolExecutor\n"
        "from joblib import Parallel, delayed\n"
        "with multiprocessing.Pool(2) as pool:\n    pooled = pool.map(math.factorial, range(8))\n"
        "with ProcessPoolExecutor(2) as executor:\n    executed = list(executor.map(math.factorial, range(8)))\n"
        "joblib_done = Parallel(n_jobs=2)(delayed(lambda n: (math.factorial(n), os.getpid()))(n) for n in range(8))\n"
        "result = {'start': multiprocessing.get_start_method(), 'pool': pooled, 'executor': executed,\n"
        "          'joblib': [value for value, _pid in joblib_done],\n"
        "          'joblib_inline': os.getpid() in {pid for _value, pid in joblib_done}}\n"
    )
    out = run_code("pools", code)
    assert out["success"], out
    factorials = [1, 1, 2, 6, 24, 120, 720, 5040]
    assert out["result"]["result"] == {
        "start": "fork",
        "pool": factorials,
        "executor": factorials,
        "joblib": factorials,
        "joblib_inline": False,
    }


def test_a_dropped_shared_object_runs_no_program_from_python(payload_hex: str, nini_home: Path) -> None:
    code = (
        "import ctypes\n"
        f"open('/tmp/payload.so', 'wb').write(bytes.fromhex({payload_hex!r}))\n"
        "ctypes.CDLL('/tmp/payload.so')\n"
        "result = [int(value) for value in open('constructor-ran.txt').read().split()]\n"
    )
    out = run_code("so-python", code)
    assert out["success"], out
    assert out["result"]["result"] == CONSTRUCTOR_REFUSED
    assert_nothing_ran(out, workspace_of(nini_home, "so-python"))


@needs_r
def test_a_dropped_shared_object_runs_no_program_from_r(payload_hex: str, nini_home: Path) -> None:
    drop = (
        f'h <- "{payload_hex}"\n'
        "bytes <- as.raw(strtoi(substring(h, seq(1, nchar(h), 2), seq(2, nchar(h), 2)), 16L))\n"
        'writeBin(bytes, "/tmp/payload.so")\n'
    )
    load = 'info <- load_it("/tmp/payload.so")\nas.integer(strsplit(readLines("constructor-ran.txt"), " ")[[1]])\n'
    # run_r_code: the real dyn.load reached by name, as in the issue; the R policy refuses that
    # spelling now, and if one were missed, the constructor's programs would still be refused.
    code = drop + 'load_it <- getElement(baseenv(), "dyn.load")\nresult <- ' + load
    out = json.loads(nini("run-r", "-", "--session", "so-r", "--new", "--json", code=code).stdout)
    assert_nothing_ran(out, workspace_of(nini_home, "so-r"))
    assert (
        (out["result"]["result"] == CONSTRUCTOR_REFUSED)
        if out["success"]
        else out["error"]["code"] == "POLICY_VIOLATION"
    )
    # R's real dyn.load, past any policy: R embedded in a sandboxed process as the worker embeds it
    embedded = run_code("so-r-embedded", in_embedded_r(drop + "load_it <- dyn.load\n" + load))
    assert embedded["success"], embedded
    assert embedded["result"]["result"] == CONSTRUCTOR_REFUSED
    assert_nothing_ran(embedded, workspace_of(nini_home, "so-r-embedded"))


@needs_r
@pytest.mark.parametrize(
    "code",
    ['system("id > pwned-r.txt")', 'run <- getElement(baseenv(), "system")\nrun("id > pwned-r.txt")'],
    ids=["system", "system-by-name"],
)
def test_r_system_runs_no_program(code: str, nini_home: Path) -> None:
    done = nini("run-r", "-", "--session", "r-system", "--new", "--json", code=code)
    out = json.loads(done.stdout)
    assert not out["success"] and out["error"]["code"] in ("POLICY_VIOLATION", "CODE_ERROR"), out
    assert_nothing_ran(out, workspace_of(nini_home, "r-system"))


@needs_r
def test_r_forks_in_the_sandbox() -> None:
    """R's fork-based parallelism (``parallel::mclapply``) under the same guard; run_r_code's policy
    refuses ``parallel``, so R is embedded in a sandboxed kernel (``in_embedded_r``)."""
    out = run_code("r-fork", in_embedded_r("unlist(parallel::mclapply(1:4, function(i) i * 2L, mc.cores = 2))"))
    assert out["success"], out
    assert out["result"]["result"] == [2, 4, 6, 8]


def in_embedded_r(r_code: str) -> str:
    """Python for a sandboxed kernel that evaluates ``r_code`` in R embedded by rpy2, started as
    nini's R worker starts it (R_HOME given, no Rscript child, the worker's site profile), with
    the policy and guards of run_r_code absent: what holds there is the operating system alone.
    ``result`` is the value of the last expression, as integers."""
    from r_sandbox.client import r_home
    from r_sandbox.worker import SITE_PROFILE

    home = r_home()
    if not home or not Path(home).is_relative_to("/usr"):
        pytest.skip(f"R's home {home!r} is not visible in a kernel's sandbox")
    return (
        "import os\n"
        f"os.environ.update(R_HOME={home!r}, R_PROFILE={str(SITE_PROFILE)!r})\n"
        "import rpy2.situation\nrpy2.situation.r_ld_library_path_from_subprocess = lambda r_home: ''\n"
        "import rpy2.robjects as ro\n"
        f"result = [int(value) for value in ro.r({r_code!r})]\n"
    )
