"""A real JupyterHub on 127.0.0.1, driven as a class uses one: for tests/test_hub.py and benchmarks/bench_hub.py.

The hub runs the dummy authenticator (any password) and the simple local-process spawner (each student's
server is a process on this machine, their home a folder of ``home/``), behind configurable-http-proxy (npm).
Students log in through the hub's REST API (a token for a username and password), start their server, put the
series in their home with the nbgitpuller link ``python3 run.py hub-link`` prints, and run a notebook through a
kernel of their server (a websocket, as JupyterLab does). Nothing listens beyond 127.0.0.1; ``Hub.stop`` ends the
hub, the proxy and every server it started.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL_PROXY = ROOT / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"  # .ci/run installs it here
PROXY_HELP = "npm install --prefix .hub configurable-http-proxy (Node.js and npm: apt-get install nodejs npm)"
sys.path.insert(0, str(ROOT))
from run import nbgitpuller_link  # noqa: E402  (the link run.py hub-link prints)


def proxy_command() -> str | None:
    """configurable-http-proxy: ATTN_CHP, the copy under .hub/, or one on PATH."""
    for candidate in (os.environ.get("ATTN_CHP"), LOCAL_PROXY, shutil.which("configurable-http-proxy")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def checkout_as_git_repo(dest: Path) -> Path:
    """A git repository at ``dest`` holding this checkout's tracked files as they are now (one commit): it
    stands in for the GitHub repository."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.decode()
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    commit(dest, "the series")
    return dest


