"""How perfkit measures: clocks and events, allocator peaks, NVML power, the hardware fingerprint,
ceilings."""
