"""Module 05: memory, precision and hardware - activation checkpointing, number formats and what
low precision loses, and the machine at hand measured (notebook 05_memory_precision_hardware)."""
