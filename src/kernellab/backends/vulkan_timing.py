"""Timestamps around a Vulkan device's commands (``BackendOptions.timestamps``): a top-of-pipe and a
bottom-of-pipe timestamp per command, read back once the frame ends. The device loads this module
on its first timed command, so an untimed run reads none of it."""
from __future__ import annotations

from kernellab.backends.base import CommandTiming
from kernellab.native.vk import checked

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

#: timestamp queries in each pool the device makes
QUERIES_PER_POOL = 1024


def write(device: Any, cmd: Any) -> None:
    """Write a timestamp on ``device``'s (backends/vulkan_device.py's ``VulkanDevice``, which loads
    this module) command buffer ``cmd``: top of pipe, then bottom of pipe, a command's pair."""
    vk = device.vk
    pool_index, slot = divmod(device._queries_used, QUERIES_PER_POOL)
    if pool_index == len(device._query_pools):
        with checked("vkCreateQueryPool"):
            device._query_pools.append(vk.vkCreateQueryPool(device.handle, vk.VkQueryPoolCreateInfo(
                queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=QUERIES_PER_POOL), None))
    if slot == 0:
        vk.vkCmdResetQueryPool(cmd, device._query_pools[pool_index], 0, QUERIES_PER_POOL)
    vk.vkCmdWriteTimestamp(cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT if device._queries_used % 2
                           else vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, device._query_pools[pool_index], slot)
    device._queries_used += 1


def read(device: Any) -> list[CommandTiming]:
    """The timings of the commands ``device`` timed in the frame that ended, by their labels."""
    vk, ffi = device.vk, device.ffi
    values: list[int] = []
    remaining = device._queries_used
    for pool in device._query_pools:
        n = min(remaining, QUERIES_PER_POOL)
        if n <= 0:
            break
        out = ffi.new("uint64_t[]", n)
        with checked("vkGetQueryPoolResults"):
            vk.vkGetQueryPoolResults(device.handle, pool, 0, n, n * 8, out, 8,
                                     vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        values.extend(out[i] for i in range(n))
        remaining -= n
    period = device.timestamp_period
    return [CommandTiming(label, values[2 * i] * period, values[2 * i + 1] * period)
            for i, label in enumerate(device._labels)]
