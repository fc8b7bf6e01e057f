"""Device properties as Kineto records them, and each vendor's runtime calls, for the
generated traces (writer.py)."""

from __future__ import annotations

from typing import Literal

Vendor = Literal["nvidia", "amd"]

H100 = {
    "id": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85018279936,
    "computeMajor": 9,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 132,
    "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 232448,
    "sharedMemPerMultiprocessor": 233472,
}
MI300X = {
    "id": 0,
    "name": "AMD Instinct MI300X",
    "totalGlobalMem": 206141652992,
    "computeMajor": 9,
    "computeMinor": 4,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 64,
    "sharedMemPerBlock": 65536,
    "numSms": 304,
    "maxSharedMemoryPerMultiProcessor": 65536,
}
V100 = {
    "id": 0,
    "name": "Tesla V100-SXM2-32GB",
    "totalGlobalMem": 34079899648,
    "computeMajor": 7,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 80,
    "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 98304,
    "sharedMemPerMultiprocessor": 98304,
}
A100 = {
    "id": 0,
    "name": "NVIDIA A100-SXM4-40GB",
    "totalGlobalMem": 42505273344,
    "computeMajor": 8,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 108,
    "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 166912,
    "sharedMemPerMultiprocessor": 167936,
}

# Runtime API per vendor: name and the callback id CUPTI (`cbid`) or roctracer (`cid`) gives
# it. NVIDIA ids are the ones real traces carry; AMD ids change between ROCm releases.
API: dict[str, dict[Vendor, tuple[str, int]]] = {
    "launch": {"nvidia": ("cudaLaunchKernel", 211), "amd": ("hipLaunchKernel", 107)},
    "memcpy": {"nvidia": ("cudaMemcpyAsync", 41), "amd": ("hipMemcpyAsync", 134)},
    "memset": {"nvidia": ("cudaMemsetAsync", 51), "amd": ("hipMemsetAsync", 159)},
    "stream_sync": {"nvidia": ("cudaStreamSynchronize", 131), "amd": ("hipStreamSynchronize", 196)},
    "device_sync": {"nvidia": ("cudaDeviceSynchronize", 165), "amd": ("hipDeviceSynchronize", 48)},
    "event_record": {"nvidia": ("cudaEventRecord", 135), "amd": ("hipEventRecord", 60)},
    "stream_wait": {"nvidia": ("cudaStreamWaitEvent", 147), "amd": ("hipStreamWaitEvent", 200)},
    "malloc": {"nvidia": ("cudaMalloc", 20), "amd": ("hipMalloc", 108)},
    "free": {"nvidia": ("cudaFree", 22), "amd": ("hipFree", 100)},
    "stream_create": {
        "nvidia": ("cudaStreamCreateWithPriority", 202),
        "amd": ("hipStreamCreateWithPriority", 186),
    },
}
