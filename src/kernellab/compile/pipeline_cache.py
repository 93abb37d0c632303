"""Arm's pipeline-cache file (``--pipeline-caching``): a VkPipelineCache blob kept the way Arm's
runner does (its src/pipeline_cache.cpp, src/main.cpp), one file ``<cache-path>/<scenario
stem>.cache``, taken only when its header names this device. Loaded only when a run asks for it.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

from kernellab.errors import FileSystemError, KernellabError
from kernellab.outputs import write_bytes
from kernellab.records import dataclass

#: sizeof(VkPipelineCacheHeaderVersionOne): headerSize, headerVersion, vendorID, deviceID, UUID[16]
PIPELINE_CACHE_HEADER = struct.Struct("<IIII16s")
PIPELINE_CACHE_HEADER_VERSION_ONE = 1

#: how a pipeline-cache step is reported: (level, message), Arm's words (scripts match on them)
Say = Callable[[str, str], None]


@dataclass(frozen=True)
class PipelineCacheFile:
    """Arm's ``--pipeline-caching`` file of one scenario."""
    path: Path

    @classmethod
    def for_scenario(cls, folder: Path, scenario_file: Path) -> PipelineCacheFile:
        # Arm: cacheDir / scenarioFile.filename().replace_extension("cache")
        return cls(Path(folder) / f"{Path(scenario_file).stem}.cache")

    def load(self, vendor_id: int, device_id: int, clear: bool, say: Say) -> bytes | None:
        """The blob to start the device's pipeline cache with, or None; ``clear`` deletes the file."""
        if clear:
            self.path.unlink(missing_ok=True)
            say("INFO", "Pipeline Cache cleared")
            return None
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None  # not a miss: nothing was cached yet
        except OSError as exc:
            raise KernellabError(f"Failed to read the pipeline cache {self.path}: {exc.strerror}") from None
        if not data:
            say("WARNING", "Pipeline Cache skipped: size invalid")
            return None
        if not header_matches(data, vendor_id, device_id, say):
            say("WARNING", "Pipeline Cache skipped: failed to validate.")
            return None
        say("INFO", "Pipeline Cache loaded and validated.")
        return data

    def save(self, data: bytes, say: Say) -> None:
        try:
            write_bytes(self.path, data)
        except (OSError, FileSystemError) as exc:
            raise KernellabError(f"Error storing pipeline cache into: {self.path} ({exc})") from None
        say("INFO", "Pipeline Cache stored")


def header_matches(data: bytes, vendor_id: int, device_id: int, say: Say) -> bool:
    """Arm's ``isValidPipelineCache``: the header's size, version and device, each refusal said."""
    if len(data) < PIPELINE_CACHE_HEADER.size:
        return False
    size, version, vendor, device, _ = PIPELINE_CACHE_HEADER.unpack_from(data)
    if size != PIPELINE_CACHE_HEADER.size:
        say("WARNING", "Pipeline validation: Incorrect pipeline cache header size")
        return False
    if version != PIPELINE_CACHE_HEADER_VERSION_ONE:
        say("WARNING", f"Pipeline validation: Incorrect pipeline header version ({version}). "
                       f"Expected ({PIPELINE_CACHE_HEADER_VERSION_ONE})")
        return False
    if (vendor, device) != (vendor_id, device_id):
        say("WARNING", f"Pipeline validation: Incorrect device used with cache. (VendorID, DeviceID) = "
                       f"({vendor}, {device}). Expected ({vendor_id}, {device_id})")
        return False
    return True