def commit(repo: Path, message: str) -> None:
    git = ["git", "-c", "user.name=teacher", "-c", "user.email=teacher@localhost", "-C", str(repo)]
    if not (repo / ".git").exists():
        subprocess.run(git + ["init", "-q", "-b", "main"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", message], check=True)


class Hub:
    """A JupyterHub in ``folder`` (its database, log, and the students' homes under ``home/``)."""

    def __init__(self, folder: Path, proxy: str):
        self.started = time.perf_counter()
        self.folder, self.port = Path(folder), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_token = secrets.token_hex(32)
        self.homes = self.folder / "home"
        self.folder.mkdir(parents=True, exist_ok=True)
        bin_dir = Path(sys.executable).parent
        config = {
            "JupyterHub": {"ip": "127.0.0.1", "port": self.port, "hub_ip": "127.0.0.1", "hub_port": free_port(),
                           "authenticator_class": "dummy", "spawner_class": "simple",
                           "db_url": f"sqlite:///{self.folder / 'hub.sqlite'}",
                           "cookie_secret_file": str(self.folder / "cookie_secret"),
                           "services": [{"name": "teacher", "api_token": self.admin_token}],
                           "load_roles": [{"name": "admin", "services": ["teacher"]}],
                           "cleanup_servers": True},
            "ConfigurableHTTPProxy": {"command": [proxy], "api_url": f"http://127.0.0.1:{free_port()}",
                                      "pid_file": str(self.folder / "proxy.pid")},
            "SimpleLocalProcessSpawner": {"home_dir_template": str(self.homes / "{username}")},
            "Spawner": {"cmd": [str(bin_dir / "jupyterhub-singleuser")], "start_timeout": 120, "http_timeout": 120,
                        "args": ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []},
        }
        (self.folder / "jupyterhub_config.json").write_text(json.dumps(config))
        self.log = (self.folder / "hub.log").open("w")
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        self.process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f",
                                         str(self.folder / "jupyterhub_config.json")],
                                        cwd=self.folder, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.api("GET", "/hub/api/")
                break
            except (OSError, urllib.error.URLError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterHub did not start; its log: {self.folder / 'hub.log'}") from None
                time.sleep(0.3)

    def api(self, method: str, path: str, body=None, token: str | None = None, stream: bool = False):
        """A request to the hub (through the proxy) with ``token`` (the admin's by default); the parsed JSON."""
        request = urllib.request.Request(self.url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"token {token or self.admin_token}"})
        response = urllib.request.urlopen(request, timeout=120)
        if stream:
            return response
        with response:
            text = response.read().decode()
        return json.loads(text) if text.strip() and text.lstrip()[0] in "[{" else text

    def add_students(self, names: list[str]) -> None:
        """The teacher's roster: the users exist before they log in."""
        self.api("POST", "/hub/api/users", {"usernames": names})

    def log_in(self, name: str, password: str = "any") -> str:
        """A student logs in through the REST API, with the username and password the authenticator checks;
        the token they get."""
        request = urllib.request.Request(self.url + f"/hub/api/users/{name}/tokens", method="POST",
                                         data=json.dumps({"auth": {"username": name, "password": password},
                                                          "note": "logged in by the test"}).encode())
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())["token"]

    def start_server(self, name: str, token: str, timeout: float = 180) -> None:
        """The student starts their own server and waits until the hub says it is ready."""
        self.api("POST", f"/hub/api/users/{name}/server", {}, token=token)
        deadline = time.monotonic() + timeout
        while not self.api("GET", f"/hub/api/users/{name}", token=token)["servers"].get("", {}).get("ready"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}'s server did not start in {timeout:.0f} s; the hub's log: "
                                   f"{self.folder / 'hub.log'}")
            time.sleep(0.3)

    def pull(self, name: str, token: str, repo: str, branch: str = "main") -> list[dict]:
        """What the nbgitpuller link does for a student: the hub sends them to their server's git-pull page, whose
        script then calls the pull (an event stream; read to its end). The events."""
        link = nbgitpuller_link(self.url, repo, branch)
        page = self.api("GET", urllib.parse.urlsplit(link).path + "?" + urllib.parse.urlsplit(link).query,
                        token=token)
        assert "git-pull" in page, "the hub did not lead to the student's git-pull page"
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))
        api = f"/user/{name}/git-pull/api?" + urllib.parse.urlencode({"repo": query["repo"], "branch": branch})
        events = []
        with self.api("GET", api, token=token, stream=True) as response:
            for line in response:
                if line.startswith(b"data:"):
                    events.append(json.loads(line[5:]))
        if not events or events[-1].get("phase") != "finished":
            raise RuntimeError(f"nbgitpuller did not finish for {name}: {events[-3:]}")
        return events

    def run_notebook(self, name: str, token: str, path: str, timeout: float = 300, keep: bool = False):
        """Run every code cell of the notebook at ``path`` (relative to the student's home) in a new kernel of
        their server, as JupyterLab's Run All does; the cells with their outputs (nbformat), and the session's
        id (the kernel is shut down unless ``keep``)."""
        import nbformat

        home = self.homes / name
        nb = nbformat.read(home / path, as_version=4)
        session = self.api("POST", f"/user/{name}/api/sessions",
                           {"path": path, "type": "notebook", "name": Path(path).name,
                            "kernel": {"name": "python3"}}, token=token)
        try:
            _execute(f"ws://127.0.0.1:{self.port}/user/{name}/api/kernels/{session['kernel']['id']}/channels",
                     token, nb, timeout)
        finally:
            if not keep:
                self.api("DELETE", f"/user/{name}/api/sessions/{session['id']}", token=token)
        return nb, session["id"]

    def processes(self, name: str) -> list[int]:
        """The process ids of a student's server and its kernels (by the JUPYTERHUB_USER they were started with)."""
        wanted = f"JUPYTERHUB_USER={name}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if wanted in (entry / "environ").read_bytes().split(b"\0"):
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return pids

    def stop(self) -> None:
        """Stop the hub; it stops the proxy and the servers it started (cleanup_servers); whatever is left of
        its process group is killed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        for group in {self.process.pid}:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
        self.process.wait()
        self.log.close()


def memory_kib(pids: list[int]) -> dict[str, int]:
    """Resident (RSS) and proportional (PSS: shared pages divided among their users) memory of ``pids``, KiB."""
    total = {"rss": 0, "pss": 0}
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            key, _, value = line.partition(":")
            if key in ("Rss", "Pss"):
                total[key.lower()] += int(value.split()[0])
    return total


def _execute(url: str, token: str, nb, timeout: float) -> None:
    """Send each code cell of ``nb`` to the kernel at the websocket ``url``; store its outputs in the cell."""
    import asyncio

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    async def run():
        connection = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
        session = uuid.uuid4().hex
        try:
            for count, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), start=1):
                msg_id = uuid.uuid4().hex
                await connection.write_message(json.dumps({
                    "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                               "username": "student", "version": "5.3", "date": ""},
                    "parent_header": {}, "metadata": {}, "channel": "shell",
                    "content": {"code": cell.source, "silent": False, "store_history": True,
                                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
                cell.outputs, cell.execution_count = [], count
                idle = replied = False
                while not (idle and replied):
                    message = await asyncio.wait_for(connection.read_message(), timeout)
                    if message is None:
                        raise RuntimeError("the kernel's websocket closed")
                    if isinstance(message, bytes):  # a message with binary buffers (a widget's): no output
                        continue
                    message = json.loads(message)
                    if message.get("parent_header", {}).get("msg_id") != msg_id:
                        continue
                    kind, content = message["header"]["msg_type"], message["content"]
                    if message["channel"] == "shell" and kind == "execute_reply":
                        replied = True
                    elif kind == "status" and content["execution_state"] == "idle":
                        idle = True
                    elif kind in ("stream", "execute_result", "display_data", "error"):
                        cell.outputs.append(_output(kind, content))
        finally:
            connection.close()

    asyncio.run(run())


def _output(kind: str, content: dict):
    import nbformat

    if kind == "stream":
        return nbformat.v4.new_output("stream", name=content["name"], text=content["text"])
    if kind == "error":
        return nbformat.v4.new_output("error", ename=content["ename"], evalue=content["evalue"],
                                      traceback=content["traceback"])
    return nbformat.v4.new_output(kind, data=content["data"], metadata=content.get("metadata", {}))
