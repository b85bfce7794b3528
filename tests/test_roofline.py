"""Roofline placement, the ncu report parser, and a clear error where ncu is missing."""
from __future__ import annotations

import pytest

from perfkit.errors import HardwareError, MeasurementError
from perfkit.measure import ncu
from perfkit.resultfile import roofline
from perfkit.workloads import ncu_forward

_HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
         '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
_ROW = ('"{id}","123","python3","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(10, 1, 1)","0","9.0",'
        '"Command line profiler metrics","{metric}","byte","{value}"')
NCU_CSV = "\n".join([
    "==PROF== Connected to process 123", _HEAD,
    _ROW.format(id=0, kernel="conv", metric="dram__bytes_read.sum", value="1,048,576"),
    _ROW.format(id=0, kernel="conv", metric="dram__bytes_write.sum", value="524288"),
    _ROW.format(id=1, kernel="relu", metric="dram__bytes_read.sum", value="1000"),
    "==PROF== Disconnected from process 123", ""])


def test_a_point_below_the_ridge_is_memory_bound():
    where = roofline.place(intensity=1.0, attained_tflops=1.0, peak_tflops=50.0, bandwidth_gbps=4000.0)
    assert where.bound == "memory" and where.ridge_intensity == pytest.approx(12.5)
    assert where.roof_tflops == pytest.approx(4.0) and where.share_of_roof == pytest.approx(1.0 / 4.0)


def test_a_point_past_the_ridge_is_compute_bound():
    where = roofline.place(intensity=1000.0, attained_tflops=10.0, peak_tflops=400.0, bandwidth_gbps=4000.0)
    assert where.bound == "compute" and where.roof_tflops == 400.0
    assert where.share_of_roof == pytest.approx(10.0 / 400.0)


def test_ncu_csv_sums_read_and_write_bytes_over_kernels():
    assert ncu.parse_ncu_csv(NCU_CSV) == 1_048_576 + 524_288 + 1000


def test_ncu_output_in_scaled_units_is_refused():
    with pytest.raises(MeasurementError, match="--print-units base"):
        ncu.parse_ncu_csv(NCU_CSV.replace('"byte","524288"', '"Kbyte","512"'))


def test_an_empty_ncu_report_is_an_error():
    with pytest.raises(MeasurementError, match="no DRAM byte counts"):
        ncu.parse_ncu_csv("==PROF== nothing profiled\n")


def test_a_missing_ncu_is_a_clear_hardware_error(monkeypatch):
    monkeypatch.setattr(ncu.shutil, "which", lambda _: None)
    assert "not on the PATH" in ncu.ncu_unavailable_reason()
    with pytest.raises(HardwareError, match="Nsight Compute"):
        ncu.measure_dram_bytes(ncu_forward.Region("resnet18", (1, 3, 224, 224)).argv(), "resnet18")


def test_the_profiled_region_crosses_the_process_boundary_as_a_typed_record():
    region = ncu_forward.Region("resnet18", (2, 3, 32, 32))
    assert region.argv() == ["-m", "perfkit.workloads.ncu_forward", "resnet18", "2,3,32,32"]
    assert ncu_forward.Region.from_argv(region.argv()[-2:]) == region
