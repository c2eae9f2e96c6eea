"""``evalband serve``: one policy behind a websocket, batching requests from many workers."""

from __future__ import annotations

import typer

from evalband.cli._common import JSON_OPTION, console

__all__ = ["register"]


def serve(
    policy: str = typer.Argument(
        ..., help="Built-in name, *.pt checkpoint, module:attr (from the current directory) "
        "or lerobot:PATH (a lerobot pretrained_model directory)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port (0: any free)."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Interface to bind (0.0.0.0 to accept other machines)."
    ),
    max_batch: int = typer.Option(
        8, "--max-batch", min=1, help="Most requests combined into one policy call."
    ),
    max_wait_ms: float = typer.Option(
        2.0, "--max-wait-ms", min=0.0,
        help="Longest a batch waits for more requests after its first (milliseconds).",
    ),
    threads: int = typer.Option(
        1, "--threads", min=1,
        help="Intra-op threads of a torch policy (TorchPolicy.num_threads); 1 by default.",
    ),
    max_frame_mb: float = typer.Option(
        64.0, "--max-frame-mb", min=0.001,
        help="Largest request taken, in MiB; a client sending more is closed (1009).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Serve a policy over openpi's websocket protocol (ws://HOST:PORT), batching clients."""
    import asyncio
    import contextlib
    import sys

    from evalband.policies import PolicyServer, resolve_policy

    out = sys.stdout  # what a policy prints while it loads goes to stderr: --json stays JSON

    def ready(bound: int) -> None:
        import json

        url = f"ws://{host}:{bound}"
        if as_json:  # one line: the server keeps running after it
            out.write(json.dumps({"policy": policy, "url": url,
                                  "health": f"http://{host}:{bound}/healthz",
                                  "max_batch": max_batch, "max_wait_ms": max_wait_ms}) + "\n")
        else:
            console.print(f"serving {policy} on {url} (max batch {max_batch}, max wait "
                          f"{max_wait_ms:g} ms; health: http://{host}:{bound}/healthz)")
        out.flush()

    with contextlib.redirect_stdout(sys.stderr):
        resolved = resolve_policy(policy)
        if hasattr(resolved, "num_threads"):  # a torch policy: its threads, on its first call
            resolved.num_threads = threads
        server = PolicyServer(resolved, name=policy, host=host, port=port,
                              max_batch=max_batch, max_wait_ms=max_wait_ms,
                              max_frame_bytes=int(max_frame_mb * 1024**2))
        try:
            asyncio.run(server.serve(ready))
        except KeyboardInterrupt:
            pass
        except OSError as exc:  # the port is taken, the host does not resolve or bind
            from evalband.errors import InvalidParameterError

            raise InvalidParameterError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another `port` "
                "(0: any free one) or `host`", parameters=("port", "host")) from None


def register(app: typer.Typer) -> None:
    """Attach ``serve`` to ``app``."""
    app.command("serve")(serve)
