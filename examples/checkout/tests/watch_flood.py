"""Opens COUNT gRPC connections to ADDRESS, each holding one grpc.health.v1.Health/Watch
stream, for SECONDS; a refused or ended stream is opened again on a new connection after a
short pause, as a client that wants its stream back would. Prints one JSON line: streams
served (first message received), refused, and other errors.

Usage: watch_flood.py ADDRESS COUNT SECONDS
"""

import asyncio
import json
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


async def hold(address, until, counts):
    while time.monotonic() < until:
        # A subchannel pool of its own: one connection per channel, none shared.
        channel = grpc.aio.insecure_channel(
            address, options=[("grpc.use_local_subchannel_pool", 1)]
        )
        try:
            stub = health_pb2_grpc.HealthStub(channel)
            call = stub.Watch(health_pb2.HealthCheckRequest(service=""))
            first = True
            remaining = until - time.monotonic()
            try:
                async with asyncio.timeout(max(remaining, 0.1)):
                    async for _ in call:
                        if first:
                            counts["served"] += 1
                            first = False
            except TimeoutError:
                call.cancel()
                return
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.UNAVAILABLE:
                    counts["refused"] += 1
                else:
                    counts["errors"] += 1
        finally:
            await channel.close(grace=None)
        await asyncio.sleep(0.5)


async def main():
    address, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    until = time.monotonic() + seconds
    counts = {"served": 0, "refused": 0, "errors": 0}
    await asyncio.gather(*(hold(address, until, counts) for _ in range(count)))
    print(json.dumps(counts), flush=True)


asyncio.run(main())
