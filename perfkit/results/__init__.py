"""What a run produced: metrics, baselines, datasheet, comparison, payloads, report and plots.

Pure data: nothing here imports torch, numba or NVML, so a results machine needs no CUDA wheels.
"""
