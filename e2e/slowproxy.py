#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy that makes a server slow: what the server sends reaches the client
DELAY seconds late, in order (what the client sends goes through at once). It starts
fast; SIGUSR1 turns the delay on, SIGUSR2 off, so that a client can connect (nats.c
gives a server 2 s to say hello) before its server turns slow.

  slowproxy.py --listen PORT --to HOST:PORT --delay S [--ports-file F]

--listen 0 takes a free port, written to --ports-file once it listens."""
import argparse
import asyncio
import signal
import time


class Delay:
    def __init__(self, seconds):
        self.seconds, self.on = seconds, False

    def now(self):
        return self.seconds if self.on else 0.0


async def client_to_server(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def server_to_client(reader, writer, delay):
    """Each chunk is written at its arrival time plus the delay then in force."""
    queue = asyncio.Queue()

    async def pump():
        while (item := await queue.get()) is not None:
            due, data = item
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.ensure_future(pump())
    try:
        while data := await reader.read(65536):
            await queue.put((time.monotonic() + delay.now(), data))
    except (ConnectionError, asyncio.CancelledError):
        pass
    await queue.put(None)
    try:
        await task
    except ConnectionError:
        pass


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--delay", type=float, default=2.0)
    ap.add_argument("--ports-file")
    a = ap.parse_args()
    host, port = a.to.rsplit(":", 1)
    delay = Delay(a.delay)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, lambda: setattr(delay, "on", True))
    loop.add_signal_handler(signal.SIGUSR2, lambda: setattr(delay, "on", False))

    async def handle(creader, cwriter):
        try:
            sreader, swriter = await asyncio.open_connection(host, int(port))
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(client_to_server(creader, swriter),
                             server_to_client(sreader, cwriter, delay))

    server = await asyncio.start_server(handle, "127.0.0.1", a.listen)
    if a.ports_file:
        with open(a.ports_file + ".tmp", "w") as f:
            f.write("%d\n" % server.sockets[0].getsockname()[1])
        import os
        os.rename(a.ports_file + ".tmp", a.ports_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
