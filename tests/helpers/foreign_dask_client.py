"""A local process that is not rooflens tries to run code on a Dask scheduler, the three ways
an attacker on the same machine would: plain TCP, TLS with a certificate of its own, and TLS
presenting no certificate at all. Each attempt submits a function that writes MARKER.

Run as a script (`python foreign_dask_client.py HOST:PORT MARKER`) so that the function is
pickled by value and needs nothing importable on the worker. Prints one JSON object: for each
attempt, "ran" or the name of the exception that stopped it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
from pathlib import Path

from distributed import Client, Security
from distributed.comm import connect
from distributed.protocol.pickle import dumps

TIMEOUT_S = 2


def plant(marker: str) -> str:
    Path(marker).write_text("foreign code ran")
    return "ran"


def through_client(address: str, marker: str, security: Security | None) -> str:
    with Client(address, timeout=TIMEOUT_S, set_as_default=False, security=security) as client:
        return client.submit(plant, marker, pure=False).result(timeout=10)


async def without_certificate(address: str, marker: str) -> str:
    """Dask's own comm layer over TLS that trusts any server and presents no certificate,
    then the scheduler's run_function message (what Client.run_on_scheduler sends)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    comm = await connect(address, timeout=TIMEOUT_S, ssl_context=context)
    try:
        message = {"op": "run_function", "function": dumps(plant), "args": dumps((marker,))}
        await comm.write(message)
        reply = await asyncio.wait_for(comm.read(), TIMEOUT_S)
        return "ran" if reply.get("status") == "OK" else f"refused: {reply}"
    finally:
        await comm.close()


def attempt(run) -> str:
    try:
        return run()
    except Exception as exc:
        return type(exc).__name__


def main(host_port: str, marker: str) -> None:
    outcomes = {
        "tcp": attempt(lambda: through_client(f"tcp://{host_port}", marker, None)),
        "tls_own_certificate": attempt(
            lambda: through_client(f"tls://{host_port}", marker, Security.temporary())
        ),
        "tls_no_certificate": attempt(
            lambda: asyncio.run(without_certificate(f"tls://{host_port}", marker))
        ),
    }
    print(json.dumps(outcomes))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
