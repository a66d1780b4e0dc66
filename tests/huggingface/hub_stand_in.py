"""A local stand-in for the Hugging Face Hub: just the HTTP endpoints that ``huggingface_hub`` calls for
``HfApi.create_repo``, ``HfApi.upload_folder`` and ``snapshot_download``.

The real Hub cannot be reached from CI, yet the transfer must go through the library's own code (no
monkeypatching). The library talks plain HTTP to whatever ``endpoint`` it is given, so this server answers
those calls from memory: repositories are dicts of path -> bytes, each commit gets a new 40-hex id.

Files the client declares as LFS (the server decides, as the Hub does, in the ``preupload`` answer) go through
the Git LFS batch protocol with the ``basic`` transfer (one PUT per object, checked against its sha256); the
others travel base64-encoded inside the commit. The server runs on a port the OS picks (port 0) in a daemon
thread; ``close()`` stops it and joins the thread.

The endpoints were found by watching what huggingface_hub (2.4) asks for. A request the stand-in does not
implement is answered 404 and recorded in ``HubState.unknown_requests``, which the round-trip test checks is
empty, so a client version that needs more fails there rather than somewhere obscure.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

import yaml

# the stand-in's own rule for which files are LFS objects (the real Hub uses .gitattributes and file sizes)
LFS_SUFFIXES = (".pth", ".mp4")


@dataclass
class Repo:
    """One model repository: the files of its head commit and the ids of its commits, oldest first."""

    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)

    @property
    def head(self) -> str:
        return self.commits[-1]


@dataclass
class HubState:
    """Everything the server holds; tests read it to check what was uploaded."""

    repos: dict[str, Repo] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)  # sha256 -> content
    tokens_seen: list[str | None] = field(default_factory=list)
    unknown_requests: list[str] = field(default_factory=list)
    validated_cards: list[str] = field(default_factory=list)
    token: str = "hf_stand_in_token"  # the only token writes are accepted with


def model_card_metadata(text: str) -> dict:
    """The YAML header of a model card (between the first two ``---`` lines) as a dict; ValueError if malformed."""
    lines = text.splitlines()
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        raise ValueError("a model card must start with a YAML header between two '---' lines")
    header = "\n".join(lines[1 : lines.index("---", 1)])
    metadata = yaml.safe_load(header)
    if not isinstance(metadata, dict):
        raise ValueError("the YAML header of the model card must be a mapping")
    return metadata


def model_card_metadata_problem(text: str) -> str | None:
    """What the stand-in refuses in a README.md header: bad YAML or a ``model-index`` without typed metric values."""
    try:
        metadata = model_card_metadata(text)
    except (ValueError, yaml.YAMLError) as exc:
        return f"invalid model card metadata: {exc}"
    for model in metadata.get("model-index", []) or []:
        for result in model.get("results", []):
            for metric in result.get("metrics", []):
                if "type" not in metric or "value" not in metric:
                    return f"model-index metric {metric} needs a type and a value"
    return None


def _commit_id(repo_id: str, number: int) -> str:
    return hashlib.sha1(f"{repo_id}@{number}".encode()).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    server: _HubServer
    protocol_version = "HTTP/1.1"

    # ---- plumbing --------------------------------------------------------------------------------------------

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (BaseHTTPRequestHandler's name)
        pass  # keep pytest's output clean

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, status: int, payload: object) -> None:
        self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})

    def _error(self, status: int, message: str, code: str | None = None) -> None:
        """A JSON error; ``code`` goes in ``X-Error-Code``, from which the client picks its exception class."""
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._send(status, json.dumps({"error": message}).encode(), headers)

    def _authorized(self) -> bool:
        auth = self.headers.get("authorization") or self.headers.get("Authorization")
        token = auth.removeprefix("Bearer ").strip() if auth else None
        self.server.state.tokens_seen.append(token)
        if token != self.server.state.token:
            self._error(HTTPStatus.UNAUTHORIZED, "Invalid credentials in Authorization header")
            return False
        return True

    def _route(self, routes: list[tuple[str, object]]) -> None:
        path = unquote(urlsplit(self.path).path)
        for pattern, handler in routes:
            match = re.fullmatch(pattern, path)
            if match:
                handler(*match.groups())
                return
        self.server.state.unknown_requests.append(f"{self.command} {self.path}")
        self._error(HTTPStatus.NOT_FOUND, f"the stand-in does not implement {self.command} {path}")

    # ---- verbs -----------------------------------------------------------------------------------------------

    def do_POST(self) -> None:  # noqa: N802 (BaseHTTPRequestHandler's naming)
        self._route(
            [
                (r"/api/repos/create", self._create_repo),
                (r"/api/validate-yaml", self._validate_yaml),
                (r"/api/models/([^/]+/[^/]+)/preupload/([^/]+)", self._preupload),
                (r"/api/models/([^/]+/[^/]+)/commit/([^/]+)", self._commit),
                (r"/([^/]+/[^/]+)\.git/info/lfs/objects/batch", self._lfs_batch),
            ]
        )

    def do_PUT(self) -> None:  # noqa: N802
        self._route([(r"/lfs-upload/([0-9a-f]{64})", self._lfs_put)])

    def do_GET(self) -> None:  # noqa: N802
        self._route(
            [
                (r"/api/models/([^/]+/[^/]+)/revision/([^/]+)", self._repo_info),
                (r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", self._tree),
                (r"/api/models/([^/]+/[^/]+)", lambda repo_id: self._repo_info(repo_id, "main")),
                (r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self._resolve),
            ]
        )

    def do_HEAD(self) -> None:  # noqa: N802
        self._route([(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", lambda *a: self._resolve(*a, head=True))])

    # ---- endpoints -------------------------------------------------------------------------------------------

    def _create_repo(self) -> None:
        request = json.loads(self._body() or b"{}")
        if not self._authorized():
            return
        repo_id = f"{request.get('organization')}/{request['name']}"
        url = f"{self.server.endpoint}/{repo_id}"
        repos = self.server.state.repos
        if repo_id in repos:
            self._json(HTTPStatus.CONFLICT, {"error": "You already created this model repo", "url": url})
            return
        repos[repo_id] = Repo(commits=[_commit_id(repo_id, 0)])
        self._json(HTTPStatus.OK, {"url": url, "name": repo_id})

    def _validate_yaml(self) -> None:
        """The client asks before uploading a README.md: its YAML header must parse into the Hub's metadata shape."""
        request = json.loads(self._body())
        problem = model_card_metadata_problem(request.get("content", ""))
        self.server.state.validated_cards.append(request.get("content", ""))
        if problem:
            self._error(HTTPStatus.BAD_REQUEST, problem)
            return
        self._json(HTTPStatus.OK, {"errors": [], "warnings": []})

    def _repo(self, repo_id: str) -> Repo | None:
        repo = self.server.state.repos.get(repo_id)
        if repo is None:
            self._error(HTTPStatus.NOT_FOUND, f"Repository not found: {repo_id}", code="RepoNotFound")
        return repo

    def _preupload(self, repo_id: str, revision: str) -> None:
        """The server decides per file: LFS (uploaded apart, then referenced by the commit) or inline in the commit."""
        request = json.loads(self._body())
        if not self._authorized() or (repo := self._repo(repo_id)) is None:
            return
        files = [
            {
                "path": f["path"],
                "uploadMode": "lfs" if f["path"].endswith(LFS_SUFFIXES) else "regular",
                "shouldIgnore": False,
                "oid": None,
            }
            for f in request["files"]
        ]
        self._json(HTTPStatus.OK, {"files": files, "commitOid": repo.head})

    def _lfs_batch(self, repo_id: str) -> None:
        request = json.loads(self._body())
        if not self._authorized() or self._repo(repo_id) is None:
            return
        objects = []
        for obj in request["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.server.state.lfs_objects:
                href = f"{self.server.endpoint}/lfs-upload/{obj['oid']}"
                entry["actions"] = {"upload": {"href": href, "header": {}}}
            objects.append(entry)
        self._send(
            HTTPStatus.OK,
            json.dumps({"transfer": "basic", "objects": objects}).encode(),
            {"Content-Type": "application/vnd.git-lfs+json"},
        )

    def _lfs_put(self, oid: str) -> None:
        content = self._body()
        if hashlib.sha256(content).hexdigest() != oid:
            self._error(HTTPStatus.BAD_REQUEST, f"content does not match the LFS oid {oid}")
            return
        self.server.state.lfs_objects[oid] = content
        self._send(HTTPStatus.OK)

    def _commit(self, repo_id: str, revision: str) -> None:
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        if not self._authorized() or (repo := self._repo(repo_id)) is None:
            return
        staged = dict(repo.files)
        for line in lines:
            key, value = line["key"], line["value"]
            if key == "file":
                staged[value["path"]] = base64.b64decode(value["content"])
            elif key == "lfsFile":
                content = self.server.state.lfs_objects.get(value["oid"])
                if content is None:
                    self._error(HTTPStatus.BAD_REQUEST, f"LFS object {value['oid']} was never uploaded")
                    return
                staged[value["path"]] = content
            elif key == "deletedFile":
                staged.pop(value["path"], None)
            elif key != "header":
                self._error(HTTPStatus.BAD_REQUEST, f"commit operation {key!r} is not implemented by the stand-in")
                return
        repo.files = staged
        repo.commits.append(_commit_id(repo_id, len(repo.commits)))
        url = f"{self.server.endpoint}/{repo_id}/commit/{repo.head}"
        self._json(HTTPStatus.OK, {"success": True, "commitOid": repo.head, "commitUrl": url})

    def _repo_info(self, repo_id: str, revision: str) -> None:
        if (repo := self._repo(repo_id)) is None:
            return
        siblings = [{"rfilename": path, "size": len(content)} for path, content in sorted(repo.files.items())]
        self._json(
            HTTPStatus.OK,
            {
                "id": repo_id,
                "modelId": repo_id,
                "sha": repo.head,
                "private": False,
                "siblings": siblings,
                "tags": [],
                "downloads": 0,
                "likes": 0,
            },
        )

    def _tree(self, repo_id: str, revision: str, folder: str | None) -> None:
        """Every file under ``folder`` (recursive; one page, so no ``Link`` header), with the folders they imply."""
        if (repo := self._repo(repo_id)) is None:
            return
        prefix = f"{folder.strip('/')}/" if folder else ""
        entries, folders = [], set()
        for path, content in sorted(repo.files.items()):
            if not path.startswith(prefix):
                continue
            parts = path.split("/")
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
            entry = {"type": "file", "path": path, "size": len(content), "oid": hashlib.sha1(content).hexdigest()}
            if path.endswith(LFS_SUFFIXES):
                entry["lfs"] = {"oid": hashlib.sha256(content).hexdigest(), "size": len(content), "pointerSize": 128}
            entries.append(entry)
        entries += [{"type": "directory", "path": f, "oid": "0" * 40} for f in sorted(folders) if f.startswith(prefix)]
        self._json(HTTPStatus.OK, entries)

    def _resolve(self, repo_id: str, revision: str, path: str, head: bool = False) -> None:
        if (repo := self._repo(repo_id)) is None:
            return
        content = repo.files.get(path)
        if content is None:
            self._send(HTTPStatus.NOT_FOUND, headers={"X-Error-Code": "EntryNotFound"}, head=head)
            return
        etag = hashlib.sha256(content).hexdigest()
        headers = {"X-Repo-Commit": repo.head, "ETag": f'"{etag}"', "Content-Type": "application/octet-stream"}
        self.send_response(HTTPStatus.OK)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if not head:
            self.wfile.write(content)


class _HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: HubState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.endpoint = f"http://127.0.0.1:{self.server_address[1]}"


class HubStandIn:
    """Start with ``HubStandIn()``; pass ``endpoint`` to the code under test; ``close()`` when done."""

    def __init__(self) -> None:
        self.state = HubState()
        self._server = _HubServer(self.state)
        self._thread = threading.Thread(target=self._server.serve_forever, name="hub-stand-in", daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return self._server.endpoint

    @property
    def token(self) -> str:
        return self.state.token

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
