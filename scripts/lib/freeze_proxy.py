#!/usr/bin/env python3
"""A TCP proxy that can go silent: what a database host that vanishes looks like from the other end.

    freeze_proxy.py LISTEN_PORT UPSTREAM_PORT

Forwards 127.0.0.1:LISTEN_PORT to 127.0.0.1:UPSTREAM_PORT. SIGUSR1 freezes it: nothing is forwarded either way and
no socket is closed (a query sent meanwhile is neither answered nor refused, as when a host loses power or the network
partitions). SIGUSR2 thaws it: what was held is delivered and forwarding resumes. Prints "ready" once listening.
"""
import asyncio
import signal
import sys


async def main(listen_port: int, upstream_port: int) -> None:
    flowing = asyncio.Event()
    flowing.set()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, flowing.clear)
    loop.add_signal_handler(signal.SIGUSR2, flowing.set)

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await flowing.wait()
                data = await reader.read(65536)
                if not data:
                    break
                await flowing.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def accept(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        await flowing.wait()
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, upstream_writer), pump(upstream_reader, client_writer))

    server = await asyncio.start_server(accept, "127.0.0.1", listen_port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
