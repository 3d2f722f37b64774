"""Notebook 00 (start here): the warm-up exercise (`exercises.py`, lab `labs/start/warmup.py`).

The rest of what notebook 00 shows is the core every module shares: the self-check
(`trainlab.workbook.params`), the data (`trainlab.data`), the reference loop (`trainlab.loop`) and its
live dashboard (`trainlab.workbook.plots`).
"""
