"""A real NATS JetStream cluster of ``nats-server`` processes on free local ports, and
fold workers as subprocesses, for the log mode's tests (never the machine's own NATS)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nats

from ldp_simulation.fleet import stop_process

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
HAVE_NATS = Path(NATS_SERVER).is_file() and os.access(NATS_SERVER, os.X_OK)
IN_CI = os.environ.get("CI", "").lower() == "true"
START_TIMEOUT = 30.0


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that were free a moment ago: every socket
    stays bound until all are chosen, so the kernel cannot hand out one port twice."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
    assert len(set(ports)) == count
    return ports


@dataclass
class NatsNode:
    name: str
    port: int
    cluster_port: int
    store: Path
    config: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None
    killed: bool = False
    """Killed on purpose (:meth:`NatsCluster.kill`) and not restarted since."""

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"


@dataclass
class NatsCluster:
    """``size`` nodes routed to each other, JetStream on, stores under ``root``."""

    root: Path
    size: int = 3
    cipher_key: str | None = None
    nodes: list[NatsNode] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The ``--log`` URL naming every node."""
        return "nats://" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def start(self) -> None:
        ports = free_ports(2 * self.size)
        for k in range(self.size):
            store = self.root / f"n{k}" / "store"
            store.mkdir(parents=True)
            self.nodes.append(
                NatsNode(
                    name=f"n{k}",
                    port=ports[2 * k],
                    cluster_port=ports[2 * k + 1],
                    store=store,
                    config=self.root / f"n{k}" / "nats.conf",
                    log=self.root / f"n{k}" / "nats.log",
                )
            )
        for node in self.nodes:
            node.config.write_text(self._config(node))
            self._launch(node)
        self.wait_ready()

    def _config(self, node: NatsNode) -> str:
        jetstream = [f'store_dir: "{node.store}"']
        if self.cipher_key is not None:
            jetstream += ["cipher: chachapoly", f'key: "{self.cipher_key}"']
        lines = [
            f'server_name: "{node.name}"',
            "host: 127.0.0.1",
            f"port: {node.port}",
            "jetstream {",
            *(f"  {line}" for line in jetstream),
            "}",
        ]
        if self.size > 1:
            routes = ", ".join(f'"nats://127.0.0.1:{n.cluster_port}"' for n in self.nodes)
            lines += [
                "cluster {",
                '  name: "ldptest"',
                "  host: 127.0.0.1",
                f"  port: {node.cluster_port}",
                f"  routes: [{routes}]",
                "}",
            ]
        return "\n".join(lines) + "\n"

    def _launch(self, node: NatsNode) -> None:
        with node.log.open("ab") as log:
            node.process = subprocess.Popen(
                [NATS_SERVER, "-c", str(node.config)], stdout=log, stderr=subprocess.STDOUT
            )

    def wait_ready(self) -> None:
        """Until JetStream answers on every node not killed on purpose (a meta leader is
        elected); a node that exited by itself (say, its port was taken) is an error."""
        deadline = time.monotonic() + START_TIMEOUT
        for node in self.nodes:
            if node.killed:
                continue
            while not asyncio.run(_jetstream_answers(node.url, node.name)):
                if node.process is None or node.process.poll() is not None:
                    raise RuntimeError(f"{node.name} exited: {node.log.read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"JetStream not ready: {node.log.read_text()[-2000:]}")
                time.sleep(0.2)

    def kill(self, index: int) -> None:
        """SIGKILL one node (its store stays for a restart)."""
        process = self.nodes[index].process
        assert process is not None
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
        self.nodes[index].killed = True

    def restart(self, index: int) -> None:
        self.nodes[index].killed = False
        self._launch(self.nodes[index])

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                stop_process(node.process)


async def _jetstream_answers(url: str, name: str) -> bool:
    """Whether the server ``name`` itself answers JetStream at ``url`` (another node on the
    same port does not count)."""
    try:
        client = await nats.connect(url, connect_timeout=1, max_reconnect_attempts=0)
    except Exception:
        return False
    try:
        if client._server_info.get("server_name") != name:
            return False
        await client.jetstream(timeout=1).account_info()
        return True
    except Exception:
        return False
    finally:
        await client.close()


@contextmanager
def nats_cluster(root: Path, size: int = 3, cipher_key: str | None = None) -> Iterator[NatsCluster]:
    cluster = NatsCluster(root, size, cipher_key)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def fold_process(
    database_url: str, log_url: str, log_path: Path, *, ack_wait: float = 3.0
) -> subprocess.Popen[bytes]:
    """``ldpcollect fold`` in a subprocess (``python -m ldp_aggregator.cli fold``)."""
    env = dict(os.environ)
    env["LDPCOLLECT_DATABASE_URL"] = database_url
    env["LDPCOLLECT_LOG_URL"] = log_url
    command = [sys.executable, "-m", "ldp_aggregator.cli", "fold", "--ack-wait", str(ack_wait)]
    with log_path.open("ab") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
