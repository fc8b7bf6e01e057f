"""One run's metrics, typed: every analysed category by key, in the order given (the files'
order, the candidates' order), and the three system analyses by name, each its own type or
None when the run did not analyse it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ... import layout
from ...categories.any_metrics import Metrics
from ...categories.cpu_idle import CpuIdleMetrics
from ...categories.kernel_fusion import KernelFusionMetrics
from ...categories.models import CategoryMetrics
from ...categories.multi_kernel import MultiKernelMetrics


class RunMetrics(Mapping[str, Metrics]):
    """Key -> metrics of every analysis that ran, with `cpu_idle`, `multi_kernel`,
    `kernel_fusion` and the compute categories (`compute`) read by name."""

    def __init__(self, metrics: Mapping[str, Metrics]) -> None:
        self._all = dict(metrics)
        self.cpu_idle: CpuIdleMetrics | None = None
        self.multi_kernel: MultiKernelMetrics | None = None
        self.kernel_fusion: KernelFusionMetrics | None = None
        self.compute: dict[str, CategoryMetrics] = {}
        for key, analysed in self._all.items():
            match key, analysed:
                case layout.CPU_IDLE, CpuIdleMetrics():
                    self.cpu_idle = analysed
                case layout.MULTI_KERNEL, MultiKernelMetrics():
                    self.multi_kernel = analysed
                case layout.KERNEL_FUSION, KernelFusionMetrics():
                    self.kernel_fusion = analysed
                case _, CategoryMetrics():
                    self.compute[key] = analysed

    @classmethod
    def of(cls, metrics: Mapping[str, Metrics]) -> RunMetrics:
        return metrics if isinstance(metrics, RunMetrics) else cls(metrics)

    def timeline_systems(self) -> dict[str, CpuIdleMetrics | MultiKernelMetrics | None]:
        """The analyses of the GPU timeline's idle and exposed time, by key (None: not run)."""
        return {layout.CPU_IDLE: self.cpu_idle, layout.MULTI_KERNEL: self.multi_kernel}

    def __getitem__(self, key: str) -> Metrics:
        return self._all[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)
