"""What benchmarks/ runs that is no benchmark (benchmarks/registry.py's TOOLS, each with the reason
`make bench` leaves it out): `run_all.py` (`make bench` itself), `readme.py` (the README's measured
table), `notebook_times.py`, `gpu_check.py` (`make gpu-check`), `hub_load.py`, `doctor_oracle.py`
and `recipe_files.py`. Each runs as `python -m benchmarks.tools.<name>`."""
